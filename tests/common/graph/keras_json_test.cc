// The Keras JSON reader: real Keras 2 (tf.keras 2.15) and Keras 3 to_json() fixtures load into the
// graph their models are, with Keras's variable names and shapes; everything unsupported is refused
// naming the layer and the key.
#include "common/graph/keras_json.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/keras_fixture.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

ModelGraph Load(const std::string& name) { return LoadFixtureGraph(name); }

int FindLayer(const ModelGraph& g, const std::string& name) {
  for (size_t i = 0; i < g.layers.size(); ++i) {
    if (g.layers[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

class KerasJsonTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KerasJsonTest, TwoInputsFunctional) {
  const ModelGraph g = Load(GetParam() + "_two_inputs.json");
  ASSERT_EQ(g.layers.size(), 6u);
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.layers[g.inputs[0]].name, "a");
  EXPECT_EQ(g.layers[g.inputs[1]].name, "b");
  EXPECT_EQ(g.layers[g.output].name, "out");
  const GraphLayerSpec& concat = g.layers[FindLayer(g, "concat")];
  EXPECT_EQ(concat.kind, LayerKind::kConcatenate);
  ASSERT_EQ(concat.inputs.size(), 2u);
  EXPECT_EQ(g.layers[concat.inputs[0]].name, "dense_a");
  EXPECT_EQ(g.layers[concat.inputs[1]].name, "dense_b");
  EXPECT_EQ(concat.output_shape, std::vector<int64_t>({6}));
  const GraphLayerSpec& dense_b = g.layers[FindLayer(g, "dense_b")];
  EXPECT_FALSE(dense_b.config.use_bias);
  EXPECT_EQ(dense_b.config.activation, ActivationKind::kTanh);
  EXPECT_EQ(g.layers[g.output].config.activation, ActivationKind::kSigmoid);
  // Every layer after its inputs.
  for (size_t i = 0; i < g.layers.size(); ++i) {
    for (int in : g.layers[i].inputs) EXPECT_LT(in, static_cast<int>(i));
  }
}

TEST_P(KerasJsonTest, SequentialChainsItsLayers) {
  const ModelGraph g = Load(GetParam() + "_sequential_mlp.json");
  ASSERT_EQ(g.layers.size(), 5u);
  EXPECT_EQ(g.layers[0].kind, LayerKind::kInput);
  EXPECT_EQ(g.layers[0].output_shape, std::vector<int64_t>({6}));
  EXPECT_EQ(g.layers[1].config.activation, ActivationKind::kGelu);
  EXPECT_EQ(g.layers[2].kind, LayerKind::kDropout);
  EXPECT_DOUBLE_EQ(g.layers[2].config.rate, 0.25);
  EXPECT_EQ(g.layers[2].config.seed, 5);
  EXPECT_EQ(g.layers[3].config.activation, ActivationKind::kSilu);  // "swish" in Keras 2, "silu" in Keras 3
  EXPECT_EQ(g.layers[4].config.activation, ActivationKind::kSoftmax);
  for (int i = 1; i < 5; ++i) EXPECT_EQ(g.layers[i].inputs, std::vector<int>({i - 1}));
  EXPECT_EQ(g.output, 4);
}

TEST_P(KerasJsonTest, ManyLayersKeepKerasConfigValues) {
  const ModelGraph g = Load(GetParam() + "_many_layers.json");
  const GraphLayerSpec& bn = g.layers[FindLayer(g, "batch_norm")];
  EXPECT_EQ(bn.kind, LayerKind::kBatchNormalization);
  EXPECT_DOUBLE_EQ(bn.config.momentum, 0.99);
  EXPECT_DOUBLE_EQ(bn.config.epsilon, 1e-3);
  const GraphLayerSpec& ln = g.layers[FindLayer(g, "layer_norm")];
  EXPECT_DOUBLE_EQ(ln.config.epsilon, 1e-3);
  const GraphLayerSpec& emb = g.layers[FindLayer(g, "embedding")];
  EXPECT_EQ(emb.output_shape, std::vector<int64_t>({5, 4}));
  EXPECT_TRUE(g.layers[g.layers[FindLayer(g, "embedding")].inputs[0]].config.int_input);
  EXPECT_TRUE(g.layers[FindLayer(g, "cosine")].config.normalize);
  EXPECT_EQ(g.layers[FindLayer(g, "cosine")].output_shape, std::vector<int64_t>({1}));
  EXPECT_EQ(g.layers[FindLayer(g, "reshape")].output_shape, std::vector<int64_t>({4, 5}));
  EXPECT_EQ(g.layers[FindLayer(g, "avg")].inputs.size(), 3u);
  EXPECT_EQ(g.layers[g.output].name, "probs");
  EXPECT_EQ(g.layers[g.output].output_shape, std::vector<int64_t>({2}));
}

// The variables are Keras's, name for name and shape for shape (the fixture lists model.weights).
TEST_P(KerasJsonTest, VariablesAreKerasWeights) {
  for (const std::string model : {"two_inputs", "sequential_mlp", "many_layers", "recommenders", "cnn", "deepfm",
                                   "dcn_v2", "wide_deep", "dlrm", "two_tower"}) {
    const std::string base = GetParam() + "_" + model;
    // TensorFlow Recommenders (Cross, DotInteraction) is Keras 2.
    const bool tfrs = model == "recommenders" || model == "dcn_v2" || model == "dlrm";
    if (tfrs && GetParam() != "keras2") continue;
    SCOPED_TRACE(base);
    const ModelGraph g = Load(base + ".json");
    const nlohmann::json record = nlohmann::json::parse(ReadFixture(base + ".predict.json"));
    std::map<std::string, std::vector<int64_t>> keras, ours;
    for (const auto& [name, w] : record["weights"].items()) keras[name] = w["shape"].get<std::vector<int64_t>>();
    for (const GraphVariableSpec& v : g.variables) {
      ours[v.name] = v.shape;
      EXPECT_EQ(v.trainable, v.name.find("moving_") == std::string::npos) << v.name;
    }
    EXPECT_EQ(ours, keras);
  }
}

TEST_P(KerasJsonTest, ConvolutionsAndPoolings) {
  const ModelGraph g = Load(GetParam() + "_cnn.json");
  const LayerConfig& same = g.layers[FindLayer(g, "conv_same")].config;
  EXPECT_TRUE(same.same_padding);
  EXPECT_EQ(same.stride_h, 2);
  EXPECT_EQ(g.layers[FindLayer(g, "conv_same")].output_shape, std::vector<int64_t>({5, 4, 4}));
  const LayerConfig& valid = g.layers[FindLayer(g, "conv_valid")].config;
  EXPECT_EQ(valid.window_h, 2);
  EXPECT_EQ(valid.window_w, 3);
  EXPECT_FALSE(valid.use_bias);
  EXPECT_EQ(g.layers[FindLayer(g, "conv_valid")].output_shape, std::vector<int64_t>({4, 2, 5}));
  EXPECT_EQ(g.layers[FindLayer(g, "max_pool")].output_shape, std::vector<int64_t>({2, 1, 5}));
  EXPECT_EQ(g.layers[FindLayer(g, "avg_pool")].output_shape, std::vector<int64_t>({2, 2, 5}));
  EXPECT_EQ(g.layers[FindLayer(g, "max_pool_same")].output_shape, std::vector<int64_t>({2, 1, 5}));
}

INSTANTIATE_TEST_SUITE_P(Flavors, KerasJsonTest, ::testing::Values("keras2", "keras3"));

// The recommendation fixtures share the CTR input convention jobs map data columns by: `numeric`
// [3] float first, then c0..c3 [1] integer ids (int32, or int64 in Keras 2), each feeding only
// Embedding layers of vocabulary 20, whose [1, dim] outputs reach the rest through Flatten.
TEST(KerasJsonTest, RecommendationModelsFollowTheCtrInputConvention) {
  for (const std::string base : {"keras2_deepfm", "keras2_dcn_v2", "keras2_wide_deep", "keras2_dlrm",
                                 "keras2_two_tower", "keras3_deepfm", "keras3_wide_deep", "keras3_two_tower"}) {
    SCOPED_TRACE(base);
    const ModelGraph g = Load(base + ".json");
    ASSERT_EQ(g.inputs.size(), 5u);
    const GraphLayerSpec& numeric = g.layers[g.inputs[0]];
    EXPECT_EQ(numeric.name, "numeric");
    EXPECT_FALSE(numeric.config.int_input);
    EXPECT_EQ(numeric.output_shape, std::vector<int64_t>({3}));
    EXPECT_EQ(g.layers[g.output].output_shape, std::vector<int64_t>({1}));
    for (int f = 0; f < 4; ++f) {
      const GraphLayerSpec& ids = g.layers[g.inputs[f + 1]];
      EXPECT_EQ(ids.name, "c" + std::to_string(f));
      EXPECT_TRUE(ids.config.int_input) << ids.name;
      EXPECT_EQ(ids.output_shape, std::vector<int64_t>({1}));
      int tables = 0;
      for (const GraphLayerSpec& l : g.layers) {
        if (std::find(l.inputs.begin(), l.inputs.end(), g.inputs[f + 1]) == l.inputs.end()) continue;
        EXPECT_EQ(l.kind, LayerKind::kEmbedding) << ids.name << " feeds " << l.name;
        EXPECT_EQ(l.config.input_dim, 20) << l.name;
        EXPECT_EQ(l.output_shape, std::vector<int64_t>({1, l.config.output_dim})) << l.name;
        ++tables;
      }
      // DeepFM and Wide & Deep: a first-order (wide) table beside the embedding of every field.
      EXPECT_EQ(tables, base.find("deepfm") != std::string::npos || base.find("wide_deep") != std::string::npos ? 2 : 1);
    }
  }
}

// The `ctr` preset (worker/README.md) written by Keras 3: its inputs in the convention's order and
// its variables as Keras names them, with the preset's shapes.
TEST(KerasJsonTest, CtrPresetAsKeras3WritesIt) {
  const ModelGraph g = Load("keras3_ctr_preset.json");
  ASSERT_EQ(g.inputs.size(), 27u);
  EXPECT_EQ(g.layers[g.inputs[0]].name, "numeric");
  EXPECT_EQ(g.layers[g.inputs[0]].output_shape, std::vector<int64_t>({13}));
  EXPECT_FALSE(g.layers[g.inputs[0]].config.int_input);
  std::map<std::string, std::vector<int64_t>> want = {
      {"dense/kernel", {13 + 26 * 16, 512}}, {"dense/bias", {512}},   {"dense_1/kernel", {512, 256}},
      {"dense_1/bias", {256}},               {"dense_2/kernel", {256, 1}}, {"dense_2/bias", {1}}};
  for (int f = 0; f < 26; ++f) {
    const GraphLayerSpec& ids = g.layers[g.inputs[f + 1]];
    EXPECT_EQ(ids.name, "c" + std::to_string(f));
    EXPECT_TRUE(ids.config.int_input) << ids.name;
    want[f == 0 ? "embedding/embeddings" : "embedding_" + std::to_string(f) + "/embeddings"] = {100000, 16};
  }
  std::map<std::string, std::vector<int64_t>> ours;
  for (const GraphVariableSpec& v : g.variables) ours[v.name] = v.shape;
  EXPECT_EQ(ours, want);
  const GraphLayerSpec& out = g.layers[g.output];
  EXPECT_EQ(out.name, "dense_2");
  EXPECT_EQ(out.config.activation, ActivationKind::kLinear);
  EXPECT_EQ(out.output_shape, std::vector<int64_t>({1}));
  // The first field's table is looked up by c0, in the concatenation right after `numeric`.
  const GraphLayerSpec& concat = g.layers[FindLayer(g, "concatenate")];
  ASSERT_EQ(concat.inputs.size(), 27u);
  EXPECT_EQ(concat.inputs[0], g.inputs[0]);
  const GraphLayerSpec& flat0 = g.layers[concat.inputs[1]];
  ASSERT_EQ(flat0.inputs.size(), 1u);
  EXPECT_EQ(g.layers[flat0.inputs[0]].name, "embedding");
  EXPECT_EQ(g.layers[flat0.inputs[0]].inputs, std::vector<int>({g.inputs[1]}));
}

TEST(KerasJsonTest, RecommendersLayersAndCrossSecondInput) {
  const ModelGraph g = Load("keras2_recommenders.json");
  const GraphLayerSpec& low = g.layers[FindLayer(g, "cross_low")];
  EXPECT_EQ(low.kind, LayerKind::kCross);
  EXPECT_EQ(low.config.projection_dim, 2);
  EXPECT_DOUBLE_EQ(low.config.diag_scale, 0.5);
  ASSERT_EQ(low.inputs.size(), 2u);  // x0 positional, x by keyword
  EXPECT_EQ(g.layers[low.inputs[0]].name, "features");
  EXPECT_EQ(g.layers[low.inputs[1]].name, "cross_full");
  EXPECT_EQ(g.layers[FindLayer(g, "cross_full")].inputs.size(), 1u);
  const GraphLayerSpec& inter = g.layers[FindLayer(g, "dot_interaction")];
  EXPECT_EQ(inter.kind, LayerKind::kDotInteraction);
  EXPECT_EQ(inter.output_shape, std::vector<int64_t>({3}));  // 3 features: 3 pairs
}

struct Refusal {
  std::string fixture;
  std::vector<std::string> mentions;
};

class KerasJsonRefusalTest : public ::testing::TestWithParam<std::tuple<std::string, Refusal>> {};

TEST_P(KerasJsonRefusalTest, NamesTheLayerAndTheKey) {
  const auto& [flavor, refusal] = GetParam();
  const std::string name = flavor + "_" + refusal.fixture + ".json";
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(ReadFixture(name), name);
  ASSERT_FALSE(graph.ok()) << name;
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr(name));
  for (const std::string& m : refusal.mentions) EXPECT_THAT(std::string(graph.status().message()), HasSubstr(m));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, KerasJsonRefusalTest,
    ::testing::Combine(
        ::testing::Values("keras2", "keras3"),
        ::testing::Values(Refusal{"shared_layer", {"'shared'", "shared layer"}},
                          Refusal{"two_outputs", {"2 outputs", "o1", "o2", "one output"}},
                          Refusal{"lambda", {"'double'", "Lambda", "supported classes"}},
                          Refusal{"conv_groups", {"'grouped'", "'groups'", "groups = 1"}},
                          Refusal{"conv_dilation", {"'dilated'", "'dilation_rate'"}},
                          Refusal{"conv_channels_first", {"'cf'", "'data_format'", "channels_last"}},
                          Refusal{"mask_zero", {"'masked'", "'mask_zero'", "masking"}})));

// Keras 2 form, written by hand: input "x" [4] -> LAYER -> output.
std::string OneLayer(const std::string& cls, const std::string& config) {
  return R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "dtype": "float32", "name": "x"},
     "name": "x", "inbound_nodes": []},
    {"class_name": ")" + cls + R"(", "config": )" + config + R"(, "name": "l", "inbound_nodes": [[["x", 0, 0, {}]]]}],
    "input_layers": [["x", 0, 0]], "output_layers": [["l", 0, 0]]}})";
}

TEST(KerasJsonRefusalTest, HandWrittenRefusals) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {OneLayer("MyCustomLayer", "{}"), {"'l'", "MyCustomLayer", "supported classes"}},
      {OneLayer("Dense", R"({"units": 3, "activation": "hard_sigmoid"})"), {"'l'", "'activation'", "gelu"}},
      {OneLayer("Dense", R"({"units": 3, "kernel_regularizer": {"class_name": "L2"}})"), {"'kernel_regularizer'"}},
      {OneLayer("Dense", R"({"units": 3, "dtype": "mixed_float16"})"), {"'dtype'", "float32"}},
      {OneLayer("Dense", R"({"units": 0})"), {"'units'", "positive"}},
      {OneLayer("Dense", R"({"units": 99999999999})"), {"'units'", "too large"}},
      {OneLayer("Dense", R"({"units": 18446744073709551615})"), {"'units'", "too large"}},
      {OneLayer("Embedding", R"({"input_dim": 2147483647, "output_dim": 2147483647})"),
       {"'l'", "embeddings", "bytes"}},
      {OneLayer("Reshape", R"({"target_shape": [2147483647, 2147483647, 2147483647, -1]})"), {"'target_shape'"}},
      {OneLayer("Conv2D", R"({"filters": 2, "kernel_size": [3, 3]})"), {"'l'", "[batch, height, width, channels]"}},
      {OneLayer("Dense", R"({"units": 2, "activation": {"class_name": "MyAct"}})"), {"'activation'"}},
      {OneLayer("Dropout", R"({"rate": 1.5})"), {"'rate'"}},
      {OneLayer("Dropout", R"({"rate": 0.5, "noise_shape": [null, 1]})"), {"'noise_shape'"}},
      {OneLayer("Reshape", R"({"target_shape": [3]})"), {"'l'", "reshape"}},
      {OneLayer("LayerNormalization", R"({"axis": 0})"), {"'axis'", "last axis"}},
      {OneLayer("BatchNormalization", R"({"renorm": true})"), {"'renorm'"}},
      {OneLayer("GlobalAveragePooling2D", "{}"), {"'l'", "height, width"}},
      {OneLayer("Dot", R"({"axes": -1})"), {"takes 2 input(s)"}},
      {R"({"class_name": "MyModel", "config": {}})", {"MyModel", "Sequential, Functional"}},
      {R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "name": "d"}]}})",
       {"'d'", "'units'"}},
      {R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "config": {"units": 1, "name": "d"}}]}})",
       {"'d'", "no input shape"}},
      {absl::StrReplaceAll(OneLayer("Dense", R"({"units": 2})"), {{R"("name": "l")", R"("name": ")" + std::string(300, 'n') + "\""}}),
       {"longer than 256"}},
      {R"({"class_name": "Functional", "config": {"layers": [
          {"class_name": "InputLayer", "config": {"batch_shape": [null, 2]}, "name": "a", "inbound_nodes": []},
          {"class_name": "Dense", "config": {"units": 1}, "name": "d",
           "inbound_nodes": [{"args": [{"class_name": 7, "config": {}}], "kwargs": {}}]}],
          "input_layers": [["a", 0, 0]], "output_layers": [["d", 0, 0]]}})",
       {"'d'", "is not a tensor"}},
      {std::string(100, '[') + std::string(100, ']'), {"deep"}},
      {"{not json", {"not valid JSON"}},
      {"[1, 2]", {"not a Keras model"}},
  };
  for (const auto& [text, mentions] : cases) {
    absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(text, "model.json");
    ASSERT_FALSE(graph.ok()) << text;
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& m : mentions) EXPECT_THAT(std::string(graph.status().message()), HasSubstr(m)) << text;
  }
}

TEST(KerasJsonRefusalTest, MergeShapesMustFit) {
  const std::string text = R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "a"}, "name": "a", "inbound_nodes": []},
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "name": "b"}, "name": "b", "inbound_nodes": []},
    {"class_name": "Add", "config": {"name": "sum"}, "name": "sum", "inbound_nodes": [[["a", 0, 0, {}], ["b", 0, 0, {}]]]}],
    "input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["sum", 0, 0]]}})";
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(text, "m.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("'sum'"));
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("equal shapes"));
}

TEST(KerasJsonRefusalTest, UnknownInputAndCycle) {
  const std::string unknown = R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "a"}, "name": "a", "inbound_nodes": []},
    {"class_name": "Dense", "config": {"units": 2}, "name": "d", "inbound_nodes": [[["nowhere", 0, 0, {}]]]}],
    "input_layers": [["a", 0, 0]], "output_layers": [["d", 0, 0]]}})";
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(unknown, "m.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("unknown layer 'nowhere'"));
  const std::string cycle = R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "a"}, "name": "a", "inbound_nodes": []},
    {"class_name": "Add", "config": {}, "name": "p", "inbound_nodes": [[["a", 0, 0, {}], ["q", 0, 0, {}]]]},
    {"class_name": "Add", "config": {}, "name": "q", "inbound_nodes": [[["a", 0, 0, {}], ["p", 0, 0, {}]]]}],
    "input_layers": [["a", 0, 0]], "output_layers": [["q", 0, 0]]}})";
  graph = ReadKerasModelJson(cycle, "m.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("cycle"));
}

}  // namespace
}  // namespace pstrain
