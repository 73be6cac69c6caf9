// pstrain_worker_cuda when nvcc was not found at configure time: the same API, reporting that CUDA
// support is absent.
#include "worker/cuda/cuda_gradient_computer.h"

namespace pstrain {

bool CudaSupportBuilt() { return false; }

int CudaDeviceCount() { return 0; }

absl::StatusOr<std::unique_ptr<GradientComputer>> NewCudaGradientComputer(const ModelSpec& model, int device_index) {
  return absl::FailedPreconditionError(
      "this pstrain was built without CUDA; install nvcc and rebuild with -DPSTRAIN_CUDA=ON");
}

}  // namespace pstrain
