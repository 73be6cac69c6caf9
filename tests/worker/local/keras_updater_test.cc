// Single-process training starts from the cluster's weights: a whole variable initialised here
// equals its shards initialised by the ps under any partitioning; the updater runs Keras Adam.
#include "worker/local/keras_updater.h"

#include <cmath>

#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "gtest/gtest.h"
#include "ps/store/initializers.h"

namespace pstrain {
namespace {

TEST(KerasUpdaterTest, WholeVariableEqualsAssembledShards) {
  auto job = *LoadJobSpec("cnn");
  const auto vars = *ModelVariables(job.model);
  PartitionerSpec fixed;
  fixed.kind = PartitionerSpec::Kind::kFixedShards;
  fixed.num_shards = 3;
  const VariablePlanProto plan = VariablePlanToProto(*PlanVariables(vars, fixed, 2), job.seed);
  for (int v = 0; v < plan.variables_size(); ++v) {
    Tensor whole(DType::kFloat32, vars[v].shape);
    ASSERT_TRUE(InitializeVariable(vars[v], job.seed, &whole).ok());
    const int64_t row_floats = whole.num_elements() / vars[v].shape[0];
    for (const ShardSpecProto& s : plan.variables(v).shards()) {
      Tensor shard;
      ASSERT_TRUE(InitializeRows(s, &shard).ok());
      ASSERT_EQ(shard.num_elements(), s.rows() * row_floats);
      for (int64_t i = 0; i < shard.num_elements(); ++i) {
        ASSERT_EQ(shard.flat()[i], whole.flat()[s.row_offset() * row_floats + i]) << s.shard_name();
      }
    }
  }
  // Keras defaults: glorot_uniform kernels (non-zero, bounded), zero biases.
  Tensor kernel(DType::kFloat32, vars[0].shape), bias(DType::kFloat32, vars[1].shape);
  ASSERT_TRUE(InitializeVariable(vars[0], job.seed, &kernel).ok());
  ASSERT_TRUE(InitializeVariable(vars[1], job.seed, &bias).ok());
  const float limit = std::sqrt(6.f / (9 + 9 * 32));
  float biggest = 0;
  for (float x : kernel.flat()) biggest = std::max(biggest, std::fabs(x));
  EXPECT_GT(biggest, 0.5f * limit);
  EXPECT_LE(biggest, limit);
  for (float x : bias.flat()) EXPECT_EQ(x, 0.f);
}

TEST(KerasUpdaterTest, AdamFirstStepMovesByLearningRate) {
  OptimizerSpec adam;  // Keras defaults, lr 0.001
  std::vector<VariableSpec> vars = {{"w", {2}, DType::kFloat32, {}}};
  auto updater = NewKerasUpdater(adam, vars);
  ASSERT_TRUE(updater.ok()) << updater.status();
  std::vector<Tensor> params(1, Tensor(DType::kFloat32, {2})), grads(1, Tensor(DType::kFloat32, {2}));
  grads[0].flat()[0] = 0.5f;
  grads[0].flat()[1] = -2.f;
  ASSERT_TRUE((*updater)->Apply(grads, &params).ok());
  // First Adam step: m/(sqrt(v)) = sign(g) after bias correction, so each weight moves by ~lr.
  EXPECT_NEAR(params[0].flat()[0], -0.001f, 1e-6);
  EXPECT_NEAR(params[0].flat()[1], 0.001f, 1e-6);
  OptimizerSpec bad;
  bad.type = "nadam";
  EXPECT_FALSE(NewKerasUpdater(bad, vars).ok());
}

// A non-trainable variable (a moving statistic) gets its update added as is, with no slots and no
// learning rate, whatever the optimizer; the trainable one beside it runs Adagrad.
TEST(KerasUpdaterTest, NonTrainableVariablesAddTheirUpdateAsIs) {
  OptimizerSpec adagrad;
  adagrad.type = "adagrad";
  adagrad.learning_rate.initial = 0.5;
  std::vector<VariableSpec> vars = {{"w", {2}, DType::kFloat32, InitializerSpec{"ones"}},
                                    {"bn/moving_mean", {2}, DType::kFloat32, InitializerSpec{"zeros"}}};
  vars[1].trainable = false;
  auto updater = NewKerasUpdater(adagrad, vars);
  ASSERT_TRUE(updater.ok()) << updater.status();
  std::vector<Tensor> params = {Tensor(DType::kFloat32, {2}), Tensor(DType::kFloat32, {2})};
  for (float& x : params[0].flat()) x = 1;
  const float momentum = 0.9f;
  const std::vector<std::vector<float>> batch_means = {{2, -4}, {1, 3}, {0.5f, 0}};
  std::vector<float> keras = {0, 0};
  for (const std::vector<float>& mean : batch_means) {
    std::vector<Tensor> grads = {Tensor(DType::kFloat32, {2}), Tensor(DType::kFloat32, {2})};
    for (int i = 0; i < 2; ++i) {
      grads[0].flat()[i] = 1;
      grads[1].flat()[i] = (mean[i] - params[1].flat()[i]) * (1 - momentum);
      keras[i] = keras[i] * momentum + mean[i] * (1 - momentum);
    }
    ASSERT_TRUE((*updater)->Apply(grads, &params).ok());
  }
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(params[1].flat()[i], keras[i], 1e-6);
  // Adagrad on w: a = 0.1 + t after t steps of gradient 1.
  float w = 1;
  for (int t = 1; t <= 3; ++t) w -= 0.5f / std::sqrt(0.1f + t);
  EXPECT_NEAR(params[0].flat()[0], w, 1e-5);
}

// A table's sparse apply changes only the touched rows, and rejects what does not fit.
TEST(KerasUpdaterTest, ApplySparseTouchesOnlyTheGivenRows) {
  std::vector<VariableSpec> vars = {{"emb", {6, 2}, DType::kFloat32, InitializerSpec{"ones"}, true},
                                    {"b", {2}, DType::kFloat32, InitializerSpec{"zeros"}, false}};
  OptimizerSpec sgd;
  sgd.type = "sgd";
  sgd.learning_rate.initial = 0.5;
  auto updater = NewKerasUpdater(sgd, vars);
  ASSERT_TRUE(updater.ok());
  Tensor table(DType::kFloat32, {6, 2});
  ASSERT_TRUE(InitializeVariable(vars[0], 1, &table).ok());
  Tensor rows(DType::kFloat32, {3, 2});
  for (int i = 0; i < 6; ++i) rows.flat()[i] = 1.0f;
  ASSERT_TRUE((*updater)->ApplySparse(0, std::vector<int64_t>{4, 1, 4}, rows, &table).ok());
  EXPECT_EQ(std::vector<float>(table.flat().begin(), table.flat().end()),
            (std::vector<float>{1, 1, 0.5f, 0.5f, 1, 1, 1, 1, 0, 0, 1, 1}));  // row 4 twice: summed
  EXPECT_EQ((*updater)->ApplySparse(0, std::vector<int64_t>{6, 0, 1}, rows, &table).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*updater)->ApplySparse(0, std::vector<int64_t>{0, 1}, rows, &table).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor bias(DType::kFloat32, {2});
  EXPECT_EQ((*updater)->ApplySparse(1, std::vector<int64_t>{0}, Tensor(DType::kFloat32, {1, 2}), &bias).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain
