// Setup, input checks, buffers and the Compute/Evaluate entry points; the per-layer passes are in
// device_gradient_computer_passes.cc.
#include "worker/cuda/device_gradient_computer.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"

namespace pstrain {

using Memory = DeviceArray::Memory;

absl::StatusOr<std::unique_ptr<DeviceGradientComputer>> DeviceGradientComputer::Create(
    const ModelSpec& model, std::unique_ptr<DeviceBackend> backend, Options options) {
  ASSIGN_OR_RETURN(ModelPlan plan, PlanModel(model));
  std::unique_ptr<DeviceGradientComputer> c(new DeviceGradientComputer(std::move(plan), std::move(backend), options));
  RETURN_IF_ERROR(c->backend_->Activate());
  RETURN_IF_ERROR(c->backend_->CreateEvents(2 * static_cast<int>(c->plan_.layers.size())));
  const int64_t n = std::max<int64_t>(c->plan_.param_total, 1);
  RETURN_IF_ERROR(c->params_.Reserve(n));
  RETURN_IF_ERROR(c->grads_.Reserve(n));
  RETURN_IF_ERROR(c->params_host_.Reserve(n));
  RETURN_IF_ERROR(c->grads_host_.Reserve(n));
  return c;
}

DeviceGradientComputer::DeviceGradientComputer(ModelPlan plan, std::unique_ptr<DeviceBackend> backend, Options options)
    : plan_(std::move(plan)),
      options_(options),
      backend_(std::move(backend)),
      params_(backend_.get(), Memory::kDevice),
      grads_(backend_.get(), Memory::kDevice),
      params_host_(backend_.get(), Memory::kPinnedHost),
      grads_host_(backend_.get(), Memory::kPinnedHost),
      input_(backend_.get(), Memory::kDevice),
      labels_(backend_.get(), Memory::kDevice),
      batch_host_(backend_.get(), Memory::kPinnedHost),
      labels_host_(backend_.get(), Memory::kPinnedHost),
      activations_(backend_.get(), Memory::kDevice),
      dy_a_(backend_.get(), Memory::kDevice),
      dy_b_(backend_.get(), Memory::kDevice),
      col_(backend_.get(), Memory::kDevice),
      ones_(backend_.get(), Memory::kDevice),
      loss_(backend_.get(), Memory::kDevice),
      correct_(backend_.get(), Memory::kDevice),
      metrics_host_(backend_.get(), Memory::kPinnedHost),
      act_(plan_.layers.size(), nullptr) {}

DeviceGradientComputer::~DeviceGradientComputer() {
  // Work may still be queued after a failed step; drain it before the arrays free device memory.
  (void)backend_->Activate();
  (void)backend_->Synchronize();
}

absl::Status DeviceGradientComputer::CheckInputs(absl::Span<const Tensor> params, const Batch& batch) const {
  if (params.size() != plan_.variables.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", params.size(), " parameters, the model has ", plan_.variables.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const VariableSpec& v = plan_.variables[i];
    if (params[i].dtype() != DType::kFloat32 || params[i].shape() != v.shape) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", i, " (", v.name, ") is ",
                                                     DTypeName(params[i].dtype()), ShapeString(params[i].shape()),
                                                     ", the model needs float32", ShapeString(v.shape)));
    }
  }
  const Tensor& x = batch.inputs;
  std::vector<int64_t> want = {x.rank() == 0 ? 0 : x.dim(0)};
  want.insert(want.end(), plan_.layers[0].in_shape.begin(), plan_.layers[0].in_shape.end());
  if (x.dtype() != DType::kFloat32 || x.shape() != want) {
    return absl::InvalidArgumentError(absl::StrCat("batch inputs are ", DTypeName(x.dtype()), ShapeString(x.shape()),
                                                   ", the model needs float32", ShapeString(want)));
  }
  const int64_t b = batch.size();
  if (plan_.softmax_xent) {
    if (static_cast<int64_t>(batch.labels.size()) != b) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch has ", batch.labels.size(), " labels for ", b, " examples"));
    }
    for (size_t i = 0; i < batch.labels.size(); ++i) {
      if (batch.labels[i] < 0 || batch.labels[i] >= plan_.outputs) {
        return absl::InvalidArgumentError(
            absl::StrCat("label ", batch.labels[i], " of example ", i, " is outside [0, ", plan_.outputs, ")"));
      }
    }
  } else if (static_cast<int64_t>(batch.targets.size()) != b * plan_.outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch has ", batch.targets.size(), " targets, mse needs ", b, " x ", plan_.outputs));
  }
  const int64_t largest = std::max(b * plan_.max_activation, plan_.MaxColSize(b));
  if (largest > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("a batch of ", b, " needs a device buffer of ", largest,
                                                   " elements, over the kernels' 2^31-1 limit; use a smaller batch"));
  }
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::ReserveForBatch(int batch) {
  if (batch > batch_capacity_) {
    int64_t act_total = 0;
    for (const LayerPlan& l : plan_.layers) act_total += l.kind == DeviceLayerKind::kFlatten ? 0 : batch * l.out_size;
    const int64_t dy = int64_t{batch} * plan_.max_activation;
    const int64_t ones = std::max<int64_t>(batch, plan_.MaxConvRows(batch));
    const int64_t label_floats = plan_.softmax_xent ? batch : batch * plan_.outputs;
    RETURN_IF_ERROR(input_.Reserve(int64_t{batch} * plan_.input_size));
    RETURN_IF_ERROR(batch_host_.Reserve(int64_t{batch} * plan_.input_size));
    RETURN_IF_ERROR(labels_.Reserve(label_floats));
    RETURN_IF_ERROR(labels_host_.Reserve(label_floats));
    RETURN_IF_ERROR(activations_.Reserve(act_total));
    RETURN_IF_ERROR(dy_a_.Reserve(dy));
    RETURN_IF_ERROR(dy_b_.Reserve(dy));
    RETURN_IF_ERROR(col_.Reserve(std::max<int64_t>(plan_.MaxColSize(batch), 1)));
    RETURN_IF_ERROR(ones_.Reserve(ones));
    if (ones_filled_ != ones_.capacity()) {  // a new allocation (or a fill that failed last time)
      RETURN_IF_ERROR(backend_->Fill(ones_.get(), 1.0f, ones_.capacity()));
      ones_filled_ = ones_.capacity();
    }
    RETURN_IF_ERROR(loss_.Reserve(batch));
    RETURN_IF_ERROR(correct_.Reserve(batch));
    RETURN_IF_ERROR(metrics_host_.Reserve(2 * int64_t{batch}));
    batch_capacity_ = batch;
  }
  // Activation slices depend on the batch size, not only on the capacity.
  float* next = activations_.get();
  for (size_t i = 0; i < plan_.layers.size(); ++i) {
    if (plan_.layers[i].kind == DeviceLayerKind::kFlatten) {
      act_[i] = const_cast<float*>(LayerInput(static_cast<int>(i)));
    } else {
      act_[i] = next;
      next += batch * plan_.layers[i].out_size;
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::UploadBatch(const Batch& batch) {
  const int64_t b = batch.size();
  const int64_t n = b * plan_.input_size;
  std::memcpy(batch_host_.get(), batch.inputs.data<float>(), n * sizeof(float));
  RETURN_IF_ERROR(backend_->CopyToDevice(DeviceStream::kCompute, input_.get(), batch_host_.get(), n));
  float* labels = labels_host_.get();
  if (plan_.softmax_xent) {
    for (int64_t i = 0; i < b; ++i) labels[i] = static_cast<float>(batch.labels[i]);
    return backend_->CopyToDevice(DeviceStream::kCompute, labels_.get(), labels, b);
  }
  std::memcpy(labels, batch.targets.data(), batch.targets.size() * sizeof(float));
  return backend_->CopyToDevice(DeviceStream::kCompute, labels_.get(), labels, b * plan_.outputs);
}

void DeviceGradientComputer::ReadMetrics(int batch, BatchMetrics* metrics) const {
  const float* host = metrics_host_.get();
  *metrics = BatchMetrics{};
  metrics->examples = batch;
  for (int i = 0; i < batch; ++i) {
    metrics->loss_sum += host[i];
    if (plan_.softmax_xent) metrics->correct += host[batch + i] > 0.5f ? 1 : 0;
  }
}

void DeviceGradientComputer::PrepareGrads(std::vector<Tensor>* grads, bool zero) const {
  bool reuse = grads->size() == plan_.variables.size();
  for (size_t i = 0; reuse && i < grads->size(); ++i) {
    reuse = (*grads)[i].dtype() == DType::kFloat32 && (*grads)[i].shape() == plan_.variables[i].shape;
  }
  if (!reuse) {
    grads->clear();
    for (const VariableSpec& v : plan_.variables) grads->emplace_back(DType::kFloat32, v.shape);  // zeroed
  } else if (zero) {
    for (Tensor& g : *grads) std::memset(g.raw(), 0, g.num_bytes());
  }
}

// A failed step may leave copies and kernels queued that still read the pinned staging buffers:
// drain them before the next step reuses those buffers.
absl::Status DeviceGradientComputer::Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                                             std::vector<Tensor>* grads, BatchMetrics* metrics) {
  absl::Status s = RunCompute(params, batch, loss_scale, grads, metrics);
  if (!s.ok()) (void)backend_->Synchronize();
  return s;
}

absl::Status DeviceGradientComputer::Evaluate(absl::Span<const Tensor> params, const Batch& batch,
                                              BatchMetrics* metrics) {
  absl::Status s = RunEvaluate(params, batch, metrics);
  if (!s.ok()) (void)backend_->Synchronize();
  return s;
}

absl::Status DeviceGradientComputer::RunCompute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                                                std::vector<Tensor>* grads, BatchMetrics* metrics) {
  RETURN_IF_ERROR(CheckInputs(params, batch));
  const int b = static_cast<int>(batch.size());
  PrepareGrads(grads, /*zero=*/b == 0);
  *metrics = BatchMetrics{};
  last_batch_ = 0;
  if (b == 0) return absl::OkStatus();  // zero gradients, nothing to run
  RETURN_IF_ERROR(backend_->Activate());
  RETURN_IF_ERROR(ReserveForBatch(b));
  RETURN_IF_ERROR(UploadBatch(batch));
  RETURN_IF_ERROR(Forward(params, b));
  RETURN_IF_ERROR(LossAndMetricsCopy(b, loss_scale));
  RETURN_IF_ERROR(Backward(b));
  RETURN_IF_ERROR(backend_->Synchronize());
  for (size_t i = 0; i < grads->size(); ++i) {
    Tensor& g = (*grads)[i];
    std::memcpy(g.data<float>(), grads_host_.get() + plan_.param_offsets[i], g.num_bytes());
  }
  ReadMetrics(b, metrics);
  last_batch_ = b;
  last_was_compute_ = true;
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::RunEvaluate(absl::Span<const Tensor> params, const Batch& batch,
                                                 BatchMetrics* metrics) {
  RETURN_IF_ERROR(CheckInputs(params, batch));
  const int b = static_cast<int>(batch.size());
  *metrics = BatchMetrics{};
  last_batch_ = 0;
  if (b == 0) return absl::OkStatus();
  RETURN_IF_ERROR(backend_->Activate());
  RETURN_IF_ERROR(ReserveForBatch(b));
  RETURN_IF_ERROR(UploadBatch(batch));
  RETURN_IF_ERROR(Forward(params, b));
  RETURN_IF_ERROR(LossAndMetricsCopy(b, 0.0f));
  RETURN_IF_ERROR(backend_->Synchronize());
  ReadMetrics(b, metrics);
  last_batch_ = b;
  last_was_compute_ = false;
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::ReadActivation(int layer, std::vector<float>* out) {
  if (last_batch_ == 0 || layer < 0 || layer >= static_cast<int>(plan_.layers.size())) {
    return absl::FailedPreconditionError("ReadActivation needs a layer index and a finished non-empty step");
  }
  const int64_t n = int64_t{last_batch_} * plan_.layers[layer].out_size;
  RETURN_IF_ERROR(backend_->Activate());
  DeviceArray host(backend_.get(), Memory::kPinnedHost);
  RETURN_IF_ERROR(host.Reserve(n));
  RETURN_IF_ERROR(backend_->CopyToHost(DeviceStream::kCompute, host.get(), act_[layer], n));
  RETURN_IF_ERROR(backend_->Synchronize());
  out->assign(host.get(), host.get() + n);
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::ReadInputGradient(std::vector<float>* out) {
  if (!options_.input_gradient || !last_was_compute_ || last_batch_ == 0 || input_grad_ == nullptr) {
    return absl::FailedPreconditionError("ReadInputGradient needs Options::input_gradient and a finished Compute");
  }
  const int64_t n = int64_t{last_batch_} * plan_.input_size;
  RETURN_IF_ERROR(backend_->Activate());
  DeviceArray host(backend_.get(), Memory::kPinnedHost);
  RETURN_IF_ERROR(host.Reserve(n));
  RETURN_IF_ERROR(backend_->CopyToHost(DeviceStream::kCompute, host.get(), input_grad_, n));
  RETURN_IF_ERROR(backend_->Synchronize());
  out->assign(host.get(), host.get() + n);
  return absl::OkStatus();
}

}  // namespace pstrain
