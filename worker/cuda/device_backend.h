// DeviceBackend: the few primitives the device model executor (device_gradient_computer.h) needs from
// an accelerator: memory, copies, two ordered streams with events, a column-major GEMM with cuBLAS
// semantics, and the element-wise layer kernels of layer_kernels.h. CudaBackend (cuda_backend.h)
// implements it on a GPU; HostBackend (host_backend.h) runs the same kernel bodies serially on the
// CPU so the executor's logic is tested on machines without a GPU.
//
// Work is enqueued on a stream and may run asynchronously; the executor orders streams with events
// and calls Synchronize() before reading host buffers. Every call returns a Status naming the failed
// operation and the device; none aborts.
// Thread-safety: none; one backend per executor, used by one thread at a time.
#ifndef PSTRAIN_WORKER_CUDA_DEVICE_BACKEND_H_
#define PSTRAIN_WORKER_CUDA_DEVICE_BACKEND_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/cuda/layer_kernels.h"

namespace pstrain {

enum class DeviceStream { kCompute, kCopy };

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // "cuda:0", "host-emulation": used in every error message.
  virtual const std::string& name() const = 0;

  // Makes this backend's device current for the calling thread; call at the start of every
  // top-level operation (a thread may drive several devices).
  virtual absl::Status Activate() = 0;

  // Device memory for `count` floats (count > 0). The caller owns it and returns it with Free.
  // ResourceExhausted when the device is out of memory.
  virtual absl::StatusOr<float*> Malloc(int64_t count) = 0;
  virtual void Free(float* device_ptr) = 0;
  // Page-locked host memory (fast asynchronous copies); same ownership rule with FreeHost.
  virtual absl::StatusOr<float*> MallocHost(int64_t count) = 0;
  virtual void FreeHost(float* host_ptr) = 0;
  // Successful Malloc + MallocHost calls so far (tests: a steady-state step allocates nothing).
  virtual int64_t allocation_count() const = 0;

  // Asynchronous copies on `stream`. REQUIRES: host pointers come from MallocHost and stay untouched
  // until the stream is synchronized.
  virtual absl::Status CopyToDevice(DeviceStream stream, float* dst, const float* src_host, int64_t count) = 0;
  virtual absl::Status CopyToHost(DeviceStream stream, float* dst_host, const float* src, int64_t count) = 0;

  // Events 0..count-1, reusable every step. Record marks the point reached by `stream`; Wait makes
  // later work on `stream` wait for the last recorded point of `event`.
  virtual absl::Status CreateEvents(int count) = 0;
  virtual absl::Status RecordEvent(DeviceStream stream, int event) = 0;
  virtual absl::Status WaitEvent(DeviceStream stream, int event) = 0;
  // Blocks until all work on both streams has finished; reports asynchronous kernel failures.
  virtual absl::Status Synchronize() = 0;

  // The kernels below run on the compute stream.
  // dst[0..count) = value.
  virtual absl::Status Fill(float* dst, float value, int64_t count) = 0;
  // C = alpha op(A) op(B) + beta C, COLUMN-major, exactly cublasSgemm's contract.
  virtual absl::Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                            const float* b, int ldb, float beta, float* c, int ldc) = 0;
  virtual absl::Status Im2Col(const ConvGeometry& g, const float* x, float* col) = 0;
  virtual absl::Status Col2Im(const ConvGeometry& g, const float* dcol, float* dx) = 0;
  // y = act(x + bias) over a [rows, cols] matrix; bias may be null; x may equal y.
  virtual absl::Status BiasAct(int rows, int cols, const float* x, const float* bias, bool relu, float* y) = 0;
  // dx = dy where y > 0, else 0 (count elements); dx may equal dy.
  virtual absl::Status ReluGrad(int count, const float* y, const float* dy, float* dx) = 0;
  virtual absl::Status MaxPoolForward(const PoolGeometry& g, const float* x, float* y) = 0;
  virtual absl::Status MaxPoolBackward(const PoolGeometry& g, const float* x, const float* dy, float* dx) = 0;
  // Per example (batch rows of `classes` logits): dlogits, loss[b], correct[b] (see layer_kernels.h).
  virtual absl::Status SoftmaxXent(int batch, int classes, const float* logits, const float* labels, float scale,
                                   float* dlogits, float* loss, float* correct) = 0;
  virtual absl::Status Mse(int batch, int outputs, const float* y, const float* targets, float scale, float* dy,
                           float* loss) = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_DEVICE_BACKEND_H_
