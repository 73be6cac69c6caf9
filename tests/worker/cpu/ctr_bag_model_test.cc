// Checks of bag fields (multi-hot features) in the CPU CTR model: combined embeddings and every
// gradient against a naive double-precision reference written here from the combiners'
// definitions, against finite differences, and the one-id path unchanged (a sum bag of exactly
// one id per example gives bit-identical results to the same field of one id).
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/config/job_spec.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/cpu/ctr_model_reference.h"
#include "tests/worker/cpu/grad_check.h"
#include "worker/cpu/cpu_gradient_computer.h"
#include "worker/exchange/sparse_lookup.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

// 2 numeric inputs; field 0 one id, fields 1 and 2 bags (combiners given), a 2-layer tower.
ModelSpec BagCtr(const std::string& c1, const std::string& c2) {
  auto doc = ParseJson(R"({"model": {"numeric_inputs": 2,
      "fields": [{"vocabulary_size": 5, "embedding_dim": 3}, {"vocabulary_size": 6, "embedding_dim": 4},
                 {"vocabulary_size": 4, "embedding_dim": 2}],
      "layers": [{"type": "dense", "units": 6, "activation": "relu"}, {"type": "dense", "units": 1}]},
      "data": {"dataset": "criteo"}, "schedule": {"steps": 1}})",
                       "test");
  EXPECT_TRUE(doc.ok());
  auto job = JobSpecFromJson(*doc);
  EXPECT_TRUE(job.ok()) << job.status();
  job->model.fields[1].combiner = c1;
  job->model.fields[2].combiner = c2;
  return job->model;
}

using Step = CtrStep;

// Bags of 0..4 ids (repeats included) for the model's bag fields; weights for field 2 when
// `weighted`. The lookup and gathered rows as a worker builds them.
Step MakeStep(const ModelSpec& model, int64_t n, uint32_t seed, bool weighted) {
  Step s;
  const int fields = static_cast<int>(model.fields.size());
  std::mt19937 rng(seed);
  s.batch.inputs = Tensor(DType::kFloat32, {n, model.numeric_inputs});
  std::vector<float> r = RandomVector(s.batch.inputs.num_elements(), seed, 0.f, 2.f);
  std::copy(r.begin(), r.end(), s.batch.inputs.flat().begin());
  for (int f = 0; f < fields; ++f) {
    if (model.fields[f].combiner.empty()) continue;
    IdBags& bag = s.batch.bags.emplace_back();
    bag.field = f;
    bag.offsets = {0};
  }
  for (int64_t b = 0; b < n; ++b) {
    s.batch.targets.push_back(static_cast<float>(rng() % 2));
    size_t k = 0;
    for (int f = 0; f < fields; ++f) {
      const int64_t vocab = model.fields[f].vocabulary_size;
      if (model.fields[f].combiner.empty()) {
        s.batch.ids.push_back(rng() % vocab);
        continue;
      }
      s.batch.ids.push_back(0);
      IdBags& bag = s.batch.bags[k++];
      const int len = static_cast<int>(rng() % 5);
      for (int i = 0; i < len; ++i) {
        bag.ids.push_back(rng() % vocab);
        if (weighted && f == 2) bag.weights.push_back(0.25f + static_cast<float>(rng() % 8) / 4.f);
      }
      bag.offsets.push_back(static_cast<int64_t>(bag.ids.size()));
    }
  }
  FinishCtrStep(model, seed, &s);
  return s;
}

class CtrBagModelTest : public ::testing::TestWithParam<std::tuple<std::string, std::string, bool>> {};

TEST_P(CtrBagModelTest, MatchesTheNaiveReferenceAndFiniteDifferences) {
  const auto& [c1, c2, weighted] = GetParam();
  const ModelSpec model = BagCtr(c1, c2);
  const std::vector<VariableSpec> vars = *ModelVariables(model);
  for (int threads : {1, 3}) {
    Step s = MakeStep(model, 17, 4, weighted);
    auto gc = NewCpuGradientComputer(model, threads);
    ASSERT_TRUE(gc.ok()) << gc.status();
    const float scale = 1.f / 17.f;
    std::vector<Tensor> grads;
    BatchMetrics m;
    absl::Status st = (*gc)->Compute(s.params, s.batch, scale, &grads, &m);
    ASSERT_TRUE(st.ok()) << st;
    std::vector<std::vector<double>> want;
    const double loss = CtrNaiveReference(model, s, scale, &want);
    EXPECT_NEAR(m.loss_sum * scale, loss, 1e-5);
    for (size_t v = 0; v < vars.size(); ++v) {
      const bool sparse = vars[v].sparse;
      const std::vector<int64_t>& ids = s.lookup.unique_ids[v];
      const int64_t dim = sparse ? vars[v].shape[1] : 1;
      for (int64_t j = 0; j < grads[v].num_elements(); ++j) {
        const double w = sparse ? want[v][ids[j / dim] * dim + j % dim] : want[v][j];
        EXPECT_NEAR(grads[v].data<float>()[j], w, 1e-5 + 1e-4 * std::fabs(w))
            << vars[v].name << "[" << j << "] threads " << threads;
      }
    }
    if (threads != 3) continue;
    for (size_t v = 0; v < s.params.size(); ++v) {
      std::vector<float> values(s.params[v].flat().begin(), s.params[v].flat().end());
      std::vector<float> analytic(grads[v].flat().begin(), grads[v].flat().end());
      auto fd_loss = [&] {
        std::copy(values.begin(), values.end(), s.params[v].flat().begin());
        BatchMetrics e;
        EXPECT_TRUE((*gc)->Evaluate(s.params, s.batch, &e).ok());
        return e.loss_sum * scale;
      };
      ExpectGradientMatches(vars[v].name, &values, analytic, fd_loss, 3e-4f);
      std::copy(values.begin(), values.end(), s.params[v].flat().begin());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Combiners, CtrBagModelTest,
                         ::testing::Values(std::make_tuple("sum", "sum", false),
                                           std::make_tuple("mean", "sqrtn", false),
                                           std::make_tuple("sqrtn", "mean", true), std::make_tuple("sum", "mean", true),
                                           std::make_tuple("mean", "sum", true)));

// A sum bag of exactly one id (weight 1) per example is the one-id field: the same unique ids,
// positions, loss and gradients, bit for bit.
TEST(CtrBagModelRegressionTest, OneIdSumBagIsBitIdenticalToTheOneIdField) {
  const ModelSpec plain = BagCtr("", "");
  const ModelSpec bags = BagCtr("sum", "sum");
  Step p = MakeStep(plain, 40, 9, false);
  Step q = p;
  q.batch.bags.clear();
  const int fields = 3;
  for (int f : {1, 2}) {
    IdBags& bag = q.batch.bags.emplace_back();
    bag.field = f;
    bag.offsets = {0};
    for (int64_t b = 0; b < 40; ++b) {
      bag.ids.push_back(p.batch.ids[b * fields + f]);
      bag.offsets.push_back(b + 1);
      q.batch.ids[b * fields + f] = 0;
    }
  }
  SparseLookup lookup;
  IdDeduper dedupe(*ModelVariables(bags));
  ASSERT_TRUE(dedupe.Build(&q.batch, &lookup).ok());
  EXPECT_EQ(lookup.unique_ids, p.lookup.unique_ids);
  for (int threads : {1, 4}) {
    auto gp = NewCpuGradientComputer(plain, threads);
    auto gq = NewCpuGradientComputer(bags, threads);
    std::vector<Tensor> dp, dq;
    BatchMetrics mp, mq;
    ASSERT_TRUE((*gp)->Compute(p.params, p.batch, 0.25f, &dp, &mp).ok());
    absl::Status st = (*gq)->Compute(p.params, q.batch, 0.25f, &dq, &mq);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(mp.loss_sum, mq.loss_sum);
    EXPECT_EQ(mp.logits, mq.logits);
    ASSERT_EQ(dp.size(), dq.size());
    for (size_t v = 0; v < dp.size(); ++v) {
      ASSERT_EQ(dp[v].shape(), dq[v].shape());
      for (int64_t j = 0; j < dp[v].num_elements(); ++j) {
        ASSERT_EQ(dp[v].data<float>()[j], dq[v].data<float>()[j]) << v << " " << j;
      }
    }
  }
}

TEST(CtrBagModelTest, DedupesBagIdsWithTheirTable) {
  const ModelSpec model = BagCtr("mean", "sum");
  IdDeduper dedupe(*ModelVariables(model));
  Batch batch;
  batch.inputs = Tensor(DType::kFloat32, {3, 2});
  batch.ids = {4, 0, 0, /**/ 1, 0, 0, /**/ 4, 0, 0};
  batch.bags.resize(2);
  batch.bags[0] = IdBags{1, {0, 3, 3, 5}, {5, 2, 5, 2, 0}, {}};
  batch.bags[1] = IdBags{2, {0, 1, 2, 2}, {3, 3}, {0.5f, 2.f}};
  SparseLookup lookup;
  ASSERT_TRUE(dedupe.Build(&batch, &lookup).ok());
  EXPECT_EQ(lookup.unique_ids[0], (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(lookup.unique_ids[1], (std::vector<int64_t>{5, 2, 0}));
  EXPECT_EQ(lookup.unique_ids[2], (std::vector<int64_t>{3}));
  EXPECT_EQ(batch.bag_positions[0], (std::vector<int32_t>{0, 1, 0, 1, 2}));
  EXPECT_EQ(batch.bag_positions[1], (std::vector<int32_t>{0, 0}));
  batch.bags[0].ids[3] = 6;
  EXPECT_THAT(std::string(dedupe.Build(&batch, &lookup).message()),
              HasSubstr("example 2 of the batch has id 6 in the bag of field 1"));
  batch.bags[0].ids[3] = 2;
  batch.bags[0].offsets.pop_back();
  EXPECT_THAT(std::string(dedupe.Build(&batch, &lookup).message()), HasSubstr("want 3 examples"));
}

TEST(CtrBagModelTest, RejectsABatchWithoutTheModelsBags) {
  const ModelSpec model = BagCtr("mean", "sum");
  Step s = MakeStep(model, 5, 2, false);
  auto gc = NewCpuGradientComputer(model, 1);
  std::vector<Tensor> grads;
  BatchMetrics m;
  Batch no_bags = s.batch;
  no_bags.bags.pop_back();
  no_bags.bag_positions.pop_back();
  EXPECT_THAT(std::string((*gc)->Compute(s.params, no_bags, 1.f, &grads, &m).message()),
              HasSubstr("is a bag but the batch has no bag for it"));
  ASSERT_FALSE(s.batch.bag_positions[0].empty());
  s.batch.bag_positions[0][0] = 50;
  {
    EXPECT_THAT(std::string((*gc)->Compute(s.params, s.batch, 1.f, &grads, &m).message()),
                HasSubstr("refers to row 50"));
  }
}

}  // namespace
}  // namespace pstrain
