// ParseCudaDevice and the replica factory: shared by the CUDA build and the build without CUDA.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "worker/cuda/cuda_gradient_computer.h"

namespace pstrain {

absl::StatusOr<int> ParseCudaDevice(const std::string& device) {
  if (device == "cuda") return 0;
  const absl::string_view rest = absl::string_view(device).substr(device.size() < 5 ? device.size() : 5);
  int index = -1;
  if (absl::StartsWith(device, "cuda:") && !rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0])) &&
      absl::SimpleAtoi(rest, &index) && index >= 0) {
    return index;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device=\"", device, "\" is not a CUDA device; use cuda or cuda:N (N = 0, 1, ...)"));
}

CudaComputerFactory NewCudaComputerFactory(int first_device, int replicas) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  return [first_device, replicas, calls](const ModelSpec& model, int /*threads*/) {
    const int n = calls->fetch_add(1) % std::max(replicas, 1);
    const int count = CudaDeviceCount();
    if (first_device < 0 || first_device >= count) {
      return NewCudaGradientComputer(model, first_device);  // says why: no GPU, or no such device
    }
    return NewCudaGradientComputer(model, (first_device + n) % count);
  };
}

absl::StatusOr<CudaComputerFactory> CudaFactoryForDevice(const std::string& device, int replicas) {
  absl::StatusOr<int> first = ParseCudaDevice(device);
  if (!first.ok()) return first.status();
  if (!CudaSupportBuilt()) {
    return absl::FailedPreconditionError(absl::StrCat("--device=", device,
                                                      ": this pstrain was built without CUDA; install nvcc and "
                                                      "rebuild with -DPSTRAIN_CUDA=ON, or use --device=cpu"));
  }
  const int count = CudaDeviceCount();
  if (count == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device=", device, ": no CUDA device is visible (no GPU, or no NVIDIA driver); use --device=cpu"));
  }
  if (*first >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", device, ": ", count, " CUDA device(s) are visible (cuda:0..cuda:", count - 1, ")"));
  }
  return NewCudaComputerFactory(*first, replicas);
}

}  // namespace pstrain
