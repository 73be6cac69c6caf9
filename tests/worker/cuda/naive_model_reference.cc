#include "tests/worker/cuda/naive_model_reference.h"

#include <cmath>

#include "common/config/json_util.h"
#include "common/plan/model_variables.h"

namespace pstrain {
namespace {

using Vec = std::vector<double>;

struct Shape3 {
  int64_t h, w, c;
};

Shape3 S3(const std::vector<int64_t>& s) { return {s[0], s[1], s[2]}; }

int64_t Pad(const LayerSpec& l) { return l.padding == "same" ? (l.kernel_size - 1) / 2 : 0; }

// Visits every (output element, kernel tap) pair of a stride-1 convolution with a valid input tap.
template <typename F>
void ForEachConvTap(int64_t batch, Shape3 in, Shape3 out, const LayerSpec& l, F f) {
  const int64_t k = l.kernel_size, pad = Pad(l);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t oy = 0; oy < out.h; ++oy)
      for (int64_t ox = 0; ox < out.w; ++ox)
        for (int64_t ky = 0; ky < k; ++ky)
          for (int64_t kx = 0; kx < k; ++kx) {
            const int64_t iy = oy + ky - pad, ix = ox + kx - pad;
            if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
            for (int64_t ci = 0; ci < in.c; ++ci)
              for (int64_t co = 0; co < out.c; ++co) {
                const int64_t xi = ((b * in.h + iy) * in.w + ix) * in.c + ci;
                const int64_t wi = ((ky * k + kx) * in.c + ci) * out.c + co;
                const int64_t yi = ((b * out.h + oy) * out.w + ox) * out.c + co;
                f(xi, wi, yi);
              }
          }
}

// Index of the first maximum of the pooling window of output element (b, oy, ox, c).
int64_t PoolArgmax(const Vec& x, Shape3 in, int64_t p, int64_t b, int64_t oy, int64_t ox, int64_t c) {
  int64_t best = -1;
  for (int64_t dy = 0; dy < p; ++dy)
    for (int64_t dx = 0; dx < p; ++dx) {
      const int64_t i = ((b * in.h + oy * p + dy) * in.w + ox * p + dx) * in.c + c;
      if (best < 0 || x[i] > x[best]) best = i;
    }
  return best;
}

template <typename F>
void ForEachPoolOutput(int64_t batch, Shape3 out, F f) {
  int64_t o = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t oy = 0; oy < out.h; ++oy)
      for (int64_t ox = 0; ox < out.w; ++ox)
        for (int64_t c = 0; c < out.c; ++c) f(o++, b, oy, ox, c);
}

const float* P(absl::Span<const Tensor> params, int index) { return index < 0 ? nullptr : params[index].data<float>(); }

bool HasRelu(const LayerSpec& l) { return l.type == "relu" || l.activation == "relu"; }

// The model's layers with their shapes and parameter indices, evaluated one layer at a time.
class NaiveModel {
 public:
  NaiveModel(const ModelSpec& model, absl::Span<const Tensor> params, int64_t batch)
      : model_(model), params_(params), nb_(batch), out_shapes_(*LayerOutputShapes(model)) {
    in_shapes_ = {model.input_shape};
    for (size_t i = 0; i + 1 < out_shapes_.size(); ++i) in_shapes_.push_back(out_shapes_[i]);
    kernel_.assign(model.layers.size(), -1);
    bias_.assign(model.layers.size(), -1);
    for (size_t i = 0; i < model.layers.size(); ++i) {
      const LayerSpec& l = model.layers[i];
      if (l.type != "dense" && l.type != "conv2d") continue;
      kernel_[i] = num_params_++;
      if (l.use_bias) bias_[i] = num_params_++;
    }
  }

  size_t layers() const { return model_.layers.size(); }
  int num_params() const { return num_params_; }
  int64_t outputs() const { return NumElements(out_shapes_.back()); }

  Vec Forward(size_t i, const Vec& in) const {
    const LayerSpec& l = model_.layers[i];
    const int64_t in_n = NumElements(in_shapes_[i]), out_n = NumElements(out_shapes_[i]);
    const float* w = P(params_, kernel_[i]);
    const float* bias = P(params_, bias_[i]);
    Vec y(nb_ * out_n, 0.0);
    if (l.type == "dense") {
      for (int64_t b = 0; b < nb_; ++b) {
        for (int64_t o = 0; o < out_n; ++o) {
          double s = bias ? bias[o] : 0.0;
          for (int64_t k = 0; k < in_n; ++k) s += in[b * in_n + k] * w[k * out_n + o];
          y[b * out_n + o] = s;
        }
      }
    } else if (l.type == "conv2d") {
      ForEachConvTap(nb_, S3(in_shapes_[i]), S3(out_shapes_[i]), l,
                     [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += in[xi] * w[wi]; });
      for (int64_t j = 0; bias != nullptr && j < nb_ * out_n; ++j) y[j] += bias[j % l.filters];
    } else if (l.type == "max_pool2d") {
      const Shape3 is = S3(in_shapes_[i]);
      ForEachPoolOutput(nb_, S3(out_shapes_[i]), [&](int64_t o, int64_t b, int64_t oy, int64_t ox, int64_t c) {
        y[o] = in[PoolArgmax(in, is, l.pool_size, b, oy, ox, c)];
      });
    } else {
      y = in;  // flatten, relu (below)
    }
    if (HasRelu(l)) {
      for (double& v : y) v = v > 0.0 ? v : 0.0;
    }
    return y;
  }

  // d(loss)/d(layer i input) from d(loss)/d(layer i output) `dy`; parameter gradients into `r`.
  Vec Backward(size_t i, const Vec& in, const Vec& out, Vec dy, ReferenceResult* r) const {
    const LayerSpec& l = model_.layers[i];
    const int64_t in_n = NumElements(in_shapes_[i]), out_n = NumElements(out_shapes_[i]);
    if (HasRelu(l)) {
      for (size_t j = 0; j < dy.size(); ++j) dy[j] = out[j] > 0.0 ? dy[j] : 0.0;
    }
    if (l.type == "flatten" || l.type == "relu") return dy;
    Vec dx(nb_ * in_n, 0.0);
    if (l.type == "max_pool2d") {
      const Shape3 is = S3(in_shapes_[i]);
      ForEachPoolOutput(nb_, S3(out_shapes_[i]), [&](int64_t o, int64_t b, int64_t oy, int64_t ox, int64_t c) {
        dx[PoolArgmax(in, is, l.pool_size, b, oy, ox, c)] += dy[o];
      });
      return dx;
    }
    const float* w = P(params_, kernel_[i]);
    Vec dw(params_[kernel_[i]].num_elements(), 0.0);
    if (l.type == "dense") {
      for (int64_t b = 0; b < nb_; ++b) {
        for (int64_t k = 0; k < in_n; ++k) {
          for (int64_t o = 0; o < out_n; ++o) {
            dw[k * out_n + o] += in[b * in_n + k] * dy[b * out_n + o];
            dx[b * in_n + k] += w[k * out_n + o] * dy[b * out_n + o];
          }
        }
      }
    } else {
      ForEachConvTap(nb_, S3(in_shapes_[i]), S3(out_shapes_[i]), l, [&](int64_t xi, int64_t wi, int64_t yi) {
        dw[wi] += in[xi] * dy[yi];
        dx[xi] += w[wi] * dy[yi];
      });
    }
    r->param_grads[kernel_[i]] = std::move(dw);
    if (bias_[i] >= 0) {
      const int64_t cout = l.type == "dense" ? l.units : l.filters;
      Vec db(cout, 0.0);
      for (size_t j = 0; j < dy.size(); ++j) db[j % cout] += dy[j];
      r->param_grads[bias_[i]] = std::move(db);
    }
    return dx;
  }

 private:
  const ModelSpec& model_;
  const absl::Span<const Tensor> params_;
  const int64_t nb_;
  const std::vector<std::vector<int64_t>> out_shapes_;
  std::vector<std::vector<int64_t>> in_shapes_;
  std::vector<int> kernel_, bias_;
  int num_params_ = 0;
};

// Per-example losses summed into `r`; returns d(scaled loss)/d(outputs).
Vec Loss(const ModelSpec& model, const Vec& out, int64_t n, const Batch& batch, double scale, ReferenceResult* r) {
  Vec dy(out.size(), 0.0);
  for (int64_t b = 0; b < batch.size(); ++b) {
    const double* z = &out[b * n];
    double* d = &dy[b * n];
    if (model.loss == "mse") {
      double s = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        const double diff = z[j] - batch.targets[b * n + j];
        s += diff * diff;
        d[j] = 2.0 * diff / n * scale;
      }
      r->loss_sum += s / n;
      continue;
    }
    int64_t arg = 0;
    for (int64_t j = 1; j < n; ++j) arg = z[j] > z[arg] ? j : arg;
    double se = 0.0;
    for (int64_t j = 0; j < n; ++j) se += std::exp(z[j] - z[arg]);
    const int64_t label = batch.labels[b];
    r->loss_sum += z[arg] + std::log(se) - z[label];
    r->correct += arg == label ? 1 : 0;
    for (int64_t j = 0; j < n; ++j) d[j] = (std::exp(z[j] - z[arg]) / se - (j == label ? 1.0 : 0.0)) * scale;
  }
  return dy;
}

}  // namespace

ReferenceResult NaiveReference(const ModelSpec& model, absl::Span<const Tensor> params, const Batch& batch,
                               double loss_scale) {
  const NaiveModel net(model, params, batch.size());
  ReferenceResult r;
  const Vec x(batch.inputs.flat().begin(), batch.inputs.flat().end());
  for (size_t i = 0; i < net.layers(); ++i) r.activations.push_back(net.Forward(i, i == 0 ? x : r.activations.back()));
  Vec dy = Loss(model, r.activations.back(), net.outputs(), batch, loss_scale, &r);
  r.param_grads.resize(net.num_params());
  for (size_t i = net.layers(); i-- > 0;) {
    dy = net.Backward(i, i == 0 ? x : r.activations[i - 1], r.activations[i], std::move(dy), &r);
  }
  r.input_grad = std::move(dy);
  return r;
}

std::vector<Tensor> RandomParams(const ModelSpec& model, std::mt19937* rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<Tensor> out;
  const std::vector<VariableSpec> vars = ModelVariables(model).value();  // a copy: no dangling temporary
  for (const VariableSpec& v : vars) {
    Tensor t(DType::kFloat32, v.shape);
    for (float& f : t.flat()) f = u(*rng);
    out.push_back(std::move(t));
  }
  return out;
}

Batch RandomBatch(const ModelSpec& model, int64_t size, std::mt19937* rng, int levels) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<int64_t> shape = {size};
  shape.insert(shape.end(), model.input_shape.begin(), model.input_shape.end());
  Batch batch;
  batch.inputs = Tensor(DType::kFloat32, shape);
  for (float& f : batch.inputs.flat()) {
    f = levels > 0 ? static_cast<float>(std::uniform_int_distribution<int>(0, levels - 1)(*rng)) : u(*rng);
  }
  const int64_t outputs = NumElements(LayerOutputShapes(model)->back());
  if (model.loss == "mse") {
    for (int64_t i = 0; i < size * outputs; ++i) batch.targets.push_back(u(*rng));
  } else {
    for (int64_t i = 0; i < size; ++i) {
      batch.labels.push_back(std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(outputs) - 1)(*rng));
    }
  }
  return batch;
}

ModelSpec ModelFromJson(const std::string& model_json) {
  absl::StatusOr<nlohmann::json> model = ParseJson(model_json, "test model");
  if (!model.ok()) return ModelSpec{};
  absl::StatusOr<JobSpec> job = JobSpecFromJson({{"model", *model}, {"schedule", {{"steps", 1}}}});
  return job.ok() ? job->model : ModelSpec{};  // an empty model makes the test's Create fail loudly
}

}  // namespace pstrain
