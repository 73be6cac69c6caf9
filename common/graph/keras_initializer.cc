#include "common/graph/keras_initializer.h"

#include <cctype>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"

namespace pstrain {
namespace {

using nlohmann::json;

constexpr char kSupported[] =
    "Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, GlorotUniform, GlorotNormal, HeNormal, "
    "HeUniform, LecunNormal, LecunUniform";

// Keras class names and their short (Keras 2 string) names.
const std::map<std::string, std::string>& TypeByName() {
  static const auto* names = new std::map<std::string, std::string>{
      {"Zeros", "zeros"}, {"zeros", "zeros"}, {"Ones", "ones"}, {"ones", "ones"},
      {"Constant", "constant"}, {"constant", "constant"},
      {"RandomNormal", "random_normal"}, {"random_normal", "random_normal"},
      {"RandomUniform", "random_uniform"}, {"random_uniform", "random_uniform"}, {"uniform", "random_uniform"},
      {"TruncatedNormal", "truncated_normal"}, {"truncated_normal", "truncated_normal"},
      {"GlorotUniform", "glorot_uniform"}, {"glorot_uniform", "glorot_uniform"},
      {"GlorotNormal", "glorot_normal"}, {"glorot_normal", "glorot_normal"},
      {"HeNormal", "he_normal"}, {"he_normal", "he_normal"}, {"HeUniform", "he_uniform"}, {"he_uniform", "he_uniform"},
      {"LecunNormal", "lecun_normal"}, {"lecun_normal", "lecun_normal"},
      {"LecunUniform", "lecun_uniform"}, {"lecun_uniform", "lecun_uniform"}};
  return *names;
}

absl::Status ReadNumber(const json& config, const char* key, double* out) {
  if (!config.contains(key) || config[key].is_null()) return absl::OkStatus();
  if (!config[key].is_number()) return absl::InvalidArgumentError(absl::StrCat("its '", key, "' must be a number"));
  *out = config[key].get<double>();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InitializerSpec> ParseKerasInitializer(const json& value) {
  std::string name;
  const json* config = nullptr;
  if (value.is_string()) {
    name = value.get<std::string>();
  } else if (value.is_object() && value.contains("class_name") && value["class_name"].is_string()) {
    name = value["class_name"].get<std::string>();
    if (value.contains("config") && value["config"].is_object()) config = &value["config"];
  }
  auto it = TypeByName().find(name);
  if (it == TypeByName().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("= ", JsonExcerpt(value), " is not supported; supported: ", kSupported));
  }
  InitializerSpec spec;
  spec.type = it->second;
  if (config != nullptr) {
    absl::Status s = ReadNumber(*config, "value", &spec.value);
    if (s.ok()) s = ReadNumber(*config, "mean", &spec.mean);
    if (s.ok()) s = ReadNumber(*config, "stddev", &spec.stddev);
    if (s.ok()) s = ReadNumber(*config, "minval", &spec.minval);
    if (s.ok()) s = ReadNumber(*config, "maxval", &spec.maxval);
    if (!s.ok()) return s;
  }
  if (spec.stddev < 0) return absl::InvalidArgumentError("its 'stddev' must not be negative");
  if (spec.minval > spec.maxval) return absl::InvalidArgumentError("its 'minval' is larger than its 'maxval'");
  return spec;
}

json KerasInitializerJson(const InitializerSpec& spec) {
  std::string name = spec.type;  // the class name whose type it is (the table's capitalised entry)
  for (const auto& [key, type] : TypeByName()) {
    if (type == spec.type && std::isupper(static_cast<unsigned char>(key[0]))) name = key;
  }
  json config = {{"seed", nullptr}};
  if (spec.type == "zeros" || spec.type == "ones") {
    config = json::object();
  } else if (spec.type == "constant") {
    config = {{"value", spec.value}};
  } else if (spec.type == "random_normal" || spec.type == "truncated_normal") {
    config.update({{"mean", spec.mean}, {"stddev", spec.stddev}});
  } else if (spec.type == "random_uniform") {
    config.update({{"minval", spec.minval}, {"maxval", spec.maxval}});
  }
  return {{"module", "keras.initializers"}, {"class_name", name}, {"config", config}, {"registered_name", nullptr}};
}

std::string InitializerKeyForWeight(const std::string& weight) {
  const size_t slash = weight.rfind('/');
  return absl::StrCat(slash == std::string::npos ? weight : weight.substr(slash + 1), "_initializer");
}

InitializerSpec DefaultInitializerForWeight(const std::string& weight, bool cross_layer) {
  const std::string key = InitializerKeyForWeight(weight);
  // TensorFlow Recommenders' Cross: kernel "truncated_normal" (Keras's TruncatedNormal: stddev 0.05).
  if (key == "kernel_initializer") return InitializerSpec{cross_layer ? "truncated_normal" : "glorot_uniform"};
  if (key == "embeddings_initializer") return InitializerSpec{"random_uniform"};
  if (key == "gamma_initializer" || key == "moving_variance_initializer") return InitializerSpec{"ones"};
  return InitializerSpec{"zeros"};  // bias, beta, moving_mean
}

}  // namespace pstrain
