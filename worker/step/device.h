// Maps a --device name to the GradientComputer factory that runs on it: "cpu" (always there) or
// "cuda" / "cuda:N" (GPU N, when this build has CUDA support and the GPU is visible).
// Thread-safety: pure function.
#ifndef PSTRAIN_WORKER_STEP_DEVICE_H_
#define PSTRAIN_WORKER_STEP_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "worker/step/replica_set.h"

namespace pstrain {

// `replicas` local replicas will be built from the factory (on GPUs they occupy consecutive
// devices). InvalidArgument for an unknown device or GPU index; FailedPrecondition when CUDA
// support was not built or no GPU is visible. A CUDA factory refuses CTR models (InvalidArgument):
// they run on CPU workers.
absl::StatusOr<GradientComputerFactory> ComputeFactoryForDevice(const std::string& device, int replicas);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_DEVICE_H_
