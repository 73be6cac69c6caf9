#include "common/job_spec.h"

#include "common/job_presets.h"
#include "common/json_util.h"
#include "common/model_variables.h"
#include "common/tensor.h"
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
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].embedding_dim must be in [1, 65536]"));
  doc = Ctr();
  doc["model"]["fields"][0].erase("vocabulary_size");
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].vocabulary_size is missing"));
  doc = Ctr();
  doc["model"]["fields"][0]["vocab_size"] = 5;
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.fields[0].vocab_size is not a known key; did you mean vocabulary_size?"));
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
  EXPECT_THAT(ErrorOf(doc), HasSubstr("model.numeric_inputs must be in [0, "));
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
  EXPECT_THAT(ErrorOf(doc), HasSubstr("are for criteo data"));
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
              HasSubstr("--train_files is for criteo jobs"));
}

TEST(JobSpecTest, LoadErrors) {
  EXPECT_EQ(LoadJobSpec("resnet").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadJobSpec("/nonexistent/job.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace pstrain
