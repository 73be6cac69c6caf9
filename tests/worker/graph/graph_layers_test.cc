// Every layer's backward pass against central differences in double precision: the gradients of
// its inputs and of its weights, for a loss sum(out * R) with random R.
#include <random>

#include "gtest/gtest.h"
#include "tests/worker/graph/graph_test_util.h"
#include "worker/graph/graph_layer.h"

namespace pstrain {
namespace {

using nlohmann::json;

struct LayerCase {
  std::string label;
  std::string cls;
  json config;
  std::vector<std::vector<int64_t>> inputs;
  bool training = true;
  bool int_ids = false;
};

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.label; }

class GraphLayerGradientTest : public ::testing::TestWithParam<LayerCase> {};

TEST_P(GraphLayerGradientTest, BackwardMatchesFiniteDifferences) {
  const LayerCase& c = GetParam();
  const ModelGraph graph = MustRead(OneLayerJson(c.cls, c.config, c.inputs, c.int_ids));
  ASSERT_FALSE(graph.layers.empty());
  const int index = graph.output;
  std::unique_ptr<GraphLayer<double>> layer = MakeGraphLayer<double>(graph, index);
  ASSERT_NE(layer, nullptr);
  std::mt19937 rng(17);
  const int64_t batch = 3;
  std::vector<Array<double>> inputs;
  for (int in : graph.layers[index].inputs) {
    std::vector<int64_t> shape = {batch};
    for (int64_t d : graph.layers[in].output_shape) shape.push_back(d);
    inputs.push_back(RandomArray<double>(shape, &rng));
    if (c.int_ids) {
      for (double& v : inputs.back().data) v = std::floor((v + 1) * 0.5 * graph.layers[index].config.input_dim);
    }
  }
  std::vector<Array<double>> weights;
  for (const GraphVariableSpec& v : graph.variables) {
    const bool positive = v.name.find("variance") != std::string::npos;
    weights.push_back(RandomArray<double>(v.shape, &rng, positive ? 0.5 : -1.0, positive ? 1.5 : 1.0));
  }
  auto pointers = [](const std::vector<Array<double>>& arrays) {
    std::vector<const Array<double>*> p;
    for (const auto& a : arrays) p.push_back(&a);
    return p;
  };
  ForwardOptions options;
  options.training = c.training;
  options.seed = 99;
  Array<double> out;
  ASSERT_TRUE(layer->Forward(pointers(inputs), pointers(weights), options, &out).ok());
  const Array<double> r = RandomArray<double>(out.shape, &rng);
  auto loss = [&]() {
    Array<double> o;
    EXPECT_TRUE(layer->Forward(pointers(inputs), pointers(weights), options, &o).ok());
    double s = 0;
    for (int64_t i = 0; i < o.size(); ++i) s += o.data[i] * r.data[i];
    return s;
  };
  loss();  // the state Backward differentiates
  ASSERT_TRUE(layer->Forward(pointers(inputs), pointers(weights), options, &out).ok());
  std::vector<Array<double>> din, dw;
  std::vector<Array<double>*> din_p, dw_p;
  for (const auto& a : inputs) din.emplace_back(a.shape);
  for (const auto& a : weights) dw.emplace_back(a.shape);
  for (auto& a : din) din_p.push_back(c.int_ids ? nullptr : &a);
  for (auto& a : dw) dw_p.push_back(&a);
  layer->Backward(pointers(inputs), pointers(weights), out, r, din_p, dw_p);
  if (!c.int_ids) {
    for (size_t i = 0; i < inputs.size(); ++i) ExpectGradient(absl::StrCat("input ", i), &inputs[i].data, din[i].data, loss);
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!graph.variables[i].trainable) continue;
    ExpectGradient(graph.variables[i].name, &weights[i].data, dw[i].data, loss);
  }
}

std::vector<LayerCase> Cases() {
  std::vector<LayerCase> cases;
  for (const char* act : {"linear", "relu", "sigmoid", "tanh", "softmax", "gelu", "silu", "swish", "elu"}) {
    cases.push_back({absl::StrCat("Dense_", act), "Dense", {{"units", 3}, {"activation", act}}, {{4}}});
    cases.push_back({absl::StrCat("Activation_", act), "Activation", {{"activation", act}}, {{5}}});
  }
  cases.push_back({"DenseNoBiasRank3", "Dense", {{"units", 2}, {"use_bias", false}}, {{2, 3}}});
  cases.push_back({"ReLU", "ReLU", json::object(), {{6}}});
  cases.push_back({"ReLUCapSlopeThreshold", "ReLU", {{"max_value", 0.6}, {"negative_slope", 0.1}, {"threshold", 0.2}}, {{8}}});
  cases.push_back({"Flatten", "Flatten", json::object(), {{2, 3}}});
  cases.push_back({"Reshape", "Reshape", {{"target_shape", {3, -1}}}, {{2, 3}}});
  cases.push_back({"DropoutTraining", "Dropout", {{"rate", 0.4}, {"seed", 3}}, {{10}}});
  cases.push_back({"DropoutInference", "Dropout", {{"rate", 0.4}}, {{10}}, false});
  cases.push_back({"ConcatenateLast", "Concatenate", {{"axis", -1}}, {{2, 3}, {2, 1}}});
  cases.push_back({"ConcatenateAxis1", "Concatenate", {{"axis", 1}}, {{2, 3}, {1, 3}, {3, 3}}});
  cases.push_back({"Add", "Add", json::object(), {{4}, {4}, {4}}});
  cases.push_back({"Subtract", "Subtract", json::object(), {{4}, {4}}});
  cases.push_back({"Multiply", "Multiply", json::object(), {{4}, {4}, {4}}});
  cases.push_back({"Average", "Average", json::object(), {{2, 2}, {2, 2}}});
  cases.push_back({"Dot", "Dot", {{"axes", -1}}, {{5}, {5}}});
  cases.push_back({"DotNormalize", "Dot", {{"axes", {1, 1}}, {"normalize", true}}, {{5}, {5}}});
  cases.push_back({"Embedding", "Embedding", {{"input_dim", 7}, {"output_dim", 3}}, {{4}}, true, true});
  cases.push_back({"LayerNormalization", "LayerNormalization", json::object(), {{6}}});
  cases.push_back({"LayerNormalizationRank3NoCenter", "LayerNormalization", {{"center", false}, {"epsilon", 0.01}}, {{2, 5}}});
  cases.push_back({"BatchNormalizationTraining", "BatchNormalization", json::object(), {{4}}});
  cases.push_back({"BatchNormalizationTrainingRank3NoScale", "BatchNormalization", {{"scale", false}}, {{2, 3}}});
  cases.push_back({"BatchNormalizationInference", "BatchNormalization", json::object(), {{4}}, false});
  cases.push_back({"GlobalAveragePooling1D", "GlobalAveragePooling1D", json::object(), {{4, 3}}});
  cases.push_back({"GlobalAveragePooling2DKeepdims", "GlobalAveragePooling2D", {{"keepdims", true}}, {{3, 2, 2}}});
  cases.push_back({"GlobalMaxPooling1D", "GlobalMaxPooling1D", json::object(), {{4, 3}}});
  cases.push_back({"GlobalMaxPooling2D", "GlobalMaxPooling2D", json::object(), {{3, 2, 2}}});
  cases.push_back({"CrossFull", "Cross", json::object(), {{5}}});
  cases.push_back({"CrossLowRankTwoInputs", "Cross",
                   {{"projection_dim", 2}, {"diag_scale", 0.5}, {"preactivation", "tanh"}}, {{5}, {5}}});
  cases.push_back({"CrossNoBias", "Cross", {{"use_bias", false}, {"projection_dim", 3}}, {{4}}});
  cases.push_back({"DotInteraction", "DotInteraction", json::object(), {{3}, {3}, {3}, {3}}});
  cases.push_back({"DotInteractionSelf", "DotInteraction", {{"self_interaction", true}}, {{3}, {3}, {3}}});
  cases.push_back({"DotInteractionSkipGather", "DotInteraction", {{"skip_gather", true}}, {{2}, {2}, {2}}});
  cases.push_back({"Conv2DValid", "Conv2D", {{"filters", 2}, {"kernel_size", {2, 3}}}, {{4, 5, 2}}});
  cases.push_back({"Conv2DSameStride2Relu", "Conv2D",
                   {{"filters", 3}, {"kernel_size", 3}, {"strides", 2}, {"padding", "same"}, {"activation", "relu"}},
                   {{5, 4, 2}}});
  cases.push_back({"Conv2DNoBiasStrides", "Conv2D",
                   {{"filters", 2}, {"kernel_size", 2}, {"strides", {1, 2}}, {"use_bias", false}}, {{3, 5, 1}}});
  cases.push_back({"MaxPooling2D", "MaxPooling2D", json::object(), {{4, 5, 2}}});
  cases.push_back({"MaxPooling2DSameStride", "MaxPooling2D",
                   {{"pool_size", 3}, {"strides", 2}, {"padding", "same"}}, {{5, 4, 2}}});
  cases.push_back({"AveragePooling2D", "AveragePooling2D", {{"pool_size", {2, 3}}}, {{4, 6, 2}}});
  cases.push_back({"AveragePooling2DSame", "AveragePooling2D",
                   {{"pool_size", 3}, {"strides", {2, 1}}, {"padding", "same"}}, {{5, 3, 2}}});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Layers, GraphLayerGradientTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<LayerCase>& info) { return info.param.label; });

}  // namespace
}  // namespace pstrain
