#include "common/job_spec.h"

#include <fstream>

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

// Every value checked against its valid range (class: training garbage in silence), with the
// rule's origin where Keras, TensorFlow or PyTorch has one.
TEST(JobSpecTest, ValuesOutsideTheirRangeAreRefused) {
  struct Case {
    const char* pointer;  // JSON pointer into the cnn preset
    nlohmann::json value;
    const char* message;
  };
  const Case cases[] = {
      {"/optimizer/learning_rate", 1e300, "optimizer.learning_rate must be at most 3.4e+38, got 1e+300"},
      {"/optimizer/learning_rate", 0, "optimizer.learning_rate must be positive"},
      {"/optimizer/beta_1", 1, "optimizer.beta_1 must be less than 1, got 1 (as PyTorch's Adam"},
      {"/optimizer/beta_2", -0.1, "optimizer.beta_2 must not be negative"},
      {"/optimizer/momentum", 1.5, "optimizer.momentum must be at most 1, got 1.5 (as Keras's SGD)"},
      {"/optimizer/rho", 1, "optimizer.rho must be less than 1"},
      {"/optimizer/epsilon", 0, "optimizer.epsilon must be positive"},
      {"/optimizer/initial_accumulator_value", -1, "must not be negative, got -1 (as Keras's Adagrad)"},
      {"/optimizer/learning_rate",
       {{"schedule", "piecewise_constant"}, {"boundaries", {100}}, {"values", {0.1, -0.01}}},
       "optimizer.learning_rate.values[1] must be positive, got -0.01"},
      {"/optimizer/learning_rate",
       {{"schedule", "piecewise_constant"}, {"boundaries", {100, 50}}, {"values", {0.1, 0.01, 0.001}}},
       "boundaries must increase"},
      {"/optimizer/learning_rate", {{"schedule", "exponential_decay"}, {"decay_steps", 10}, {"decay_rate", 0}},
       "decay_rate must be positive"},
      {"/optimizer/learning_rate", {{"schedule", "exponential_decay"}, {"decay_steps", 0}},
       "decay_steps must be positive"},
      {"/model/layers/0/kernel_initializer", {{"type", "random_normal"}, {"stddev", -1}}, "stddev must not be negative"},
      {"/model/layers/0/kernel_initializer", {{"type", "random_uniform"}, {"minval", 1}, {"maxval", 0}},
       "minval 1 is larger than maxval 0"},
      {"/schedule/keep_checkpoints", 0, "keep_checkpoints must be positive"},
      {"/schedule/steps_per_closure", 4294967296, "steps_per_closure must be at most 2147483647"},
      {"/schedule/checkpoint_every_secs", -5, "checkpoint_every_secs must not be negative"},
      {"/sync_timeout_ms", 0, "sync_timeout_ms must be positive"},
      {"/seed", -1, "seed must not be negative"},
      {"/data/label_column", -2, "label_column must be at least -1"},
  };
  for (const Case& c : cases) {
    auto doc = Cnn();
    doc[nlohmann::json::json_pointer(c.pointer)] = c.value;
    EXPECT_THAT(ErrorOf(doc), HasSubstr(c.message)) << c.pointer << " = " << c.value.dump();
  }
}

// Sizes bounded before anything is allocated, and never wrapped (classes: sizes trusted before
// allocating, integer overflow into wrong messages).
TEST(JobSpecTest, SizesAreBoundedAndNeverWrap) {
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* message;
  };
  const Case cases[] = {
      {"/model/layers/5/units", 1000000000000, "model.layers[5].units must be at most 2147483647"},
      {"/model/layers/5/units", nlohmann::json::parse("18446744073709551615"), "= 18446744073709551615 is out of range"},
      {"/model/layers/0/filters", -3, "model.layers[0].filters must be positive, got -3"},
      {"/batch_size", 1000000000000, "batch_size must be at most 2147483647"},
      {"/model/input_shape", {28, 28, 0}, "model.input_shape[2] must be positive"},
      {"/model/input_shape", {1, 2, 3, 4, 5, 6, 7, 8, 9}, "has 9 entries, at most 8"},
      {"/schedule/steps", 1e300, "schedule.steps = 1e+300 is out of range"},
  };
  for (const Case& c : cases) {
    auto doc = Cnn();
    doc[nlohmann::json::json_pointer(c.pointer)] = c.value;
    EXPECT_THAT(ErrorOf(doc), HasSubstr(c.message)) << c.pointer;
  }
  // In range each, too large together: the product is checked, never wrapped ([2^40, 2^40] read
  // as [0, 16] before).
  auto doc = Cnn();
  doc["model"]["input_shape"] = {1 << 30, 1 << 30, 1 << 30};
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto vars = ModelVariables(spec->model);
  ASSERT_FALSE(vars.ok());
  EXPECT_THAT(std::string(vars.status().message()), HasSubstr("more than pstrain can hold"));
  doc = Cnn();
  doc["model"]["layers"][5]["units"] = 2147483647;  // a dense kernel of 1600 x (2^31 - 1) floats
  doc["model"]["layers"][6]["units"] = 2147483647;
  spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok());
  vars = ModelVariables(spec->model);
  ASSERT_FALSE(vars.ok());
  EXPECT_THAT(std::string(vars.status().message()), HasSubstr("variable dense_1/kernel"));
}

// Unknown keys at every level are refused, naming the nearest known key (class: processes and
// flags).
TEST(JobSpecTest, UnknownKeysAreRefusedWithTheNearestKnownOne) {
  struct Case {
    const char* pointer;
    const char* message;
  };
  const Case cases[] = {
      {"/optimiser", "unknown key \"optimiser\" in the top level; did you mean \"optimizer\"?"},
      {"/optimizer/learing_rate", "unknown key \"learing_rate\" in optimizer; did you mean \"learning_rate\"?"},
      {"/model/layers/5/unit", "in model.layers[5]; did you mean \"units\"?"},
      {"/model/inputshape", "did you mean \"input_shape\"?"},
      {"/data/datset", "in data; did you mean \"dataset\"?"},
      {"/schedule/epoch", "in schedule; did you mean \"epochs\"?"},
      {"/partitioner/max_shard", "in partitioner; did you mean \"max_shards\"?"},
      {"/model/layers/0/kernel_initializer/sttdev", "did you mean \"stddev\"?"},
      {"/dropout", "unknown key \"dropout\" in the top level (known keys:"},
  };
  for (const Case& c : cases) {
    auto doc = Cnn();
    if (std::string(c.pointer).find("kernel_initializer") != std::string::npos) {
      doc["model"]["layers"][0]["kernel_initializer"] = {{"type", "random_normal"}};
    }
    doc[nlohmann::json::json_pointer(c.pointer)] = 1;
    EXPECT_THAT(ErrorOf(doc), HasSubstr(c.message)) << c.pointer;
  }
  // The canonical form (every field explicit) has no unknown key.
  auto spec = LoadJobSpec("cnn");
  EXPECT_TRUE(JobSpecFromJson(JobSpecToJson(*spec)).ok());
}

TEST(JobSpecTest, DeeplyNestedJobFilesAreRefused) {
  const std::string path = ::testing::TempDir() + "/nested_job.json";
  std::ofstream(path) << "{\"model\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
  auto spec = LoadJobSpec(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("deeper than 64 levels"));
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
  EXPECT_THAT(ErrorOf(doc), HasSubstr("partitioner.strategy \"hash\" is not one of: div, mod"));
  doc = Cnn();
  doc["optimizer"] = {{"type", "ftrl"}, {"learning_rate_power", 0.5}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.learning_rate_power must be at most 0, got 0.5 (as Keras's Ftrl)"));
  doc["optimizer"] = {{"type", "ftrl"}, {"l1_regularization_strength", -1}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.l1_regularization_strength must not be negative, got -1"));
  doc["optimizer"] = {{"type", "ftrl"}, {"initial_accumulator_value", 0}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.initial_accumulator_value must be positive, got 0"));
  doc["optimizer"] = {{"type", "ftrl"}, {"beta", -0.5}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("optimizer.beta must not be negative"));
  doc["optimizer"] = {{"type", "ftrl"}, {"l2_shrinkage_regularisation_strength", 1}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("did you mean \"l2_shrinkage_regularization_strength\"?"));
  doc["optimizer"] = {{"type", "adagrad"}, {"initial_accumulator_value", 0}};  // Keras's Adagrad allows 0
  EXPECT_TRUE(JobSpecFromJson(doc).ok());
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
