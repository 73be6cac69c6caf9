#include "worker/cpu/cpu_model.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "common/tensor/tensor.h"
#include "worker/cpu/conv2d.h"
#include "worker/cpu/cpu_kernels.h"
#include "worker/cpu/dense.h"
#include "worker/cpu/loss.h"
#include "worker/cpu/pool.h"

namespace pstrain {

// One layer of the sequential model behind a common interface. `params`/`grads` point at this
// layer's own variables (kernel, then bias).
class CpuLayer {
 public:
  virtual ~CpuLayer() = default;
  virtual int num_params() const { return 0; }
  // True when the output is the input itself (flatten): no buffer, no work.
  virtual bool alias() const { return false; }
  virtual void Forward(const float* in, int64_t batch, const float* const* params, float* out) = 0;
  // `dout` may be modified; `din` is null for the first layer.
  virtual void Backward(const float* in, const float* out, float* dout, int64_t batch, const float* const* params,
                        float* din, float* const* grads) = 0;
};

namespace {

// A conv2d, with the max_pool2d that follows it fused in when there is one.
class ConvLayer : public CpuLayer {
 public:
  explicit ConvLayer(const Conv2DGeometry& g) : conv_(g) {}
  int num_params() const override { return conv_.geometry().bias ? 2 : 1; }
  void Forward(const float* in, int64_t batch, const float* const* p, float* out) override {
    conv_.Forward(in, batch, p[0], conv_.geometry().bias ? p[1] : nullptr, out);
  }
  void Backward(const float* in, const float* out, float* dout, int64_t batch, const float* const* p, float* din,
                float* const* g) override {
    conv_.Backward(in, out, dout, batch, p[0], din, g[0], conv_.geometry().bias ? g[1] : nullptr);
  }

 private:
  Conv2D conv_;
};

class DenseLayer : public CpuLayer {
 public:
  explicit DenseLayer(const DenseGeometry& g) : dense_(g) {}
  int num_params() const override { return dense_.geometry().bias ? 2 : 1; }
  void Forward(const float* in, int64_t batch, const float* const* p, float* out) override {
    dense_.Forward(in, batch, p[0], dense_.geometry().bias ? p[1] : nullptr, out);
  }
  void Backward(const float* in, const float* out, float* dout, int64_t batch, const float* const* p, float* din,
                float* const* g) override {
    dense_.Backward(in, out, dout, batch, p[0], din, g[0], dense_.geometry().bias ? g[1] : nullptr);
  }

 private:
  Dense dense_;
};

class PoolLayer : public CpuLayer {
 public:
  explicit PoolLayer(const PoolGeometry& g) : pool_(g) {}
  void Forward(const float* in, int64_t batch, const float* const*, float* out) override {
    pool_.Forward(in, batch, out);
  }
  void Backward(const float*, const float*, float* dout, int64_t batch, const float* const*, float* din,
                float* const*) override {
    if (din != nullptr) pool_.Backward(dout, batch, din);
  }

 private:
  MaxPool2D pool_;
};

class ReluLayer : public CpuLayer {
 public:
  explicit ReluLayer(int64_t size) : size_(size), kernels_(&ActiveCpuKernels()) {}
  void Forward(const float* in, int64_t batch, const float* const*, float* out) override {
    kernels_->relu(in, out, batch * size_);
  }
  void Backward(const float*, const float* out, float* dout, int64_t batch, const float* const*, float* din,
                float* const*) override {
    if (din != nullptr) kernels_->relu_backward(out, dout, din, batch * size_);
  }

 private:
  int64_t size_;
  const CpuKernels* kernels_;
};

// Output = input: a flatten (NHWC is already flat), or a max_pool2d fused into the conv before it.
class AliasLayer : public CpuLayer {
 public:
  bool alias() const override { return true; }
  void Forward(const float*, int64_t, const float* const*, float*) override {}
  void Backward(const float*, const float*, float*, int64_t, const float* const*, float*, float* const*) override {}
};

// `fused_pool`: the window of a max_pool2d that follows a conv2d and is computed inside it (0: none).
std::unique_ptr<CpuLayer> MakeLayer(const LayerSpec& l, const std::vector<int64_t>& in, int64_t fused_pool) {
  const bool relu = l.activation == "relu";
  if (l.type == "conv2d") {
    Conv2DGeometry g{in[0], in[1], in[2], l.filters, l.kernel_size, l.padding == "same", relu, l.use_bias, fused_pool};
    return std::make_unique<ConvLayer>(g);
  }
  if (l.type == "dense") return std::make_unique<DenseLayer>(DenseGeometry{in[0], l.units, relu, l.use_bias});
  if (l.type == "max_pool2d") return std::make_unique<PoolLayer>(PoolGeometry{in[0], in[1], in[2], l.pool_size});
  if (l.type == "relu") return std::make_unique<ReluLayer>(NumElements(in));
  return std::make_unique<AliasLayer>();
}

}  // namespace

CpuModel::~CpuModel() = default;

absl::StatusOr<std::unique_ptr<CpuModel>> CpuModel::Create(const ModelSpec& spec) {
  ASSIGN_OR_RETURN(auto shapes, LayerOutputShapes(spec));
  std::unique_ptr<CpuModel> model(new CpuModel());
  ASSIGN_OR_RETURN(model->variables_, ModelVariables(spec));
  std::vector<int64_t> in = spec.input_shape;
  int param = 0;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const bool fuse_pool =
        spec.layers[i].type == "conv2d" && i + 1 < spec.layers.size() && spec.layers[i + 1].type == "max_pool2d";
    // A fused conv2d writes the pooled output; the max_pool2d after it becomes an alias of it.
    const size_t result = fuse_pool ? i + 1 : i;
    model->layers_.push_back(MakeLayer(spec.layers[i], in, fuse_pool ? spec.layers[i + 1].pool_size : 0));
    model->first_param_.push_back(param);
    model->out_sizes_.push_back(NumElements(shapes[result]));
    param += model->layers_.back()->num_params();
    if (fuse_pool) {
      model->layers_.push_back(std::make_unique<AliasLayer>());
      model->first_param_.push_back(param);
      model->out_sizes_.push_back(NumElements(shapes[result]));
    }
    in = shapes[result];
    i = result;
  }
  model->activations_.resize(spec.layers.size());
  model->outputs_.resize(spec.layers.size());
  model->input_size_ = NumElements(spec.input_shape);
  model->output_size_ = NumElements(in);
  model->classification_ = spec.loss == "sparse_categorical_crossentropy";
  if (model->classification_ && in.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec: sparse_categorical_crossentropy needs flat logits as the "
                     "model output, got shape ",
                     ShapeString(in)));
  }
  return model;
}

const float* CpuModel::Forward(const float* const* params, const float* inputs, int64_t batch) {
  const float* in = inputs;
  for (size_t i = 0; i < layers_.size(); ++i) {
    CpuLayer& layer = *layers_[i];
    if (layer.alias()) {
      outputs_[i] = in;
      continue;
    }
    std::vector<float>& out = activations_[i];
    const size_t need = static_cast<size_t>(batch * out_sizes_[i]);
    if (out.size() < need) out.resize(need);
    layer.Forward(in, batch, params + first_param_[i], out.data());
    outputs_[i] = out.data();
    in = out.data();
  }
  return in;
}

double CpuModel::Loss(const float* logits, const int32_t* labels, const float* targets, int64_t batch, float loss_scale,
                      bool want_grad, int64_t* correct) {
  const size_t need = static_cast<size_t>(batch * output_size_);
  if (grad_a_.size() < need) grad_a_.resize(need);
  float* d = want_grad ? grad_a_.data() : nullptr;
  *correct = 0;
  if (classification_) return SoftmaxCrossEntropy(logits, labels, batch, output_size_, loss_scale, d, correct);
  return MeanSquaredError(logits, targets, batch, output_size_, loss_scale, d);
}

void CpuModel::Compute(const float* const* params, const float* inputs, const int32_t* labels, const float* targets,
                       int64_t batch, float loss_scale, float* const* grads, BatchMetrics* metrics) {
  const float* logits = Forward(params, inputs, batch);
  int64_t correct = 0;
  metrics->loss_sum += Loss(logits, labels, targets, batch, loss_scale, /*want_grad=*/true, &correct);
  metrics->correct += correct;
  metrics->examples += batch;
  // Walk back with two ping-pong buffers: dout in one, din into the other.
  size_t largest = static_cast<size_t>(batch * input_size_);
  for (int64_t s : out_sizes_) largest = std::max(largest, static_cast<size_t>(batch * s));
  if (grad_a_.size() < largest) grad_a_.resize(largest);
  if (grad_b_.size() < largest) grad_b_.resize(largest);
  float* dout = grad_a_.data();
  float* spare = grad_b_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    CpuLayer& layer = *layers_[i];
    if (layer.alias()) continue;
    const float* in = i == 0 ? inputs : outputs_[i - 1];
    float* din = i == 0 ? nullptr : spare;
    layer.Backward(in, outputs_[i], dout, batch, params + first_param_[i], din, grads + first_param_[i]);
    std::swap(dout, spare);
  }
}

void CpuModel::Evaluate(const float* const* params, const float* inputs, const int32_t* labels, const float* targets,
                        int64_t batch, BatchMetrics* metrics) {
  const float* logits = Forward(params, inputs, batch);
  int64_t correct = 0;
  metrics->loss_sum += Loss(logits, labels, targets, batch, 0.f, /*want_grad=*/false, &correct);
  metrics->correct += correct;
  metrics->examples += batch;
}

}  // namespace pstrain
