// The supported Keras layer classes and config values: one place that maps a layer's class_name and
// config (Keras's keys and defaults) to a GraphLayerSpec, and refuses the rest naming the layer, the key
// and what is supported. Keras 2 spellings are accepted beside Keras 3's.
// Thread-safety: plain functions.
#ifndef PSTRAIN_COMMON_GRAPH_LAYER_CONFIG_H_
#define PSTRAIN_COMMON_GRAPH_LAYER_CONFIG_H_

#include "absl/status/status.h"
#include "common/graph/model_graph.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// Fills spec->kind and spec->config from `class_name` and `config` (spec->name is set). Never
// throws. InvalidArgument for an unsupported class or value.
absl::Status ParseLayerConfig(const std::string& class_name, const nlohmann::json& config, GraphLayerSpec* spec);

// The supported class names, for messages.
const char* SupportedLayerClasses();

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_LAYER_CONFIG_H_
