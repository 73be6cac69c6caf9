// LocalTrainer (single-process training) with test stand-ins for the initializer and optimizer:
// it learns the linear job, local replicas give the same weights, and schedules are honoured.
#include "worker/local/local_trainer.h"

#include "common/config/json_util.h"
#include "common/platform/env.h"
#include "gtest/gtest.h"
#include "worker/cpu/cpu_gradient_computer.h"

namespace pstrain {
namespace {

// Stand-ins: small deterministic weights and plain SGD.
absl::Status SmallWeights(const VariableSpec& var, uint64_t seed, Tensor* value) {
  for (int64_t i = 0; i < value->num_elements(); ++i) {
    value->flat()[i] = var.initializer.type == "zeros" ? 0.f : 0.05f * static_cast<float>((i * 7 + seed) % 5) - 0.1f;
  }
  return absl::OkStatus();
}

class Sgd : public ParameterUpdater {
 public:
  explicit Sgd(float lr) : lr_(lr) {}
  absl::Status Apply(const std::vector<Tensor>& grads, std::vector<Tensor>* params) override {
    for (size_t v = 0; v < grads.size(); ++v) {
      for (int64_t i = 0; i < grads[v].num_elements(); ++i) (*params)[v].flat()[i] -= lr_ * grads[v].flat()[i];
    }
    return absl::OkStatus();
  }

 private:
  float lr_;
};

absl::StatusOr<std::unique_ptr<ParameterUpdater>> MakeSgd(const OptimizerSpec& opt, const std::vector<VariableSpec>&,
                                                          uint64_t) {
  return std::unique_ptr<ParameterUpdater>(new Sgd(static_cast<float>(opt.learning_rate.initial)));
}

JobSpec LinearJob() {
  auto job = JobSpecFromJson(*ParseJson(R"({"name": "l", "model": {"input_shape": [2], "loss": "mse",
      "layers": [{"type": "dense", "units": 1}]}, "optimizer": {"type": "sgd", "learning_rate": 0.2},
      "data": {"dataset": "synthetic_linear", "num_examples": 512}, "batch_size": 32,
      "schedule": {"epochs": 3}, "seed": 9})", "test"));
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

TEST(LocalTrainerTest, LearnsTheLinearJob) {
  LocalTrainOptions options;
  auto trainer =
      LocalTrainer::Create(Env::Default(), LinearJob(), options, SmallWeights, MakeSgd, NewCpuGradientComputer);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_EQ((*trainer)->steps_per_epoch(), 16);
  EXPECT_EQ((*trainer)->total_steps(), 48);
  std::vector<EpochReport> reports;
  ASSERT_TRUE((*trainer)->Run([&](const EpochReport& r) { reports.push_back(r); }).ok());
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports.back().steps, 48);
  EXPECT_LT(reports.back().train_loss, reports.front().train_loss);
  EXPECT_LT(reports.back().test_loss, 0.05);
}

TEST(LocalTrainerTest, StepsOverrideEndsMidEpoch) {
  LocalTrainOptions options;
  options.steps = 20;
  options.evaluate = false;
  auto trainer =
      *LocalTrainer::Create(Env::Default(), LinearJob(), options, SmallWeights, MakeSgd, NewCpuGradientComputer);
  std::vector<EpochReport> reports;
  ASSERT_TRUE(trainer->Run([&](const EpochReport& r) { reports.push_back(r); }).ok());
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].steps, 16);
  EXPECT_EQ(reports[1].steps, 20);
}

TEST(LocalTrainerTest, ReplicasGiveTheSameWeights) {
  LocalTrainOptions one, three;
  one.steps = three.steps = 10;
  one.evaluate = three.evaluate = false;
  three.replicas = 3;
  three.threads = 3;
  auto a = *LocalTrainer::Create(Env::Default(), LinearJob(), one, SmallWeights, MakeSgd, NewCpuGradientComputer);
  auto b = *LocalTrainer::Create(Env::Default(), LinearJob(), three, SmallWeights, MakeSgd, NewCpuGradientComputer);
  ASSERT_TRUE(a->Run([](const EpochReport&) {}).ok());
  ASSERT_TRUE(b->Run([](const EpochReport&) {}).ok());
  const std::vector<Tensor> va = a->Variables(), vb = b->Variables();
  for (size_t v = 0; v < va.size(); ++v) {
    for (int64_t i = 0; i < va[v].num_elements(); ++i) {
      EXPECT_NEAR(va[v].flat()[i], vb[v].flat()[i], 1e-5);
    }
  }
}

TEST(LocalTrainerTest, MissingDataIsNamed) {
  auto job = *LoadJobSpec("cnn");
  LocalTrainOptions options;
  options.data_dir = "/nonexistent/fmnist";
  auto trainer = LocalTrainer::Create(Env::Default(), job, options, SmallWeights, MakeSgd, NewCpuGradientComputer);
  ASSERT_FALSE(trainer.ok());
  EXPECT_EQ(trainer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(trainer.status().message().find("/nonexistent/fmnist/train-images-idx3-ubyte.gz"), std::string::npos);
}

}  // namespace
}  // namespace pstrain
