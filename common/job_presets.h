// Built-in job specs reproducing the seed jobs: "linear" (Dense(1) on 2 features, MSE, Adagrad
// 0.05), "mlp" (784-700-500-10 ReLU, Adam 1e-3) and "cnn" (the Fashion-MNIST CNN, Adam 1e-3,
// global batch 64, Keras default initializers).
// Thread-safety: pure functions over constant data.
#ifndef PSTRAIN_COMMON_JOB_PRESETS_H_
#define PSTRAIN_COMMON_JOB_PRESETS_H_

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace pstrain {

bool IsJobPreset(const std::string& name);
// "linear, mlp, cnn".
std::string JobPresetNames();
// The preset's JSON document; NotFound for unknown names.
absl::StatusOr<nlohmann::json> JobPresetJson(const std::string& name);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_JOB_PRESETS_H_
