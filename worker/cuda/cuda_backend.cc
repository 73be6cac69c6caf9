#include "worker/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/cuda/cuda_gradient_computer.h"
#include "worker/cuda/cuda_kernels.h"

namespace pstrain {
namespace {

// "cudaMalloc on cuda:0: out of memory (cudaErrorMemoryAllocation)". Clears the runtime's last-error
// slot so a later, unrelated launch check is not blamed for this failure.
absl::Status CudaStatus(cudaError_t e, const char* call, const std::string& device) {
  if (e == cudaSuccess) return absl::OkStatus();
  (void)cudaGetLastError();
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (e == cudaErrorMemoryAllocation) code = absl::StatusCode::kResourceExhausted;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) code = absl::StatusCode::kFailedPrecondition;
  std::string hint;
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion) {
    hint =
        "; pstrain's kernels were built for CMAKE_CUDA_ARCHITECTURES (default 90 + PTX): rebuild with "
        "-DCMAKE_CUDA_ARCHITECTURES=<this GPU's, e.g. 80> or update the NVIDIA driver";
  }
  return absl::Status(
      code, absl::StrCat(call, " on ", device, ": ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")", hint));
}

absl::Status CublasStatus(cublasStatus_t s, const char* call, const std::string& device) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const absl::StatusCode code =
      s == CUBLAS_STATUS_ALLOC_FAILED ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrCat(call, " on ", device, ": ", cublasGetStatusString(s), " (", cublasGetStatusName(s), ")"));
}

#define PSTRAIN_CUDA(call, ...) RETURN_IF_ERROR(CudaStatus(call(__VA_ARGS__), #call, name_))
#define PSTRAIN_CUBLAS(call, ...) RETURN_IF_ERROR(CublasStatus(call(__VA_ARGS__), #call, name_))

class CudaBackend : public DeviceBackend {
 public:
  explicit CudaBackend(int device) : device_(device), name_(absl::StrCat("cuda:", device)) {}
  ~CudaBackend() override;
  absl::Status Init();

  const std::string& name() const override { return name_; }
  absl::Status Activate() override {
    PSTRAIN_CUDA(cudaSetDevice, device_);
    return absl::OkStatus();
  }
  absl::StatusOr<float*> Malloc(int64_t count) override {
    void* p = nullptr;
    RETURN_IF_ERROR(Activate());
    PSTRAIN_CUDA(cudaMalloc, &p, count * sizeof(float));
    ++allocations_;
    return static_cast<float*>(p);
  }
  void Free(float* p) override {
    (void)cudaSetDevice(device_);
    (void)cudaFree(p);
  }
  absl::StatusOr<float*> MallocHost(int64_t count) override {
    void* p = nullptr;
    PSTRAIN_CUDA(cudaMallocHost, &p, count * sizeof(float));
    ++allocations_;
    return static_cast<float*>(p);
  }
  int64_t allocation_count() const override { return allocations_; }
  void FreeHost(float* p) override { (void)cudaFreeHost(p); }
  absl::Status CopyToDevice(DeviceStream s, float* dst, const float* src, int64_t count) override {
    PSTRAIN_CUDA(cudaMemcpyAsync, dst, src, count * sizeof(float), cudaMemcpyHostToDevice, stream(s));
    return absl::OkStatus();
  }
  absl::Status CopyToHost(DeviceStream s, float* dst, const float* src, int64_t count) override {
    PSTRAIN_CUDA(cudaMemcpyAsync, dst, src, count * sizeof(float), cudaMemcpyDeviceToHost, stream(s));
    return absl::OkStatus();
  }
  absl::Status CreateEvents(int count) override;
  absl::Status RecordEvent(DeviceStream s, int event) override {
    PSTRAIN_CUDA(cudaEventRecord, events_.at(event), stream(s));
    return absl::OkStatus();
  }
  absl::Status WaitEvent(DeviceStream s, int event) override {
    PSTRAIN_CUDA(cudaStreamWaitEvent, stream(s), events_.at(event), 0);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override {
    PSTRAIN_CUDA(cudaStreamSynchronize, compute_);
    PSTRAIN_CUDA(cudaStreamSynchronize, copy_);
    return absl::OkStatus();
  }
  absl::Status Fill(float* dst, float value, int64_t count) override {
    PSTRAIN_CUDA(LaunchFill, cfg(), dst, value, static_cast<int>(count));
    return absl::OkStatus();
  }
  absl::Status Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) override {
    PSTRAIN_CUBLAS(cublasSgemm, blas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                   k, &alpha, a, lda, b, ldb, &beta, c, ldc);
    return absl::OkStatus();
  }
  absl::Status Im2Col(const ConvGeometry& g, const float* x, float* col) override {
    PSTRAIN_CUDA(LaunchIm2Col, cfg(), g, x, col);
    return absl::OkStatus();
  }
  absl::Status Col2Im(const ConvGeometry& g, const float* dcol, float* dx) override {
    PSTRAIN_CUDA(LaunchCol2Im, cfg(), g, dcol, dx);
    return absl::OkStatus();
  }
  absl::Status BiasAct(int rows, int cols, const float* x, const float* bias, bool relu, float* y) override {
    PSTRAIN_CUDA(LaunchBiasAct, cfg(), rows, cols, x, bias, relu, y);
    return absl::OkStatus();
  }
  absl::Status ReluGrad(int count, const float* y, const float* dy, float* dx) override {
    PSTRAIN_CUDA(LaunchReluGrad, cfg(), count, y, dy, dx);
    return absl::OkStatus();
  }
  absl::Status MaxPoolForward(const PoolGeometry& g, const float* x, float* y) override {
    PSTRAIN_CUDA(LaunchMaxPoolForward, cfg(), g, x, y);
    return absl::OkStatus();
  }
  absl::Status MaxPoolBackward(const PoolGeometry& g, const float* x, const float* dy, float* dx) override {
    PSTRAIN_CUDA(LaunchMaxPoolBackward, cfg(), g, x, dy, dx);
    return absl::OkStatus();
  }
  absl::Status SoftmaxXent(int batch, int classes, const float* logits, const float* labels, float scale,
                           float* dlogits, float* loss, float* correct) override {
    PSTRAIN_CUDA(LaunchSoftmaxXent, cfg(), batch, classes, logits, labels, scale, dlogits, loss, correct);
    return absl::OkStatus();
  }
  absl::Status Mse(int batch, int outputs, const float* y, const float* targets, float scale, float* dy,
                   float* loss) override {
    PSTRAIN_CUDA(LaunchMse, cfg(), batch, outputs, y, targets, scale, dy, loss);
    return absl::OkStatus();
  }

 private:
  cudaStream_t stream(DeviceStream s) const { return s == DeviceStream::kCompute ? compute_ : copy_; }
  LaunchConfig cfg() const { return LaunchConfig{compute_, max_blocks_}; }
  void DestroyEvents();

  const int device_;
  const std::string name_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::vector<cudaEvent_t> events_;
  int max_blocks_ = 1024;
  int64_t allocations_ = 0;
};

absl::Status CudaBackend::Init() {
  RETURN_IF_ERROR(Activate());
  int sms = 0;
  PSTRAIN_CUDA(cudaDeviceGetAttribute, &sms, cudaDevAttrMultiProcessorCount, device_);
  max_blocks_ = sms > 0 ? sms * 8 : 1024;  // 8 blocks x 256 threads fill an SM; grid-stride does the rest
  PSTRAIN_CUDA(cudaStreamCreateWithFlags, &compute_, cudaStreamNonBlocking);
  PSTRAIN_CUDA(cudaStreamCreateWithFlags, &copy_, cudaStreamNonBlocking);
  PSTRAIN_CUBLAS(cublasCreate, &blas_);
  PSTRAIN_CUBLAS(cublasSetStream, blas_, compute_);
  // Plain FP32 (no TF32 tensor-core rounding) keeps the GPU within float error of the CPU reference.
  PSTRAIN_CUBLAS(cublasSetMathMode, blas_, CUBLAS_DEFAULT_MATH);
  return absl::OkStatus();
}

void CudaBackend::DestroyEvents() {
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  events_.clear();
}

absl::Status CudaBackend::CreateEvents(int count) {
  RETURN_IF_ERROR(Activate());
  DestroyEvents();
  for (int i = 0; i < count; ++i) {
    cudaEvent_t e = nullptr;
    PSTRAIN_CUDA(cudaEventCreateWithFlags, &e, cudaEventDisableTiming);
    events_.push_back(e);
  }
  return absl::OkStatus();
}

CudaBackend::~CudaBackend() {
  // Teardown errors cannot be reported from a destructor; the device is drained first.
  (void)cudaSetDevice(device_);
  if (compute_ != nullptr) (void)cudaStreamSynchronize(compute_);
  if (copy_ != nullptr) (void)cudaStreamSynchronize(copy_);
  DestroyEvents();
  if (blas_ != nullptr) (void)cublasDestroy(blas_);
  if (compute_ != nullptr) (void)cudaStreamDestroy(compute_);
  if (copy_ != nullptr) (void)cudaStreamDestroy(copy_);
}

// Number of devices, or the reason there are none.
absl::StatusOr<int> VisibleDevices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    const char* why = e == cudaErrorInsufficientDriver ? "no usable NVIDIA driver" : "the CUDA runtime found no GPU";
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device: ", why, " (cudaGetDeviceCount: ", cudaGetErrorString(e), ", ", cudaGetErrorName(e), ")"));
  }
  if (count == 0) return absl::FailedPreconditionError("no CUDA device: cudaGetDeviceCount reports 0 GPUs");
  return count;
}

}  // namespace

bool CudaSupportBuilt() { return true; }

int CudaDeviceCount() {
  absl::StatusOr<int> count = VisibleDevices();
  return count.ok() ? *count : 0;
}

absl::StatusOr<std::unique_ptr<DeviceBackend>> NewCudaBackend(int device_index) {
  absl::StatusOr<int> count = VisibleDevices();
  if (!count.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(count.status().message(), "; cuda:", device_index,
                                                      " was requested: run on a machine with an NVIDIA GPU and "
                                                      "driver, or use --device=cpu"));
  }
  if (device_index < 0 || device_index >= *count) {
    return absl::InvalidArgumentError(absl::StrCat("cuda:", device_index, " does not exist: ", *count,
                                                   " CUDA device(s) are visible (cuda:0..cuda:", *count - 1, ")"));
  }
  auto backend = std::make_unique<CudaBackend>(device_index);
  RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<DeviceBackend>(std::move(backend));
}

absl::StatusOr<CudaMemoryInfo> CudaDeviceMemory(int device_index) {
  const std::string name = absl::StrCat("cuda:", device_index);
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device_index), "cudaSetDevice", name));
  size_t free_bytes = 0, total_bytes = 0;
  RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo", name));
  return CudaMemoryInfo{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}

}  // namespace pstrain
