// The forward, loss and backward passes of DeviceGradientComputer, layer by layer.
//
// Stream protocol (events: layer i's parameters = i, layer i's gradients = L + i):
//   copy stream:    H2D params[0] -> rec(0)  H2D params[1] -> rec(1) ...  wait(L+i) D2H grads[i] ...
//   compute stream: wait(0) fwd[0]  wait(1) fwd[1] ... loss  bwd[L-1] rec(L+L-1) ... bwd[i] rec(L+i)
// so parameter uploads overlap the forward pass and gradient downloads overlap the backward pass.
// The host stages layer i+1's parameters into pinned memory while the device computes layer i.
#include <cstring>
#include <utility>

#include "common/platform/status_macros.h"
#include "worker/cuda/device_gradient_computer.h"

namespace pstrain {

absl::Status DeviceGradientComputer::RowMajorGemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                                                  const float* b, float beta, float* c) {
  // Row-major C[m,n] = op(A)[m,k] op(B)[k,n] is column-major C^T = op(B)^T op(A)^T: swap the operands.
  // A is stored [m,k] (or [k,m] when transposed), B [k,n] (or [n,k]).
  return backend_->Gemm(trans_b, trans_a, n, m, k, 1.0f, b, trans_b ? k : n, a, trans_a ? m : k, beta, c, n);
}

absl::Status DeviceGradientComputer::UploadLayerParams(int layer, absl::Span<const Tensor> params) {
  const LayerPlan& l = plan_.layers[layer];
  if (!l.has_params()) return absl::OkStatus();
  const int first = l.kernel_param;
  const int last = l.bias_param >= 0 ? l.bias_param : l.kernel_param;
  const int64_t begin = plan_.param_offsets[first];
  int64_t count = 0;
  for (int p = first; p <= last; ++p) {
    std::memcpy(params_host_.get() + plan_.param_offsets[p], params[p].data<float>(), params[p].num_bytes());
    count += params[p].num_elements();
  }
  RETURN_IF_ERROR(
      backend_->CopyToDevice(DeviceStream::kCopy, params_.get() + begin, params_host_.get() + begin, count));
  RETURN_IF_ERROR(backend_->RecordEvent(DeviceStream::kCopy, layer));
  return backend_->WaitEvent(DeviceStream::kCompute, layer);
}

absl::Status DeviceGradientComputer::Forward(absl::Span<const Tensor> params, int batch) {
  for (int i = 0; i < static_cast<int>(plan_.layers.size()); ++i) {
    RETURN_IF_ERROR(UploadLayerParams(i, params));
    RETURN_IF_ERROR(ForwardLayer(i, batch));
  }
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::ForwardLayer(int i, int batch) {
  const LayerPlan& l = plan_.layers[i];
  const float* x = LayerInput(i);
  float* y = act_[i];
  const float* bias = Param(l.bias_param);
  switch (l.kind) {
    case DeviceLayerKind::kDense:
      RETURN_IF_ERROR(RowMajorGemm(false, false, batch, static_cast<int>(l.out_size), static_cast<int>(l.in_size), x,
                                   Param(l.kernel_param), 0.0f, y));
      if (bias == nullptr && !l.relu) return absl::OkStatus();
      return backend_->BiasAct(batch, static_cast<int>(l.out_size), y, bias, l.relu, y);
    case DeviceLayerKind::kConv2D: {
      const ConvGeometry g = plan_.Conv(i, batch);
      RETURN_IF_ERROR(backend_->Im2Col(g, x, col_.get()));
      RETURN_IF_ERROR(
          RowMajorGemm(false, false, g.rows(), g.out_c, g.patch(), col_.get(), Param(l.kernel_param), 0.0f, y));
      if (bias == nullptr && !l.relu) return absl::OkStatus();
      return backend_->BiasAct(g.rows(), g.out_c, y, bias, l.relu, y);
    }
    case DeviceLayerKind::kMaxPool:
      return backend_->MaxPoolForward(plan_.Pool(i, batch), x, y);
    case DeviceLayerKind::kRelu:
      return backend_->BiasAct(batch, static_cast<int>(l.out_size), x, nullptr, true, y);
    case DeviceLayerKind::kFlatten:
      return absl::OkStatus();  // same NHWC bytes, act_[i] aliases the input
  }
  return absl::InternalError("unknown layer kind");
}

absl::Status DeviceGradientComputer::LossAndMetricsCopy(int batch, float loss_scale) {
  const float* out = act_.back();
  const int n = static_cast<int>(plan_.outputs);
  float* host = metrics_host_.get();
  if (plan_.softmax_xent) {
    RETURN_IF_ERROR(
        backend_->SoftmaxXent(batch, n, out, labels_.get(), loss_scale, dy_a_.get(), loss_.get(), correct_.get()));
    RETURN_IF_ERROR(backend_->CopyToHost(DeviceStream::kCompute, host + batch, correct_.get(), batch));
  } else {
    RETURN_IF_ERROR(backend_->Mse(batch, n, out, labels_.get(), loss_scale, dy_a_.get(), loss_.get()));
  }
  return backend_->CopyToHost(DeviceStream::kCompute, host, loss_.get(), batch);
}

absl::Status DeviceGradientComputer::Backward(int batch) {
  const int lowest = options_.input_gradient ? 0 : plan_.first_trainable;
  float* dy = dy_a_.get();  // holds d(loss)/d(last output) after LossAndMetricsCopy
  float* spare = dy_b_.get();
  input_grad_ = nullptr;
  if (lowest < 0) return absl::OkStatus();  // nothing trainable and no input gradient wanted
  for (int i = static_cast<int>(plan_.layers.size()) - 1; i >= lowest; --i) {
    const bool need_dx = i > lowest || options_.input_gradient;
    RETURN_IF_ERROR(BackwardLayer(i, batch, need_dx, &dy, &spare));
    RETURN_IF_ERROR(SendLayerGrads(i));
  }
  if (options_.input_gradient) input_grad_ = dy;
  return absl::OkStatus();
}

// On entry *dy holds d(loss)/d(output of layer i); on return d(loss)/d(input of layer i) when need_dx.
absl::Status DeviceGradientComputer::BackwardLayer(int i, int batch, bool need_dx, float** dy, float** spare) {
  const LayerPlan& l = plan_.layers[i];
  const float* x = LayerInput(i);
  if (l.relu) RETURN_IF_ERROR(backend_->ReluGrad(static_cast<int>(batch * l.out_size), act_[i], *dy, *dy));
  switch (l.kind) {
    case DeviceLayerKind::kDense: {
      const int in = static_cast<int>(l.in_size), out = static_cast<int>(l.out_size);
      RETURN_IF_ERROR(RowMajorGemm(true, false, in, out, batch, x, *dy, 0.0f, Grad(l.kernel_param)));
      if (l.bias_param >= 0) {
        RETURN_IF_ERROR(RowMajorGemm(false, false, 1, out, batch, ones_.get(), *dy, 0.0f, Grad(l.bias_param)));
      }
      if (!need_dx) return absl::OkStatus();
      RETURN_IF_ERROR(RowMajorGemm(false, true, batch, in, out, *dy, Param(l.kernel_param), 0.0f, *spare));
      break;
    }
    case DeviceLayerKind::kConv2D: {
      const ConvGeometry g = plan_.Conv(i, batch);
      RETURN_IF_ERROR(backend_->Im2Col(g, x, col_.get()));  // col_ is shared by all conv layers: rebuild
      RETURN_IF_ERROR(
          RowMajorGemm(true, false, g.patch(), g.out_c, g.rows(), col_.get(), *dy, 0.0f, Grad(l.kernel_param)));
      if (l.bias_param >= 0) {
        RETURN_IF_ERROR(RowMajorGemm(false, false, 1, g.out_c, g.rows(), ones_.get(), *dy, 0.0f, Grad(l.bias_param)));
      }
      if (!need_dx) return absl::OkStatus();
      RETURN_IF_ERROR(
          RowMajorGemm(false, true, g.rows(), g.patch(), g.out_c, *dy, Param(l.kernel_param), 0.0f, col_.get()));
      RETURN_IF_ERROR(backend_->Col2Im(g, col_.get(), *spare));
      break;
    }
    case DeviceLayerKind::kMaxPool:
      if (!need_dx) return absl::OkStatus();
      RETURN_IF_ERROR(backend_->MaxPoolBackward(plan_.Pool(i, batch), x, *dy, *spare));
      break;
    case DeviceLayerKind::kRelu:
    case DeviceLayerKind::kFlatten:
      return absl::OkStatus();  // relu was applied in place above; flatten shares bytes
  }
  std::swap(*dy, *spare);
  return absl::OkStatus();
}

absl::Status DeviceGradientComputer::SendLayerGrads(int i) {
  const LayerPlan& l = plan_.layers[i];
  if (!l.has_params()) return absl::OkStatus();
  const int last = l.bias_param >= 0 ? l.bias_param : l.kernel_param;
  const int64_t begin = plan_.param_offsets[l.kernel_param];
  const int64_t end = plan_.param_offsets[last] + NumElements(plan_.variables[last].shape);
  const int event = static_cast<int>(plan_.layers.size()) + i;
  RETURN_IF_ERROR(backend_->RecordEvent(DeviceStream::kCompute, event));
  RETURN_IF_ERROR(backend_->WaitEvent(DeviceStream::kCopy, event));
  return backend_->CopyToHost(DeviceStream::kCopy, grads_host_.get() + begin, grads_.get() + begin, end - begin);
}

}  // namespace pstrain
