// Maps a --device name to the GradientComputer factory that runs on it. "cpu" is always there;
// other devices are added here when their kernels are built.
// Thread-safety: pure function.
#ifndef PSTRAIN_WORKER_DEVICE_H_
#define PSTRAIN_WORKER_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "worker/replica_set.h"

namespace pstrain {

// InvalidArgument naming the devices this build supports for an unknown or unavailable device.
absl::StatusOr<GradientComputerFactory> ComputeFactoryForDevice(const std::string& device);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DEVICE_H_
