// A layer-list model (the presets) written as a Keras model: the same variables (names, shapes,
// sparse tables, initializers) in both Keras flavors; the ctr preset's Keras 3 form declares what
// real Keras 3 wrote for the same model (keras3_ctr_preset.json); dynamic tables and bag combiners
// carry over; a name used twice is refused. The executors' tests check that the forms compute the
// same (tests/worker/cpu/*graph_gradient_computer_test.cc).
#include "common/graph/layer_model_keras.h"

#include <map>

#include "common/config/job_spec.h"
#include "common/graph/keras_initializer.h"
#include "common/plan/model_variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/graph/keras_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

void ExpectSameVariables(const std::vector<VariableSpec>& got, const std::vector<VariableSpec>& want,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(what + " " + want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].shape, want[i].shape);
    EXPECT_EQ(got[i].sparse, want[i].sparse);
    EXPECT_EQ(got[i].trainable, want[i].trainable);
    EXPECT_EQ(got[i].initializer.type, want[i].initializer.type);
    EXPECT_EQ(got[i].initializer.minval, want[i].initializer.minval);
    EXPECT_EQ(got[i].initializer.maxval, want[i].initializer.maxval);
    EXPECT_EQ(got[i].dynamic.has_value(), want[i].dynamic.has_value());
  }
}

class LayerModelKerasTest : public ::testing::TestWithParam<KerasJsonFlavor> {};

TEST_P(LayerModelKerasTest, PresetsKeepTheirVariablesInputsAndLoss) {
  for (const char* name : {"linear", "mlp", "cnn", "ctr"}) {
    SCOPED_TRACE(name);
    auto preset = LoadJobSpec(name);
    ASSERT_TRUE(preset.ok()) << preset.status();
    auto graph = LayerModelAsGraph(preset->model, GetParam());
    ASSERT_TRUE(graph.ok()) << graph.status();
    ASSERT_TRUE(graph->is_graph());
    EXPECT_EQ(graph->loss, preset->model.loss);
    EXPECT_TRUE(graph->from_logits);
    // A CTR model's graph input is its numeric features (the preset's is the tower's input).
    if (!preset->model.is_ctr()) EXPECT_EQ(graph->input_shape, preset->model.input_shape);
    EXPECT_EQ(graph->numeric_inputs, preset->model.numeric_inputs);
    ASSERT_EQ(graph->fields.size(), preset->model.fields.size());
    for (size_t c = 0; c < graph->fields.size(); ++c) {
      EXPECT_EQ(graph->fields[c].name, preset->model.fields[c].name);
      EXPECT_EQ(graph->fields[c].vocabulary_size, preset->model.fields[c].vocabulary_size);
      EXPECT_EQ(graph->fields[c].embedding_dim, preset->model.fields[c].embedding_dim);
    }
    ExpectSameVariables(*ModelVariables(*graph), *ModelVariables(preset->model), name);

    // The job with its Keras model survives the job spec's own round trip (workers and checkpoints
    // carry it so).
    JobSpec job = *preset;
    job.model = *graph;
    auto again = JobSpecFromJson(JobSpecToJson(job));
    ASSERT_TRUE(again.ok()) << again.status();
    ExpectSameVariables(*ModelVariables(again->model), *ModelVariables(preset->model), name);
  }
}

TEST_P(LayerModelKerasTest, LayerTypesAndOptionsBecomeKerasConfigs) {
  auto job = JobSpecFromJson(json::parse(R"({
    "model": {"input_shape": [9, 9, 2],
              "layers": [{"type": "conv2d", "filters": 3, "kernel_size": 2, "padding": "same",
                          "kernel_initializer": "he_normal", "bias_initializer": "ones"},
                         {"type": "relu"}, {"type": "max_pool2d", "pool_size": 3}, {"type": "flatten"},
                         {"type": "dense", "units": 4, "use_bias": false,
                          "kernel_initializer": {"type": "random_normal", "stddev": 0.2}}]},
    "schedule": {"steps": 1}})"));
  ASSERT_TRUE(job.ok()) << job.status();
  auto doc = LayerModelAsKerasJson(job->model, GetParam());
  ASSERT_TRUE(doc.ok()) << doc.status();
  auto graph = ReadKerasModelJson(doc->dump(), "converted");
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> classes;
  for (const GraphLayerSpec& l : graph->layers) classes.push_back(l.class_name);
  EXPECT_EQ(classes, (std::vector<std::string>{"InputLayer", "Conv2D", "ReLU", "MaxPooling2D", "Flatten", "Dense"}));
  EXPECT_EQ(graph->layers[1].output_shape, (std::vector<int64_t>{9, 9, 3}));  // same padding
  EXPECT_EQ(graph->layers[3].output_shape, (std::vector<int64_t>{3, 3, 3}));  // pool 3, stride 3
  auto model = LayerModelAsGraph(job->model, GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectSameVariables(*ModelVariables(*model), *ModelVariables(job->model), "layers");
  const std::vector<VariableSpec> vars = *ModelVariables(*model);
  ASSERT_EQ(vars.size(), 3u);  // conv2d kernel and bias, dense kernel
  EXPECT_EQ(vars[0].initializer.type, "he_normal");
  EXPECT_EQ(vars[1].initializer.type, "ones");
  EXPECT_EQ(vars[2].initializer.type, "random_normal");
  EXPECT_DOUBLE_EQ(vars[2].initializer.stddev, 0.2);
}

// Every initializer a layer list may name is written as Keras's class with its config, and reads
// back to the same spec.
TEST(KerasInitializerJsonTest, EveryTypeRoundTripsThroughTheReader) {
  const std::map<std::string, std::string> classes = {
      {"zeros", "Zeros"}, {"ones", "Ones"}, {"constant", "Constant"}, {"random_normal", "RandomNormal"},
      {"random_uniform", "RandomUniform"}, {"truncated_normal", "TruncatedNormal"},
      {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"}, {"he_normal", "HeNormal"},
      {"he_uniform", "HeUniform"}, {"lecun_normal", "LecunNormal"}, {"lecun_uniform", "LecunUniform"}};
  for (const auto& [type, class_name] : classes) {
    InitializerSpec spec{type};
    spec.value = 0.25;
    spec.mean = 0.5;
    spec.stddev = 0.125;
    spec.minval = -0.75;
    spec.maxval = 0.375;
    const json doc = KerasInitializerJson(spec);
    EXPECT_EQ(doc["class_name"], class_name);
    auto back = ParseKerasInitializer(doc);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->type, type);
    if (type == "constant") EXPECT_EQ(back->value, 0.25);
    if (type == "random_normal" || type == "truncated_normal") {
      EXPECT_EQ(back->mean, 0.5);
      EXPECT_EQ(back->stddev, 0.125);
    }
    if (type == "random_uniform") {
      EXPECT_EQ(back->minval, -0.75);
      EXPECT_EQ(back->maxval, 0.375);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Flavors, LayerModelKerasTest,
                         ::testing::Values(KerasJsonFlavor::kKeras3, KerasJsonFlavor::kKeras2),
                         [](const auto& info) { return info.param == KerasJsonFlavor::kKeras3 ? "Keras3" : "Keras2"; });

// What real Keras 3 wrote for the ctr preset's model declares the same variables as the converted
// preset, in the same order.
TEST(LayerModelKerasCtrTest, CtrPresetDeclaresWhatRealKerasWrote) {
  auto preset = LoadJobSpec("ctr");
  ASSERT_TRUE(preset.ok());
  auto converted = LayerModelAsGraph(preset->model);
  ASSERT_TRUE(converted.ok()) << converted.status();
  auto keras = JobSpecFromJson(json{{"model", {{"keras_model", json::parse(ReadFixture("keras3_ctr_preset.json"))}}},
                                    {"data", {{"dataset", "criteo"}}},
                                    {"schedule", {{"steps", 1}}}});
  ASSERT_TRUE(keras.ok()) << keras.status();
  ExpectSameVariables(*ModelVariables(*converted), *ModelVariables(keras->model), "keras3_ctr_preset.json");
  // The same layers by name (Keras lists them in another order), of the same classes and shapes.
  auto layers = [](const ModelGraph& g) {
    std::map<std::string, std::pair<std::string, std::vector<int64_t>>> out;
    for (const GraphLayerSpec& l : g.layers) out[l.name] = {l.class_name, l.output_shape};
    return out;
  };
  EXPECT_EQ(layers(*converted->graph), layers(*keras->model.graph));
  EXPECT_EQ(converted->graph->layers.size(), 26u * 3 + 5);  // inputs, tables, flattens; numeric, merge, tower
}

TEST(LayerModelKerasCtrTest, DynamicTablesAndBagCombinersCarryOver) {
  auto job = JobSpecFromJson(json::parse(R"({
    "model": {"numeric_inputs": 2,
              "fields": [{"name": "user", "embedding_dim": 4, "dynamic": {"max_rows": 300, "ttl_steps": 9}},
                         {"name": "item", "vocabulary_size": 50, "embedding_dim": 4}],
              "layers": [{"type": "dense", "units": 1}], "loss": "binary_crossentropy"},
    "optimizer": {"type": "adagrad", "learning_rate": 0.1},
    "data": {"dataset": "criteo"}, "schedule": {"steps": 1}})"));
  ASSERT_TRUE(job.ok()) << job.status();
  job->model.fields[1].combiner = "sqrtn";
  auto graph = LayerModelAsGraph(job->model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->keras_dynamic_tables.count("user"), 1u);
  EXPECT_EQ(graph->keras_dynamic_tables.at("user").max_rows, 300);
  EXPECT_EQ(graph->keras_dynamic_tables.at("user").ttl_steps, 9);
  ASSERT_EQ(graph->fields.size(), 2u);
  ASSERT_TRUE(graph->fields[0].dynamic.has_value());
  EXPECT_EQ(graph->fields[0].vocabulary_size, 0);
  EXPECT_EQ(graph->fields[1].combiner, "sqrtn");
  ExpectSameVariables(*ModelVariables(*graph), *ModelVariables(job->model), "dynamic");
}

TEST(LayerModelKerasCtrTest, ANameUsedTwiceIsRefused) {
  ModelSpec model;
  model.numeric_inputs = 1;
  model.loss = "binary_crossentropy";
  EmbeddingFieldSpec field;
  field.name = "dense";
  field.vocabulary_size = 10;
  field.embedding_dim = 2;
  model.fields = {field};
  LayerSpec layer;
  layer.type = "dense";
  layer.name = "dense";
  layer.units = 1;
  model.layers = {layer};
  for (KerasJsonFlavor flavor : {KerasJsonFlavor::kKeras3, KerasJsonFlavor::kKeras2}) {
    auto doc = LayerModelAsKerasJson(model, flavor);
    ASSERT_FALSE(doc.ok());
    EXPECT_THAT(doc.status().message(), HasSubstr("two layers are named 'dense'"));
  }
  model.layers[0].name = "tower";
  EXPECT_TRUE(LayerModelAsKerasJson(model, KerasJsonFlavor::kKeras3).ok());
}

TEST(LayerModelKerasCtrTest, AKerasModelIsReturnedAsItIs) {
  auto keras = JobSpecFromJson(json{{"model", {{"keras_model", json::parse(ReadFixture("keras3_ctr_preset.json"))}}},
                                    {"data", {{"dataset", "criteo"}}},
                                    {"schedule", {{"steps", 1}}}});
  ASSERT_TRUE(keras.ok());
  auto same = LayerModelAsGraph(keras->model);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->graph, keras->model.graph);
  EXPECT_FALSE(LayerModelAsKerasJson(keras->model, KerasJsonFlavor::kKeras3).ok());
}

}  // namespace
}  // namespace pstrain
