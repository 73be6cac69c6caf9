// DeviceArray: owns one float allocation made through a DeviceBackend (device memory, or page-locked
// host memory), freed on destruction; Reserve grows it only when a larger size is asked for, so
// buffers sized for a batch are reused across steps.
// Thread-safety: none. The backend must outlive the array (declare it before the arrays).
#ifndef PSTRAIN_WORKER_CUDA_DEVICE_ARRAY_H_
#define PSTRAIN_WORKER_CUDA_DEVICE_ARRAY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "worker/cuda/device_backend.h"

namespace pstrain {

class DeviceArray {
 public:
  enum class Memory { kDevice, kPinnedHost };

  DeviceArray(DeviceBackend* backend, Memory memory) : backend_(backend), memory_(memory) {}
  ~DeviceArray() { Release(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // Ensures room for `count` floats; reallocates (contents lost) only when count > capacity().
  // ResourceExhausted / Internal from the backend on failure.
  absl::Status Reserve(int64_t count) {
    if (count <= capacity_) return absl::OkStatus();
    Release();
    absl::StatusOr<float*> p = memory_ == Memory::kDevice ? backend_->Malloc(count) : backend_->MallocHost(count);
    if (!p.ok()) return p.status();
    data_ = *p;
    capacity_ = count;
    return absl::OkStatus();
  }

  float* get() const { return data_; }
  int64_t capacity() const { return capacity_; }

 private:
  void Release() {
    if (data_ == nullptr) return;
    if (memory_ == Memory::kDevice) {
      backend_->Free(data_);
    } else {
      backend_->FreeHost(data_);
    }
    data_ = nullptr;
    capacity_ = 0;
  }

  DeviceBackend* const backend_;  // not owned
  const Memory memory_;
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_DEVICE_ARRAY_H_
