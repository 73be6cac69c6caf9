// For the ONNX Runtime test (tests/integration/onnx_export_test.sh): writes, for every Keras fixture
// with predictions and every case of onnx_export_cases.h, CASE.onnx (the export, with the fixture's
// weights or random ones) and CASE.json: the inputs, pstrain's own GraphExecutor<float> output for
// them, and Keras's saved predictions when there are some.
//   onnx_export_tool FIXTURE_DIR OUT_DIR
// Exit 0 when every case was written; 1 with a message naming the case otherwise.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "common/graph/keras_json.h"
#include "common/graph/onnx_export.h"
#include "common/platform/status_macros.h"
#include "nlohmann/json.hpp"
#include "tests/common/graph/onnx_export_cases.h"
#include "worker/graph/graph_executor.h"

namespace pstrain {
namespace {

using nlohmann::json;

json ToJson(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  return {{"shape", shape}, {"values", values}};
}

struct Case {
  ModelGraph graph;
  FloatTensorMap weights;
  std::vector<Array<float>> inputs;  // the graph's input order
  json keras_output;                 // null when there are no Keras predictions
};

Array<float> FromJson(const json& j) {
  return Array<float>(j["shape"].get<std::vector<int64_t>>(), j["values"].get<std::vector<float>>());
}

// A fixture's model, weights, inputs and Keras's predictions (its *.predict.json).
absl::StatusOr<Case> FixtureCase(const std::string& dir, const std::string& name) {
  auto read = [&](const std::string& file) {
    std::ifstream in(dir + "/" + file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  Case c;
  ASSIGN_OR_RETURN(c.graph, ReadKerasModelJson(read(name + ".json"), name));
  const json j = json::parse(read(name + ".predict.json"));
  for (const auto& [k, v] : j["weights"].items()) {
    c.weights[k] = {v["shape"].get<std::vector<int64_t>>(), v["values"].get<std::vector<float>>()};
  }
  for (int in : c.graph.inputs) {
    // A Sequential model's one input is keyed by Keras's own input name.
    const std::string& layer = c.graph.layers[in].name;
    c.inputs.push_back(FromJson(j["inputs"].contains(layer) ? j["inputs"][layer] : j["inputs"].begin().value()));
  }
  c.keras_output = j["output"];
  return c;
}

// A case of onnx_export_cases.h with random weights (positive moving variances) and inputs (ids
// in range of the Embedding they feed), batch 3.
absl::StatusOr<Case> SyntheticCase(const std::string& name, const std::string& model_json, uint32_t seed) {
  Case c;
  ASSIGN_OR_RETURN(c.graph, ReadKerasModelJson(model_json, name));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const GraphVariableSpec& v : c.graph.variables) {
    FloatTensor& t = c.weights[v.name];
    t.shape = v.shape;
    t.values.resize(Array<float>::Count(v.shape));
    const bool variance = absl::EndsWith(v.name, "moving_variance");
    for (float& x : t.values) x = variance ? 1.0f + 0.5f * u(rng) : u(rng);
  }
  for (int in : c.graph.inputs) {
    const GraphLayerSpec& l = c.graph.layers[in];
    std::vector<int64_t> shape = {3};
    shape.insert(shape.end(), l.output_shape.begin(), l.output_shape.end());
    Array<float> a(shape);
    int64_t ids = 0;  // the input_dim of the Embedding the ids feed
    for (const GraphLayerSpec& other : c.graph.layers) {
      for (int i : other.inputs) {
        if (i == in && other.kind == LayerKind::kEmbedding) ids = other.config.input_dim;
      }
    }
    for (size_t i = 0; i < a.data.size(); ++i) {
      a.data[i] = l.config.int_input ? static_cast<float>(rng() % ids) : 2.0f * u(rng);
    }
    c.inputs.push_back(std::move(a));
  }
  return c;
}

absl::Status WriteCase(const std::string& out_dir, const std::string& name, const Case& c) {
  RETURN_IF_ERROR(WriteOnnxFile(Env::Default(), out_dir + "/" + name + ".onnx", c.graph, c.weights));
  NamedArrays<float> vars;
  for (const auto& [k, t] : c.weights) vars[k] = Array<float>(t.shape, t.values);
  GraphExecutor<float> exec(c.graph);
  ASSIGN_OR_RETURN(const Array<float>* out, exec.Forward(c.inputs, vars, ForwardOptions()));
  json j = {{"inputs", json::object()}, {"pstrain", ToJson(out->shape, out->data)}, {"keras", c.keras_output}};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const GraphLayerSpec& l = c.graph.layers[c.graph.inputs[i]];
    j["inputs"][l.name] = ToJson(c.inputs[i].shape, c.inputs[i].data);
    j["inputs"][l.name]["int"] = l.config.int_input;
  }
  return Env::Default()->WriteFileAtomic(out_dir + "/" + name + ".json", j.dump());
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: onnx_export_tool FIXTURE_DIR OUT_DIR\n";
    return 2;
  }
  const std::string dir = argv[1], out = argv[2];
  std::vector<std::string> fixtures;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    const std::string suffix = ".predict.json";
    if (absl::EndsWith(f, suffix)) fixtures.push_back(f.substr(0, f.size() - suffix.size()));
  }
  int written = 0;
  for (const std::string& name : fixtures) {
    absl::StatusOr<Case> c = FixtureCase(dir, name);
    absl::Status s = c.ok() ? WriteCase(out, name, *c) : c.status();
    if (!s.ok()) {
      std::cerr << "fixture " << name << ": " << s << "\n";
      return 1;
    }
    ++written;
  }
  uint32_t seed = 1;
  for (const auto& [name, model] : OnnxExportCases()) {
    absl::StatusOr<Case> c = SyntheticCase(name, model, seed++);
    absl::Status s = c.ok() ? WriteCase(out, name, *c) : c.status();
    if (!s.ok()) {
      std::cerr << "case " << name << ": " << s << "\n";
      return 1;
    }
    ++written;
  }
  std::cout << written << " models written to " << out << "\n";
  return 0;
}

}  // namespace
}  // namespace pstrain

int main(int argc, char** argv) { return pstrain::Main(argc, argv); }
