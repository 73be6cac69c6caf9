// NewCudaGradientComputer in CUDA builds: the device executor over a CudaBackend.
#include "worker/cuda/cuda_gradient_computer.h"

#include "common/platform/status_macros.h"
#include "worker/cuda/cuda_backend.h"
#include "worker/cuda/device_gradient_computer.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<GradientComputer>> NewCudaGradientComputer(const ModelSpec& model, int device_index) {
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceBackend> backend, NewCudaBackend(device_index));
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceGradientComputer> computer,
                   DeviceGradientComputer::Create(model, std::move(backend), DeviceGradientComputer::Options{}));
  return std::unique_ptr<GradientComputer>(std::move(computer));
}

}  // namespace pstrain
