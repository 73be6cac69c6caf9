// Checks of the CPU CTR model: whole-model gradients (tower and gathered embedding rows) against
// finite differences and against a naive double-precision reference written independently (ctr_model_reference.h),
// thread-count independence, duplicate ids summed per unique row, the stable cross-entropy, the
// per-step id dedupe and input validation.
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/cpu/ctr_model_reference.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/cpu/sigmoid_cross_entropy.h"
#include "worker/exchange/sparse_lookup.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// 3 numeric inputs, 3 fields with small vocabularies (so a batch repeats ids), a 2-layer tower.
ModelSpec SmallCtr() {
  auto doc = ParseJson(R"({"model": {"numeric_inputs": 3,
      "fields": [{"vocabulary_size": 5, "embedding_dim": 4}, {"vocabulary_size": 7, "embedding_dim": 2},
                 {"vocabulary_size": 3, "embedding_dim": 3}],
      "layers": [{"type": "dense", "units": 8, "activation": "relu"},
                 {"type": "dense", "units": 5, "activation": "relu"},
                 {"type": "dense", "units": 1}]},
      "data": {"dataset": "criteo"}, "schedule": {"steps": 1}})",
                       "test");
  EXPECT_TRUE(doc.ok());
  auto job = JobSpecFromJson(*doc);
  EXPECT_TRUE(job.ok()) << job.status();
  return job->model;
}

using Step = CtrStep;

// A batch with random numeric features, 0/1 labels and ids, its lookup, and parameters (full
// tables and tower) from `seed`; params hold the tables' gathered unique rows.
Step MakeStep(const ModelSpec& model, int64_t n, uint32_t seed) {
  Step s;
  const int fields = static_cast<int>(model.fields.size());
  s.batch.inputs = Tensor(DType::kFloat32, {n, model.numeric_inputs});
  std::vector<float> r = RandomVector(s.batch.inputs.num_elements(), seed, 0.f, 2.f);
  std::copy(r.begin(), r.end(), s.batch.inputs.flat().begin());
  for (int64_t b = 0; b < n; ++b) {
    s.batch.targets.push_back(static_cast<float>((b * 5 + seed) % 3 == 0));
    for (int f = 0; f < fields; ++f) s.batch.ids.push_back((b * 7 + f * 3 + seed) % model.fields[f].vocabulary_size);
  }
  FinishCtrStep(model, seed, &s);
  return s;
}

void ExpectNear(const std::string& what, float got, double want) {
  EXPECT_NEAR(got, want, 1e-5 + 1e-4 * std::fabs(want)) << what;
}

TEST(CtrModelTest, MatchesTheNaiveReference) {
  const ModelSpec model = SmallCtr();
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  for (int threads : {1, 2, 3}) {
    Step s = MakeStep(model, 23, 3);
    auto gc = NewCpuGradientComputer(model, threads);
    ASSERT_TRUE(gc.ok()) << gc.status();
    const float scale = 1.f / 40.f;  // as a worker's share of a larger global batch
    std::vector<Tensor> grads;
    BatchMetrics m;
    ASSERT_TRUE((*gc)->Compute(s.params, s.batch, scale, &grads, &m).ok());
    std::vector<std::vector<double>> want;
    const double loss = CtrNaiveReference(model, s, scale, &want);
    EXPECT_EQ(m.examples, 23);
    EXPECT_NEAR(m.loss_sum * scale, loss, 1e-5);
    ASSERT_EQ(m.logits.size(), 23u);
    EXPECT_EQ(m.labels, s.batch.targets);
    for (size_t v = 0; v < vars.size(); ++v) {
      if (!vars[v].sparse) {
        for (int64_t j = 0; j < grads[v].num_elements(); ++j) {
          ExpectNear(absl::StrCat(vars[v].name, "[", j, "] threads ", threads), grads[v].data<float>()[j], want[v][j]);
        }
        continue;
      }
      // Rows come back in unique_ids order; ids the batch never touched have a zero reference.
      const std::vector<int64_t>& ids = s.lookup.unique_ids[v];
      const int64_t dim = vars[v].shape[1];
      ASSERT_EQ(grads[v].shape(), (std::vector<int64_t>{static_cast<int64_t>(ids.size()), dim}));
      std::vector<bool> touched(vars[v].shape[0], false);
      for (size_t u = 0; u < ids.size(); ++u) {
        touched[ids[u]] = true;
        for (int64_t j = 0; j < dim; ++j) {
          ExpectNear(absl::StrCat(vars[v].name, " id ", ids[u], " threads ", threads),
                     grads[v].data<float>()[u * dim + j], want[v][ids[u] * dim + j]);
        }
      }
      for (int64_t id = 0; id < vars[v].shape[0]; ++id) {
        for (int64_t j = 0; j < dim && !touched[id]; ++j) EXPECT_EQ(want[v][id * dim + j], 0.0);
      }
    }
  }
}

TEST(CtrModelTest, GradientsMatchFiniteDifferences) {
  const ModelSpec model = SmallCtr();
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  Step s = MakeStep(model, 9, 5);
  auto gc = NewCpuGradientComputer(model, 2);
  ASSERT_TRUE(gc.ok());
  const float scale = 1.f / 9.f;
  std::vector<Tensor> grads;
  BatchMetrics m;
  ASSERT_TRUE((*gc)->Compute(s.params, s.batch, scale, &grads, &m).ok());
  for (size_t v = 0; v < s.params.size(); ++v) {
    std::vector<float> values(s.params[v].flat().begin(), s.params[v].flat().end());
    std::vector<float> analytic(grads[v].flat().begin(), grads[v].flat().end());
    auto loss = [&] {
      std::copy(values.begin(), values.end(), s.params[v].flat().begin());
      BatchMetrics e;
      EXPECT_TRUE((*gc)->Evaluate(s.params, s.batch, &e).ok());
      return e.loss_sum * scale;
    };
    ExpectGradientMatches(vars[v].name, &values, analytic, loss, 3e-4f);
    std::copy(values.begin(), values.end(), s.params[v].flat().begin());
  }
}

TEST(CtrModelTest, SameResultForAnyThreadCountAndRepeatable) {
  const ModelSpec model = SmallCtr();
  Step s = MakeStep(model, 64, 7);
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 4, 4}) {
    auto gc = NewCpuGradientComputer(model, threads);
    std::vector<Tensor> grads;
    BatchMetrics m;
    ASSERT_TRUE((*gc)->Compute(s.params, s.batch, 1.f / 64, &grads, &m).ok());
    results.push_back(std::move(grads));
  }
  for (size_t v = 0; v < results[0].size(); ++v) {
    for (int64_t j = 0; j < results[0][v].num_elements(); ++j) {
      EXPECT_NEAR(results[1][v].data<float>()[j], results[0][v].data<float>()[j], 1e-6) << v << " " << j;
      EXPECT_EQ(results[2][v].data<float>()[j], results[1][v].data<float>()[j]) << v << " " << j;
    }
  }
}

TEST(CtrModelTest, RejectsBadInputs) {
  const ModelSpec model = SmallCtr();
  auto gc = NewCpuGradientComputer(model, 1);
  ASSERT_TRUE(gc.ok());
  std::vector<Tensor> grads;
  BatchMetrics m;
  Step s = MakeStep(model, 4, 1);
  s.batch.positions[5] = 99;
  auto st = (*gc)->Compute(s.params, s.batch, 1.f, &grads, &m);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("refers to row 99"));
  s = MakeStep(model, 4, 1);
  s.batch.targets.pop_back();
  EXPECT_THAT(std::string((*gc)->Compute(s.params, s.batch, 1.f, &grads, &m).message()), HasSubstr("3 labels"));
  s = MakeStep(model, 4, 1);
  s.params[0] = Tensor(DType::kFloat32, {2, 5});
  EXPECT_THAT(std::string((*gc)->Compute(s.params, s.batch, 1.f, &grads, &m).message()),
              HasSubstr("embedding/embeddings has shape [2,5]"));
}

TEST(SigmoidCrossEntropyTest, StableAndCorrect) {
  const std::vector<float> logits = {-200.f, -3.f, 0.f, 2.5f, 200.f};
  const std::vector<float> labels = {1.f, 0.f, 1.f, 1.f, 0.f};
  std::vector<float> d(5);
  int64_t correct = 0;
  const double total = SigmoidCrossEntropy(logits.data(), labels.data(), 5, 0.5f, d.data(), &correct);
  double want = 0;
  for (int i = 0; i < 5; ++i) {
    const double z = logits[i], y = labels[i];
    // log(1 + exp(-z)) for y = 1, log(1 + exp(z)) for y = 0, without overflow for |z| = 200.
    const double t = y > 0.5 ? -z : z;
    want += t > 30 ? t : std::log1p(std::exp(t));
    EXPECT_NEAR(d[i], 0.5 * (1.0 / (1.0 + std::exp(-z)) - y), 1e-7) << i;
  }
  EXPECT_TRUE(std::isfinite(total));
  EXPECT_NEAR(total, want, 1e-6 * want);
  EXPECT_EQ(correct, 2);  // -3 -> 0 and 2.5 -> 1 right; 0 counts as negative
}

TEST(IdDeduperTest, UniqueIdsInFirstAppearanceOrderAndPositions) {
  const ModelSpec model = SmallCtr();
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  IdDeduper dedupe(vars);
  ASSERT_EQ(dedupe.num_fields(), 3);
  Batch batch;
  batch.inputs = Tensor(DType::kFloat32, {4, 3});
  batch.ids = {4, 0, 2, /**/ 1, 6, 2, /**/ 4, 6, 0, /**/ 1, 0, 2};
  SparseLookup lookup;
  for (int round = 0; round < 3; ++round) {  // reuse of the tables across steps
    ASSERT_TRUE(dedupe.Build(&batch, &lookup).ok());
    ASSERT_EQ(lookup.unique_ids.size(), vars.size());
    EXPECT_EQ(lookup.unique_ids[0], (std::vector<int64_t>{4, 1}));
    EXPECT_EQ(lookup.unique_ids[1], (std::vector<int64_t>{0, 6}));
    EXPECT_EQ(lookup.unique_ids[2], (std::vector<int64_t>{2, 0}));
    for (size_t v = 3; v < vars.size(); ++v) EXPECT_TRUE(lookup.unique_ids[v].empty());
    EXPECT_EQ(batch.positions, (std::vector<int32_t>{0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0}));
  }
  batch.ids[4] = 7;
  auto st = dedupe.Build(&batch, &lookup);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("example 1 of the batch has id 7 in field 1"));
  batch.ids.pop_back();
  EXPECT_THAT(std::string(dedupe.Build(&batch, &lookup).message()), HasSubstr("11 categorical ids"));
}

TEST(IdDeduperTest, ManyIdsAgreeWithAMap) {
  std::vector<VariableSpec> vars = {{"t/embeddings", {1000003, 4}, DType::kFloat32, {}, true}};
  IdDeduper dedupe(vars);
  Batch batch;
  const int64_t n = 5000;
  batch.inputs = Tensor(DType::kFloat32, {n, 0});
  std::mt19937_64 rng(1);
  for (int64_t b = 0; b < n; ++b) batch.ids.push_back(static_cast<int64_t>(rng() % 3000) * 333);
  SparseLookup lookup;
  ASSERT_TRUE(dedupe.Build(&batch, &lookup).ok());
  std::map<int64_t, int32_t> seen;
  for (int64_t b = 0; b < n; ++b) {
    seen.emplace(batch.ids[b], static_cast<int32_t>(seen.size()));
    EXPECT_EQ(batch.positions[b], seen[batch.ids[b]]);
    EXPECT_EQ(lookup.unique_ids[0][batch.positions[b]], batch.ids[b]);
  }
  EXPECT_EQ(lookup.unique_ids[0].size(), seen.size());
}

}  // namespace
}  // namespace pstrain
