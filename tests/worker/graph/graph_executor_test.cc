// The graph executor on whole models: a hand computation, Keras's own predictions for given
// weights (real Keras 2 and Keras 3 fixtures), gradients of every variable through the whole DAG
// against finite differences, BatchNormalization's moving statistics, Dropout's masks, bad input.
#include "worker/graph/graph_executor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/graph/keras_fixture.h"
#include "tests/worker/graph/graph_test_util.h"
#include "worker/graph/losses.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// a [2] -> Dense(2) "da"; b [1] -> Dense(1, relu) "db"; Concatenate; Dense(1) "out".
constexpr char kTwoInputs[] = R"({"class_name": "Functional", "config": {"name": "m", "layers": [
  {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 2], "name": "a"}, "name": "a", "inbound_nodes": []},
  {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 1], "name": "b"}, "name": "b", "inbound_nodes": []},
  {"class_name": "Dense", "config": {"units": 2}, "name": "da", "inbound_nodes": [[["a", 0, 0, {}]]]},
  {"class_name": "Dense", "config": {"units": 1, "activation": "relu"}, "name": "db", "inbound_nodes": [[["b", 0, 0, {}]]]},
  {"class_name": "Concatenate", "config": {}, "name": "cat", "inbound_nodes": [[["da", 0, 0, {}], ["db", 0, 0, {}]]]},
  {"class_name": "Dense", "config": {"units": 1}, "name": "out", "inbound_nodes": [[["cat", 0, 0, {}]]]}],
  "input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["out", 0, 0]]}})";

TEST(GraphExecutorTest, TwoInputsMatchAHandComputation) {
  GraphExecutor<float> exec(MustRead(kTwoInputs));
  NamedArrays<float> vars;
  vars["da/kernel"] = Array<float>({2, 2}, {1, 2, 3, 4});
  vars["da/bias"] = Array<float>({2}, {0.5f, -0.5f});
  vars["db/kernel"] = Array<float>({1, 1}, {2});
  vars["db/bias"] = Array<float>({1}, {-1});
  vars["out/kernel"] = Array<float>({3, 1}, {1, -1, 0.5f});
  vars["out/bias"] = Array<float>({1}, {0.25f});
  const std::vector<Array<float>> inputs = {Array<float>({2, 2}, {1, 1, 0, -1}), Array<float>({2, 1}, {3, 0})};
  absl::StatusOr<const Array<float>*> out = exec.Forward(inputs, vars, ForwardOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  // Example 1: da = [1+3+0.5, 2+4-0.5] = [4.5, 5.5], db = relu(6-1) = 5, out = 4.5-5.5+2.5+0.25.
  // Example 2: da = [-3+0.5, -4-0.5] = [-2.5, -4.5], db = relu(-1) = 0, out = -2.5+4.5+0+0.25.
  EXPECT_EQ((*out)->shape, std::vector<int64_t>({2, 1}));
  EXPECT_FLOAT_EQ((*out)->data[0], 1.75f);
  EXPECT_FLOAT_EQ((*out)->data[1], 2.25f);

  // d(sum of outputs): out/kernel = the column sums of cat, da gets [1, -1] per example, db 0.5
  // where its ReLU is open (example 1 only).
  NamedArrays<float> grads;
  ASSERT_TRUE(exec.Backward(Array<float>({2, 1}, {1, 1}), &grads).ok());
  EXPECT_THAT(grads["out/kernel"].data, ::testing::ElementsAre(2.f, 1.f, 5.f));
  EXPECT_THAT(grads["out/bias"].data, ::testing::ElementsAre(2.f));
  EXPECT_THAT(grads["da/kernel"].data, ::testing::ElementsAre(1.f, -1.f, 0.f, 0.f));
  EXPECT_THAT(grads["da/bias"].data, ::testing::ElementsAre(2.f, -2.f));
  EXPECT_THAT(grads["db/kernel"].data, ::testing::ElementsAre(1.5f));
  EXPECT_THAT(grads["db/bias"].data, ::testing::ElementsAre(0.5f));
  EXPECT_TRUE(exec.MovingUpdates().empty());
}

struct KerasRecord {
  std::vector<Array<double>> inputs;  // in the graph's input order
  NamedArrays<double> weights;
  Array<double> output;
};

Array<double> ToArray(const json& j) {
  return Array<double>(j["shape"].get<std::vector<int64_t>>(), j["values"].get<std::vector<double>>());
}

KerasRecord ReadRecord(const ModelGraph& graph, const std::string& name) {
  const json j = json::parse(ReadFixture(name));
  KerasRecord r;
  const json& inputs = j["inputs"];
  for (int in : graph.inputs) {
    // Keras names a Sequential model's input after its InputLayer; the fixture has one input then.
    const std::string key = inputs.contains(graph.layers[in].name) ? graph.layers[in].name : inputs.begin().key();
    r.inputs.push_back(ToArray(inputs[key]));
  }
  for (const auto& [k, v] : j["weights"].items()) r.weights[k] = ToArray(v);
  r.output = ToArray(j["output"]);
  return r;
}

template <typename T>
std::vector<Array<T>> Cast(const std::vector<Array<double>>& in) {
  std::vector<Array<T>> out;
  for (const auto& a : in) out.emplace_back(a.shape, std::vector<T>(a.data.begin(), a.data.end()));
  return out;
}
template <typename T>
NamedArrays<T> Cast(const NamedArrays<double>& in) {
  NamedArrays<T> out;
  for (const auto& [k, a] : in) out[k] = Array<T>(a.shape, std::vector<T>(a.data.begin(), a.data.end()));
  return out;
}

class KerasFixtureTest : public ::testing::TestWithParam<std::string> {};

// Keras's predictions (inference: Dropout off, BatchNormalization on its moving statistics) for
// the fixture's weights and inputs, in float.
TEST_P(KerasFixtureTest, PredictionsEqualKeras) {
  const ModelGraph graph = MustRead(ReadFixture(GetParam() + ".json"));
  const KerasRecord r = ReadRecord(graph, GetParam() + ".predict.json");
  GraphExecutor<float> exec(graph);
  absl::StatusOr<const Array<float>*> out = exec.Forward(Cast<float>(r.inputs), Cast<float>(r.weights), ForwardOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)->shape, r.output.shape);
  for (int64_t i = 0; i < r.output.size(); ++i) {
    EXPECT_NEAR((*out)->data[i], r.output.data[i], 1e-5 + 1e-5 * std::fabs(r.output.data[i])) << i;
  }
}

// Training mode through the whole DAG in double: every trainable variable's gradient of a loss
// against central differences (BatchNormalization on batch statistics, Dropout's fixed mask).
TEST_P(KerasFixtureTest, GradientsOfEveryVariableMatchFiniteDifferences) {
  const ModelGraph graph = MustRead(ReadFixture(GetParam() + ".json"));
  KerasRecord r = ReadRecord(graph, GetParam() + ".predict.json");
  GraphExecutor<double> exec(graph);
  ForwardOptions options;
  options.training = true;
  options.seed = 5;
  absl::StatusOr<const Array<double>*> out = exec.Forward(r.inputs, r.weights, options);
  ASSERT_TRUE(out.ok()) << out.status();
  const bool probabilities = graph.layers[graph.output].config.activation == ActivationKind::kSoftmax;
  const LossSpec loss = *ParseLoss(probabilities ? "sparse_categorical_crossentropy" : "mean_squared_error", false);
  Array<double> labels;
  if (probabilities) {
    labels = Array<double>({(*out)->batch()});
    for (int64_t i = 0; i < labels.size(); ++i) labels.data[i] = static_cast<double>(i % (*out)->last());
  } else {
    labels = Array<double>((*out)->shape);
    for (int64_t i = 0; i < labels.size(); ++i) labels.data[i] = 0.3 * static_cast<double>(i % 3) - 0.2;
  }
  Array<double> dout;
  ASSERT_TRUE(ComputeLoss(loss, **out, labels, &dout).ok());
  NamedArrays<double> grads;
  ASSERT_TRUE(exec.Backward(dout, &grads).ok());
  auto value = [&]() {
    absl::StatusOr<const Array<double>*> o = exec.Forward(r.inputs, r.weights, options);
    EXPECT_TRUE(o.ok());
    Array<double> unused;
    return *ComputeLoss(loss, **o, labels, &unused);
  };
  int checked = 0;
  for (const GraphVariableSpec& v : graph.variables) {
    if (!v.trainable) {
      EXPECT_EQ(grads.count(v.name), 0u) << v.name;
      continue;
    }
    ASSERT_EQ(grads.count(v.name), 1u) << v.name;
    ExpectGradient(v.name, &r.weights[v.name].data, grads[v.name].data, value);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KerasFixtureTest,
                         ::testing::Values("keras2_two_inputs", "keras2_sequential_mlp", "keras2_many_layers",
                                           "keras2_recommenders", "keras2_cnn", "keras3_two_inputs",
                                           "keras3_sequential_mlp", "keras3_many_layers", "keras3_cnn",
                                           // Recommendation models: a float input, then integer ids.
                                           "keras2_deepfm", "keras2_dcn_v2", "keras2_wide_deep", "keras2_dlrm",
                                           "keras2_two_tower", "keras3_deepfm", "keras3_wide_deep",
                                           "keras3_two_tower"));

// The gradients of sum(output * r) (r random) with respect to `names` on random variables and a
// random input of `x_shape`, against finite differences in double.
void ExpectGradientsOfRandomLoss(const ModelGraph& graph, const std::vector<int64_t>& x_shape, uint32_t seed,
                                 const std::vector<const char*>& names) {
  std::mt19937 rng(seed);
  NamedArrays<double> vars;
  for (const GraphVariableSpec& v : graph.variables) vars[v.name] = RandomArray<double>(v.shape, &rng);
  const std::vector<Array<double>> x = {RandomArray<double>(x_shape, &rng)};
  GraphExecutor<double> exec(graph);
  absl::StatusOr<const Array<double>*> out = exec.Forward(x, vars, ForwardOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  const Array<double> r = RandomArray<double>((*out)->shape, &rng);
  NamedArrays<double> grads;
  ASSERT_TRUE(exec.Backward(r, &grads).ok());
  auto loss = [&]() {
    const Array<double>* o = *exec.Forward(x, vars, ForwardOptions());
    double s = 0;
    for (int64_t i = 0; i < o->size(); ++i) s += o->data[i] * r.data[i];
    return s;
  };
  for (const char* name : names) ExpectGradient(name, &vars[name].data, grads[name].data, loss);
}

// One tensor fed twice to a layer (Multiply([h, h]), Cross(h, h)): both gradients reach it.
TEST(GraphExecutorTest, ATensorUsedTwiceGetsBothGradients) {
  const ModelGraph graph = MustRead(R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "name": "x"}, "name": "x", "inbound_nodes": []},
    {"class_name": "Dense", "config": {"units": 3}, "name": "h", "inbound_nodes": [[["x", 0, 0, {}]]]},
    {"class_name": "Multiply", "config": {}, "name": "sq", "inbound_nodes": [[["h", 0, 0, {}], ["h", 0, 0, {}]]]},
    {"class_name": "Cross", "config": {}, "name": "c", "inbound_nodes": [[["sq", 0, 0, {"x": ["h", 0, 0]}]]]},
    {"class_name": "Add", "config": {}, "name": "sum", "inbound_nodes": [[["c", 0, 0, {}], ["h", 0, 0, {}]]]}],
    "input_layers": [["x", 0, 0]], "output_layers": [["sum", 0, 0]]}})");
  ExpectGradientsOfRandomLoss(graph, {2, 3}, 4, {"h/kernel", "h/bias", "c/dense/kernel", "c/dense/bias"});
}

// Concatenate writes its inputs' gradients: a tensor it takes twice, and that also feeds another
// layer, still gets every part (the executor gives it scratch to add up there).
TEST(GraphExecutorTest, ConcatenateOfATensorTakenTwiceGivesItEveryGradient) {
  const ModelGraph graph = MustRead(R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 3], "name": "x"}, "name": "x", "inbound_nodes": []},
    {"class_name": "Dense", "config": {"units": 3, "activation": "tanh"}, "name": "h", "inbound_nodes": [[["x", 0, 0, {}]]]},
    {"class_name": "Multiply", "config": {}, "name": "sq", "inbound_nodes": [[["h", 0, 0, {}], ["h", 0, 0, {}]]]},
    {"class_name": "Concatenate", "config": {}, "name": "cat",
     "inbound_nodes": [[["h", 0, 0, {}], ["sq", 0, 0, {}], ["h", 0, 0, {}], ["x", 0, 0, {}]]]},
    {"class_name": "Dense", "config": {"units": 2}, "name": "out", "inbound_nodes": [[["cat", 0, 0, {}]]]}],
    "input_layers": [["x", 0, 0]], "output_layers": [["out", 0, 0]]}})");
  ExpectGradientsOfRandomLoss(graph, {3, 3}, 6, {"h/kernel", "h/bias", "out/kernel", "out/bias"});
}

// Forward taking its inputs swaps their storage with the executor's: the same outputs as the copying
// Forward, call after call, with the caller refilling what it got back (of any shape).
TEST(GraphExecutorTest, ForwardTakingItsInputsEqualsTheCopyingForward) {
  const ModelGraph graph = MustRead(OneLayerJson("Dense", {{"units", 2}, {"activation", "relu"}}, {{4}}));
  std::mt19937 rng(8);
  NamedArrays<float> vars;
  for (const GraphVariableSpec& v : graph.variables) vars[v.name] = RandomArray<float>(v.shape, &rng);
  GraphExecutor<float> copying(graph), taking(graph);
  std::vector<Array<float>> buffers(1);
  for (int64_t batch : {3, 5, 1, 5}) {
    const Array<float> x = RandomArray<float>({batch, 4}, &rng);
    absl::StatusOr<const Array<float>*> want = copying.Forward({x}, vars, ForwardOptions());
    ASSERT_TRUE(want.ok()) << want.status();
    buffers[0].shape = x.shape;
    buffers[0].data.assign(x.data.begin(), x.data.end());
    absl::StatusOr<const Array<float>*> got = taking.Forward(&buffers, vars, ForwardOptions());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)->shape, (*want)->shape);
    EXPECT_EQ((*got)->data, (*want)->data) << "batch " << batch;
  }
  buffers[0].shape = {2, 3};  // refused, and nothing taken
  buffers[0].data.assign(6, 1.0f);
  EXPECT_FALSE(taking.Forward(&buffers, vars, ForwardOptions()).ok());
  EXPECT_EQ(buffers[0].data, std::vector<float>(6, 1.0f));
}

TEST(GraphExecutorTest, BatchNormalizationMovingStatisticsFollowKerasRule) {
  const ModelGraph graph = MustRead(OneLayerJson("BatchNormalization", {{"momentum", 0.9}}, {{2}}));
  GraphExecutor<double> exec(graph);
  NamedArrays<double> vars;
  vars["layer/gamma"] = Array<double>({2}, {1, 1});
  vars["layer/beta"] = Array<double>({2}, {0, 0});
  vars["layer/moving_mean"] = Array<double>({2}, {1, -1});
  vars["layer/moving_variance"] = Array<double>({2}, {2, 0.5});
  const std::vector<Array<double>> x = {Array<double>({2, 2}, {1, 4, 3, 8})};  // means 2, 6; variances 1, 4
  ForwardOptions training;
  training.training = true;
  ASSERT_TRUE(exec.Forward(x, vars, training).ok());
  NamedArrays<double> updates = exec.MovingUpdates();
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_NEAR(updates["layer/moving_mean"].data[0], 1 * 0.9 + 2 * 0.1, 1e-12);
  EXPECT_NEAR(updates["layer/moving_mean"].data[1], -1 * 0.9 + 6 * 0.1, 1e-12);
  EXPECT_NEAR(updates["layer/moving_variance"].data[0], 2 * 0.9 + 1 * 0.1, 1e-12);
  EXPECT_NEAR(updates["layer/moving_variance"].data[1], 0.5 * 0.9 + 4 * 0.1, 1e-12);
  // The variables themselves are untouched, and inference uses them.
  EXPECT_EQ(vars["layer/moving_mean"].data, std::vector<double>({1, -1}));
  absl::StatusOr<const Array<double>*> out = exec.Forward(x, vars, ForwardOptions());
  ASSERT_TRUE(out.ok());
  EXPECT_NEAR((*out)->data[0], (1 - 1) / std::sqrt(2 + 1e-3), 1e-12);
  EXPECT_NEAR((*out)->data[1], (4 + 1) / std::sqrt(0.5 + 1e-3), 1e-12);
  EXPECT_TRUE(exec.MovingUpdates().empty());
}

TEST(GraphExecutorTest, DropoutIsReproducibleFromTheSeed) {
  const ModelGraph graph = MustRead(OneLayerJson("Dropout", {{"rate", 0.25}}, {{10000}}));
  GraphExecutor<float> exec(graph);
  const std::vector<Array<float>> x = {Array<float>({1, 10000}, std::vector<float>(10000, 1.f))};
  auto run = [&](uint64_t seed, int64_t step, bool training) {
    ForwardOptions o;
    o.seed = seed;
    o.step = step;
    o.training = training;
    return (*exec.Forward(x, {}, o))->data;
  };
  const std::vector<float> a = run(1, 0, true);
  EXPECT_EQ(run(1, 0, true), a);
  EXPECT_NE(run(1, 1, true), a);
  EXPECT_NE(run(2, 0, true), a);
  int64_t dropped = 0;
  for (float v : a) {
    ASSERT_TRUE(v == 0.f || std::fabs(v - 1.f / 0.75f) < 1e-6f) << v;
    dropped += v == 0.f;
  }
  EXPECT_GT(dropped, 2200);  // 2500 expected; the bounds are 10 standard deviations apart
  EXPECT_LT(dropped, 2800);
  EXPECT_EQ(run(1, 0, false), x[0].data);  // inference: the identity
}

TEST(GraphExecutorTest, BadInputIsAnErrorNamingIt) {
  GraphExecutor<float> exec(MustRead(kTwoInputs));
  NamedArrays<float> vars;
  const std::vector<Array<float>> inputs = {Array<float>({2, 2}), Array<float>({2, 1})};
  absl::StatusOr<const Array<float>*> out = exec.Forward(inputs, vars, ForwardOptions());
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("variable 'da/kernel' is missing"));
  vars["da/kernel"] = Array<float>({2, 3});
  out = exec.Forward(inputs, vars, ForwardOptions());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'da/kernel' has shape [2,3]; expected [2,2]"));
  out = exec.Forward({Array<float>({2, 3}), Array<float>({2, 1})}, vars, ForwardOptions());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("input 'a' has shape [2,3]; expected [2,2]"));
  out = exec.Forward({Array<float>({2, 2})}, vars, ForwardOptions());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("takes 2 inputs"));
  NamedArrays<float> grads;
  EXPECT_EQ(exec.Backward(Array<float>({2, 1}), &grads).code(), absl::StatusCode::kFailedPrecondition);

  GraphExecutor<float> emb(MustRead(OneLayerJson("Embedding", {{"input_dim", 3}, {"output_dim", 2}}, {{2}}, true)));
  NamedArrays<float> table;
  table["layer/embeddings"] = Array<float>({3, 2});
  out = emb.Forward({Array<float>({1, 2}, {0, 3})}, table, ForwardOptions());
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("id 3 is not an integer in [0, 3), its table's rows"));
}

// An Embedding on an input of 3 columns: column 0 one id per example, columns 1 and 2 bags (an
// empty one included), each combined with its coefficients into its own output position; the
// table's gradient gets each bag id's coefficient times its position's output gradient. The
// reference is written out here, element by element.
TEST(GraphExecutorTest, EmbeddingCombinesBagsInTheirColumnsBesideOneIdColumns) {
  GraphExecutor<double> exec(MustRead(OneLayerJson("Embedding", {{"input_dim", 5}, {"output_dim", 2}}, {{3}}, true)));
  NamedArrays<double> table;
  table["layer/embeddings"] = Array<double>({5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41});
  // Two examples. Column 0: ids 4 and 1 (columns 1 and 2 hold placeholders the layer ignores).
  const Array<double> ids({2, 3}, {4, 0, 0, 1, 0, 0});
  // Column 1: example 0 {2 x 0.5, 3 x 2}, example 1 {2 x 1}. Column 2: example 0 {}, example 1 {0 x 3, 0 x 1}.
  const int64_t off1[] = {0, 2, 3}, off2[] = {0, 0, 2};
  const int32_t pos1[] = {2, 3, 2}, pos2[] = {0, 0};
  const float coef1[] = {0.5f, 2.f, 1.f}, coef2[] = {3.f, 1.f};
  const std::map<std::string, std::vector<EmbeddingBags>> bags = {
      {"layer", {EmbeddingBags{}, EmbeddingBags{off1, pos1, coef1}, EmbeddingBags{off2, pos2, coef2}}}};
  ForwardOptions options;
  options.bags = &bags;
  absl::StatusOr<const Array<double>*> out = exec.Forward({ids}, table, options);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)->shape, std::vector<int64_t>({2, 3, 2}));
  const std::vector<double> want = {40, 41,                        // row 4
                                    0.5 * 20 + 2 * 30, 0.5 * 21 + 2 * 31,  // 0.5 row 2 + 2 row 3
                                    0, 0,                          // empty bag
                                    10, 11,                        // row 1
                                    20, 21,                        // row 2
                                    4 * 0, 4 * 1};                 // 3 row 0 + 1 row 0
  EXPECT_EQ((*out)->data, want);
  // Output gradient g[b][c][d] = 1 + b * 6 + c * 2 + d.
  Array<double> dout({2, 3, 2});
  for (int i = 0; i < 12; ++i) dout.data[i] = 1 + i;
  NamedArrays<double> grads;
  ASSERT_TRUE(exec.Backward(dout, &grads).ok());
  std::vector<double> g(10, 0.0);
  auto add = [&](int row, double c, int at) { for (int d = 0; d < 2; ++d) g[row * 2 + d] += c * dout.data[at + d]; };
  add(4, 1, 0);    // example 0 column 0
  add(2, 0.5, 2);  // example 0 column 1
  add(3, 2, 2);
  add(1, 1, 6);    // example 1 column 0
  add(2, 1, 8);    // example 1 column 1
  add(0, 3, 10);   // example 1 column 2
  add(0, 1, 10);
  EXPECT_EQ(grads["layer/embeddings"].data, g);

  // Bags for 2 columns of a 3-column input are refused.
  const std::map<std::string, std::vector<EmbeddingBags>> two = {{"layer", {EmbeddingBags{}, EmbeddingBags{}}}};
  options.bags = &two;
  out = exec.Forward({ids}, table, options);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("given bags for 2 input columns but its input holds 3"));
}

}  // namespace
}  // namespace pstrain
