#include "common/graph/layer_config.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/graph/keras_initializer.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

using nlohmann::json;

// Reads config values of one layer; every error names the layer and the key.
class ConfigReader {
 public:
  ConfigReader(const GraphLayerSpec& spec, const json& config) : spec_(spec), config_(config) {}

  absl::Status Error(const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("layer '", spec_.name, "' (", spec_.class_name, "): config key '", key, "' ", what));
  }
  bool Has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }
  const json& At(const char* key) const { return config_[key]; }

  absl::Status Bool(const char* key, bool* out) const {
    if (!Has(key)) return absl::OkStatus();
    if (!At(key).is_boolean()) return Error(key, "must be true or false");
    *out = At(key).get<bool>();
    return absl::OkStatus();
  }
  absl::Status Number(const char* key, double* out) const {
    if (!Has(key)) return absl::OkStatus();
    if (!At(key).is_number()) return Error(key, "must be a number");
    *out = At(key).get<double>();
    return absl::OkStatus();
  }
  absl::Status Int(const char* key, int64_t* out) const {
    if (!Has(key)) return absl::OkStatus();
    if (!At(key).is_number_integer()) return Error(key, "must be an integer");
    return Bounded(key, At(key), out);
  }
  // Sizes, axes and seeds are at most 2^31-1 in magnitude, as every size pstrain reads.
  absl::Status Bounded(const char* key, const json& v, int64_t* out) const {
    constexpr int64_t kMax = (int64_t{1} << 31) - 1;
    const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMax) ? kMax + 1
                                                                                                 : v.get<int64_t>();
    if (x > kMax || x < -kMax) return Error(key, absl::StrCat("= ", JsonExcerpt(v), " is too large (at most 2147483647)"));
    *out = x;
    return absl::OkStatus();
  }
  // An int, or a list of equal ints (Keras 2 writes axis=[3]; Dot writes axes=[-1, -1]).
  absl::Status IntOrList(const char* key, int64_t* out) const {
    if (!Has(key)) return absl::OkStatus();
    const json& v = At(key);
    if (v.is_number_integer()) return Bounded(key, v, out);
    if (v.is_array() && !v.empty()) {
      for (const json& e : v) {
        if (!e.is_number_integer() || e.get<int64_t>() != v[0].get<int64_t>()) {
          return Error(key, "must be one axis (a list of several differing axes is not supported)");
        }
      }
      return Bounded(key, v[0], out);
    }
    return Error(key, "must be an integer or a list of integers");
  }
  absl::Status IntList(const char* key, std::vector<int64_t>* out, bool allow_null_entries) const {
    if (!Has(key)) return absl::OkStatus();
    if (!At(key).is_array()) return Error(key, "must be a list of integers");
    out->clear();
    for (const json& e : At(key)) {
      if (e.is_null() && allow_null_entries) {
        out->push_back(-1);
      } else if (e.is_number_integer()) {
        int64_t x = 0;
        RETURN_IF_ERROR(Bounded(key, e, &x));
        out->push_back(x);
      } else {
        return Error(key, "must be a list of integers");
      }
    }
    return absl::OkStatus();
  }
  // Refuses a key whose value is anything but null/absent (regularizers, constraints, ...).
  absl::Status MustBeNull(const char* key, const char* why) const {
    if (Has(key)) return Error(key, absl::StrCat("is not supported (", why, "); only null is"));
    return absl::OkStatus();
  }
  absl::Status MustBe(const char* key, const json& expected, const char* supported) const {
    if (Has(key) && At(key) != expected) {
      return Error(key, absl::StrCat("= ", JsonExcerpt(At(key)), " is not supported; supported: ", supported));
    }
    return absl::OkStatus();
  }

  absl::Status Activation(const char* key, ActivationKind* out) const {
    if (!Has(key)) return absl::OkStatus();
    static const std::map<std::string, ActivationKind> kNames = {
        {"linear", ActivationKind::kLinear}, {"relu", ActivationKind::kRelu},
        {"sigmoid", ActivationKind::kSigmoid}, {"tanh", ActivationKind::kTanh},
        {"softmax", ActivationKind::kSoftmax}, {"gelu", ActivationKind::kGelu},
        {"silu", ActivationKind::kSilu}, {"swish", ActivationKind::kSilu},
        {"elu", ActivationKind::kElu}};
    const json& v = At(key);
    std::string name;
    if (v.is_string()) name = v.get<std::string>();
    // Keras 3 may write {"class_name": "function", "config": "relu", ...}.
    if (v.is_object() && v.contains("config") && v["config"].is_string()) name = v["config"].get<std::string>();
    auto it = kNames.find(name);
    if (it == kNames.end()) {
      return Error(key, absl::StrCat("= ", JsonExcerpt(v),
                                     " is not supported; supported: linear, relu, sigmoid, tanh, softmax, gelu, "
                                     "silu (swish), elu"));
    }
    *out = it->second;
    return absl::OkStatus();
  }

 private:
  const GraphLayerSpec& spec_;
  const json& config_;
};

// Keys every layer may carry; dtype must be float32 (ints only on inputs).
absl::Status CommonKeys(const ConfigReader& r, bool input_layer) {
  if (!r.Has("dtype") || input_layer) return absl::OkStatus();
  const json& d = r.At("dtype");
  std::string name = d.is_string() ? d.get<std::string>() : "";
  if (d.is_object() && d.contains("config") && d["config"].is_object() && d["config"].contains("name") &&
      d["config"]["name"].is_string()) {
    name = d["config"]["name"].get<std::string>();  // Keras 3's DTypePolicy
  }
  if (name != "float32") return r.Error("dtype", absl::StrCat("= ", JsonExcerpt(d), " is not supported; supported: float32"));
  return absl::OkStatus();
}

absl::Status NoWeightExtras(const ConfigReader& r, std::initializer_list<const char*> keys) {
  for (const char* key : keys) RETURN_IF_ERROR(r.MustBeNull(key, "the loss and updates have no place for it"));
  return absl::OkStatus();
}

absl::Status ChannelsLast(const ConfigReader& r) {
  return r.MustBe("data_format", "channels_last", "channels_last");
}

absl::Status ParseInput(const ConfigReader& r, LayerConfig* c) {
  std::vector<int64_t> shape;
  bool found = false;
  for (const char* key : {"batch_shape", "batch_input_shape"}) {
    if (r.Has(key)) {
      RETURN_IF_ERROR(r.IntList(key, &shape, true));
      if (shape.empty()) return r.Error(key, "must include the batch dimension");
      shape.erase(shape.begin());
      found = true;
      break;
    }
  }
  if (!found && r.Has("shape")) {
    RETURN_IF_ERROR(r.IntList("shape", &shape, true));
    found = true;
  }
  if (!found) return r.Error("batch_shape", "is missing (an input needs its shape)");
  for (int64_t d : shape) {
    if (d <= 0) return r.Error("batch_shape", "has an unknown or empty dimension; every dimension but the batch must be fixed");
  }
  c->input_shape = shape;
  RETURN_IF_ERROR(r.MustBe("sparse", false, "false"));
  RETURN_IF_ERROR(r.MustBe("ragged", false, "false"));
  if (r.Has("dtype")) {
    if (!r.At("dtype").is_string()) return r.Error("dtype", "must be a string");
    const std::string d = r.At("dtype").get<std::string>();
    if (d == "int32" || d == "int64") {
      c->int_input = true;
    } else if (d != "float32") {
      return r.Error("dtype", absl::StrCat("= ", d, " is not supported; supported: float32, int32, int64"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseDense(const ConfigReader& r, LayerConfig* c) {
  RETURN_IF_ERROR(r.Int("units", &c->units));
  if (c->units <= 0) return r.Error("units", "must be a positive integer");
  RETURN_IF_ERROR(r.Activation("activation", &c->activation));
  RETURN_IF_ERROR(r.Bool("use_bias", &c->use_bias));
  RETURN_IF_ERROR(r.MustBeNull("lora_rank", "LoRA"));
  return NoWeightExtras(r, {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
                            "bias_constraint"});
}

// An int or a pair of positive ints (kernel_size, strides, pool_size).
absl::Status Pair(const ConfigReader& r, const char* key, int64_t* h, int64_t* w) {
  if (!r.Has(key)) return absl::OkStatus();
  const json& v = r.At(key);
  if (v.is_number_integer()) {
    RETURN_IF_ERROR(r.Bounded(key, v, h));
    *w = *h;
  } else if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer()) {
    RETURN_IF_ERROR(r.Bounded(key, v[0], h));
    RETURN_IF_ERROR(r.Bounded(key, v[1], w));
  } else {
    return r.Error(key, "must be an integer or a pair of integers");
  }
  if (*h <= 0 || *w <= 0) return r.Error(key, "must be positive");
  return absl::OkStatus();
}

absl::Status Padding(const ConfigReader& r, LayerConfig* c) {
  if (!r.Has("padding")) return absl::OkStatus();
  if (r.At("padding") == "same") {
    c->same_padding = true;
  } else if (r.At("padding") != "valid") {
    return r.Error("padding", absl::StrCat("= ", JsonExcerpt(r.At("padding")), " is not supported; supported: valid, same"));
  }
  return absl::OkStatus();
}

absl::Status ParseConv2D(const ConfigReader& r, LayerConfig* c) {
  RETURN_IF_ERROR(r.MustBe("groups", 1, "groups = 1"));
  RETURN_IF_ERROR(ChannelsLast(r));
  int64_t dilation_h = 1, dilation_w = 1;
  RETURN_IF_ERROR(Pair(r, "dilation_rate", &dilation_h, &dilation_w));
  if (dilation_h != 1 || dilation_w != 1) return r.Error("dilation_rate", "is not supported unless 1 (or [1, 1])");
  RETURN_IF_ERROR(r.Int("filters", &c->filters));
  if (c->filters <= 0) return r.Error("filters", "must be a positive integer");
  if (!r.Has("kernel_size")) return r.Error("kernel_size", "is missing");
  RETURN_IF_ERROR(Pair(r, "kernel_size", &c->window_h, &c->window_w));
  RETURN_IF_ERROR(Pair(r, "strides", &c->stride_h, &c->stride_w));
  RETURN_IF_ERROR(Padding(r, c));
  RETURN_IF_ERROR(r.Activation("activation", &c->activation));
  RETURN_IF_ERROR(r.Bool("use_bias", &c->use_bias));
  RETURN_IF_ERROR(r.MustBeNull("lora_rank", "LoRA"));
  return NoWeightExtras(r, {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
                            "bias_constraint"});
}

absl::Status ParsePooling2D(const ConfigReader& r, LayerConfig* c) {
  RETURN_IF_ERROR(ChannelsLast(r));
  c->window_h = c->window_w = 2;
  RETURN_IF_ERROR(Pair(r, "pool_size", &c->window_h, &c->window_w));
  c->stride_h = c->window_h;  // Keras: strides default to pool_size
  c->stride_w = c->window_w;
  RETURN_IF_ERROR(Pair(r, "strides", &c->stride_h, &c->stride_w));
  return Padding(r, c);
}

absl::Status ParseInitializers(const ConfigReader& r, LayerConfig* c) {
  for (const char* key : {"kernel_initializer", "bias_initializer", "embeddings_initializer", "gamma_initializer",
                          "beta_initializer", "moving_mean_initializer", "moving_variance_initializer"}) {
    if (!r.Has(key)) continue;
    absl::StatusOr<InitializerSpec> spec = ParseKerasInitializer(r.At(key));
    if (!spec.ok()) return r.Error(key, std::string(spec.status().message()));
    c->initializers[key] = *spec;
  }
  return absl::OkStatus();
}

}  // namespace

const char* SupportedLayerClasses() {
  return "InputLayer, Dense, Conv2D, MaxPooling2D, AveragePooling2D, Activation, ReLU, Flatten, Reshape, Dropout, Concatenate, Add, Subtract, Multiply, "
         "Average, Dot, Embedding, LayerNormalization, BatchNormalization, GlobalAveragePooling1D/2D, "
         "GlobalMaxPooling1D/2D, Cross and DotInteraction (TensorFlow Recommenders)";
}

// The kind and the kind's config values.
absl::Status ParseKind(const std::string& class_name, const json& config, GraphLayerSpec* spec) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", spec->name, "': its config must be an object"));
  }
  const ConfigReader r(*spec, config);
  LayerConfig* c = &spec->config;
  {
    RETURN_IF_ERROR(CommonKeys(r, class_name == "InputLayer"));
    if (class_name == "InputLayer") {
      spec->kind = LayerKind::kInput;
      return ParseInput(r, c);
    }
    if (class_name == "Dense") {
      spec->kind = LayerKind::kDense;
      return ParseDense(r, c);
    }
    if (class_name == "Activation") {
      spec->kind = LayerKind::kActivation;
      if (!r.Has("activation")) return r.Error("activation", "is missing");
      return r.Activation("activation", &c->activation);
    }
    if (class_name == "ReLU") {
      spec->kind = LayerKind::kReLU;
      RETURN_IF_ERROR(r.Number("max_value", &c->max_value));
      RETURN_IF_ERROR(r.Number("negative_slope", &c->negative_slope));
      return r.Number("threshold", &c->threshold);
    }
    if (class_name == "Flatten") {
      spec->kind = LayerKind::kFlatten;
      return ChannelsLast(r);
    }
    if (class_name == "Reshape") {
      spec->kind = LayerKind::kReshape;
      if (!r.Has("target_shape")) return r.Error("target_shape", "is missing");
      return r.IntList("target_shape", &c->target_shape, false);
    }
    if (class_name == "Dropout") {
      spec->kind = LayerKind::kDropout;
      RETURN_IF_ERROR(r.Number("rate", &c->rate));
      if (!(c->rate >= 0.0 && c->rate < 1.0)) return r.Error("rate", "must be in [0, 1)");
      RETURN_IF_ERROR(r.Int("seed", &c->seed));
      return r.MustBeNull("noise_shape", "a noise shape");
    }
    if (class_name == "Concatenate") {
      spec->kind = LayerKind::kConcatenate;
      return r.Int("axis", &c->axis);
    }
    if (class_name == "Add" || class_name == "Subtract" || class_name == "Multiply" || class_name == "Average") {
      spec->kind = class_name == "Add"        ? LayerKind::kAdd
                   : class_name == "Subtract" ? LayerKind::kSubtract
                   : class_name == "Multiply" ? LayerKind::kMultiply
                                              : LayerKind::kAverage;
      return absl::OkStatus();
    }
    if (class_name == "Dot") {
      spec->kind = LayerKind::kDot;
      c->axis = -1;
      RETURN_IF_ERROR(r.IntOrList("axes", &c->axis));
      return r.Bool("normalize", &c->normalize);
    }
    if (class_name == "Embedding") {
      spec->kind = LayerKind::kEmbedding;
      RETURN_IF_ERROR(r.Int("input_dim", &c->input_dim));
      RETURN_IF_ERROR(r.Int("output_dim", &c->output_dim));
      if (c->input_dim <= 0) return r.Error("input_dim", "must be a positive integer");
      if (c->output_dim <= 0) return r.Error("output_dim", "must be a positive integer");
      RETURN_IF_ERROR(r.MustBe("mask_zero", false, "false (masking is not supported)"));
      RETURN_IF_ERROR(r.MustBe("sparse", false, "false"));
      RETURN_IF_ERROR(r.MustBeNull("lora_rank", "LoRA"));
      return NoWeightExtras(r, {"embeddings_regularizer", "activity_regularizer", "embeddings_constraint"});
    }
    if (class_name == "LayerNormalization" || class_name == "BatchNormalization") {
      const bool batch = class_name == "BatchNormalization";
      spec->kind = batch ? LayerKind::kBatchNormalization : LayerKind::kLayerNormalization;
      RETURN_IF_ERROR(r.IntOrList("axis", &c->axis));
      RETURN_IF_ERROR(r.Number("epsilon", &c->epsilon));
      if (!(c->epsilon > 0.0)) return r.Error("epsilon", "must be positive");
      RETURN_IF_ERROR(r.Bool("center", &c->center));
      RETURN_IF_ERROR(r.Bool("scale", &c->scale));
      RETURN_IF_ERROR(NoWeightExtras(r, {"beta_regularizer", "gamma_regularizer", "beta_constraint",
                                         "gamma_constraint"}));
      if (!batch) return r.MustBe("rms_scaling", false, "false");
      RETURN_IF_ERROR(r.Number("momentum", &c->momentum));
      if (!(c->momentum >= 0.0 && c->momentum <= 1.0)) return r.Error("momentum", "must be in [0, 1]");
      RETURN_IF_ERROR(r.MustBe("renorm", false, "false"));
      return r.MustBeNull("virtual_batch_size", "ghost batch normalization");
    }
    if (class_name == "GlobalAveragePooling1D" || class_name == "GlobalAveragePooling2D" ||
        class_name == "GlobalMaxPooling1D" || class_name == "GlobalMaxPooling2D") {
      spec->kind = class_name == "GlobalAveragePooling1D"   ? LayerKind::kGlobalAveragePooling1D
                   : class_name == "GlobalAveragePooling2D" ? LayerKind::kGlobalAveragePooling2D
                   : class_name == "GlobalMaxPooling1D"     ? LayerKind::kGlobalMaxPooling1D
                                                            : LayerKind::kGlobalMaxPooling2D;
      RETURN_IF_ERROR(ChannelsLast(r));
      return r.Bool("keepdims", &c->keepdims);
    }
    if (class_name == "Cross") {
      spec->kind = LayerKind::kCross;
      RETURN_IF_ERROR(r.Int("projection_dim", &c->projection_dim));
      if (r.Has("projection_dim") && c->projection_dim <= 0) return r.Error("projection_dim", "must be positive or null");
      RETURN_IF_ERROR(r.Number("diag_scale", &c->diag_scale));
      if (c->diag_scale < 0.0) return r.Error("diag_scale", "must be non-negative");
      RETURN_IF_ERROR(r.Bool("use_bias", &c->use_bias));
      RETURN_IF_ERROR(r.Activation("preactivation", &c->activation));
      return NoWeightExtras(r, {"kernel_regularizer", "bias_regularizer"});
    }
    if (class_name == "DotInteraction") {
      spec->kind = LayerKind::kDotInteraction;
      RETURN_IF_ERROR(r.Bool("self_interaction", &c->self_interaction));
      return r.Bool("skip_gather", &c->skip_gather);
    }
    if (class_name == "Conv2D") {
      spec->kind = LayerKind::kConv2D;
      return ParseConv2D(r, c);
    }
    if (class_name == "MaxPooling2D" || class_name == "AveragePooling2D") {
      spec->kind = class_name == "MaxPooling2D" ? LayerKind::kMaxPooling2D : LayerKind::kAveragePooling2D;
      return ParsePooling2D(r, c);
    }
  }
  std::string why = "is not supported";
  if (class_name == "Lambda") why = "is not supported (its Python code cannot run here)";
  return absl::InvalidArgumentError(absl::StrCat("layer '", spec->name, "': class '", class_name, "' ", why,
                                                 "; supported classes: ", SupportedLayerClasses()));
}

absl::Status ParseLayerConfig(const std::string& class_name, const json& config, GraphLayerSpec* spec) {
  spec->class_name = class_name;
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", spec->name, "': its config must be an object"));
  }
  RETURN_IF_ERROR(ParseKind(class_name, config, spec));
  return ParseInitializers(ConfigReader(*spec, config), &spec->config);
}

}  // namespace pstrain
