// The CUDA GradientComputer and device helpers, in a plain C++ header (no CUDA includes) so the
// worker's CPU code can include it whether or not CUDA support was built. The library target
// pstrain_worker_cuda defines PSTRAIN_HAVE_CUDA=1 for its users when it was built with nvcc; without
// nvcc the same functions exist and report that CUDA is unavailable.
//
// How the worker uses it (e.g. --device=cuda:1 --replicas=2):
//   ASSIGN_OR_RETURN(GradientComputerFactory f, CudaFactoryForDevice(flag, replicas));
//   // = ParseCudaDevice + availability checks + NewCudaComputerFactory; f goes to ReplicaSet::Create
// Each replica thread owns its computer; computers on different devices run concurrently.
// Thread-safety: the free functions are thread-safe; a computer follows the GradientComputer contract.
#ifndef PSTRAIN_WORKER_CUDA_CUDA_GRADIENT_COMPUTER_H_
#define PSTRAIN_WORKER_CUDA_CUDA_GRADIENT_COMPUTER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/step/gradient_computer.h"

namespace pstrain {

// True when this binary was built with CUDA support (nvcc found at configure time).
bool CudaSupportBuilt();

// Number of visible CUDA devices; 0 when CUDA support was not built, no driver is installed, or no
// GPU is present. Never fails or aborts.
int CudaDeviceCount();

// Parses a --device value naming a GPU: "cuda" -> 0, "cuda:3" -> 3. InvalidArgument for anything
// else (including "cpu", which the caller handles itself). Does not check that the device exists.
absl::StatusOr<int> ParseCudaDevice(const std::string& device);

// A GradientComputer running `model` on GPU `device_index` (forward + backward with cuBLAS GEMMs and
// pstrain's own kernels; see worker/cuda/device_gradient_computer.h for semantics and streams).
// Errors: FailedPrecondition when CUDA was not built or no GPU is visible; InvalidArgument when
// device_index is out of range or the model cannot run; ResourceExhausted / Internal from CUDA,
// cuBLAS naming the call and the device ("cudaMalloc on cuda:0: out of memory ...").
absl::StatusOr<std::unique_ptr<GradientComputer>> NewCudaGradientComputer(const ModelSpec& model, int device_index);

// The signature of worker/step/replica_set.h's GradientComputerFactory (model, threads).
using CudaComputerFactory =
    std::function<absl::StatusOr<std::unique_ptr<GradientComputer>>(const ModelSpec& model, int threads)>;

// A factory for a worker's local replicas: its n-th call builds a computer on GPU
// (first_device + n % replicas) % CudaDeviceCount(), so the R replicas of one ReplicaSet occupy
// cuda:first .. cuda:first+R-1 (wrapping around, several replicas per GPU, when fewer are visible).
// `threads` is ignored: each replica's host thread drives its own GPU. Errors as
// NewCudaGradientComputer. REQUIRES: replicas >= 1. Thread-safe.
CudaComputerFactory NewCudaComputerFactory(int first_device, int replicas);

// Everything a --device=cuda[:N] flag needs, checked up front (at startup, not at the first job):
// InvalidArgument for a malformed value or a device index beyond the visible GPUs,
// FailedPrecondition when CUDA support was not built or no GPU is visible; otherwise the factory of
// NewCudaComputerFactory(N, replicas). REQUIRES: replicas >= 1.
absl::StatusOr<CudaComputerFactory> CudaFactoryForDevice(const std::string& device, int replicas);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_CUDA_GRADIENT_COMPUTER_H_
