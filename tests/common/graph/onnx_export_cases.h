// Small Keras models (Keras 2's to_json form) that together use every layer kind and config branch
// the ONNX export maps, beyond what the real Keras fixtures cover: ReLU's max_value, negative_slope
// and threshold, every activation, "same" and "valid" Conv2D and poolings with odd windows and
// strides, keepdims, Concatenate on an inner axis, normalisation without scale or center,
// BatchNormalization on images, Dot without normalize and below its floor, integer ids as values,
// Cross on two inputs, DotInteraction with self_interaction and skip_gather, Embedding of a
// sequence of ids, Reshape with -1. Shared by the export's unit test and the tool of the ONNX
// Runtime test.
// Thread-safety: plain functions.
#ifndef PSTRAIN_TESTS_COMMON_GRAPH_ONNX_EXPORT_CASES_H_
#define PSTRAIN_TESTS_COMMON_GRAPH_ONNX_EXPORT_CASES_H_

#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace pstrain {

// One layer of a case: class, name, config and the names of the layers it is called on.
struct CaseLayer {
  std::string cls, name;
  nlohmann::json config;
  std::vector<std::string> inbound;
};

// A Functional model's to_json() of `layers` (InputLayers first), the last layer its output.
inline std::string CaseModelJson(const std::string& name, const std::vector<CaseLayer>& layers) {
  nlohmann::json ls = nlohmann::json::array(), ins = nlohmann::json::array();
  for (const CaseLayer& l : layers) {
    nlohmann::json node = nlohmann::json::array();
    for (const std::string& in : l.inbound) node.push_back({in, 0, 0, nlohmann::json::object()});
    nlohmann::json config = l.config;
    config["name"] = l.name;
    ls.push_back({{"class_name", l.cls}, {"name", l.name}, {"config", config},
                  {"inbound_nodes", l.inbound.empty() ? nlohmann::json::array() : nlohmann::json::array({node})}});
    if (l.cls == "InputLayer") ins.push_back({l.name, 0, 0});
  }
  nlohmann::json model = {{"class_name", "Functional"},
                          {"config", {{"name", name}, {"layers", ls}, {"input_layers", ins},
                                      {"output_layers", {{layers.back().name, 0, 0}}}}}};
  return model.dump();
}

inline CaseLayer In(const std::string& name, std::vector<int> shape, const char* dtype = "float32") {
  nlohmann::json s = {nullptr};
  for (int d : shape) s.push_back(d);
  return {"InputLayer", name, {{"batch_input_shape", s}, {"dtype", dtype}}, {}};
}

// (name, to_json) of every case.
inline std::vector<std::pair<std::string, std::string>> OnnxExportCases() {
  using J = nlohmann::json;
  std::vector<std::pair<std::string, std::string>> cases;
  cases.emplace_back("activations", CaseModelJson("activations", {
      In("x", {3, 5}),
      {"Dense", "d_relu", {{"units", 6}, {"activation", "relu"}}, {"x"}},
      {"Dense", "d_elu", {{"units", 6}, {"activation", "elu"}}, {"d_relu"}},
      {"Activation", "a_tanh", {{"activation", "tanh"}}, {"d_elu"}},
      {"Activation", "a_gelu", {{"activation", "gelu"}}, {"a_tanh"}},
      {"Activation", "a_silu", {{"activation", "silu"}}, {"a_gelu"}},
      {"Activation", "a_sigmoid", {{"activation", "sigmoid"}}, {"a_silu"}},
      {"Activation", "a_linear", {{"activation", "linear"}}, {"a_sigmoid"}},
      {"Dense", "d_nobias", {{"units", 4}, {"use_bias", false}}, {"a_linear"}},
      {"Activation", "a_softmax", {{"activation", "softmax"}}, {"d_nobias"}}}));
  cases.emplace_back("relu_variants", CaseModelJson("relu_variants", {
      In("x", {12}),
      {"ReLU", "r_all", {{"max_value", 1.5}, {"negative_slope", 0.1}, {"threshold", 0.25}}, {"x"}},
      {"ReLU", "r_neg_threshold", {{"max_value", 6.0}, {"negative_slope", 0.0}, {"threshold", -0.5}}, {"x"}},
      {"ReLU", "r_leaky", {{"negative_slope", 0.3}}, {"x"}},
      {"ReLU", "r_plain", J::object(), {"x"}},
      {"Concatenate", "cat", {{"axis", -1}}, {"r_all", "r_neg_threshold", "r_leaky", "r_plain"}}}));
  cases.emplace_back("conv_geometry", CaseModelJson("conv_geometry", {
      In("img", {7, 6, 3}),
      {"Conv2D", "c_same", {{"filters", 4}, {"kernel_size", {3, 2}}, {"strides", {1, 1}}, {"padding", "same"},
                            {"activation", "gelu"}}, {"img"}},
      {"BatchNormalization", "bn", {{"axis", -1}, {"epsilon", 0.01}, {"scale", false}}, {"c_same"}},
      {"Conv2D", "c_stride", {{"filters", 5}, {"kernel_size", {2, 3}}, {"strides", {2, 3}}, {"padding", "same"},
                              {"activation", "sigmoid"}, {"use_bias", false}}, {"bn"}},
      {"AveragePooling2D", "avg_valid", {{"pool_size", {2, 2}}, {"strides", {1, 1}}, {"padding", "valid"}},
       {"c_stride"}},
      {"MaxPooling2D", "max_same", {{"pool_size", {2, 2}}, {"strides", {1, 1}}, {"padding", "same"}}, {"avg_valid"}},
      {"AveragePooling2D", "avg_same", {{"pool_size", {3, 3}}, {"strides", {2, 2}}, {"padding", "same"}}, {"bn"}},
      {"GlobalAveragePooling2D", "gap", {{"keepdims", true}}, {"avg_same"}},
      {"Flatten", "flat_gap", J::object(), {"gap"}},
      {"Flatten", "flat", J::object(), {"max_same"}},
      {"Concatenate", "cat", {{"axis", -1}}, {"flat", "flat_gap"}}}));
  cases.emplace_back("sequences", CaseModelJson("sequences", {
      In("ids", {3}, "int32"), In("seq", {3, 4}),
      {"Embedding", "emb", {{"input_dim", 9}, {"output_dim", 4}}, {"ids"}},
      {"Concatenate", "cat_steps", {{"axis", 1}}, {"emb", "seq"}},
      {"LayerNormalization", "ln_plain", {{"axis", -1}, {"center", false}, {"scale", false}}, {"cat_steps"}},
      {"LayerNormalization", "ln_scale", {{"axis", -1}, {"center", false}, {"epsilon", 0.1}}, {"ln_plain"}},
      {"Dense", "d3", {{"units", 5}, {"activation", "tanh"}}, {"ln_scale"}},
      {"GlobalMaxPooling1D", "gmp", {{"keepdims", true}}, {"d3"}},
      {"Reshape", "rs", {{"target_shape", {-1}}}, {"gmp"}},
      {"GlobalAveragePooling1D", "gap", J::object(), {"d3"}},
      {"Average", "avg3", J::object(), {"rs", "gap", "rs"}},
      {"Multiply", "mul3", J::object(), {"avg3", "gap", "rs"}},
      {"Subtract", "sub", J::object(), {"mul3", "gap"}},
      {"Dot", "dot", {{"axes", -1}, {"normalize", false}}, {"sub", "avg3"}},
      {"Reshape", "ids_as_values", {{"target_shape", {3}}}, {"ids"}},  // integer ids read as numbers
      {"Concatenate", "out", {{"axis", -1}}, {"dot", "sub", "ids_as_values"}}}));
  cases.emplace_back("interactions", CaseModelJson("interactions", {
      In("a", {5}), In("b", {5}), In("c", {5}),
      {"Cross", "cross2", {{"use_bias", false}, {"preactivation", "relu"}}, {"a", "b"}},
      {"Cross", "cross_low", {{"projection_dim", 3}, {"diag_scale", 0.25}, {"preactivation", "tanh"}}, {"cross2"}},
      {"DotInteraction", "di_self", {{"self_interaction", true}}, {"a", "b", "c", "cross_low"}},
      {"DotInteraction", "di_skip", {{"skip_gather", true}}, {"a", "b", "cross_low"}},
      {"DotInteraction", "di_both", {{"skip_gather", true}, {"self_interaction", true}}, {"c", "a"}},
      {"Dot", "cos", {{"axes", -1}, {"normalize", true}}, {"a", "cross_low"}},
      // Values of about 1e-7: |x|^2 below normalize's floor of 1e-12.
      {"ReLU", "tiny", {{"threshold", 3.0}, {"negative_slope", 1e-7}}, {"b"}},
      {"Dot", "cos_tiny", {{"axes", -1}, {"normalize", true}}, {"tiny", "c"}},
      {"Concatenate", "out", {{"axis", -1}}, {"di_self", "di_skip", "di_both", "cos", "cos_tiny"}}}));
  return cases;
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_COMMON_GRAPH_ONNX_EXPORT_CASES_H_
