// A job spec with a Keras model: read inline (keras_model), from a file beside the job
// (keras_json) or from --model_json; its canonical form carries the model; the variables are the
// graph's with Keras's initializers; what a job cannot train yet is refused naming the layer.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "common/config/job_spec.h"
#include "common/graph/model_graph.h"
#include "common/plan/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/keras_fixture.h"

namespace pstrain {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Job(const json& model) {
  return json{{"name", "keras"}, {"model", model}, {"data", {{"dataset", "fashion_mnist"}}},
              {"schedule", {{"steps", 10}}}};
}

json Fixture(const std::string& name) { return json::parse(ReadFixture(name)); }

TEST(JobSpecKerasTest, InlineModelGivesTheGraphsVariablesWithKerasNamesAndInitializers) {
  for (const char* flavor : {"keras2", "keras3"}) {
    auto spec = JobSpecFromJson(Job({{"keras_model", Fixture(std::string(flavor) + "_seeds_cnn.json")}}));
    ASSERT_TRUE(spec.ok()) << flavor << ": " << spec.status();
    ASSERT_TRUE(spec->model.is_graph());
    EXPECT_EQ(spec->model.input_shape, (std::vector<int64_t>{28, 28, 1}));
    EXPECT_TRUE(spec->model.from_logits) << "Dense(10) without activation gives logits";
    EXPECT_EQ(spec->model.loss, "sparse_categorical_crossentropy");
    auto vars = ModelVariables(spec->model);
    ASSERT_TRUE(vars.ok()) << vars.status();
    ASSERT_EQ(vars->size(), 8u);
    // The cnn preset's variables, names and shapes: the same model.
    auto preset = LoadJobSpec("cnn");
    ASSERT_TRUE(preset.ok());
    auto preset_vars = ModelVariables(preset->model);
    ASSERT_TRUE(preset_vars.ok());
    for (size_t i = 0; i < vars->size(); ++i) {
      EXPECT_EQ((*vars)[i].name, (*preset_vars)[i].name) << flavor;
      EXPECT_EQ((*vars)[i].shape, (*preset_vars)[i].shape) << (*vars)[i].name;
      EXPECT_EQ((*vars)[i].initializer.type, (*preset_vars)[i].initializer.type) << (*vars)[i].name;
      EXPECT_FALSE((*vars)[i].sparse);
    }
  }
}

TEST(JobSpecKerasTest, ProbabilitiesAreInferredAndInitializersRead) {
  auto spec = JobSpecFromJson(Job({{"keras_model", Fixture("keras3_residual_mlp.json")}}));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->model.from_logits) << "Dense(10, softmax) gives probabilities";
  auto vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok());
  std::map<std::string, std::string> init;
  for (const VariableSpec& v : *vars) init[v.name] = v.initializer.type;
  EXPECT_EQ(init["block/kernel"], "he_normal");
  EXPECT_EQ(init["embed/kernel"], "glorot_uniform");
  EXPECT_EQ(init["norm/gamma"], "ones");
  EXPECT_EQ(init["norm/beta"], "zeros");
  // An explicit from_logits wins over the inference.
  auto explicit_logits = JobSpecFromJson(Job({{"keras_model", Fixture("keras3_residual_mlp.json")}, {"from_logits", true}}));
  ASSERT_TRUE(explicit_logits.ok());
  EXPECT_TRUE(explicit_logits->model.from_logits);
}

TEST(JobSpecKerasTest, CanonicalFormCarriesTheModelAndRoundTrips) {
  auto spec = JobSpecFromJson(Job({{"keras_model", Fixture("keras2_residual_mlp.json")}, {"loss", "sparse_categorical_crossentropy"}}));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const json canonical = JobSpecToJson(*spec);
  EXPECT_EQ(canonical["model"]["keras_model"], Fixture("keras2_residual_mlp.json"));
  EXPECT_FALSE(canonical["model"].contains("layers"));
  auto again = JobSpecFromJson(canonical);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), canonical);
  EXPECT_EQ(again->model.graph->variables.size(), spec->model.graph->variables.size());
}

TEST(JobSpecKerasTest, KerasJsonIsReadBesideTheJobFileAndModelJsonReplacesAModel) {
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream model(dir + "/model.json");
    model << ReadFixture("keras3_residual_mlp.json");
    std::ofstream job(dir + "/job.json");
    job << Job({{"keras_json", "model.json"}}).dump();
  }
  auto spec = LoadJobSpec(dir + "/job.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->model.is_graph());
  EXPECT_EQ(spec->model.graph->layers.size(), Fixture("keras3_residual_mlp.json")["config"]["layers"].size());

  auto mlp = LoadJobSpec("mlp");
  ASSERT_TRUE(mlp.ok());
  ASSERT_TRUE(OverrideModelJson(dir + "/model.json", "--model_json", &*mlp).ok());
  EXPECT_TRUE(mlp->model.is_graph());
  EXPECT_EQ(mlp->model.loss, "sparse_categorical_crossentropy");
  EXPECT_EQ(mlp->optimizer.type, "adam") << "the rest of the job is kept";

  absl::Status missing = OverrideModelJson(dir + "/absent.json", "--model_json", &*mlp);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("absent.json"));
  {
    std::ofstream job(dir + "/job_missing.json");
    job << Job({{"keras_json", "nowhere.json"}}).dump();
  }
  absl::StatusOr<JobSpec> bad = LoadJobSpec(dir + "/job_missing.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("model.keras_json"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("nowhere.json"));
  std::remove((dir + "/model.json").c_str());
  std::remove((dir + "/job.json").c_str());
  std::remove((dir + "/job_missing.json").c_str());
}

json CtrJob(const json& model) {
  return json{{"name", "rec"}, {"model", model}, {"data", {{"dataset", "criteo"}}}, {"schedule", {{"steps", 10}}}};
}

// Real Keras recommendation models: the float input takes the numeric features, each id input a
// field; the Embedding tables an input feeds are sparse variables sharing its ids.
TEST(JobSpecKerasTest, IdInputsMakeACtrModelWhoseEmbeddingTablesAreSparse) {
  struct Case {
    const char* fixture;
    size_t tables_per_field;
  };
  const Case cases[] = {{"keras3_deepfm.json", 2},    {"keras2_deepfm.json", 2},    {"keras3_wide_deep.json", 2},
                        {"keras2_wide_deep.json", 2}, {"keras3_two_tower.json", 1}, {"keras2_two_tower.json", 1},
                        {"keras2_dcn_v2.json", 1},    {"keras2_dlrm.json", 1}};
  for (const Case& c : cases) {
    auto spec = JobSpecFromJson(CtrJob({{"keras_model", Fixture(c.fixture)}}));
    ASSERT_TRUE(spec.ok()) << c.fixture << ": " << spec.status();
    EXPECT_TRUE(spec->model.is_ctr()) << c.fixture;
    EXPECT_EQ(spec->model.loss, "binary_crossentropy") << "the default for a model fed ids";
    EXPECT_EQ(spec->model.numeric_inputs, 3) << c.fixture;
    EXPECT_EQ(spec->model.input_shape, (std::vector<int64_t>{3}));
    ASSERT_EQ(spec->model.fields.size(), 4u) << c.fixture;
    for (const EmbeddingFieldSpec& f : spec->model.fields) {
      EXPECT_EQ(f.vocabulary_size, 20) << c.fixture;
      EXPECT_EQ(f.tables.size(), c.tables_per_field) << c.fixture << " field " << f.name;
    }
    auto vars = ModelVariables(spec->model);
    ASSERT_TRUE(vars.ok()) << vars.status();
    size_t sparse = 0;
    for (const VariableSpec& v : *vars) {
      sparse += v.sparse;
      EXPECT_EQ(v.sparse, v.name.find("/embeddings") != std::string::npos) << c.fixture << " " << v.name;
    }
    EXPECT_EQ(sparse, 4 * c.tables_per_field) << c.fixture;
    auto tables = FieldTableVariables(spec->model, *vars);
    ASSERT_TRUE(tables.ok()) << tables.status();
    for (const std::vector<int>& t : *tables) {
      ASSERT_EQ(t.size(), c.tables_per_field);
      for (int v : t) EXPECT_TRUE((*vars)[v].sparse);
    }
    // The canonical form carries the model alone; the fields come back from it.
    auto again = JobSpecFromJson(JobSpecToJson(*spec));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->model.fields.size(), 4u);
    EXPECT_FALSE(JobSpecToJson(*spec)["model"].contains("fields"));
  }
}

// The ctr preset written by Keras 3 declares the preset's variables: names, shapes, tables, initializers.
TEST(JobSpecKerasTest, CtrPresetFromKerasHasThePresetsVariables) {
  auto spec = JobSpecFromJson(CtrJob({{"keras_model", Fixture("keras3_ctr_preset.json")}}));
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto preset = LoadJobSpec("ctr");
  ASSERT_TRUE(preset.ok());
  auto vars = ModelVariables(spec->model);
  auto want = ModelVariables(preset->model);
  ASSERT_TRUE(vars.ok() && want.ok());
  std::map<std::string, VariableSpec> by_name;
  for (const VariableSpec& v : *vars) by_name[v.name] = v;
  ASSERT_EQ(by_name.size(), want->size());
  for (const VariableSpec& w : *want) {
    ASSERT_TRUE(by_name.count(w.name)) << w.name;
    EXPECT_EQ(by_name[w.name].shape, w.shape) << w.name;
    EXPECT_EQ(by_name[w.name].sparse, w.sparse) << w.name;
    EXPECT_EQ(by_name[w.name].initializer.type, w.initializer.type) << w.name;
  }
}

TEST(JobSpecKerasTest, IdInputsThatAJobCannotFeedAreRefusedNamingThem) {
  json into_dense = Fixture("keras3_two_tower.json");
  json other_dim = Fixture("keras3_wide_deep.json");
  int embeddings = 0;
  for (json& layer : other_dim["config"]["layers"]) {
    if (layer["class_name"] == "Embedding" && embeddings++ == 1) layer["config"]["input_dim"] = 21;
  }
  // Rewire the first Embedding of the two towers into a Dense layer on the ids.
  for (json& layer : into_dense["config"]["layers"]) {
    if (layer["class_name"] == "Embedding") {
      layer["class_name"] = "Dense";
      const std::string name = layer["config"]["name"];
      layer["config"] = {{"name", name}, {"units", 4}, {"activation", "linear"}, {"use_bias", true}};
      break;
    }
  }
  struct Case {
    json job;
    const char* expected;
  };
  const Case cases[] = {
      {CtrJob({{"keras_model", Fixture("keras3_deepfm.json")}, {"loss", "mse"}}), "binary_crossentropy"},
      {Job({{"keras_model", Fixture("keras3_deepfm.json")}}), "must be criteo or tfrecord"},
      {CtrJob({{"keras_model", other_dim}}), "same input_dim"},
      {CtrJob({{"keras_model", into_dense}}), "only Embedding"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<JobSpec> spec = JobSpecFromJson(c.job);
    ASSERT_FALSE(spec.ok()) << c.expected;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.expected));
  }
}

TEST(JobSpecKerasTest, ModelJsonWithIdInputsReplacesACtrJobsModelOnly) {
  const std::string path = ::testing::TempDir() + "/deepfm.json";
  {
    std::ofstream(path) << ReadFixture("keras3_deepfm.json");
  }
  auto ctr = LoadJobSpec("ctr");
  ASSERT_TRUE(ctr.ok());
  ASSERT_TRUE(OverrideModelJson(path, "--model_json", &*ctr).ok());
  EXPECT_TRUE(ctr->model.is_graph());
  EXPECT_EQ(ctr->model.fields.size(), 4u);
  EXPECT_EQ(ctr->optimizer.type, "adagrad") << "the rest of the job is kept";

  auto mlp = LoadJobSpec("mlp");
  ASSERT_TRUE(mlp.ok());
  absl::Status refused = OverrideModelJson(path, "--model_json", &*mlp);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("integer (id) inputs"));
  EXPECT_FALSE(mlp->model.is_graph()) << "a refused model leaves the job as it was";
  std::remove(path.c_str());
}

TEST(JobSpecKerasTest, WhatAJobCannotTrainIsRefusedNamingIt) {
  struct Case {
    json model;
    json data;
    const char* expected;
  };
  const json mnist = {{"dataset", "fashion_mnist"}};
  const Case cases[] = {
      {{{"keras_model", Fixture("keras3_two_inputs.json")}}, mnist, "must have one input"},
      {{{"keras_model", Fixture("keras3_lambda.json")}}, mnist, "Lambda"},
      {{{"keras_model", Fixture("keras3_seeds_cnn.json")}, {"layers", json::array()}}, mnist, "model.layers"},
      {{{"keras_json", "x.json"}}, mnist, "model.keras_json"},
      {{{"keras_model", "not an object"}}, mnist, "to_json"},
      {{{"keras_model", Fixture("keras3_seeds_cnn.json")}, {"loss", "hinge"}}, mnist, "model.loss"},
      {{{"keras_model", Fixture("keras3_seeds_cnn.json")}}, {{"dataset", "criteo"}}, "data.dataset"},
      {{{"input_shape", {2}}, {"layers", {{{"type", "dense"}, {"units", 1}}}}, {"from_logits", true}},
       {{"dataset", "synthetic_linear"}, {"num_examples", 8}}, "model.from_logits"},
  };
  for (const Case& c : cases) {
    json job = Job(c.model);
    job["data"] = c.data;
    absl::StatusOr<JobSpec> spec = JobSpecFromJson(job);
    ASSERT_FALSE(spec.ok()) << c.expected;
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.expected));
  }
}

TEST(JobSpecKerasTest, BatchNormalizationMovingStatisticsAreNonTrainableVariables) {
  json bn = Fixture("keras3_residual_mlp.json");
  // Make the residual block's normalization a BatchNormalization (moving statistics).
  for (json& layer : bn["config"]["layers"]) {
    if (layer["config"]["name"] == "norm") {
      layer["class_name"] = "BatchNormalization";
      layer["config"].erase("rms_scaling");
    }
  }
  absl::StatusOr<JobSpec> spec = JobSpecFromJson(Job({{"keras_model", bn}}));
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::vector<VariableSpec>> vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok()) << vars.status();
  std::map<std::string, VariableSpec> by_name;
  for (const VariableSpec& v : *vars) by_name[v.name] = v;
  ASSERT_EQ(by_name.count("norm/moving_mean"), 1u);
  ASSERT_EQ(by_name.count("norm/moving_variance"), 1u);
  EXPECT_FALSE(by_name["norm/moving_mean"].trainable);
  EXPECT_FALSE(by_name["norm/moving_variance"].trainable);
  EXPECT_EQ(by_name["norm/moving_mean"].initializer.type, "zeros");
  EXPECT_EQ(by_name["norm/moving_variance"].initializer.type, "ones");
  EXPECT_EQ(by_name["norm/moving_mean"].shape, by_name["norm/gamma"].shape);
  EXPECT_TRUE(by_name["norm/gamma"].trainable);
  EXPECT_TRUE(by_name["block/kernel"].trainable);
}

TEST(JobSpecKerasTest, UnsupportedInitializersAreRefusedNamingTheLayer) {
  json orthogonal = Fixture("keras3_residual_mlp.json");
  for (json& layer : orthogonal["config"]["layers"]) {
    if (layer["config"]["name"] == "block") layer["config"]["kernel_initializer"] = {{"class_name", "Orthogonal"}};
  }
  absl::StatusOr<JobSpec> spec = JobSpecFromJson(Job({{"keras_model", orthogonal}}));
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("layer 'block'"));
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("kernel_initializer"));
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("GlorotUniform"));
}

// A bag (multi-hot) feature may feed a column of a Keras integer input: its field takes the bag's
// combiner (the input's Embedding layers combine the bag's rows there). The columns of an input of
// shape (k,) are k fields sharing its tables, bags or one-id features in any mix.
TEST(JobSpecKerasTest, BagFeaturesFeedColumnsOfKerasIntegerInputs) {
  json job = CtrJob({{"keras_model", Fixture("keras3_wide_deep.json")}});
  job["data"] = {{"dataset", "tfrecord"}, {"train_files", {"/d/train.tfrecord"}}, {"test_files", {"/d/test.tfrecord"}},
                 {"features",
                  {{"label", "y"},
                   {"numeric", {"n1", "n2", "n3"}},
                   {"categorical", {"c0", {{"name", "tags"}, {"combiner", "mean"}}, "c2", "c3"}}}}};
  absl::StatusOr<JobSpec> spec = JobSpecFromJson(job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->model.fields.size(), 4u);
  EXPECT_EQ(spec->model.fields[0].combiner, "");
  EXPECT_EQ(spec->model.fields[1].combiner, "mean");
  EXPECT_EQ(spec->model.fields[1].tables, (std::vector<std::string>{"deep_emb1", "wide_emb1"}));

  // Input c1 with two ids: two fields on one table, here a bag and a one-id feature.
  json two_ids = Fixture("keras3_two_tower.json");
  for (json& layer : two_ids["config"]["layers"]) {
    if (layer["config"]["name"] == "c1") layer["config"]["batch_shape"] = {nullptr, 2};
  }
  job["model"]["keras_model"] = two_ids;
  job["data"]["features"]["categorical"] = {"c0", {{"name", "tags"}, {"combiner", "mean"}}, "c1b", "c2", "c3"};
  spec = JobSpecFromJson(job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->model.fields.size(), 5u);
  EXPECT_EQ(spec->model.fields[1].combiner, "mean");
  EXPECT_EQ(spec->model.fields[2].combiner, "");
  EXPECT_EQ(spec->model.fields[1].tables, spec->model.fields[2].tables);
}

// model.dynamic_tables makes Embedding layers dynamic tables: their fields take ids whole, the
// variables are [max_rows, dim] with the table's options, and the canonical form carries them.
TEST(JobSpecKerasTest, DynamicTablesNameEmbeddingLayers) {
  json dynamic;
  for (const char* kind : {"deep", "wide"}) {
    for (int i = 0; i < 4; ++i) {
      dynamic[std::string(kind) + "_emb" + std::to_string(i)] = {{"max_rows", 500}, {"admission_threshold", 2}};
    }
  }
  json job = CtrJob({{"keras_model", Fixture("keras3_wide_deep.json")}, {"dynamic_tables", dynamic}});
  job["mode"] = "async";
  job["optimizer"] = {{"type", "adagrad"}};
  absl::StatusOr<JobSpec> spec = JobSpecFromJson(job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->model.fields.size(), 4u);
  for (const EmbeddingFieldSpec& f : spec->model.fields) {
    ASSERT_TRUE(f.dynamic.has_value()) << f.name;
    EXPECT_EQ(f.vocabulary_size, 0) << f.name;
    EXPECT_EQ(f.dynamic->max_rows, 500);
  }
  auto vars = ModelVariables(spec->model);
  ASSERT_TRUE(vars.ok()) << vars.status();
  int tables = 0;
  for (const VariableSpec& v : *vars) {
    if (!v.sparse) {
      EXPECT_FALSE(v.dynamic.has_value()) << v.name;
      continue;
    }
    ++tables;
    ASSERT_TRUE(v.dynamic.has_value()) << v.name;
    EXPECT_EQ(v.dynamic->admission_threshold, 2);
    EXPECT_EQ(v.shape[0], 500) << v.name << ": rows are max_rows, not input_dim";
  }
  EXPECT_EQ(tables, 8);
  const json canonical = JobSpecToJson(*spec);
  EXPECT_EQ(canonical["model"]["dynamic_tables"]["wide_emb3"]["max_rows"], 500);
  absl::StatusOr<JobSpec> again = JobSpecFromJson(canonical);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobSpecToJson(*again), canonical);

  // Refused: a name that is no Embedding fed by ids, one of two tables sharing an input, a model
  // without id inputs, sync mode, a missing max_rows, dynamic_tables beside model.fields.
  struct Bad {
    json model;
    std::string mode, message;
  };
  const json wide_deep = Fixture("keras3_wide_deep.json");
  const Bad bad[] = {
      {{{"keras_model", wide_deep}, {"dynamic_tables", {{"numeric", {{"max_rows", 5}}}}}}, "async",
       "dynamic_tables names 'numeric'"},
      {{{"keras_model", wide_deep}, {"dynamic_tables", {{"deep_emb0", {{"max_rows", 5}}}}}}, "async",
       "only one is in model.dynamic_tables"},
      {{{"keras_model", wide_deep}, {"dynamic_tables", dynamic}}, "sync", "or drop layer 'deep_emb0' from model.dynamic_tables"},
      {{{"keras_model", wide_deep}, {"dynamic_tables", {{"deep_emb0", json::object()}}}}, "async", "max_rows"},
      {{{"numeric_inputs", 1}, {"fields", {{{"vocabulary_size", 5}, {"embedding_dim", 2}}}},
        {"dynamic_tables", dynamic}}, "async", "model.dynamic_tables"},
  };
  for (const Bad& b : bad) {
    json j = CtrJob(b.model);
    j["mode"] = b.mode;
    j["optimizer"] = {{"type", "adagrad"}};
    absl::StatusOr<JobSpec> refused = JobSpecFromJson(j);
    ASSERT_FALSE(refused.ok()) << b.message;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr(b.message));
  }
  json no_ids = Job({{"keras_model", Fixture("keras3_residual_mlp.json")}, {"dynamic_tables", dynamic}});
  absl::StatusOr<JobSpec> refused = JobSpecFromJson(no_ids);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("has no integer (id) input"));
}

}  // namespace
}  // namespace pstrain
