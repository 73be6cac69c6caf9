#include "tests/worker/cuda/naive_model_reference.h"

#include <cmath>

#include "common/json_util.h"
#include "common/model_variables.h"

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

}  // namespace

ReferenceResult NaiveReference(const ModelSpec& model, absl::Span<const Tensor> params, const Batch& batch,
                               double loss_scale) {
  const int64_t nb = batch.size();
  const auto shapes = *LayerOutputShapes(model);
  const size_t nl = model.layers.size();
  std::vector<std::vector<int64_t>> in_shapes = {model.input_shape};
  for (size_t i = 0; i + 1 < nl; ++i) in_shapes.push_back(shapes[i]);
  std::vector<int> kernel_idx(nl, -1), bias_idx(nl, -1);
  int next = 0;
  for (size_t i = 0; i < nl; ++i) {
    const LayerSpec& l = model.layers[i];
    if (l.type != "dense" && l.type != "conv2d") continue;
    kernel_idx[i] = next++;
    if (l.use_bias) bias_idx[i] = next++;
  }
  ReferenceResult r;
  Vec x(batch.inputs.flat().begin(), batch.inputs.flat().end());
  std::vector<Vec> acts;
  // Forward.
  for (size_t i = 0; i < nl; ++i) {
    const LayerSpec& l = model.layers[i];
    const Vec& in = i == 0 ? x : acts.back();
    const int64_t in_n = NumElements(in_shapes[i]), out_n = NumElements(shapes[i]);
    Vec y(nb * out_n, 0.0);
    const float* w = P(params, kernel_idx[i]);
    const float* bias = P(params, bias_idx[i]);
    if (l.type == "dense") {
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t o = 0; o < out_n; ++o) {
          double s = bias ? bias[o] : 0.0;
          for (int64_t k = 0; k < in_n; ++k) s += in[b * in_n + k] * w[k * out_n + o];
          y[b * out_n + o] = s;
        }
    } else if (l.type == "conv2d") {
      ForEachConvTap(nb, S3(in_shapes[i]), S3(shapes[i]), l,
                     [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += in[xi] * w[wi]; });
      if (bias)
        for (int64_t j = 0; j < nb * out_n; ++j) y[j] += bias[j % l.filters];
    } else if (l.type == "max_pool2d") {
      const Shape3 is = S3(in_shapes[i]);
      ForEachPoolOutput(nb, S3(shapes[i]), [&](int64_t o, int64_t b, int64_t oy, int64_t ox, int64_t c) {
        y[o] = in[PoolArgmax(in, is, l.pool_size, b, oy, ox, c)];
      });
    } else {
      y = in;  // flatten, relu (below)
    }
    if (HasRelu(l))
      for (double& v : y) v = v > 0.0 ? v : 0.0;
    acts.push_back(std::move(y));
  }
  // Loss.
  const int64_t n = NumElements(shapes.back());
  const Vec& out = acts.back();
  Vec dy(nb * n, 0.0);
  for (int64_t b = 0; b < nb; ++b) {
    const double* z = &out[b * n];
    if (model.loss == "mse") {
      double s = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        const double d = z[j] - batch.targets[b * n + j];
        s += d * d;
        dy[b * n + j] = 2.0 * d / n * loss_scale;
      }
      r.loss_sum += s / n;
      continue;
    }
    int64_t arg = 0;
    for (int64_t j = 1; j < n; ++j)
      if (z[j] > z[arg]) arg = j;
    double se = 0.0;
    for (int64_t j = 0; j < n; ++j) se += std::exp(z[j] - z[arg]);
    const int64_t label = batch.labels[b];
    r.loss_sum += z[arg] + std::log(se) - z[label];
    r.correct += arg == label ? 1 : 0;
    for (int64_t j = 0; j < n; ++j) dy[b * n + j] = (std::exp(z[j] - z[arg]) / se - (j == label)) * loss_scale;
  }
  // Backward.
  r.param_grads.resize(next);
  for (int i = static_cast<int>(nl) - 1; i >= 0; --i) {
    const LayerSpec& l = model.layers[i];
    const Vec& in = i == 0 ? x : acts[i - 1];
    const int64_t in_n = NumElements(in_shapes[i]), out_n = NumElements(shapes[i]);
    if (HasRelu(l))
      for (size_t j = 0; j < dy.size(); ++j)
        if (acts[i][j] <= 0.0) dy[j] = 0.0;
    Vec dx(nb * in_n, 0.0);
    const float* w = P(params, kernel_idx[i]);
    if (l.type == "dense" || l.type == "conv2d") {
      Vec dw(params[kernel_idx[i]].num_elements(), 0.0);
      const int64_t cout = l.type == "dense" ? l.units : l.filters;
      Vec db(cout, 0.0);
      for (size_t j = 0; j < dy.size(); ++j) db[j % cout] += dy[j];
      if (l.type == "dense") {
        for (int64_t b = 0; b < nb; ++b)
          for (int64_t k = 0; k < in_n; ++k)
            for (int64_t o = 0; o < out_n; ++o) {
              dw[k * out_n + o] += in[b * in_n + k] * dy[b * out_n + o];
              dx[b * in_n + k] += w[k * out_n + o] * dy[b * out_n + o];
            }
      } else {
        ForEachConvTap(nb, S3(in_shapes[i]), S3(shapes[i]), l, [&](int64_t xi, int64_t wi, int64_t yi) {
          dw[wi] += in[xi] * dy[yi];
          dx[xi] += w[wi] * dy[yi];
        });
      }
      r.param_grads[kernel_idx[i]] = std::move(dw);
      if (bias_idx[i] >= 0) r.param_grads[bias_idx[i]] = std::move(db);
    } else if (l.type == "max_pool2d") {
      const Shape3 is = S3(in_shapes[i]);
      ForEachPoolOutput(nb, S3(shapes[i]), [&](int64_t o, int64_t b, int64_t oy, int64_t ox, int64_t c) {
        dx[PoolArgmax(in, is, l.pool_size, b, oy, ox, c)] += dy[o];
      });
    } else {
      dx = dy;  // flatten, relu (mask applied above)
    }
    dy = std::move(dx);
  }
  r.input_grad = std::move(dy);
  r.activations = std::move(acts);
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
