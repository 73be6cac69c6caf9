#include "worker/cpu/dense.h"

#include "worker/cpu/eigen_maps.h"

namespace pstrain {

void Dense::Forward(const float* in, int64_t batch, const float* kernel, const float* bias, float* out) const {
  MatrixMap y(out, batch, g_.units);
  y.noalias() = ConstMatrixMap(in, batch, g_.inputs) * ConstMatrixMap(kernel, g_.inputs, g_.units);
  AddBiasActivation(out, batch, g_.units, g_.bias ? bias : nullptr, g_.relu);
}

void Dense::Backward(const float* in, const float* out, float* dout, int64_t batch, const float* kernel, float* din,
                     float* dkernel, float* dbias) const {
  if (g_.relu) ReluMask(out, dout, batch * g_.units);
  ConstMatrixMap dy(dout, batch, g_.units);
  ConstMatrixMap x(in, batch, g_.inputs);
  MatrixMap(dkernel, g_.inputs, g_.units).noalias() = x.transpose() * dy;
  if (g_.bias && dbias != nullptr) RowVectorMap(dbias, g_.units) = dy.colwise().sum();
  if (din != nullptr) {
    MatrixMap(din, batch, g_.inputs).noalias() = dy * ConstMatrixMap(kernel, g_.inputs, g_.units).transpose();
  }
}

}  // namespace pstrain
