#include "common/job_spec.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/job_presets.h"
#include "common/job_spec_parse.h"
#include "common/json_util.h"
#include "common/status_macros.h"

namespace pstrain {
namespace {

using nlohmann::json;
using internal_job_spec::InitializerToJson;
using internal_job_spec::Invalid;
using internal_job_spec::ParseInitializer;
using internal_job_spec::RequireObject;
using internal_job_spec::RequireOneOf;

absl::StatusOr<std::vector<int64_t>> IntList(const json& obj, const std::string& key, const std::string& path) {
  std::vector<int64_t> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) return Invalid(path + "." + key, "must be a list of integers");
  for (const auto& v : *it) {
    if (!v.is_number_integer()) return Invalid(path + "." + key, absl::StrCat("has a non-integer entry ", v.dump()));
    out.push_back(v.get<int64_t>());
  }
  return out;
}

std::string KerasBaseName(const std::string& type) {
  if (type == "max_pool2d") return "max_pooling2d";
  if (type == "relu") return "re_lu";
  return type;
}

absl::StatusOr<LayerSpec> ParseLayer(const json& value, const std::string& path) {
  RETURN_IF_ERROR(RequireObject(value, path));
  LayerSpec layer;
  ASSIGN_OR_RETURN(layer.type, OptionalString(value, "type", "", path));
  RETURN_IF_ERROR(RequireOneOf(layer.type, {"dense", "conv2d", "max_pool2d", "flatten", "relu"}, path + ".type"));
  ASSIGN_OR_RETURN(layer.name, OptionalString(value, "name", "", path));
  ASSIGN_OR_RETURN(layer.units, OptionalInt(value, "units", 0, path));
  ASSIGN_OR_RETURN(layer.filters, OptionalInt(value, "filters", 0, path));
  ASSIGN_OR_RETURN(layer.kernel_size, OptionalInt(value, "kernel_size", 0, path));
  ASSIGN_OR_RETURN(layer.padding, OptionalString(value, "padding", "valid", path));
  ASSIGN_OR_RETURN(layer.pool_size, OptionalInt(value, "pool_size", 2, path));
  ASSIGN_OR_RETURN(layer.activation, OptionalString(value, "activation", "", path));
  ASSIGN_OR_RETURN(layer.use_bias, OptionalBool(value, "use_bias", true, path));
  ASSIGN_OR_RETURN(layer.kernel_initializer,
                   ParseInitializer(value, "kernel_initializer", InitializerSpec{"glorot_uniform"}, path));
  ASSIGN_OR_RETURN(layer.bias_initializer, ParseInitializer(value, "bias_initializer", InitializerSpec{"zeros"}, path));
  if (layer.activation == "linear") layer.activation = "";
  RETURN_IF_ERROR(RequireOneOf(layer.activation.empty() ? "linear" : layer.activation, {"linear", "relu"},
                               path + ".activation"));
  RETURN_IF_ERROR(RequireOneOf(layer.padding, {"valid", "same"}, path + ".padding"));
  if (layer.type == "dense" && layer.units <= 0) return Invalid(path + ".units", "must be positive");
  if (layer.type == "conv2d" && layer.filters <= 0) return Invalid(path + ".filters", "must be positive");
  if (layer.type == "conv2d" && layer.kernel_size <= 0) return Invalid(path + ".kernel_size", "must be positive");
  if (layer.type == "max_pool2d" && layer.pool_size <= 0) return Invalid(path + ".pool_size", "must be positive");
  return layer;
}

absl::Status ParseModel(const json& doc, ModelSpec* model) {
  auto it = doc.find("model");
  if (it == doc.end()) return Invalid("model", "is missing; give {\"input_shape\": [...], \"layers\": [...]}");
  RETURN_IF_ERROR(RequireObject(*it, "model"));
  RETURN_IF_ERROR(internal_job_spec::ParseCtrModel(*it, model));
  if (!model->is_ctr()) {
    ASSIGN_OR_RETURN(model->input_shape, IntList(*it, "input_shape", "model"));
    if (model->input_shape.empty()) {
      return Invalid("model.input_shape", "is missing or empty, e.g. [28, 28, 1] (or give model.fields for CTR)");
    }
    for (int64_t d : model->input_shape) {
      if (d <= 0) return Invalid("model.input_shape", "must have positive dimensions");
    }
  }
  const char* default_loss = model->is_ctr() ? "binary_crossentropy" : "sparse_categorical_crossentropy";
  ASSIGN_OR_RETURN(model->loss, OptionalString(*it, "loss", default_loss, "model"));
  RETURN_IF_ERROR(
      RequireOneOf(model->loss, {"sparse_categorical_crossentropy", "binary_crossentropy", "mse"}, "model.loss"));
  if (model->is_ctr() != (model->loss == "binary_crossentropy")) {
    return Invalid("model.loss", model->is_ctr() ? "must be binary_crossentropy for a model with fields (CTR)"
                                                 : "binary_crossentropy needs model.fields (a CTR model)");
  }
  auto layers = it->find("layers");
  if (layers == it->end() || !layers->is_array() || layers->empty()) {
    return Invalid("model.layers", "must be a non-empty list of layers");
  }
  std::map<std::string, int> counts;
  std::set<std::string> names;
  for (size_t i = 0; i < layers->size(); ++i) {
    ASSIGN_OR_RETURN(LayerSpec layer, ParseLayer((*layers)[i], absl::StrCat("model.layers[", i, "]")));
    if (layer.name.empty()) {
      const std::string base = KerasBaseName(layer.type);
      const int n = counts[base]++;
      layer.name = n == 0 ? base : absl::StrCat(base, "_", n);
    }
    if (!names.insert(layer.name).second) {
      return Invalid(absl::StrCat("model.layers[", i, "].name"), absl::StrCat("\"", layer.name, "\" is used twice"));
    }
    model->layers.push_back(std::move(layer));
  }
  for (const EmbeddingFieldSpec& f : model->fields) {
    if (names.count(f.name)) {
      return Invalid("model.fields", absl::StrCat("name \"", f.name, "\" is also a layer's name"));
    }
  }
  for (size_t i = 0; model->is_ctr() && i < model->layers.size(); ++i) {
    if (model->layers[i].type != "dense") {
      return Invalid(absl::StrCat("model.layers[", i, "].type"),
                     absl::StrCat("is ", model->layers[i].type, ": a CTR model's layers must all be dense"));
    }
  }
  if (model->is_ctr()) {
    const LayerSpec& last = model->layers.back();
    if (last.type != "dense" || last.units != 1 || last.activation == "relu") {
      return Invalid(absl::StrCat("model.layers[", layers->size() - 1, "]"),
                     "must be a dense layer of 1 unit without activation: a CTR model ends in one logit");
    }
  }
  return absl::OkStatus();
}

// Keras's Ftrl argument checks.
absl::Status ValidateFtrl(const OptimizerSpec& opt, const std::string& p) {
  if (opt.type != "ftrl") return absl::OkStatus();
  if (opt.learning_rate_power > 0) return Invalid(p + ".learning_rate_power", "must be <= 0");
  if (opt.initial_accumulator_value <= 0) return Invalid(p + ".initial_accumulator_value", "must be positive");
  if (opt.l1 < 0) return Invalid(p + ".l1_regularization_strength", "must be >= 0");
  if (opt.l2 < 0) return Invalid(p + ".l2_regularization_strength", "must be >= 0");
  if (opt.l2_shrinkage < 0) return Invalid(p + ".l2_shrinkage_regularization_strength", "must be >= 0");
  if (opt.beta < 0) return Invalid(p + ".beta", "must be >= 0");
  return absl::OkStatus();
}

absl::Status ParseOptimizer(const json& doc, OptimizerSpec* opt) {
  auto it = doc.find("optimizer");
  if (it == doc.end() || it->is_null()) return absl::OkStatus();
  const std::string p = "optimizer";
  if (it->is_string()) {
    opt->type = it->get<std::string>();
  } else {
    RETURN_IF_ERROR(RequireObject(*it, p));
    const json& o = *it;
    ASSIGN_OR_RETURN(opt->type, OptionalString(o, "type", "adam", p));
    OptimizerSpec d;
    ASSIGN_OR_RETURN(opt->momentum, OptionalNumber(o, "momentum", d.momentum, p));
    ASSIGN_OR_RETURN(opt->nesterov, OptionalBool(o, "nesterov", d.nesterov, p));
    ASSIGN_OR_RETURN(opt->beta_1, OptionalNumber(o, "beta_1", d.beta_1, p));
    ASSIGN_OR_RETURN(opt->beta_2, OptionalNumber(o, "beta_2", d.beta_2, p));
    ASSIGN_OR_RETURN(opt->epsilon, OptionalNumber(o, "epsilon", d.epsilon, p));
    ASSIGN_OR_RETURN(opt->initial_accumulator_value,
                     OptionalNumber(o, "initial_accumulator_value", d.initial_accumulator_value, p));
    ASSIGN_OR_RETURN(opt->rho, OptionalNumber(o, "rho", d.rho, p));
    ASSIGN_OR_RETURN(opt->centered, OptionalBool(o, "centered", d.centered, p));
    ASSIGN_OR_RETURN(opt->learning_rate_power, OptionalNumber(o, "learning_rate_power", d.learning_rate_power, p));
    ASSIGN_OR_RETURN(opt->l1, OptionalNumber(o, "l1_regularization_strength", d.l1, p));
    ASSIGN_OR_RETURN(opt->l2, OptionalNumber(o, "l2_regularization_strength", d.l2, p));
    ASSIGN_OR_RETURN(opt->l2_shrinkage, OptionalNumber(o, "l2_shrinkage_regularization_strength", d.l2_shrinkage, p));
    ASSIGN_OR_RETURN(opt->beta, OptionalNumber(o, "beta", d.beta, p));
    auto lr = o.find("learning_rate");
    if (lr != o.end() && lr->is_number()) {
      opt->learning_rate.initial = lr->get<double>();
    } else if (lr != o.end() && lr->is_object()) {
      const std::string lp = p + ".learning_rate";
      LearningRateSpec& s = opt->learning_rate;
      ASSIGN_OR_RETURN(s.schedule, OptionalString(*lr, "schedule", "constant", lp));
      ASSIGN_OR_RETURN(s.initial, OptionalNumber(*lr, "initial", s.initial, lp));
      ASSIGN_OR_RETURN(s.decay_steps, OptionalInt(*lr, "decay_steps", 0, lp));
      ASSIGN_OR_RETURN(s.decay_rate, OptionalNumber(*lr, "decay_rate", 1.0, lp));
      ASSIGN_OR_RETURN(s.staircase, OptionalBool(*lr, "staircase", false, lp));
      ASSIGN_OR_RETURN(s.boundaries, IntList(*lr, "boundaries", lp));
      auto values = lr->find("values");
      if (values != lr->end()) {
        if (!values->is_array()) return Invalid(lp + ".values", "must be a list of numbers");
        for (const auto& v : *values) {
          if (!v.is_number()) return Invalid(lp + ".values", "must be a list of numbers");
          s.values.push_back(v.get<double>());
        }
      }
      RETURN_IF_ERROR(RequireOneOf(s.schedule, {"constant", "exponential_decay", "piecewise_constant"}, lp + ".schedule"));
      if (s.schedule == "exponential_decay" && s.decay_steps <= 0) return Invalid(lp + ".decay_steps", "must be positive");
      if (s.schedule == "piecewise_constant" && s.values.size() != s.boundaries.size() + 1) {
        return Invalid(lp, "piecewise_constant needs one more value than boundaries");
      }
    } else if (lr != o.end() && !lr->is_null()) {
      return Invalid(p + ".learning_rate", "must be a number or a schedule object");
    }
  }
  RETURN_IF_ERROR(RequireOneOf(opt->type, {"sgd", "adagrad", "adam", "rmsprop", "ftrl", "lazy_adam"}, p + ".type"));
  if (opt->learning_rate.initial <= 0) return Invalid(p + ".learning_rate", "must be positive");
  if (opt->epsilon <= 0) return Invalid(p + ".epsilon", "must be positive");
  return ValidateFtrl(*opt, p);
}

absl::Status ParseData(const json& doc, DataSpec* data) {
  auto it = doc.find("data");
  if (it == doc.end() || it->is_null()) return absl::OkStatus();
  RETURN_IF_ERROR(RequireObject(*it, "data"));
  const std::string p = "data";
  DataSpec d;
  ASSIGN_OR_RETURN(data->dataset, OptionalString(*it, "dataset", d.dataset, p));
  const bool criteo = data->dataset == "criteo";
  ASSIGN_OR_RETURN(data->dir, OptionalString(*it, "dir", criteo ? "" : d.dir, p));
  ASSIGN_OR_RETURN(data->train_files, internal_job_spec::StringList(*it, "train_files", p));
  ASSIGN_OR_RETURN(data->test_files, internal_job_spec::StringList(*it, "test_files", p));
  ASSIGN_OR_RETURN(data->skip_bad_lines, OptionalBool(*it, "skip_bad_lines", false, p));
  ASSIGN_OR_RETURN(data->train_file, OptionalString(*it, "train_file", "", p));
  ASSIGN_OR_RETURN(data->test_file, OptionalString(*it, "test_file", "", p));
  ASSIGN_OR_RETURN(data->label_column, OptionalInt(*it, "label_column", -1, p));
  ASSIGN_OR_RETURN(data->header, OptionalBool(*it, "header", false, p));
  ASSIGN_OR_RETURN(data->num_examples, OptionalInt(*it, "num_examples", 0, p));
  ASSIGN_OR_RETURN(data->shuffle_seed, OptionalInt(*it, "shuffle_seed", 0, p));
  RETURN_IF_ERROR(
      RequireOneOf(data->dataset, {"fashion_mnist", "csv", "synthetic_linear", "criteo"}, p + ".dataset"));
  if (!criteo && (!data->train_files.empty() || !data->test_files.empty() || data->skip_bad_lines)) {
    return Invalid(p, "train_files, test_files and skip_bad_lines are for criteo data");
  }
  if (criteo && data->train_files.empty() != data->test_files.empty()) {
    return Invalid(p + (data->train_files.empty() ? ".train_files" : ".test_files"),
                   "is missing: give both train_files and test_files, or neither for the default synthetic set");
  }
  if (data->dataset == "csv" && data->train_file.empty()) return Invalid(p + ".train_file", "is required for csv data");
  if (data->dataset == "synthetic_linear" && data->num_examples <= 0) {
    return Invalid(p + ".num_examples", "must be positive for synthetic_linear data");
  }
  return absl::OkStatus();
}

absl::Status ParseSchedule(const json& doc, ScheduleSpec* s) {
  auto it = doc.find("schedule");
  if (it == doc.end() || it->is_null()) return Invalid("schedule", "is missing; give {\"epochs\": N} or {\"steps\": N}");
  RETURN_IF_ERROR(RequireObject(*it, "schedule"));
  const std::string p = "schedule";
  ScheduleSpec d;
  ASSIGN_OR_RETURN(s->epochs, OptionalInt(*it, "epochs", 0, p));
  ASSIGN_OR_RETURN(s->steps, OptionalInt(*it, "steps", 0, p));
  ASSIGN_OR_RETURN(s->steps_per_closure, OptionalInt(*it, "steps_per_closure", d.steps_per_closure, p));
  ASSIGN_OR_RETURN(s->eval_every_steps, OptionalInt(*it, "eval_every_steps", 0, p));
  ASSIGN_OR_RETURN(s->checkpoint_every_steps, OptionalInt(*it, "checkpoint_every_steps", 0, p));
  ASSIGN_OR_RETURN(s->checkpoint_every_secs, OptionalInt(*it, "checkpoint_every_secs", 0, p));
  ASSIGN_OR_RETURN(s->keep_checkpoints, OptionalInt(*it, "keep_checkpoints", d.keep_checkpoints, p));
  if (s->epochs < 0 || s->steps < 0) return Invalid(p, "epochs and steps must not be negative");
  if ((s->epochs > 0) == (s->steps > 0)) return Invalid(p, "needs exactly one of epochs or steps, positive");
  if (s->steps_per_closure <= 0) return Invalid(p + ".steps_per_closure", "must be positive");
  if (s->eval_every_steps < 0 || s->checkpoint_every_steps < 0 || s->checkpoint_every_secs < 0) {
    return Invalid(p, "eval and checkpoint intervals must not be negative");
  }
  if (s->keep_checkpoints <= 0) return Invalid(p + ".keep_checkpoints", "must be positive");
  return absl::OkStatus();
}

absl::Status ParsePartitioner(const json& doc, PartitionerSpec* spec) {
  auto it = doc.find("partitioner");
  if (it == doc.end() || it->is_null()) return absl::OkStatus();
  const std::string p = "partitioner";
  std::string kind;
  if (it->is_string()) {
    kind = it->get<std::string>();
  } else {
    RETURN_IF_ERROR(RequireObject(*it, p));
    ASSIGN_OR_RETURN(kind, OptionalString(*it, "type", "none", p));
    PartitionerSpec d;
    ASSIGN_OR_RETURN(spec->num_shards, OptionalInt(*it, "num_shards", d.num_shards, p));
    ASSIGN_OR_RETURN(spec->min_shard_bytes, OptionalInt(*it, "min_shard_bytes", d.min_shard_bytes, p));
    ASSIGN_OR_RETURN(spec->max_shard_bytes, OptionalInt(*it, "max_shard_bytes", d.max_shard_bytes, p));
    ASSIGN_OR_RETURN(spec->max_shards, OptionalInt(*it, "max_shards", d.max_shards, p));
    ASSIGN_OR_RETURN(spec->bytes_per_string, OptionalInt(*it, "bytes_per_string", d.bytes_per_string, p));
    ASSIGN_OR_RETURN(spec->strategy, OptionalString(*it, "strategy", d.strategy, p));
    RETURN_IF_ERROR(RequireOneOf(spec->strategy, {"div", "mod"}, p + ".strategy"));
  }
  auto parsed = ParsePartitionerKind(kind);
  if (!parsed.ok()) return Invalid(p + ".type", std::string(parsed.status().message()));
  spec->kind = *parsed;
  absl::Status valid = ValidatePartitioner(*spec);
  if (!valid.ok()) return Invalid(p, std::string(valid.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobSpec> JobSpecFromJson(const json& doc) {
  RETURN_IF_ERROR(RequireObject(doc, "(top level)"));
  JobSpec spec;
  ASSIGN_OR_RETURN(spec.name, OptionalString(doc, "name", "job", ""));
  RETURN_IF_ERROR(ParseModel(doc, &spec.model));
  RETURN_IF_ERROR(ParseOptimizer(doc, &spec.optimizer));
  RETURN_IF_ERROR(ParseData(doc, &spec.data));
  if (spec.model.is_ctr() != (spec.data.dataset == "criteo")) {
    return Invalid("data.dataset", spec.model.is_ctr() ? "must be criteo for a model with fields (CTR)"
                                                       : "criteo needs a CTR model (model.fields)");
  }
  RETURN_IF_ERROR(ParseSchedule(doc, &spec.schedule));
  RETURN_IF_ERROR(ParsePartitioner(doc, &spec.partitioner));
  ASSIGN_OR_RETURN(spec.batch_size, OptionalInt(doc, "batch_size", 64, ""));
  if (spec.batch_size <= 0) return Invalid("batch_size", "must be positive");
  ASSIGN_OR_RETURN(spec.mode, OptionalString(doc, "mode", "async", ""));
  RETURN_IF_ERROR(RequireOneOf(spec.mode, {"async", "sync"}, "mode"));
  ASSIGN_OR_RETURN(int64_t seed, OptionalInt(doc, "seed", 42, ""));
  spec.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(spec.sync_timeout_ms, OptionalInt(doc, "sync_timeout_ms", 60000, ""));
  if (spec.sync_timeout_ms <= 0) return Invalid("sync_timeout_ms", "must be positive");
  return spec;
}

json JobSpecToJson(const JobSpec& spec) {
  json layers = json::array();
  for (const LayerSpec& l : spec.model.layers) {
    layers.push_back(json{{"type", l.type},
                          {"name", l.name},
                          {"units", l.units},
                          {"filters", l.filters},
                          {"kernel_size", l.kernel_size},
                          {"padding", l.padding},
                          {"pool_size", l.pool_size},
                          {"activation", l.activation.empty() ? "linear" : l.activation},
                          {"use_bias", l.use_bias},
                          {"kernel_initializer", InitializerToJson(l.kernel_initializer)},
                          {"bias_initializer", InitializerToJson(l.bias_initializer)}});
  }
  const OptimizerSpec& o = spec.optimizer;
  const LearningRateSpec& lr = o.learning_rate;
  const PartitionerSpec& p = spec.partitioner;
  const ScheduleSpec& s = spec.schedule;
  const DataSpec& d = spec.data;
  json model = {{"input_shape", spec.model.input_shape}, {"layers", layers}, {"loss", spec.model.loss}};
  internal_job_spec::CtrModelToJson(spec.model, &model);
  json data = {{"dataset", d.dataset},
               {"dir", d.dir},
               {"train_file", d.train_file},
               {"test_file", d.test_file},
               {"label_column", d.label_column},
               {"header", d.header},
               {"num_examples", d.num_examples},
               {"shuffle_seed", d.shuffle_seed}};
  if (d.dataset == "criteo") {
    data["train_files"] = d.train_files;
    data["test_files"] = d.test_files;
    data["skip_bad_lines"] = d.skip_bad_lines;
  }
  return json{
      {"name", spec.name},
      {"model", model},
      {"optimizer",
       {{"type", o.type},
        {"learning_rate",
         {{"schedule", lr.schedule},
          {"initial", lr.initial},
          {"decay_steps", lr.decay_steps},
          {"decay_rate", lr.decay_rate},
          {"staircase", lr.staircase},
          {"boundaries", lr.boundaries},
          {"values", lr.values}}},
        {"momentum", o.momentum},
        {"nesterov", o.nesterov},
        {"beta_1", o.beta_1},
        {"beta_2", o.beta_2},
        {"epsilon", o.epsilon},
        {"initial_accumulator_value", o.initial_accumulator_value},
        {"rho", o.rho},
        {"centered", o.centered},
        {"learning_rate_power", o.learning_rate_power},
        {"l1_regularization_strength", o.l1},
        {"l2_regularization_strength", o.l2},
        {"l2_shrinkage_regularization_strength", o.l2_shrinkage},
        {"beta", o.beta}}},
      {"data", data},
      {"batch_size", spec.batch_size},
      {"schedule",
       {{"epochs", s.epochs},
        {"steps", s.steps},
        {"steps_per_closure", s.steps_per_closure},
        {"eval_every_steps", s.eval_every_steps},
        {"checkpoint_every_steps", s.checkpoint_every_steps},
        {"checkpoint_every_secs", s.checkpoint_every_secs},
        {"keep_checkpoints", s.keep_checkpoints}}},
      {"partitioner",
       {{"type", p.KindName()},
        {"num_shards", p.num_shards},
        {"min_shard_bytes", p.min_shard_bytes},
        {"max_shard_bytes", p.max_shard_bytes},
        {"max_shards", p.max_shards},
        {"bytes_per_string", p.bytes_per_string},
        {"strategy", p.strategy}}},
      {"mode", spec.mode},
      {"seed", spec.seed},
      {"sync_timeout_ms", spec.sync_timeout_ms},
  };
}

absl::StatusOr<JobSpec> LoadJobSpec(const std::string& name_or_path) {
  if (IsJobPreset(name_or_path)) {
    ASSIGN_OR_RETURN(json doc, JobPresetJson(name_or_path));
    return JobSpecFromJson(doc);
  }
  if (name_or_path.find('/') == std::string::npos && name_or_path.find('.') == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("job \"", name_or_path, "\" is neither a preset (",
                                            JobPresetNames(), ") nor a JSON file path"));
  }
  ASSIGN_OR_RETURN(json doc, ReadJsonFile(name_or_path));
  return JobSpecFromJson(doc);
}

}  // namespace pstrain
