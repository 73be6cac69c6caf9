// Launchers of pstrain's CUDA kernels (cuda_kernels.cu): grid-stride loops over the per-element
// bodies of layer_kernels.h. Compiled by nvcc; this header is plain C++ over the CUDA runtime API so
// cuda_backend.cc (compiled by the host compiler) can call it.
// Each launcher enqueues on `cfg.stream`, does nothing for an empty range and returns the launch
// error (cudaGetLastError), cudaSuccess otherwise.
// Thread-safety: thread-safe (no state); streams are the caller's.
#ifndef PSTRAIN_WORKER_CUDA_CUDA_KERNELS_H_
#define PSTRAIN_WORKER_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include "worker/cuda/layer_kernels.h"

namespace pstrain {

struct LaunchConfig {
  cudaStream_t stream = nullptr;
  int max_blocks = 1024;  // grid-stride: enough blocks to fill the device, no more
};

cudaError_t LaunchFill(const LaunchConfig& cfg, float* dst, float value, int count);
cudaError_t LaunchIm2Col(const LaunchConfig& cfg, const ConvGeometry& g, const float* x, float* col);
cudaError_t LaunchCol2Im(const LaunchConfig& cfg, const ConvGeometry& g, const float* dcol, float* dx);
cudaError_t LaunchBiasAct(const LaunchConfig& cfg, int rows, int cols, const float* x, const float* bias, bool relu,
                          float* y);
cudaError_t LaunchReluGrad(const LaunchConfig& cfg, int count, const float* y, const float* dy, float* dx);
cudaError_t LaunchMaxPoolForward(const LaunchConfig& cfg, const PoolGeometry& g, const float* x, float* y);
cudaError_t LaunchMaxPoolBackward(const LaunchConfig& cfg, const PoolGeometry& g, const float* x, const float* dy,
                                  float* dx);
cudaError_t LaunchSoftmaxXent(const LaunchConfig& cfg, int batch, int classes, const float* logits, const float* labels,
                              float scale, float* dlogits, float* loss, float* correct);
cudaError_t LaunchMse(const LaunchConfig& cfg, int batch, int outputs, const float* y, const float* targets,
                      float scale, float* dy, float* loss);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_CUDA_KERNELS_H_
