// Keras initializers as a to_json writes them, mapped to the InitializerSpec the ps fills variables
// from, and the initializer each Keras weight has by default. Keras's `seed` is not used: pstrain
// seeds every variable from the job's seed and the variable's name, so any ps count gives the same
// values (a model that must start from Keras's values loads them from a weights file).
// Thread-safety: plain functions.
#ifndef PSTRAIN_COMMON_GRAPH_KERAS_INITIALIZER_H_
#define PSTRAIN_COMMON_GRAPH_KERAS_INITIALIZER_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/config/initializer_spec.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// Reads a Keras 3 ({"class_name": "GlorotUniform", "config": {...}, "module": ...}), Keras 2
// ({"class_name": ..., "config": ...}) or short ("glorot_uniform") initializer. InvalidArgument with
// a message (without the layer: the caller names it) listing the supported classes.
absl::StatusOr<InitializerSpec> ParseKerasInitializer(const nlohmann::json& value);

// The inverse: `spec` as Keras writes it ({"module": "keras.initializers", "class_name":
// "GlorotUniform", "config": {...}}, read by Keras 3 and by tf.keras), with the config keys its class
// takes; seed null. REQUIRES: spec.type is one of ParseKerasInitializer's results.
nlohmann::json KerasInitializerJson(const InitializerSpec& spec);

// The config key holding the initializer of weight `weight` ("kernel" -> "kernel_initializer";
// "dense/kernel" of a Cross layer -> "kernel_initializer") and Keras's default for it when the
// key is absent or null.
std::string InitializerKeyForWeight(const std::string& weight);
InitializerSpec DefaultInitializerForWeight(const std::string& weight, bool cross_layer);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_KERAS_INITIALIZER_H_
