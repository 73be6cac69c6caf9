#include "common/config/job_spec.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/config/job_presets.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "common/tensor/tensor.h"
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
  for (const char* name : {"linear", "mlp", "cnn", "ctr"}) {
    auto spec = LoadJobSpec(name);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_TRUE(ModelVariables(spec->model).ok()) << name;
  }
}

TEST(JobSpecTest, PsReplicasIsZeroOrOneAndAsyncOnly) {
  nlohmann::json doc = Cnn();
  EXPECT_EQ(JobSpecFromJson(doc)->ps_replicas, 0);
  doc["ps_replicas"] = 1;
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->ps_replicas, 1);
  EXPECT_EQ(JobSpecFromJson(JobSpecToJson(*spec))->ps_replicas, 1);
  EXPECT_TRUE(CheckPsReplicas(*spec, 2).ok());
  absl::Status few = CheckPsReplicas(*spec, 1);
  EXPECT_EQ(few.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(few.message().find("needs at least 2 ps tasks"), std::string::npos) << few;
  doc["ps_replicas"] = 2;
  auto two = JobSpecFromJson(doc);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("ps_replicas"), std::string::npos) << two.status();
  doc["ps_replicas"] = 1;
  doc["mode"] = "sync";
  auto sync = JobSpecFromJson(doc);
  ASSERT_FALSE(sync.ok());
  EXPECT_NE(sync.status().message().find("sync mode with backup shards is not supported"), std::string::npos)
      << sync.status();
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

TEST(JobSpecTest, EvaluationIsEveryEpochUnlessTheScheduleSays) {
  auto spec = LoadJobSpec("cnn");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->schedule.eval_every_steps, -1);  // not given: after every epoch
  EXPECT_FALSE(JobSpecToJson(*spec)["schedule"].contains("eval_every_steps"));
  for (int64_t every : {0, 500}) {  // 0: only at the end
    spec->schedule.eval_every_steps = every;
    auto again = JobSpecFromJson(JobSpecToJson(*spec));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->schedule.eval_every_steps, every);
  }
  auto doc = Cnn();
  doc["schedule"]["eval_every_steps"] = -1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("schedule.eval_every_steps"));
}

// The test set is no test set when it is the training file: refused unless asked for.
TEST(JobSpecTest, CsvTestFileThatIsTheTrainingFileIsRefused) {
  nlohmann::json doc = *JobPresetJson("linear");
  doc["data"] = {{"dataset", "csv"}, {"train_file", "d.csv"}, {"test_file", "d.csv"}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.test_file is the training file too (\"d.csv\")"));
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.allow_test_in_train"));
  doc["data"]["allow_test_in_train"] = true;
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->data.allow_test_in_train);
  EXPECT_TRUE(JobSpecFromJson(JobSpecToJson(*spec))->data.allow_test_in_train);
}

TEST(JobSpecTest, ErrorsNameTheField) {
  auto doc = Cnn();
  doc["model"]["layers"][5]["units"] = 0;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.layers[5].units must be positive"));
  // Sizes without a default are required (an absent one once passed as 0 and broke the spec's own
  // JSON round trip).
  doc = Cnn();
  doc["model"]["layers"][5].erase("units");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.layers[5].units is required for a dense layer"));
  for (const char* key : {"filters", "kernel_size"}) {
    doc = Cnn();
    doc["model"]["layers"][0].erase(key);
    EXPECT_THAT(ErrorOf(doc), HasSubstr(absl::StrCat("model.layers[0].", key, " is required for a conv2d layer")));
  }
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
      {"/optimizer/learning_rate",
       {{"schedule", "exponential_decay"}, {"decay_steps", 10}, {"decay_rate", 0}},
       "decay_rate must be positive"},
      {"/optimizer/learning_rate",
       {{"schedule", "exponential_decay"}, {"decay_steps", 0}},
       "decay_steps must be positive"},
      {"/model/layers/0/kernel_initializer",
       {{"type", "random_normal"}, {"stddev", -1}},
       "stddev must not be negative"},
      {"/model/layers/0/kernel_initializer",
       {{"type", "random_uniform"}, {"minval", 1}, {"maxval", 0}},
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
      {"/model/layers/5/units", nlohmann::json::parse("18446744073709551615"),
       "= 18446744073709551615 is out of range"},
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

nlohmann::json Ctr() { return *JobPresetJson("ctr"); }

TEST(JobSpecTest, CtrPresetMatchesThePeer) {
  auto spec = LoadJobSpec("ctr");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->model.is_ctr());
  EXPECT_EQ(spec->model.numeric_inputs, 13);
  ASSERT_EQ(spec->model.fields.size(), 26u);
  EXPECT_EQ(spec->model.input_shape, (std::vector<int64_t>{13 + 26 * 16}));
  EXPECT_EQ(spec->model.loss, "binary_crossentropy");
  EXPECT_EQ(spec->batch_size, 1024);
  EXPECT_EQ(spec->optimizer.type, "adagrad");
  EXPECT_DOUBLE_EQ(spec->optimizer.learning_rate.initial, 0.02);
  EXPECT_DOUBLE_EQ(spec->optimizer.initial_accumulator_value, 1e-6);
  EXPECT_DOUBLE_EQ(spec->optimizer.epsilon, 1e-7);
  EXPECT_EQ(spec->data.dataset, "criteo");
  EXPECT_EQ(spec->schedule.epochs, 1);
  auto vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok()) << vars.status();
  ASSERT_EQ(vars->size(), 26u + 6u);
  EXPECT_EQ((*vars)[0].name, "embedding/embeddings");
  EXPECT_EQ((*vars)[1].name, "embedding_1/embeddings");
  EXPECT_EQ((*vars)[25].name, "embedding_25/embeddings");
  for (int i = 0; i < 26; ++i) {
    EXPECT_TRUE((*vars)[i].sparse);
    EXPECT_EQ((*vars)[i].shape, (std::vector<int64_t>{100000, 16}));
    EXPECT_EQ((*vars)[i].initializer.type, "random_uniform");
    EXPECT_DOUBLE_EQ((*vars)[i].initializer.minval, -0.05);
    EXPECT_DOUBLE_EQ((*vars)[i].initializer.maxval, 0.05);
  }
  std::vector<std::string> tower;
  int64_t dense_params = 0;
  for (size_t i = 26; i < vars->size(); ++i) {
    EXPECT_FALSE((*vars)[i].sparse);
    tower.push_back((*vars)[i].name);
    dense_params += NumElements((*vars)[i].shape);
  }
  EXPECT_EQ(tower, (std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                                             "dense_2/kernel", "dense_2/bias"}));
  EXPECT_EQ((*vars)[26].shape, (std::vector<int64_t>{429, 512}));
  EXPECT_EQ((*vars)[26].initializer.type, "glorot_uniform");
  EXPECT_EQ((*vars)[27].initializer.type, "zeros");
  EXPECT_EQ(dense_params, 429 * 512 + 512 + 512 * 256 + 256 + 256 + 1);
}

TEST(JobSpecTest, CtrRoundTripsThroughCanonicalJson) {
  auto spec = LoadJobSpec("ctr");
  ASSERT_TRUE(spec.ok());
  spec->data.train_files = {"/data/day_*.gz"};
  spec->data.test_files = {"/data/test.txt"};
  spec->data.skip_bad_lines = true;
  const nlohmann::json canonical = JobSpecToJson(*spec);
  EXPECT_FALSE(canonical["model"].contains("input_shape"));
  auto again = JobSpecFromJson(canonical);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), canonical);
  EXPECT_EQ(again->model.fields.size(), 26u);
  EXPECT_EQ(again->data.train_files, spec->data.train_files);
  EXPECT_TRUE(again->data.skip_bad_lines);
}

// data.dataset "tfrecord": files required, a features mapping that matches the model, refused
// elsewhere, unknown keys named; the canonical form round-trips.
TEST(JobSpecTest, TfRecordDataNeedsFeaturesMatchingTheModel) {
  auto tfrecord = [] {
    nlohmann::json doc = Ctr();
    nlohmann::json numeric = nlohmann::json::array(), categorical = nlohmann::json::array();
    for (int i = 1; i <= 13; ++i) numeric.push_back("I" + std::to_string(i));
    for (int i = 1; i <= 26; ++i) categorical.push_back("C" + std::to_string(i));
    doc["data"] = {{"dataset", "tfrecord"}, {"train_files", {"/d/train-*.tfrecord"}}, {"test_files", "/d/test.gz"},
                   {"features", {{"label", "clicked"}, {"numeric", numeric}, {"categorical", categorical}}}};
    return doc;
  };
  auto spec = JobSpecFromJson(tfrecord());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->data.features.label, "clicked");
  EXPECT_EQ(spec->data.features.numeric.size(), 13u);
  EXPECT_EQ(spec->data.features.categorical[25], "C26");
  auto again = JobSpecFromJson(JobSpecToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), JobSpecToJson(*spec));
  EXPECT_EQ(again->data.features.categorical, spec->data.features.categorical);

  nlohmann::json doc = tfrecord();
  doc["data"].erase("features");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features is required for tfrecord data"));
  doc = tfrecord();
  doc["data"].erase("test_files");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.test_files is required for tfrecord data"));
  doc = tfrecord();
  doc["data"]["features"]["numeric"].erase(0);
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.numeric names 12 features but the model has 13 numeric inputs"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"].push_back("C27");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.categorical names 27 features but the model has 26 fields"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][3] = "I2";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("names feature \"I2\" twice"));
  doc = tfrecord();
  doc["data"]["features"].erase("label");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.label is required"));
  doc = tfrecord();
  doc["data"]["features"]["numerics"] = doc["data"]["features"]["numeric"];
  EXPECT_THAT(ErrorOf(doc), HasSubstr("unknown key \"numerics\" in data.features"));
  doc = tfrecord();
  doc["data"]["dataset"] = "criteo";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features is for tfrecord data only"));
  doc = Cnn();
  doc["data"] = tfrecord()["data"];
  EXPECT_THAT(ErrorOf(doc), HasSubstr("tfrecord needs a CTR model"));
}

// A categorical feature may be a bag: {"name", "combiner", "weights", "max_length"}; its combiner
// reaches the model field, the canonical form round-trips, and bad bags are named.
TEST(JobSpecTest, TfRecordBagFeatures) {
  auto tfrecord = [] {
    nlohmann::json doc = Ctr();
    doc["model"]["numeric_inputs"] = 1;
    doc["model"]["fields"] = {{{"vocabulary_size", 10}, {"embedding_dim", 4}},
                              {{"vocabulary_size", 20}, {"embedding_dim", 4}},
                              {{"vocabulary_size", 30}, {"embedding_dim", 2}}};
    doc["data"] = {{"dataset", "tfrecord"}, {"train_files", {"/d/train.tfrecord"}}, {"test_files", "/d/test.tfrecord"},
                   {"features",
                    {{"label", "clicked"},
                     {"numeric", {"I1"}},
                     {"categorical",
                      {"C1",
                       {{"name", "tags"}, {"combiner", "mean"}, {"weights", "tag_w"}, {"max_length", 64}},
                       {{"name", "words"}, {"combiner", "sqrtn"}}}}}}};
    return doc;
  };
  auto spec = JobSpecFromJson(tfrecord());
  ASSERT_TRUE(spec.ok()) << spec.status();
  const TfExampleFeatureSpec& f = spec->data.features;
  EXPECT_EQ(f.categorical, (std::vector<std::string>{"C1", "tags", "words"}));
  ASSERT_EQ(f.bags.size(), 3u);
  EXPECT_FALSE(f.is_bag(0));
  EXPECT_EQ(f.bags[1].combiner, "mean");
  EXPECT_EQ(f.bags[1].weights, "tag_w");
  EXPECT_EQ(f.bags[1].max_length, 64);
  EXPECT_EQ(f.bags[2].combiner, "sqrtn");
  EXPECT_EQ(f.bags[2].max_length, 4096);
  EXPECT_EQ(spec->model.fields[0].combiner, "");
  EXPECT_EQ(spec->model.fields[1].combiner, "mean");
  EXPECT_EQ(spec->model.fields[2].combiner, "sqrtn");
  auto again = JobSpecFromJson(JobSpecToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), JobSpecToJson(*spec));
  EXPECT_EQ(again->model.fields[1].combiner, "mean");
  EXPECT_EQ(again->data.features.bags[1].weights, "tag_w");

  nlohmann::json doc = tfrecord();
  doc["data"]["features"]["categorical"][1]["combiner"] = "max";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.categorical[1].combiner"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][1].erase("combiner");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.categorical[1].combiner is required for a bag"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][2]["max_length"] = 0;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.categorical[2].max_length"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][2]["weight"] = "w";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("unknown key \"weight\""));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][2]["weights"] = "tag_w";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("names feature \"tag_w\" twice"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][1]["weights"] = "I1";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("names feature \"I1\" twice"));
  doc = tfrecord();
  doc["data"]["features"]["categorical"][0] = 5;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.features.categorical[0] must be a feature name or a bag"));
}

TEST(JobSpecTest, CtrFieldsNamedAndInitializedAsKeras) {
  auto doc = Ctr();
  doc["model"]["fields"] = {{{"name", "user"}, {"vocabulary_size", 10}, {"embedding_dim", 4}},
                            {{"vocabulary_size", 20}, {"embedding_dim", 8}, {"embeddings_initializer", "uniform"}},
                            {{"vocabulary_size", 30},
                             {"embedding_dim", 2},
                             {"count", 2},
                             {"embeddings_initializer", {{"type", "random_normal"}, {"stddev", 0.01}}}}};
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok()) << vars.status();
  EXPECT_EQ((*vars)[0].name, "user/embeddings");
  EXPECT_EQ((*vars)[1].name, "embedding/embeddings");
  EXPECT_EQ((*vars)[2].name, "embedding_1/embeddings");
  EXPECT_EQ((*vars)[3].name, "embedding_2/embeddings");
  EXPECT_EQ((*vars)[1].initializer.type, "random_uniform");
  EXPECT_EQ((*vars)[3].initializer.type, "random_normal");
  EXPECT_DOUBLE_EQ((*vars)[3].initializer.stddev, 0.01);
  EXPECT_EQ(spec->model.input_shape, (std::vector<int64_t>{13 + 4 + 8 + 2 + 2}));
  EXPECT_EQ((*vars)[4].shape, (std::vector<int64_t>{29, 512}));
}

TEST(JobSpecTest, CtrErrorsNameTheField) {
  auto doc = Ctr();
  doc["model"]["fields"] = {{{"vocabulary_size", 10}, {"embedding_dim", 4}},
                            {{"vocabulary_size", 10}, {"embedding_dim", 4}},
                            {{"vocabulary_size", 10}, {"embedding_dim", 4}},
                            {{"vocabulary_size", 0}, {"embedding_dim", 4}}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("job spec: model.fields[3].vocabulary_size must be positive"));
  doc = Ctr();
  doc["model"]["fields"][0]["embedding_dim"] = -1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].embedding_dim must be positive"));
  doc = Ctr();
  doc["model"]["fields"][0]["embedding_dim"] = 1 << 20;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].embedding_dim must be at most 65536"));
  doc = Ctr();
  doc["model"]["fields"][0].erase("vocabulary_size");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].vocabulary_size is missing"));
  doc = Ctr();
  doc["model"]["fields"][0]["vocabulary_sise"] = 5;
  EXPECT_THAT(ErrorOf(doc),
              HasSubstr("unknown key \"vocabulary_sise\" in model.fields[0]; did you mean \"vocabulary_size\"?"));
  doc = Ctr();
  doc["model"]["fields"][0]["name"] = "user";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].name cannot name several fields"));
  doc = Ctr();
  doc["model"]["fields"] = {{{"name", "dense"}, {"vocabulary_size", 10}, {"embedding_dim", 4}}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("\"dense\" is also a layer's name"));
  doc = Ctr();
  doc["model"]["fields"] = {{{"name", "a"}, {"vocabulary_size", 10}, {"embedding_dim", 4}},
                            {{"name", "a"}, {"vocabulary_size", 10}, {"embedding_dim", 4}}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[1].name \"a\" is used twice"));
  doc = Ctr();
  doc["model"]["fields"] = nlohmann::json::array();
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields must be a non-empty list"));
  doc = Ctr();
  doc["model"]["numeric_inputs"] = -2;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.numeric_inputs must not be negative"));
  doc = Ctr();
  doc["model"]["input_shape"] = {429};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.input_shape must not be given with model.fields"));
  doc = Ctr();
  doc["model"]["loss"] = "mse";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.loss must be binary_crossentropy"));
  doc = Ctr();
  doc["model"]["layers"][2]["units"] = 2;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.layers[2] must be a dense layer of 1 unit"));
  doc = Ctr();
  doc["model"]["layers"][0] = {{"type", "relu"}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.layers[0].type is relu: a CTR model's layers must all be dense"));
  doc = Ctr();
  doc["data"]["dataset"] = "fashion_mnist";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.dataset must be criteo"));
  doc = Ctr();
  doc["data"]["train_files"] = "train.txt";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.test_files is missing"));
  doc = Ctr();
  doc["data"]["train_files"] = {"a.txt", 3};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.train_files[1] must be a string"));
  doc = Cnn();
  doc["model"]["loss"] = "binary_crossentropy";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("binary_crossentropy needs model.fields"));
  doc = Cnn();
  doc["model"]["numeric_inputs"] = 3;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.numeric_inputs needs model.fields"));
  doc = Cnn();
  doc["data"]["skip_bad_lines"] = true;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("are for criteo and tfrecord data"));
}

// A CTR job of two fields: "user" dynamic (3 copies by count), "ad" with a vocabulary.
nlohmann::json DynamicCtr() {
  nlohmann::json doc = Ctr();
  doc["model"]["fields"] = {{{"embedding_dim", 8},
                             {"count", 3},
                             {"dynamic", {{"admission_threshold", 3}, {"ttl_steps", 1000}, {"max_rows", 100000}}}},
                            {{"name", "ad"}, {"vocabulary_size", 50}, {"embedding_dim", 4}}};
  return doc;
}

// A table without a vocabulary ("dynamic" in place of vocabulary_size) parses into
// EmbeddingFieldSpec::dynamic, is copied by count, becomes a [max_rows, dim] dynamic variable and
// round-trips through the canonical form.
TEST(JobSpecTest, CtrDynamicTableParsesAndRoundTrips) {
  auto spec = JobSpecFromJson(DynamicCtr());
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->model.fields.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const EmbeddingFieldSpec& f = spec->model.fields[i];
    ASSERT_TRUE(f.dynamic.has_value()) << i;
    EXPECT_EQ(f.vocabulary_size, 0);
    EXPECT_EQ(f.dynamic->admission_threshold, 3);
    EXPECT_EQ(f.dynamic->ttl_steps, 1000);
    EXPECT_EQ(f.dynamic->max_rows, 100000);
  }
  EXPECT_EQ(spec->model.fields[1].name, "embedding_1");
  EXPECT_FALSE(spec->model.fields[3].dynamic.has_value());
  EXPECT_EQ(spec->model.input_shape, (std::vector<int64_t>{13 + 3 * 8 + 4}));

  auto vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok()) << vars.status();
  EXPECT_EQ((*vars)[0].name, "embedding/embeddings");
  EXPECT_EQ((*vars)[0].shape, (std::vector<int64_t>{100000, 8}));
  EXPECT_TRUE((*vars)[0].sparse);
  EXPECT_TRUE((*vars)[0].trainable);
  EXPECT_EQ((*vars)[0].initializer.type, "random_uniform");
  ASSERT_TRUE((*vars)[2].dynamic.has_value());
  EXPECT_EQ((*vars)[2].dynamic->admission_threshold, 3);
  EXPECT_EQ((*vars)[2].dynamic->max_rows, 100000);
  EXPECT_EQ((*vars)[3].name, "ad/embeddings");
  EXPECT_EQ((*vars)[3].shape, (std::vector<int64_t>{50, 4}));
  EXPECT_FALSE((*vars)[3].dynamic.has_value());
  EXPECT_FALSE((*vars)[4].dynamic.has_value());  // the tower

  const nlohmann::json canonical = JobSpecToJson(*spec);
  const nlohmann::json& field = canonical["model"]["fields"][0];
  EXPECT_FALSE(field.contains("vocabulary_size")) << field.dump();
  EXPECT_EQ(field["dynamic"], (nlohmann::json{{"admission_threshold", 3}, {"ttl_steps", 1000}, {"max_rows", 100000}}));
  EXPECT_EQ(canonical["model"]["fields"][3]["vocabulary_size"], 50);
  auto again = JobSpecFromJson(canonical);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), canonical);
  EXPECT_EQ(again->model.fields[2].dynamic->ttl_steps, 1000);

  // Defaults: every key admitted, no TTL.
  nlohmann::json doc = Ctr();
  doc["model"]["fields"][0].erase("vocabulary_size");
  doc["model"]["fields"][0]["dynamic"] = {{"max_rows", 7}};
  auto defaults = JobSpecFromJson(doc);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->model.fields[0].dynamic->admission_threshold, 1);
  EXPECT_EQ(defaults->model.fields[0].dynamic->ttl_steps, 0);
  EXPECT_EQ(defaults->model.fields[25].dynamic->max_rows, 7);
}

// A dynamic field's own keys are checked, and it cannot have a vocabulary.
TEST(JobSpecTest, CtrDynamicTableKeysAreChecked) {
  nlohmann::json doc = DynamicCtr();
  nlohmann::json& d = doc["model"]["fields"][0]["dynamic"];
  d["admission_threshold"] = 256;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic.admission_threshold must be at most 255"));
  d["admission_threshold"] = 0;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic.admission_threshold must be positive"));
  d["admission_threshold"] = 1;
  d["ttl_steps"] = -1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic.ttl_steps must not be negative"));
  d["ttl_steps"] = 0;
  d["max_rows"] = (int64_t{1} << 40) + 1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic.max_rows must be at most 1099511627776"));
  d["max_rows"] = 0;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic.max_rows must be positive"));
  d.erase("max_rows");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic.max_rows is required"));
  d = {{"ttl_step", 5}, {"max_rows", 10}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("unknown key \"ttl_step\" in model.fields[0].dynamic"));
  d = 3;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic must be an object"));
  doc = DynamicCtr();
  doc["model"]["fields"][0]["vocabulary_size"] = 10;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].dynamic cannot be given with vocabulary_size"));
  doc = DynamicCtr();
  doc["model"]["fields"][1].erase("vocabulary_size");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[1].vocabulary_size is missing"));
}

// Dynamic tables live in async jobs without backups and need an optimizer that updates only the
// touched rows: each refusal names the field and what to change, also when the job's mode or
// ps_replicas is set after reading (the chief's flags go back through JobSpecFromJson).
TEST(JobSpecTest, CtrDynamicTableIsRefusedWithSyncReplicasOrAdam) {
  ASSERT_TRUE(JobSpecFromJson(DynamicCtr()).ok());
  nlohmann::json doc = DynamicCtr();
  doc["mode"] = "sync";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields (field \"embedding\") is a dynamic table, which needs mode "
                                      "\"async\" (the job's mode is \"sync\"): set mode to \"async\", or give the "
                                      "field a vocabulary_size"));
  doc = DynamicCtr();
  doc["ps_replicas"] = 1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields (field \"embedding\") is a dynamic table, whose shards have no "
                                      "backups, but ps_replicas is 1: set ps_replicas to 0"));
  doc = DynamicCtr();
  doc["optimizer"] = "adam";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("is a dynamic table, which optimizer adam cannot update"));
  doc["optimizer"] = "lazy_adam";
  EXPECT_TRUE(JobSpecFromJson(doc).ok());

  auto spec = JobSpecFromJson(DynamicCtr());
  ASSERT_TRUE(spec.ok());
  spec->mode = "sync";
  auto again = JobSpecFromJson(JobSpecToJson(*spec));
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("needs mode \"async\""));
}

// Bags (tfrecord) may be dynamic too: the combiner is copied onto the dynamic field.
TEST(JobSpecTest, CtrDynamicTableMayBeABag) {
  nlohmann::json doc = DynamicCtr();
  nlohmann::json numeric = nlohmann::json::array();
  for (int i = 1; i <= 13; ++i) numeric.push_back("I" + std::to_string(i));
  doc["data"] = {{"dataset", "tfrecord"},
                 {"train_files", {"/d/train.tfrecord"}},
                 {"test_files", {"/d/test.tfrecord"}},
                 {"features",
                  {{"label", "clicked"},
                   {"numeric", numeric},
                   {"categorical", {{{"name", "u"}, {"combiner", "mean"}}, "v", "w", "ad"}}}}};
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model.fields[0].combiner, "mean");
  EXPECT_TRUE(spec->model.fields[0].dynamic.has_value());
  auto again = JobSpecFromJson(JobSpecToJson(*spec));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->model.fields[0].combiner, "mean");
  EXPECT_EQ(again->model.fields[0].dynamic->max_rows, 100000);
}

// The CTR keys go through the same reader as every other field: unknown keys name the nearest
// known one, values outside their range name the bound, and sizes are checked before they are
// multiplied.
TEST(JobSpecTest, CtrFieldsAreCheckedLikeEveryField) {
  auto doc = Ctr();
  doc["model"]["feilds"] = doc["model"]["fields"];
  doc["model"].erase("fields");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("unknown key \"feilds\" in model; did you mean \"fields\"?"));
  doc = Ctr();
  doc["model"]["numeric_input"] = 13;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("did you mean \"numeric_inputs\"?"));
  doc = Ctr();
  doc["model"]["fields"][0]["embeddings_initializer"] = {{"type", "uniform"}, {"minvl", -1}};
  EXPECT_THAT(ErrorOf(doc),
              HasSubstr("unknown key \"minvl\" in model.fields[0].embeddings_initializer; did you mean \"minval\"?"));
  doc = Ctr();
  doc["model"]["fields"][0]["embeddings_initializer"] = "unifrom";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("did you mean \"uniform\"?"));
  doc = Ctr();
  doc["model"]["fields"][0]["count"] = 0;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].count must be positive"));
  doc = Ctr();
  doc["model"]["fields"][0]["vocabulary_size"] = 2.5;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].vocabulary_size"));
  doc = Ctr();
  doc["model"]["fields"][0]["vocabulary_size"] = (int64_t{1} << 40) + 1;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].vocabulary_size must be at most 1099511627776"));
  // 17 tables of 2^40 x 2^16 float32 (2^58 bytes each) pass one by one and overflow together.
  doc = Ctr();
  doc["model"]["fields"] = {{{"vocabulary_size", int64_t{1} << 40}, {"embedding_dim", 65536}, {"count", 17}}};
  std::string error = ErrorOf(doc);
  EXPECT_THAT(error, HasSubstr("model.fields[0] (table embedding_16)"));
  EXPECT_THAT(error, HasSubstr("more than pstrain can hold (at most 2^62 bytes)"));
  doc["model"]["fields"][0]["count"] = 16;  // 2^62 bytes: the most a size may be
  EXPECT_TRUE(JobSpecFromJson(doc).ok());
  // The tower's input width is a dimension: 40000 fields of 65536 columns are more than 2^31 - 1.
  doc = Ctr();
  doc["model"]["fields"] = {{{"vocabulary_size", 10}, {"embedding_dim", 65536}, {"count", 40000}}};
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model: the dense layers' input width must be at most 2147483647"));
  doc = Ctr();
  doc["data"]["skip_bad_lines"] = "yes";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.skip_bad_lines must be true or false"));
  doc = Ctr();
  doc["data"]["skip_bad_line"] = true;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("unknown key \"skip_bad_line\" in data; did you mean \"skip_bad_lines\"?"));
  doc = Ctr();
  doc["data"]["train_files"] = {"a.txt", ""};
  doc["data"]["test_files"] = "b.txt";
  EXPECT_THAT(ErrorOf(doc), HasSubstr("data.train_files[1] must not be empty"));
  doc["data"]["train_files"] = {"a.txt"};
  auto spec = JobSpecFromJson(doc);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->data.test_files, (std::vector<std::string>{"b.txt"}));
}

TEST(JobSpecTest, CtrDataFilesFromTheCommandLine) {
  auto job = LoadJobSpec("ctr");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(OverrideCtrDataFiles("", "", "--", &*job).ok());  // nothing given: the default set
  EXPECT_TRUE(job->data.train_files.empty());
  ASSERT_TRUE(OverrideCtrDataFiles("/d/day_0.gz, /d/day_1*.gz", "/d/day_23.gz", "--", &*job).ok());
  EXPECT_EQ(job->data.train_files, (std::vector<std::string>{"/d/day_0.gz", "/d/day_1*.gz"}));
  EXPECT_EQ(job->data.test_files, (std::vector<std::string>{"/d/day_23.gz"}));
  auto only_train = LoadJobSpec("ctr");
  auto s = OverrideCtrDataFiles("/d/train.txt", "", "--", &*only_train);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("--train_files needs --test_files too"));
  auto cnn = LoadJobSpec("cnn");
  EXPECT_THAT(std::string(OverrideCtrDataFiles("a", "b", "--", &*cnn).message()),
              HasSubstr("--train_files is for criteo and tfrecord jobs"));
}

TEST(JobSpecTest, LoadErrors) {
  EXPECT_EQ(LoadJobSpec("resnet").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadJobSpec("/nonexistent/job.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace pstrain
