// The float layers that run worker/cpu's kernels (Conv2D, Dense, MaxPooling2D) against the
// reference code in double on the same values: outputs and gradients, with the gradients added to
// what the arrays already hold, over two calls of different batch sizes (the kernels keep buffers).
// Geometries the kernels do not cover (strides, non-square windows, same pooling, other
// activations) fall back to the reference code and must agree too.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "tests/worker/graph/graph_test_util.h"
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
    reference->Backward(Pointers(in), Pointers(w), out, dout, Pointers(&din), Pointers(&dw));
    fast->Backward(Pointers(in_f), Pointers(w_f), out_f, Cast<float>(dout), Pointers(&din_f), Pointers(&dw_f));
    ExpectClose("input gradient", din_f[0].data, din[0].data);
    for (size_t i = 0; i < w.size(); ++i) ExpectClose(graph.variables[i].name, dw_f[i].data, dw[i].data);
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
      {"MaxPooling2D", "MaxPooling2D", json::object(), {4, 6, 3}},
      {"MaxPooling2DDropsEdges", "MaxPooling2D", {{"pool_size", 3}}, {7, 8, 2}},
      // Outside the kernels: the reference code in float.
      {"Conv2DStride2", "Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"strides", 2}}, {7, 7, 2}},
      {"Conv2DNonSquare", "Conv2D", {{"filters", 2}, {"kernel_size", {2, 3}}, {"activation", "relu"}}, {4, 5, 2}},
      {"Conv2DTanh", "Conv2D", {{"filters", 2}, {"kernel_size", 3}, {"activation", "tanh"}}, {4, 4, 1}},
      {"DenseSigmoid", "Dense", {{"units", 3}, {"activation", "sigmoid"}}, {4}},
      {"MaxPooling2DSame", "MaxPooling2D", {{"pool_size", 2}, {"padding", "same"}}, {5, 5, 2}},
      {"MaxPooling2DOverlapping", "MaxPooling2D", {{"pool_size", 3}, {"strides", 2}}, {7, 7, 2}},
      {"MaxPooling2DNonSquare", "MaxPooling2D", {{"pool_size", {2, 3}}}, {4, 6, 2}},
      {"AveragePooling2D", "AveragePooling2D", json::object(), {4, 4, 2}},
  };
}

INSTANTIATE_TEST_SUITE_P(Layers, FastLayerTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<FastCase>& info) { return info.param.label; });

}  // namespace
}  // namespace pstrain
