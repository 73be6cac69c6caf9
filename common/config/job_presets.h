// Built-in job specs reproducing the seed jobs: "linear" (Dense(1) on 2 features, MSE, Adagrad
// 0.05), "mlp" (784-700-500-10 ReLU, Adam 1e-3) and "cnn" (the Fashion-MNIST CNN, Adam 1e-3,
// global batch 64, Keras default initializers); and "ctr" (13 numeric + 26 categorical fields,
// tables of 100,000 x 16, Dense(512, relu) -> Dense(256, relu) -> Dense(1), binary cross-entropy
// from logits, Adagrad lr 0.02 with initial accumulator 1e-6, global batch 1024, on Criteo-layout
// data: the default synthetic set unless files are given).
// Thread-safety: pure functions over constant data.
#ifndef PSTRAIN_COMMON_CONFIG_JOB_PRESETS_H_
#define PSTRAIN_COMMON_CONFIG_JOB_PRESETS_H_

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace pstrain {

bool IsJobPreset(const std::string& name);
// "linear, mlp, cnn, ctr".
std::string JobPresetNames();
// The preset's JSON document; NotFound for unknown names.
absl::StatusOr<nlohmann::json> JobPresetJson(const std::string& name);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_JOB_PRESETS_H_
