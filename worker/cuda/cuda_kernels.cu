// pstrain's CUDA kernels: thin grid-stride wrappers over the bodies in layer_kernels.h (the same
// code the CPU emulation runs). Geometry structs are passed by value into kernel parameters.
#include "worker/cuda/cuda_kernels.h"

namespace pstrain {
namespace {

constexpr int kThreads = 256;

// 64-bit loop counter so `i + stride` cannot overflow near 2^31; bodies take the 32-bit index.
#define PSTRAIN_GRID_LOOP(i, n)                                                              \
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<long long>(blockDim.x) * gridDim.x)

__global__ void FillKernel(float* dst, float value, int n) { PSTRAIN_GRID_LOOP(i, n) dst[i] = value; }
__global__ void Im2ColKernel(ConvGeometry g, const float* __restrict__ x, float* __restrict__ col) {
  const int n = g.col_size();
  PSTRAIN_GRID_LOOP(i, n) col[i] = Im2ColValue(g, x, static_cast<int>(i));
}
__global__ void Col2ImKernel(ConvGeometry g, const float* __restrict__ dcol, float* __restrict__ dx) {
  const int n = g.in_size();
  PSTRAIN_GRID_LOOP(i, n) dx[i] = Col2ImValue(g, dcol, static_cast<int>(i));
}
// x may alias y (in-place bias + activation), so no __restrict__ here.
__global__ void BiasActKernel(int n, int cols, const float* x, const float* bias, bool relu, float* y) {
  PSTRAIN_GRID_LOOP(i, n) y[i] = BiasActValue(x, bias, cols, relu, static_cast<int>(i));
}
__global__ void ReluGradKernel(int n, const float* y, const float* dy, float* dx) {
  PSTRAIN_GRID_LOOP(i, n) dx[i] = ReluGradValue(y, dy, static_cast<int>(i));
}
__global__ void MaxPoolForwardKernel(PoolGeometry g, const float* __restrict__ x, float* __restrict__ y) {
  const int n = g.out_size();
  PSTRAIN_GRID_LOOP(o, n) y[o] = MaxPoolForwardValue(g, x, static_cast<int>(o));
}
__global__ void MaxPoolBackwardKernel(PoolGeometry g, const float* __restrict__ x, const float* __restrict__ dy,
                                      float* __restrict__ dx) {
  const int n = g.in_size();
  PSTRAIN_GRID_LOOP(i, n) dx[i] = MaxPoolBackwardValue(g, x, dy, static_cast<int>(i));
}
// One thread per example: the model library's heads are narrow (tens of classes).
__global__ void SoftmaxXentKernel(int batch, int classes, const float* logits, const float* labels, float scale,
                                  float* dlogits, float* loss, float* correct) {
  PSTRAIN_GRID_LOOP(b, batch) {
    const long long row = b * classes;
    SoftmaxXentExample(classes, logits + row, labels[b], scale, dlogits + row, loss + b, correct + b);
  }
}
__global__ void MseKernel(int batch, int outputs, const float* y, const float* targets, float scale, float* dy,
                          float* loss) {
  PSTRAIN_GRID_LOOP(b, batch) {
    const long long row = b * outputs;
    MseExample(outputs, y + row, targets + row, scale, dy + row, loss + b);
  }
}

int Blocks(const LaunchConfig& cfg, long long n) {
  const long long blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < cfg.max_blocks ? blocks : cfg.max_blocks);
}

}  // namespace

cudaError_t LaunchFill(const LaunchConfig& cfg, float* dst, float value, int count) {
  if (count <= 0) return cudaSuccess;
  FillKernel<<<Blocks(cfg, count), kThreads, 0, cfg.stream>>>(dst, value, count);
  return cudaGetLastError();
}

cudaError_t LaunchIm2Col(const LaunchConfig& cfg, const ConvGeometry& g, const float* x, float* col) {
  if (g.col_size() <= 0) return cudaSuccess;
  Im2ColKernel<<<Blocks(cfg, g.col_size()), kThreads, 0, cfg.stream>>>(g, x, col);
  return cudaGetLastError();
}

cudaError_t LaunchCol2Im(const LaunchConfig& cfg, const ConvGeometry& g, const float* dcol, float* dx) {
  if (g.in_size() <= 0) return cudaSuccess;
  Col2ImKernel<<<Blocks(cfg, g.in_size()), kThreads, 0, cfg.stream>>>(g, dcol, dx);
  return cudaGetLastError();
}

cudaError_t LaunchBiasAct(const LaunchConfig& cfg, int rows, int cols, const float* x, const float* bias, bool relu,
                          float* y) {
  const int n = rows * cols;
  if (n <= 0) return cudaSuccess;
  BiasActKernel<<<Blocks(cfg, n), kThreads, 0, cfg.stream>>>(n, cols, x, bias, relu, y);
  return cudaGetLastError();
}

cudaError_t LaunchReluGrad(const LaunchConfig& cfg, int count, const float* y, const float* dy, float* dx) {
  if (count <= 0) return cudaSuccess;
  ReluGradKernel<<<Blocks(cfg, count), kThreads, 0, cfg.stream>>>(count, y, dy, dx);
  return cudaGetLastError();
}

cudaError_t LaunchMaxPoolForward(const LaunchConfig& cfg, const PoolGeometry& g, const float* x, float* y) {
  if (g.out_size() <= 0) return cudaSuccess;
  MaxPoolForwardKernel<<<Blocks(cfg, g.out_size()), kThreads, 0, cfg.stream>>>(g, x, y);
  return cudaGetLastError();
}

cudaError_t LaunchMaxPoolBackward(const LaunchConfig& cfg, const PoolGeometry& g, const float* x, const float* dy,
                                  float* dx) {
  if (g.in_size() <= 0) return cudaSuccess;
  MaxPoolBackwardKernel<<<Blocks(cfg, g.in_size()), kThreads, 0, cfg.stream>>>(g, x, dy, dx);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxXent(const LaunchConfig& cfg, int batch, int classes, const float* logits, const float* labels,
                              float scale, float* dlogits, float* loss, float* correct) {
  if (batch <= 0) return cudaSuccess;
  SoftmaxXentKernel<<<Blocks(cfg, batch), kThreads, 0, cfg.stream>>>(batch, classes, logits, labels, scale, dlogits,
                                                                     loss, correct);
  return cudaGetLastError();
}

cudaError_t LaunchMse(const LaunchConfig& cfg, int batch, int outputs, const float* y, const float* targets,
                      float scale, float* dy, float* loss) {
  if (batch <= 0) return cudaSuccess;
  MseKernel<<<Blocks(cfg, batch), kThreads, 0, cfg.stream>>>(batch, outputs, y, targets, scale, dy, loss);
  return cudaGetLastError();
}

}  // namespace pstrain
