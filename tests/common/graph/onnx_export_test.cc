// The ONNX export's structure, read back with the same messages: opset and IR version, inputs
// named after the InputLayers with a symbolic batch and their per-example shapes and types, the
// output named after the output layer, every Keras variable an initializer with its values, every
// node's inputs defined before it; the NHWC handling of Conv2D and pooling; bad weights refused by
// name. Whether ONNX Runtime computes what the executor does is tests/integration/onnx_export_test.sh.
#include "common/graph/onnx_export.h"

#include <filesystem>
#include <set>

#include "common/graph/keras_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/onnx.pb.h"
#include "tests/common/graph/keras_fixture.h"
#include "tests/common/graph/onnx_export_cases.h"

namespace pstrain {
namespace {

using ::testing::HasSubstr;

ModelGraph MustRead(const std::string& json, const std::string& name) {
  absl::StatusOr<ModelGraph> g = ReadKerasModelJson(json, name);
  EXPECT_TRUE(g.ok()) << name << ": " << g.status();
  return g.ok() ? *g : ModelGraph();
}

// Distinct values per variable so a swapped or mangled initializer shows.
FloatTensorMap NumberedWeights(const ModelGraph& g) {
  FloatTensorMap w;
  float next = 0.5f;
  for (const GraphVariableSpec& v : g.variables) {
    int64_t n = 1;
    for (int64_t d : v.shape) n *= d;
    FloatTensor& t = w[v.name];
    t.shape = v.shape;
    for (int64_t i = 0; i < n; ++i) t.values.push_back(next += 0.25f);
  }
  return w;
}

onnx::ModelProto MustExport(const ModelGraph& g, const FloatTensorMap& w) {
  absl::StatusOr<std::string> bytes = ExportOnnx(g, w);
  EXPECT_TRUE(bytes.ok()) << g.name << ": " << bytes.status();
  onnx::ModelProto m;
  EXPECT_TRUE(bytes.ok() && m.ParseFromString(*bytes)) << g.name;
  return m;
}

void ExpectValueInfo(const onnx::ValueInfoProto& info, const std::string& name, int elem_type,
                     const std::vector<int64_t>& per_example) {
  EXPECT_EQ(info.name(), name);
  const auto& t = info.type().tensor_type();
  EXPECT_EQ(t.elem_type(), elem_type) << name;
  ASSERT_EQ(t.shape().dim_size(), static_cast<int>(per_example.size()) + 1) << name;
  EXPECT_EQ(t.shape().dim(0).dim_param(), "batch") << name;
  for (size_t i = 0; i < per_example.size(); ++i) EXPECT_EQ(t.shape().dim(i + 1).dim_value(), per_example[i]) << name;
}

void ExpectWellFormed(const ModelGraph& g) {
  const FloatTensorMap w = NumberedWeights(g);
  const onnx::ModelProto m = MustExport(g, w);
  EXPECT_EQ(m.ir_version(), 8);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.producer_name(), "pstrain");
  const onnx::GraphProto& graph = m.graph();
  ASSERT_EQ(graph.input_size(), static_cast<int>(g.inputs.size())) << g.name;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const GraphLayerSpec& l = g.layers[g.inputs[i]];
    ExpectValueInfo(graph.input(i), l.name, l.config.int_input ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT,
                    l.output_shape);
  }
  ASSERT_EQ(graph.output_size(), 1);
  ExpectValueInfo(graph.output(0), g.layers[g.output].name, onnx::TensorProto::FLOAT, g.layers[g.output].output_shape);

  // Every Keras variable is an initializer of that name with its shape and values, once.
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const onnx::TensorProto& t : graph.initializer()) {
    EXPECT_TRUE(inits.emplace(t.name(), &t).second) << "two initializers named " << t.name();
  }
  for (const GraphVariableSpec& v : g.variables) {
    ASSERT_TRUE(inits.count(v.name)) << g.name << ": no initializer " << v.name;
    const onnx::TensorProto& t = *inits[v.name];
    EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(std::vector<int64_t>(t.dims().begin(), t.dims().end()), v.shape) << v.name;
    EXPECT_EQ(std::vector<float>(t.float_data().begin(), t.float_data().end()), w.at(v.name).values) << v.name;
  }

  // Nodes in topological order: each input is a graph input, an initializer or an earlier output;
  // no value is made twice; the output is made.
  std::set<std::string> defined;
  for (const auto& in : graph.input()) defined.insert(in.name());
  for (const auto& [name, t] : inits) defined.insert(name);
  for (const onnx::NodeProto& n : graph.node()) {
    for (const std::string& in : n.input()) EXPECT_TRUE(defined.count(in)) << n.op_type() << " reads undefined " << in;
    for (const std::string& out : n.output()) EXPECT_TRUE(defined.insert(out).second) << out << " made twice";
  }
  EXPECT_TRUE(defined.count(g.layers[g.output].name)) << g.name;
  // Every layer's value carries the layer's name (what a reader sees when it looks inside).
  for (const GraphLayerSpec& l : g.layers) EXPECT_TRUE(defined.count(l.name)) << l.name;
}

// Every fixture the reader accepts (the others are its refusals: Lambda, groups, shared layers...).
TEST(OnnxExportTest, EveryReadableKerasFixtureIsWellFormed) {
  int exported = 0;
  for (const auto& e : std::filesystem::directory_iterator(PSTRAIN_GRAPH_TESTDATA)) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() != ".json" || file.find(".predict.") != std::string::npos) continue;
    absl::StatusOr<ModelGraph> g = ReadKerasModelJson(ReadFixture(file), file);
    if (!g.ok()) continue;
    SCOPED_TRACE(file);
    ExpectWellFormed(*g);
    ++exported;
  }
  // Keras 2 and 3: cnn, many_layers, sequential_mlp, two_inputs, seeds_cnn, regression_mlp,
  // residual_mlp, deepfm, wide_deep, two_tower; Keras 2's recommenders, dcn_v2, dlrm; Keras 3's ctr_preset.
  EXPECT_GE(exported, 24);
}

TEST(OnnxExportTest, EveryCaseIsWellFormed) {
  for (const auto& [name, json] : OnnxExportCases()) {
    SCOPED_TRACE(name);
    ExpectWellFormed(MustRead(json, name));
  }
}

const onnx::NodeProto* FindNode(const onnx::GraphProto& g, const std::string& op, int nth = 0) {
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() == op && nth-- == 0) return &n;
  }
  return nullptr;
}

const onnx::NodeProto* Producer(const onnx::GraphProto& g, const std::string& value) {
  for (const onnx::NodeProto& n : g.node()) {
    if (n.output(0) == value) return &n;
  }
  return nullptr;
}

std::vector<int64_t> Ints(const onnx::NodeProto& n, const std::string& attr) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == attr) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  }
  return {};
}
int64_t Int(const onnx::NodeProto& n, const std::string& attr) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == attr) return a.i();
  }
  return -1;
}

// keras2_cnn: Conv2D 'same' stride 2 on 9x8 then 'valid'; AveragePooling2D 3x2 'same' strides
// (2, 1); TensorFlow's extra padding row/column goes to the bottom/right.
TEST(OnnxExportTest, ConvAndPoolingGoThroughNchwWithTensorFlowsPadding) {
  const ModelGraph g = MustRead(ReadFixture("keras2_cnn.json"), "keras2_cnn");
  const onnx::ModelProto m = MustExport(g, NumberedWeights(g));
  const onnx::NodeProto* conv = FindNode(m.graph(), "Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(Ints(*conv, "strides"), std::vector<int64_t>({2, 2}));
  // 9x8 -> 5x4 with a 3x3 window, stride 2: 2 rows of padding (1 top, 1 bottom), 1 column (right).
  EXPECT_EQ(Ints(*conv, "pads"), std::vector<int64_t>({1, 0, 1, 1}));
  // The Conv reads the image transposed NHWC -> NCHW and the kernel [kh, kw, in, f] -> [f, in, kh, kw].
  const onnx::NodeProto* to_nchw = Producer(m.graph(), conv->input(0));
  const onnx::NodeProto* kernel = Producer(m.graph(), conv->input(1));
  ASSERT_TRUE(to_nchw != nullptr && kernel != nullptr);
  EXPECT_EQ(to_nchw->op_type(), "Transpose");
  EXPECT_EQ(Ints(*to_nchw, "perm"), std::vector<int64_t>({0, 3, 1, 2}));
  EXPECT_EQ(kernel->op_type(), "Transpose");
  EXPECT_EQ(Ints(*kernel, "perm"), std::vector<int64_t>({3, 2, 0, 1}));
  EXPECT_EQ(kernel->input(0), g.layers[1].name + "/kernel");
  const onnx::NodeProto* avg = FindNode(m.graph(), "AveragePool");
  ASSERT_NE(avg, nullptr);
  EXPECT_EQ(Int(*avg, "count_include_pad"), 0);
  EXPECT_EQ(Ints(*avg, "kernel_shape"), std::vector<int64_t>({3, 2}));
  EXPECT_EQ(Ints(*avg, "strides"), std::vector<int64_t>({2, 1}));
  // 4x2 -> 2x2 with a 3x2 window, strides (2, 1): one row and one column, both at the bottom/right.
  EXPECT_EQ(Ints(*avg, "pads"), std::vector<int64_t>({0, 0, 1, 1}));
}

TEST(OnnxExportTest, MissingOrMisshapenWeightsAreNamed) {
  const ModelGraph g = MustRead(ReadFixture("keras2_two_inputs.json"), "keras2_two_inputs");
  FloatTensorMap w = NumberedWeights(g);
  const std::string victim = g.variables[0].name;
  FloatTensorMap missing = w;
  missing.erase(victim);
  absl::StatusOr<std::string> r = ExportOnnx(g, missing);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'" + victim + "'"));
  EXPECT_THAT(r.status().message(), HasSubstr("has no value"));

  FloatTensorMap wrong = w;
  wrong[victim].shape.push_back(1);
  r = ExportOnnx(g, wrong);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'" + victim + "' has shape"));

  FloatTensorMap short_values = w;
  short_values[victim].values.pop_back();
  r = ExportOnnx(g, short_values);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(victim));

  w["not/a_variable"] = {{2}, {1, 2}};  // extra entries are ignored
  EXPECT_TRUE(ExportOnnx(g, w).ok());
}

TEST(OnnxExportTest, WriteOnnxFileWritesTheExport) {
  const ModelGraph g = MustRead(ReadFixture("keras2_sequential_mlp.json"), "keras2_sequential_mlp");
  const FloatTensorMap w = NumberedWeights(g);
  const std::string dir = ::testing::TempDir() + "/onnx_export_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/model.onnx";
  ASSERT_TRUE(WriteOnnxFile(Env::Default(), path, g, w).ok());
  absl::StatusOr<std::string> written = Env::Default()->ReadFile(path);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, *ExportOnnx(g, w));
  // A failed export leaves the file alone.
  EXPECT_FALSE(WriteOnnxFile(Env::Default(), path, g, FloatTensorMap()).ok());
  EXPECT_EQ(*Env::Default()->ReadFile(path), *written);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pstrain
