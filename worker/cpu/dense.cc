#include "worker/cpu/dense.h"

#include <cstring>

#include "worker/cpu/gemm.h"

namespace pstrain {

void Dense::Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) const {
  const PackBArgs pack{kernel, g_.units, 1, g_.inputs, 1, g_.units};
  packed_.resize(static_cast<size_t>(kernels_->packed_b_size(pack)));
  GemmNNArgs g;
  g.a = MatrixIn(in, g_.inputs, g_.inputs);
  g.rows = batch;
  g.packed_b = kernels_->pack_b(pack, packed_.data());
  g.c = MatrixOut(out, g_.units, g_.units);
  g.bias = g_.bias ? bias : nullptr;
  g.relu = g_.relu;
  kernels_->gemm_nn(g);
}

void Dense::Backward(const float* in, const float* out, float* dout, int64_t batch, const float* kernel, float* din,
                     float* dkernel, float* dbias) const {
  const int64_t units = g_.units, inputs = g_.inputs;
  if (g_.relu) kernels_->relu_backward(out, dout, dout, batch * units);
  int64_t ldd = units;
  const float* d = PadRowsForTN(dout, batch, units, &padded_, &ldd);
  std::memset(dkernel, 0, sizeof(float) * inputs * units);
  const GemmTNArgs tn{MatrixIn(in, inputs, inputs), batch, d, ldd, units, dkernel, units};
  kernels_->gemm_tn(tn);
  if (g_.bias && dbias != nullptr) kernels_->column_sums(dout, batch, units, units, dbias, /*accumulate=*/false);
  if (din == nullptr) return;
  // din = dout * kernel^T: B[t, j] = kernel[j, t].
  const PackBArgs pack{kernel, 1, units, units, 1, inputs};
  packed_.resize(static_cast<size_t>(kernels_->packed_b_size(pack)));
  GemmNNArgs nn;
  nn.a = MatrixIn(dout, units, units);
  nn.rows = batch;
  nn.packed_b = kernels_->pack_b(pack, packed_.data());
  nn.c = MatrixOut(din, inputs, inputs);
  kernels_->gemm_nn(nn);
}

}  // namespace pstrain
