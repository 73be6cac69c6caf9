// Row-major Eigen views over raw float buffers, and the bias/ReLU helpers layers share (these run
// the active CPU level's kernels: worker/cpu/cpu_kernels.h).
// Thread-safety: types and pure functions.
#ifndef PSTRAIN_WORKER_CPU_EIGEN_MAPS_H_
#define PSTRAIN_WORKER_CPU_EIGEN_MAPS_H_

#include <cstdint>

#include "Eigen/Core"
#include "worker/cpu/cpu_kernels.h"

namespace pstrain {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;
using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;
using RowVectorMap = Eigen::Map<Eigen::RowVectorXf>;

// out[rows, cols] = max(out + bias (broadcast over rows), 0 if relu). `bias` may be null.
inline void AddBiasActivation(float* out, int64_t rows, int64_t cols, const float* bias, bool relu) {
  ActiveCpuKernels().bias_activation(out, rows, cols, bias, relu);
}

// dout *= (out > 0): the ReLU backward, using the activation's output as the mask.
inline void ReluMask(const float* out, float* dout, int64_t n) { ActiveCpuKernels().relu_backward(out, dout, dout, n); }

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_EIGEN_MAPS_H_
