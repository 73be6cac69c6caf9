// The reference is written from the definitions only: no worker/cpu code.
#include "tests/worker/cpu/ctr_model_reference.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "common/plan/model_variables.h"
#include "gtest/gtest.h"
#include "tests/worker/cpu/grad_check.h"

namespace pstrain {

void FinishCtrStep(const ModelSpec& model, uint32_t seed, CtrStep* s_ptr) {
  CtrStep& s = *s_ptr;
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  std::vector<float> r;
  IdDeduper dedupe(vars);
  absl::Status built = dedupe.Build(&s.batch, &s.lookup);
  EXPECT_TRUE(built.ok()) << built;
  for (size_t v = 0; v < vars.size(); ++v) {
    Tensor full(DType::kFloat32, vars[v].shape);
    r = RandomVector(full.num_elements(), seed + 10 + v, -0.6f, 0.6f);
    std::copy(r.begin(), r.end(), full.flat().begin());
    if (!vars[v].sparse) {
      s.params.push_back(full);
      continue;
    }
    const std::vector<int64_t>& ids = s.lookup.unique_ids[v];
    const int64_t dim = vars[v].shape[1];
    Tensor rows(DType::kFloat32, {static_cast<int64_t>(ids.size()), dim});
    for (size_t u = 0; u < ids.size(); ++u)
      std::copy_n(full.data<float>() + ids[u] * dim, dim, rows.data<float>() + u * dim);
    s.tables.push_back(std::move(full));
    s.params.push_back(std::move(rows));
  }
}

// Example b's entries of field f as (id, weight); one entry of weight 1 for a one-id field.
std::vector<std::pair<int64_t, double>> CtrFieldEntries(const ModelSpec& model, const Batch& batch, int64_t b, int f) {
  std::vector<std::pair<int64_t, double>> out;
  const int fields = static_cast<int>(model.fields.size());
  if (model.fields[f].combiner.empty()) return {{batch.ids[b * fields + f], 1.0}};
  for (const IdBags& bag : batch.bags) {
    if (bag.field != f) continue;
    for (int64_t i = bag.offsets[b]; i < bag.offsets[b + 1]; ++i) {
      out.emplace_back(bag.ids[i], bag.weights.empty() ? 1.0 : bag.weights[i]);
    }
  }
  return out;
}

// Per entry its factor in the combined embedding, from the definitions: sum w e; mean
// sum(w e) / sum(w); sqrtn sum(w e) / sqrt(sum(w^2)); nothing for an empty bag.
std::vector<double> CombinerFactors(const std::string& combiner, const std::vector<std::pair<int64_t, double>>& entries) {
  double sum = 0, squares = 0;
  for (const auto& e : entries) {
    sum += e.second;
    squares += e.second * e.second;
  }
  std::vector<double> out;
  for (const auto& e : entries) {
    if (combiner == "mean") {
      out.push_back(e.second / sum);
    } else if (combiner == "sqrtn") {
      out.push_back(e.second / std::sqrt(squares));
    } else {
      out.push_back(e.second);
    }
  }
  return out;
}

// Loss (scaled) and the gradient of every parameter (tables full, indexed by id), in double.
double CtrNaiveReference(const ModelSpec& model, const CtrStep& s, double scale, std::vector<std::vector<double>>* grads) {
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  const int fields = static_cast<int>(model.fields.size());
  grads->assign(vars.size(), {});
  std::vector<const float*> full(vars.size());
  for (size_t v = 0; v < vars.size(); ++v) {
    (*grads)[v].assign(NumElements(vars[v].shape), 0.0);
    full[v] = vars[v].sparse ? s.tables[v].data<float>() : s.params[v].data<float>();
  }
  double loss = 0;
  for (int64_t b = 0; b < s.batch.size(); ++b) {
    std::vector<std::vector<double>> acts(1);
    for (int64_t j = 0; j < model.numeric_inputs; ++j) {
      acts[0].push_back(s.batch.inputs.data<float>()[b * model.numeric_inputs + j]);
    }
    for (int f = 0; f < fields; ++f) {
      const int64_t dim = model.fields[f].embedding_dim;
      const auto entries = CtrFieldEntries(model, s.batch, b, f);
      const auto factors = CombinerFactors(model.fields[f].combiner, entries);
      std::vector<double> e(dim, 0.0);
      for (size_t i = 0; i < entries.size(); ++i) {
        for (int64_t j = 0; j < dim; ++j) e[j] += factors[i] * full[f][entries[i].first * dim + j];
      }
      acts[0].insert(acts[0].end(), e.begin(), e.end());
    }
    for (size_t l = 0; l < model.layers.size(); ++l) {
      const float* w = full[fields + 2 * l];
      const float* bias = full[fields + 2 * l + 1];
      const int64_t in = static_cast<int64_t>(acts[l].size()), out = model.layers[l].units;
      std::vector<double> y(out);
      for (int64_t o = 0; o < out; ++o) {
        double z = bias[o];
        for (int64_t i = 0; i < in; ++i) z += acts[l][i] * w[i * out + o];
        y[o] = model.layers[l].activation == "relu" ? std::max(z, 0.0) : z;
      }
      acts.push_back(y);
    }
    const double z = acts.back()[0], label = s.batch.targets[b];
    const double p = 1.0 / (1.0 + std::exp(-z));
    loss += -(label * std::log(p) + (1 - label) * std::log(1 - p));
    std::vector<double> dy = {(p - label) * scale};
    for (size_t l = model.layers.size(); l-- > 0;) {
      const float* w = full[fields + 2 * l];
      const int64_t in = static_cast<int64_t>(acts[l].size()), out = model.layers[l].units;
      if (model.layers[l].activation == "relu") {
        for (int64_t o = 0; o < out; ++o) dy[o] = acts[l + 1][o] > 0 ? dy[o] : 0.0;
      }
      std::vector<double> dx(in, 0.0);
      for (int64_t i = 0; i < in; ++i) {
        for (int64_t o = 0; o < out; ++o) {
          (*grads)[fields + 2 * l][i * out + o] += acts[l][i] * dy[o];
          dx[i] += w[i * out + o] * dy[o];
        }
      }
      for (int64_t o = 0; o < out; ++o) (*grads)[fields + 2 * l + 1][o] += dy[o];
      dy = dx;
    }
    int64_t col = model.numeric_inputs;
    for (int f = 0; f < fields; ++f) {
      const int64_t dim = model.fields[f].embedding_dim;
      const auto entries = CtrFieldEntries(model, s.batch, b, f);
      const auto factors = CombinerFactors(model.fields[f].combiner, entries);
      for (size_t i = 0; i < entries.size(); ++i) {
        for (int64_t j = 0; j < dim; ++j) (*grads)[f][entries[i].first * dim + j] += factors[i] * dy[col + j];
      }
      col += dim;
    }
  }
  return loss * scale;
}

}  // namespace pstrain
