#include "common/job_spec.h"

#include "common/job_presets.h"
#include "common/json_util.h"
#include "common/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

nlohmann::json Cnn() { return *JobPresetJson("cnn"); }

std::string ErrorOf(const nlohmann::json& doc) {
  auto spec = JobSpecFromJson(doc);
  EXPECT_FALSE(spec.ok());
  return std::string(spec.status().message());
}

TEST(JobSpecTest, PresetsParse) {
  for (const char* name : {"linear", "mlp", "cnn"}) {
    auto spec = LoadJobSpec(name);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_TRUE(ModelVariables(spec->model).ok()) << name;
  }
}

TEST(JobSpecTest, CnnMatchesTheSeedModel) {
  auto spec = LoadJobSpec("cnn");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->batch_size, 64);
  EXPECT_EQ(spec->optimizer.type, "adam");
  EXPECT_DOUBLE_EQ(spec->optimizer.learning_rate.initial, 1e-3);
  EXPECT_DOUBLE_EQ(spec->optimizer.epsilon, 1e-7);
  auto vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok());
  std::vector<std::string> names;
  int64_t params = 0;
  for (const auto& v : *vars) {
    names.push_back(v.name);
    int64_t n = 1;
    for (int64_t d : v.shape) n *= d;
    params += n;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias",
                                             "dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}));
  EXPECT_EQ((*vars)[4].shape, (std::vector<int64_t>{1600, 64}));
  EXPECT_EQ((*vars)[0].initializer.type, "glorot_uniform");
  EXPECT_EQ((*vars)[1].initializer.type, "zeros");
  EXPECT_EQ(params, 121930);
}

TEST(JobSpecTest, RoundTripsThroughCanonicalJson) {
  auto spec = LoadJobSpec("cnn");
  ASSERT_TRUE(spec.ok());
  auto again = JobSpecFromJson(JobSpecToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), JobSpecToJson(*spec));
}

TEST(JobSpecTest, ErrorsNameTheField) {
  auto doc = Cnn();
  doc["model"]["layers"][5]["units"] = 0;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.layers[5].units must be positive"));
  doc = Cnn();
  doc["model"]["layers"][0]["type"] = "lstm";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.layers[0].type \"lstm\" is not one of"));
  doc = Cnn();
  doc["optimizer"]["type"] = "adamw";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.type"));
  doc = Cnn();
  doc["schedule"] = {{"epochs", 1}, {"steps", 5}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("exactly one of epochs or steps"));
  doc = Cnn();
  doc["batch_size"] = "64";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("batch_size must be an integer"));
  doc = Cnn();
  doc["partitioner"] = {{"type", "fixed_shards"}, {"num_shards", 0}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("num_shards must be positive"));
  doc = Cnn();
  doc["mode"] = "semi";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("mode"));
}

TEST(JobSpecTest, StrategyAndFtrlFieldsParseRoundTripAndAreChecked) {
  auto doc = Cnn();
  doc["partitioner"] = {{"type", "fixed_shards"}, {"num_shards", 2}, {"strategy", "mod"}};
  doc["optimizer"] = {{"type", "ftrl"},
                      {"learning_rate", 0.05},
                      {"learning_rate_power", -0.25},
                      {"l1_regularization_strength", 0.01},
                      {"l2_regularization_strength", 0.02},
                      {"l2_shrinkage_regularization_strength", 0.03},
                      {"beta", 0.5}};
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->partitioner.strategy, "mod");
  EXPECT_EQ(spec->optimizer.type, "ftrl");
  EXPECT_EQ(spec->optimizer.learning_rate_power, -0.25);
  EXPECT_EQ(spec->optimizer.l1, 0.01);
  EXPECT_EQ(spec->optimizer.l2, 0.02);
  EXPECT_EQ(spec->optimizer.l2_shrinkage, 0.03);
  EXPECT_EQ(spec->optimizer.beta, 0.5);
  auto again = JobSpecFromJson(JobSpecToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), JobSpecToJson(*spec));
  EXPECT_EQ(JobSpecFromJson(Cnn())->partitioner.strategy, "div");  // the default

  doc["partitioner"]["strategy"] = "hash";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("partitioner.strategy"));
  doc = Cnn();
  doc["optimizer"] = {{"type", "ftrl"}, {"learning_rate_power", 0.5}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.learning_rate_power must be <= 0"));
  doc["optimizer"] = {{"type", "ftrl"}, {"l1_regularization_strength", -1}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.l1_regularization_strength must be >= 0"));
  doc["optimizer"] = {{"type", "lazy_adam"}};
  EXPECT_TRUE(JobSpecFromJson(doc).ok());
}

TEST(JobSpecTest, ShapeErrorsNameTheLayer) {
  auto doc = Cnn();
  doc["model"]["layers"].erase(4);  // drop flatten: dense gets an image
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok());
  auto vars = ModelVariables(spec->model);
  ASSERT_FALSE(vars.ok());
  EXPECT_THAT(std::string(vars.status().message()), HasSubstr("add a flatten layer"));
}

TEST(JobSpecTest, LoadErrors) {
  EXPECT_EQ(LoadJobSpec("resnet").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadJobSpec("/nonexistent/job.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace pstrain
