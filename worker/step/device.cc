#include "worker/step/device.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/cuda/cuda_gradient_computer.h"
#include "worker/cuda/graph_lowering.h"

namespace pstrain {

absl::StatusOr<GradientComputerFactory> ComputeFactoryForDevice(const std::string& device, int replicas) {
  if (device == "cpu") return GradientComputerFactory(NewCpuGradientComputer);
  if (absl::StartsWith(device, "cuda")) {
    ASSIGN_OR_RETURN(CudaComputerFactory cuda, CudaFactoryForDevice(device, std::max(1, replicas)));
    return GradientComputerFactory(
        [cuda = std::move(cuda)](const ModelSpec& model, int threads) -> absl::StatusOr<std::unique_ptr<GradientComputer>> {
          if (model.is_graph()) {  // the chains of layers the device has kernels for
            ASSIGN_OR_RETURN(ModelSpec lowered, LowerGraphForDevice(model));
            return cuda(lowered, threads);
          }
          if (model.is_ctr()) {
            return absl::InvalidArgumentError(
                "CTR models (model.fields) compute on the CPU only: run with --device=cpu");
          }
          return cuda(model, threads);
        });
  }
  return absl::InvalidArgumentError(absl::StrCat("--device=", device, " is not a device; use cpu, cuda or cuda:N"));
}

}  // namespace pstrain
