// Row-major Eigen views over raw float buffers, shared by the CPU kernels.
// Thread-safety: types only.
#ifndef PSTRAIN_WORKER_CPU_EIGEN_MAPS_H_
#define PSTRAIN_WORKER_CPU_EIGEN_MAPS_H_

#include <cstdint>

#include "Eigen/Core"

namespace pstrain {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;
using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;
using RowVectorMap = Eigen::Map<Eigen::RowVectorXf>;

// out[rows, cols] = max(out + bias (broadcast over rows), 0 if relu). Vectorised single pass.
inline void AddBiasActivation(float* out, int64_t rows, int64_t cols, const float* bias, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * cols;
    if (bias != nullptr) {
      for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
    }
    if (relu) {
      for (int64_t c = 0; c < cols; ++c) row[c] = row[c] > 0.f ? row[c] : 0.f;
    }
  }
}

// dout *= (out > 0): the ReLU backward, using the activation's output as the mask.
inline void ReluMask(const float* out, float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dout[i] = out[i] > 0.f ? dout[i] : 0.f;
}

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CPU_EIGEN_MAPS_H_
