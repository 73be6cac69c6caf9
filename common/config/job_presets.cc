#include "common/config/job_presets.h"

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"

namespace pstrain {
namespace {

struct Preset {
  const char* name;
  const char* json;
};

constexpr Preset kPresets[] = {
    {"linear", R"({
  "name": "linear",
  "model": {"input_shape": [2], "loss": "mse",
            "layers": [{"type": "dense", "units": 1}]},
  "optimizer": {"type": "adagrad", "learning_rate": 0.05},
  "data": {"dataset": "synthetic_linear", "num_examples": 4096},
  "batch_size": 64,
  "schedule": {"steps": 400, "steps_per_closure": 10},
  "partitioner": "none",
  "seed": 42
})"},
    {"mlp", R"({
  "name": "mlp",
  "model": {"input_shape": [28, 28, 1],
            "layers": [{"type": "flatten"},
                       {"type": "dense", "units": 700, "activation": "relu"},
                       {"type": "dense", "units": 500, "activation": "relu"},
                       {"type": "dense", "units": 10}]},
  "optimizer": {"type": "adam", "learning_rate": 0.001},
  "data": {"dataset": "fashion_mnist"},
  "batch_size": 64,
  "schedule": {"epochs": 2, "steps_per_closure": 10},
  "partitioner": {"type": "min_size", "min_shard_bytes": 262144, "max_shards": 4},
  "seed": 42
})"},
    {"cnn", R"({
  "name": "cnn",
  "model": {"input_shape": [28, 28, 1],
            "layers": [{"type": "conv2d", "filters": 32, "kernel_size": 3, "activation": "relu"},
                       {"type": "max_pool2d"},
                       {"type": "conv2d", "filters": 64, "kernel_size": 3, "activation": "relu"},
                       {"type": "max_pool2d"},
                       {"type": "flatten"},
                       {"type": "dense", "units": 64, "activation": "relu"},
                       {"type": "dense", "units": 10}]},
  "optimizer": {"type": "adam", "learning_rate": 0.001},
  "data": {"dataset": "fashion_mnist"},
  "batch_size": 64,
  "schedule": {"epochs": 10, "steps_per_closure": 10},
  "partitioner": {"type": "min_size", "min_shard_bytes": 262144, "max_shards": 2},
  "seed": 42
})"},
    {"ctr", R"({
  "name": "ctr",
  "model": {"numeric_inputs": 13,
            "fields": [{"vocabulary_size": 100000, "embedding_dim": 16, "count": 26}],
            "layers": [{"type": "dense", "units": 512, "activation": "relu"},
                       {"type": "dense", "units": 256, "activation": "relu"},
                       {"type": "dense", "units": 1}],
            "loss": "binary_crossentropy"},
  "optimizer": {"type": "adagrad", "learning_rate": 0.02, "initial_accumulator_value": 1e-6, "epsilon": 1e-7},
  "data": {"dataset": "criteo"},
  "batch_size": 1024,
  "schedule": {"epochs": 1, "steps_per_closure": 10},
  "partitioner": {"type": "min_size", "min_shard_bytes": 262144, "max_shards": 2, "strategy": "mod"},
  "seed": 42
})"},
};

}  // namespace

bool IsJobPreset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return true;
  }
  return false;
}

std::string JobPresetNames() {
  std::string out;
  for (const Preset& p : kPresets) absl::StrAppend(&out, out.empty() ? "" : ", ", p.name);
  return out;
}

absl::StatusOr<nlohmann::json> JobPresetJson(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return ParseJson(p.json, absl::StrCat("preset ", name));
  }
  return absl::NotFoundError(absl::StrCat("no preset job \"", name, "\"; presets: ", JobPresetNames()));
}

}  // namespace pstrain
