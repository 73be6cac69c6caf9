#include "worker/cpu/gemm.h"

#include <cstring>
#include <vector>

#include "worker/cpu/cpu_kernels.h"

namespace pstrain {

const float* PadRowsForTN(const float* d, int64_t rows, int64_t n, std::vector<float>* scratch, int64_t* ld) {
  *ld = n;
  if (n % kMaxLanes == 0) return d;
  *ld = RoundUpToLanes(n);
  scratch->assign(static_cast<size_t>(rows * *ld), 0.f);
  for (int64_t i = 0; i < rows; ++i) std::memcpy(scratch->data() + i * *ld, d + i * n, sizeof(float) * n);
  return scratch->data();
}

void GemmNN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  const CpuKernels& kernels = ActiveCpuKernels();
  const PackBArgs pack{b, n, 1, k, 1, n};
  std::vector<float> scratch(static_cast<size_t>(kernels.packed_b_size(pack)));
  GemmNNArgs g;
  g.a = MatrixIn(a, k, k);
  g.rows = m;
  g.packed_b = kernels.pack_b(pack, scratch.data());
  g.c = MatrixOut(c, n, n);
  kernels.gemm_nn(g);
}

void GemmTN(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  const CpuKernels& kernels = ActiveCpuKernels();
  std::memset(c, 0, sizeof(float) * k * n);
  std::vector<float> padded;
  int64_t ldd = n;
  const float* d = PadRowsForTN(b, m, n, &padded, &ldd);
  const GemmTNArgs g{MatrixIn(a, k, k), m, d, ldd, n, c, n};
  kernels.gemm_tn(g);
}

}  // namespace pstrain
