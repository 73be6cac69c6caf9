// HostBackend: a DeviceBackend that runs on the CPU, serially, with the very kernel bodies the GPU
// runs (layer_kernels.h) and a naive column-major GEMM with cuBLAS's contract. It exists so the
// device executor (buffer plan, GEMM operand mapping, pass order) is tested on machines without a
// GPU; it is not meant to be fast. Streams run in order at once, so events are no-ops. It counts live
// allocations so tests can show that steady-state steps allocate nothing.
// Thread-safety: none; one thread at a time.
#ifndef PSTRAIN_WORKER_CUDA_HOST_BACKEND_H_
#define PSTRAIN_WORKER_CUDA_HOST_BACKEND_H_

#include <memory>
#include <string>

#include "worker/cuda/device_backend.h"

namespace pstrain {

class HostBackend : public DeviceBackend {
 public:
  // Counters shared with the test that created the backend (the executor owns the backend).
  struct Counters {
    int64_t live_allocations = 0;
    int64_t total_allocations = 0;
  };
  explicit HostBackend(std::shared_ptr<Counters> counters = std::make_shared<Counters>())
      : counters_(std::move(counters)) {}

  const std::string& name() const override { return name_; }
  absl::Status Activate() override { return absl::OkStatus(); }
  absl::StatusOr<float*> Malloc(int64_t count) override;
  void Free(float* p) override;
  absl::StatusOr<float*> MallocHost(int64_t count) override { return Malloc(count); }
  void FreeHost(float* p) override { Free(p); }
  int64_t allocation_count() const override { return counters_->total_allocations; }
  absl::Status CopyToDevice(DeviceStream, float* dst, const float* src, int64_t count) override;
  absl::Status CopyToHost(DeviceStream, float* dst, const float* src, int64_t count) override;
  absl::Status CreateEvents(int) override { return absl::OkStatus(); }
  absl::Status RecordEvent(DeviceStream, int) override { return absl::OkStatus(); }
  absl::Status WaitEvent(DeviceStream, int) override { return absl::OkStatus(); }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::Status Fill(float* dst, float value, int64_t count) override;
  absl::Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) override;
  absl::Status Im2Col(const ConvGeometry& g, const float* x, float* col) override;
  absl::Status Col2Im(const ConvGeometry& g, const float* dcol, float* dx) override;
  absl::Status BiasAct(int rows, int cols, const float* x, const float* bias, bool relu, float* y) override;
  absl::Status ReluGrad(int count, const float* y, const float* dy, float* dx) override;
  absl::Status MaxPoolForward(const PoolGeometry& g, const float* x, float* y) override;
  absl::Status MaxPoolBackward(const PoolGeometry& g, const float* x, const float* dy, float* dx) override;
  absl::Status SoftmaxXent(int batch, int classes, const float* logits, const float* labels, float scale,
                           float* dlogits, float* loss, float* correct) override;
  absl::Status Mse(int batch, int outputs, const float* y, const float* targets, float scale, float* dy,
                   float* loss) override;

 private:
  const std::string name_ = "host-emulation";
  std::shared_ptr<Counters> counters_;
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_CUDA_HOST_BACKEND_H_
