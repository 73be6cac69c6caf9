#include "worker/device.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/cuda/cuda_gradient_computer.h"

namespace pstrain {

absl::StatusOr<GradientComputerFactory> ComputeFactoryForDevice(const std::string& device, int replicas) {
  if (device == "cpu") return GradientComputerFactory(NewCpuGradientComputer);
  if (absl::StartsWith(device, "cuda")) {
    ASSIGN_OR_RETURN(CudaComputerFactory cuda, CudaFactoryForDevice(device, std::max(1, replicas)));
    return GradientComputerFactory(std::move(cuda));
  }
  return absl::InvalidArgumentError(absl::StrCat("--device=", device, " is not a device; use cpu, cuda or cuda:N"));
}

}  // namespace pstrain
