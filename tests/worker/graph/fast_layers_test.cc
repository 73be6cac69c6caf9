// The float layers that run worker/cpu's kernels (Conv2D, Dense, Cross, MaxPooling2D) against the
// reference code in double on the same values: outputs and gradients, added to what the arrays
// already hold (or replacing it when the layer says it writes them), over calls of different batch
// sizes (the kernels keep buffers).
// Dense's activations other than ReLU run on the kernel's output. Geometries the kernels do not
// cover (strides, non-square windows, same pooling, Conv2D's and Cross's other activations) fall back to the reference code and must agree too. Whole models check the Conv2D
// that pools inside the kernel when a fitting MaxPooling2D is its only consumer, and the executor
// moving values through Flatten and that MaxPooling2D instead of copying them.
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/worker/graph/graph_test_util.h"
#include "worker/graph/graph_executor.h"
#include "worker/graph/graph_layer.h"

namespace pstrain {
namespace {

using nlohmann::json;

struct FastCase {
  std::string label;
  std::string cls;
  json config;
  std::vector<int64_t> input;
};

void PrintTo(const FastCase& c, std::ostream* os) { *os << c.label; }

template <typename T>
Array<T> Cast(const Array<double>& a) {
  Array<T> out;
  out.shape = a.shape;
  out.data.assign(a.data.begin(), a.data.end());
  return out;
}

template <typename T>
std::vector<const Array<T>*> Pointers(const std::vector<Array<T>>& arrays) {
  std::vector<const Array<T>*> p;
  for (const auto& a : arrays) p.push_back(&a);
  return p;
}

template <typename T>
std::vector<Array<T>*> Pointers(std::vector<Array<T>>* arrays) {
  std::vector<Array<T>*> p;
  for (auto& a : *arrays) p.push_back(&a);
  return p;
}

void ExpectClose(const std::string& what, const std::vector<float>& fast, const std::vector<double>& reference) {
  ASSERT_EQ(fast.size(), reference.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    if (std::fabs(fast[i] - reference[i]) > 1e-4 + 1e-4 * std::fabs(reference[i])) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: float " << fast[i] << " vs double " << reference[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

class FastLayerTest : public ::testing::TestWithParam<FastCase> {};

TEST_P(FastLayerTest, FloatMatchesDoubleReference) {
  const FastCase& c = GetParam();
  const ModelGraph graph = MustRead(OneLayerJson(c.cls, c.config, {c.input}));
  ASSERT_FALSE(graph.layers.empty());
  std::unique_ptr<GraphLayer<float>> fast = MakeGraphLayer<float>(graph, graph.output);
  std::unique_ptr<GraphLayer<double>> reference = MakeGraphLayer<double>(graph, graph.output);
  ASSERT_NE(fast, nullptr);
  ASSERT_NE(reference, nullptr);
  std::mt19937 rng(23);
  for (int64_t batch : {3, 5, 2}) {
    SCOPED_TRACE(absl::StrCat("batch ", batch));
    std::vector<int64_t> shape = {batch};
    shape.insert(shape.end(), c.input.begin(), c.input.end());
    const std::vector<Array<double>> in = {RandomArray<double>(shape, &rng)};
    std::vector<Array<double>> w;
    for (const GraphVariableSpec& v : graph.variables) w.push_back(RandomArray<double>(v.shape, &rng));
    std::vector<Array<float>> in_f = {Cast<float>(in[0])}, w_f;
    for (const auto& a : w) w_f.push_back(Cast<float>(a));

    Array<double> out;
    Array<float> out_f;
    ASSERT_TRUE(reference->Forward(Pointers(in), Pointers(w), ForwardOptions(), &out).ok());
    ASSERT_TRUE(fast->Forward(Pointers(in_f), Pointers(w_f), ForwardOptions(), &out_f).ok());
    ASSERT_EQ(out_f.shape, out.shape);
    ExpectClose("output", out_f.data, out.data);

    // Gradients land on arrays that already hold values: both paths must add to them.
    const Array<double> dout = RandomArray<double>(out.shape, &rng);
    std::vector<Array<double>> din = {RandomArray<double>(shape, &rng)}, dw;
    for (const auto& a : w) dw.push_back(RandomArray<double>(a.shape, &rng));
    std::vector<Array<float>> din_f = {Cast<float>(din[0])}, dw_f;
    for (const auto& a : dw) dw_f.push_back(Cast<float>(a));
    const Array<double> din_before = din[0];
    const std::vector<Array<double>> dw_before = dw;
    reference->Backward(Pointers(in), Pointers(w), out, dout, Pointers(&din), Pointers(&dw));
    fast->Backward(Pointers(in_f), Pointers(w_f), out_f, Cast<float>(dout), Pointers(&din_f), Pointers(&dw_f));
    ASSERT_FALSE(reference->WritesGradients());
    // Written: what the reference added alone.
    auto written = [&](Array<double>* a, const Array<double>& before) {
      if (!fast->WritesGradients()) return;
      for (size_t e = 0; e < a->data.size(); ++e) a->data[e] -= before.data[e];
    };
    written(&din[0], din_before);
    ExpectClose("input gradient", din_f[0].data, din[0].data);
    for (size_t i = 0; i < w.size(); ++i) {
      written(&dw[i], dw_before[i]);
      ExpectClose(graph.variables[i].name, dw_f[i].data, dw[i].data);
    }
  }
}

std::vector<FastCase> Cases() {
  return {
      // Run by worker/cpu's kernels.
      {"Conv2DValidRelu", "Conv2D", {{"filters", 4}, {"kernel_size", 3}, {"activation", "relu"}}, {6, 7, 2}},
      {"Conv2DOneChannel", "Conv2D", {{"filters", 3}, {"kernel_size", 3}}, {5, 5, 1}},
      {"Conv2DSame", "Conv2D", {{"filters", 5}, {"kernel_size", 3}, {"padding", "same"}}, {4, 6, 3}},
      {"Conv2DSameEvenKernel", "Conv2D",
       {{"filters", 2}, {"kernel_size", 2}, {"padding", "same"}, {"activation", "relu"}}, {5, 4, 2}},
      {"Conv2DNoBias", "Conv2D", {{"filters", 17}, {"kernel_size", 1}, {"use_bias", false}}, {3, 3, 4}},
      {"DenseRelu", "Dense", {{"units", 7}, {"activation", "relu"}}, {9}},
      {"DenseLinearRank3", "Dense", {{"units", 3}}, {2, 5}},
      {"DenseNoBias", "Dense", {{"units", 20}, {"use_bias", false}}, {4}},
      // Dense's other activations run on the kernel's output.
      {"DenseSigmoid", "Dense", {{"units", 3}, {"activation", "sigmoid"}}, {4}},
      {"DenseGeluRank3", "Dense", {{"units", 5}, {"activation", "gelu"}}, {2, 6}},
      {"DenseSoftmax", "Dense", {{"units", 4}, {"activation", "softmax"}}, {7}},
      {"DenseTanhNoBias", "Dense", {{"units", 17}, {"activation", "tanh"}, {"use_bias", false}}, {5}},
      {"DenseSiluOneUnit", "Dense", {{"units", 1}, {"activation", "silu"}}, {8}},
      {"DenseElu", "Dense", {{"units", 6}, {"activation", "elu"}}, {3}},
      {"MaxPooling2D", "MaxPooling2D", json::object(), {4, 6, 3}},
      {"CrossFull", "Cross", json::object(), {9}},
      {"CrossFullReluDiag", "Cross", {{"activation", "relu"}, {"diag_scale", 0.5}}, {6}},
      {"CrossProjected", "Cross", {{"projection_dim", 3}}, {10}},
      {"CrossProjectedNoBias", "Cross", {{"projection_dim", 4}, {"use_bias", false}}, {7}},
      {"MaxPooling2DDropsEdges", "MaxPooling2D", {{"pool_size", 3}}, {7, 8, 2}},
      // Outside the kernels: the reference code in float.
      {"Conv2DStride2", "Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"strides", 2}}, {7, 7, 2}},
      {"Conv2DNonSquare", "Conv2D", {{"filters", 2}, {"kernel_size", {2, 3}}, {"activation", "relu"}}, {4, 5, 2}},
      {"Conv2DTanh", "Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"activation", "tanh"}}, {4, 4, 1}},
      {"CrossTanh", "Cross", {{"activation", "tanh"}, {"projection_dim", 2}}, {5}},
      {"MaxPooling2DSame", "MaxPooling2D", {{"pool_size", 2}, {"padding", "same"}}, {5, 5, 2}},
      {"MaxPooling2DOverlapping", "MaxPooling2D", {{"pool_size", 3}, {"strides", 2}}, {7, 7, 2}},
      {"MaxPooling2DNonSquare", "MaxPooling2D", {{"pool_size", {2, 3}}}, {4, 6, 2}},
      {"AveragePooling2D", "AveragePooling2D", json::object(), {4, 4, 2}},
  };
}

INSTANTIATE_TEST_SUITE_P(Layers, FastLayerTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<FastCase>& info) { return info.param.label; });

// A functional model: in0 (per-example `input`), then `layers` as (class, config, input names),
// the last one the output.
std::string ModelJson(const std::vector<int64_t>& input,
                      const std::vector<std::tuple<std::string, json, std::vector<std::string>>>& layers) {
  json shape = {nullptr};
  for (int64_t d : input) shape.push_back(d);
  json all = json::array({{{"class_name", "InputLayer"},
                           {"name", "in0"},
                           {"config", {{"batch_input_shape", shape}, {"dtype", "float32"}, {"name", "in0"}}},
                           {"inbound_nodes", json::array()}}});
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& [cls, config, inputs] = layers[i];
    json node = json::array();
    for (const std::string& in : inputs) node.push_back({in, 0, 0, json::object()});
    all.push_back({{"class_name", cls}, {"name", absl::StrCat("l", i)}, {"config", config}, {"inbound_nodes", {node}}});
  }
  const std::string last = absl::StrCat("l", layers.size() - 1);
  json model = {{"class_name", "Functional"},
                {"config", {{"name", "m"}, {"layers", all}, {"input_layers", {{"in0", 0, 0}}},
                            {"output_layers", {{last, 0, 0}}}}}};
  return model.dump();
}

struct ModelCase {
  std::string label;
  std::vector<int64_t> input;
  std::vector<std::tuple<std::string, json, std::vector<std::string>>> layers;
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.label; }

class FastModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(FastModelTest, FloatMatchesDoubleReference) {
  const ModelCase& c = GetParam();
  const ModelGraph graph = MustRead(ModelJson(c.input, c.layers));
  ASSERT_FALSE(graph.layers.empty());
  GraphExecutor<float> fast(graph);
  GraphExecutor<double> reference(graph);
  std::mt19937 rng(31);
  for (int64_t batch : {4, 3}) {
    SCOPED_TRACE(absl::StrCat("batch ", batch));
    std::vector<int64_t> shape = {batch};
    shape.insert(shape.end(), c.input.begin(), c.input.end());
    const std::vector<Array<double>> in = {RandomArray<double>(shape, &rng)};
    const std::vector<Array<float>> in_f = {Cast<float>(in[0])};
    NamedArrays<double> vars;
    NamedArrays<float> vars_f;
    for (const GraphVariableSpec& v : graph.variables) {
      vars[v.name] = RandomArray<double>(v.shape, &rng);
      vars_f[v.name] = Cast<float>(vars[v.name]);
    }
    auto out = reference.Forward(in, vars, ForwardOptions());
    auto out_f = fast.Forward(in_f, vars_f, ForwardOptions());
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(out_f.ok()) << out_f.status();
    ASSERT_EQ((*out_f)->shape, (*out)->shape);
    ExpectClose("output", (*out_f)->data, (*out)->data);
    const Array<double> dout = RandomArray<double>((*out)->shape, &rng);
    NamedArrays<double> grads;
    NamedArrays<float> grads_f;
    for (const GraphVariableSpec& v : graph.variables) grads_f[v.name] = RandomArray<float>(v.shape, &rng);  // replaced
    ASSERT_TRUE(reference.Backward(dout, &grads).ok());
    ASSERT_TRUE(fast.Backward(Cast<float>(dout), &grads_f).ok());
    ASSERT_EQ(grads_f.size(), grads.size());
    for (const auto& [name, g] : grads) ExpectClose(name, grads_f[name].data, g.data);
    // Flatten and the pooled-by-conv MaxPooling2D moved their values for one Backward only.
    EXPECT_EQ(fast.Backward(Cast<float>(dout), &grads_f).code(), absl::StatusCode::kFailedPrecondition);
  }
}

std::vector<ModelCase> ModelCases() {
  const json relu3 = {{"filters", 4}, {"kernel_size", 3}, {"activation", "relu"}};
  return {
      // Fused: the pool drops the conv's last row and column (7x8 -> 5x6 -> 2x3).
      {"ConvReluPoolDense", {7, 8, 2},
       {{"Conv2D", relu3, {"in0"}},
        {"MaxPooling2D", json::object(), {"l0"}},
        {"Flatten", json::object(), {"l1"}},
        {"Dense", {{"units", 3}}, {"l2"}}}},
      {"ConvSamePool3", {6, 6, 1},
       {{"Conv2D", {{"filters", 5}, {"kernel_size", 3}, {"padding", "same"}}, {"in0"}},
        {"MaxPooling2D", {{"pool_size", 3}}, {"l0"}},
        {"Flatten", json::object(), {"l1"}}}},
      {"ConvPoolIsTheOutput", {5, 5, 3},
       {{"Conv2D", relu3, {"in0"}}, {"MaxPooling2D", json::object(), {"l0"}}}},
      // Not fused: the conv has a second consumer, or the pool overlaps.
      {"ConvFeedsPoolAndFlatten", {6, 6, 2},
       {{"Conv2D", relu3, {"in0"}},
        {"MaxPooling2D", json::object(), {"l0"}},
        {"Flatten", json::object(), {"l1"}},
        {"Flatten", json::object(), {"l0"}},
        {"Concatenate", json::object(), {"l2", "l3"}}}},
      {"ConvOverlappingPool", {7, 7, 2},
       {{"Conv2D", relu3, {"in0"}},
        {"MaxPooling2D", {{"pool_size", 3}, {"strides", 2}}, {"l0"}},
        {"Flatten", json::object(), {"l1"}}}},
  };
}

INSTANTIATE_TEST_SUITE_P(Models, FastModelTest, ::testing::ValuesIn(ModelCases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) { return info.param.label; });

}  // namespace
}  // namespace pstrain
