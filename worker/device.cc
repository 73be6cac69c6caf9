#include "worker/device.h"

#include "absl/strings/str_cat.h"
#include "worker/cpu/cpu_gradient_computer.h"

namespace pstrain {

absl::StatusOr<GradientComputerFactory> ComputeFactoryForDevice(const std::string& device) {
  if (device == "cpu") return GradientComputerFactory(NewCpuGradientComputer);
  if (device == "cuda") {
    return absl::InvalidArgumentError("--device=cuda: this build has no CUDA kernels; use --device=cpu");
  }
  return absl::InvalidArgumentError(absl::StrCat("--device=", device, " is not a device; use cpu"));
}

}  // namespace pstrain
