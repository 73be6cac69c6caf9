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

}  // namespace pstrain
