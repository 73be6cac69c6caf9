// The CUDA DeviceBackend (cuda_backend.cc): two non-blocking streams (compute, copy), cuBLAS SGEMM on
// the compute stream in full FP32 (no TF32, so results track the CPU reference), pinned host memory,
// and pstrain's own kernels. Plain C++ header: no CUDA includes. Only in CUDA builds.
// Thread-safety: a backend is used by one thread at a time; the free functions are thread-safe.
#ifndef PSTRAIN_WORKER_CUDA_CUDA_BACKEND_H_
#define PSTRAIN_WORKER_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "worker/cuda/device_backend.h"

namespace pstrain {

// A backend on GPU `device_index`. FailedPrecondition when no GPU is visible ("no CUDA device: ..."),
// InvalidArgument when the index is out of range, Internal/ResourceExhausted naming the failed CUDA
// or cuBLAS call and the device otherwise.
absl::StatusOr<std::unique_ptr<DeviceBackend>> NewCudaBackend(int device_index);

struct CudaMemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

// cudaMemGetInfo on `device_index` (used to show that steps do not leak device memory).
absl::StatusOr<CudaMemoryInfo> CudaDeviceMemory(int device_index);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_CUDA_BACKEND_H_
