// Helpers for the graph executor tests: small models in Keras 2's to_json form, random values,
// and a finite-difference check in double precision.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_WORKER_GRAPH_GRAPH_TEST_UTIL_H_
#define PSTRAIN_TESTS_WORKER_GRAPH_GRAPH_TEST_UTIL_H_

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/keras_json.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/graph/array.h"

namespace pstrain {

// A model whose inputs in0, in1, ... (per-example shapes `inputs`, integer ids when `int_ids`)
// all feed one layer "layer" of class `cls` with `config`, which is the output.
inline std::string OneLayerJson(const std::string& cls, const nlohmann::json& config,
                                const std::vector<std::vector<int64_t>>& inputs, bool int_ids = false) {
  nlohmann::json layers = nlohmann::json::array(), node = nlohmann::json::array(), ins = nlohmann::json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = absl::StrCat("in", i);
    nlohmann::json shape = {nullptr};
    for (int64_t d : inputs[i]) shape.push_back(d);
    layers.push_back({{"class_name", "InputLayer"},
                      {"name", name},
                      {"config", {{"batch_input_shape", shape}, {"dtype", int_ids ? "int32" : "float32"}, {"name", name}}},
                      {"inbound_nodes", nlohmann::json::array()}});
    node.push_back({name, 0, 0, nlohmann::json::object()});
    ins.push_back({name, 0, 0});
  }
  layers.push_back({{"class_name", cls}, {"name", "layer"}, {"config", config}, {"inbound_nodes", {node}}});
  nlohmann::json model = {{"class_name", "Functional"},
                          {"config", {{"name", "m"}, {"layers", layers}, {"input_layers", ins},
                                      {"output_layers", {{"layer", 0, 0}}}}}};
  return model.dump();
}

inline ModelGraph MustRead(const std::string& json) {
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(json, "test model");
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : ModelGraph();
}

template <typename T>
Array<T> RandomArray(std::vector<int64_t> shape, std::mt19937* rng, double lo = -1.0, double hi = 1.0) {
  Array<T> a(std::move(shape));
  std::uniform_real_distribution<double> u(lo, hi);
  for (T& v : a.data) v = static_cast<T>(u(*rng));
  return a;
}

// Compares `analytic` with central differences of `loss` as each element of `values` moves by
// +-eps (double precision: a tight tolerance).
inline void ExpectGradient(const std::string& what, std::vector<double>* values, const std::vector<double>& analytic,
                           const std::function<double()>& loss, double eps = 1e-6) {
  ASSERT_EQ(values->size(), analytic.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < values->size(); ++i) {
    const double saved = (*values)[i];
    (*values)[i] = saved + eps;
    const double up = loss();
    (*values)[i] = saved - eps;
    const double down = loss();
    (*values)[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    if (std::fabs(numeric - analytic[i]) > 1e-6 + 1e-5 * std::fabs(numeric)) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << " vs numeric " << numeric;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_WORKER_GRAPH_GRAPH_TEST_UTIL_H_
