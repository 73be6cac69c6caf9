#include "common/config/job_spec.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/config/job_presets.h"
#include "common/config/job_spec_parse.h"
#include "common/config/json_fields.h"
#include "common/config/json_util.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

using internal_job_spec::InitializerToJson;
using internal_job_spec::Invalid;
using internal_job_spec::kPrefix;
using internal_job_spec::ParseInitializer;
using nlohmann::json;

constexpr size_t kMaxLayers = 10000;
constexpr size_t kMaxRank = 8;
constexpr size_t kMaxScheduleEntries = 10000;

// Learning rates are applied in float32 on the ps: a larger one is infinite there.
NumberRange LearningRateRange() {
  return NumberBetween(0, true, 3.4e38, false, "(a learning rate must be a positive float32)");
}

std::string KerasBaseName(const std::string& type) {
  if (type == "max_pool2d") return "max_pooling2d";
  if (type == "relu") return "re_lu";
  return type;
}

// A size that applies to this layer type must be positive (Keras refuses 0 units or filters); one
// that does not apply may hold the canonical form's placeholder.
IntRange LayerSize(bool applies, const char* keras) {
  return applies ? DimensionRange(absl::StrCat("(as Keras's ", keras, ")")) : IntBetween(0, kMaxDimension);
}

absl::StatusOr<LayerSpec> ParseLayer(const json& value, const std::string& path) {
  RETURN_IF_ERROR(JsonFields::RequireObject(value, path, kPrefix));
  JsonFields f(value, path, kPrefix);
  LayerSpec layer;
  ASSIGN_OR_RETURN(layer.type, f.String("type", "", {"dense", "conv2d", "max_pool2d", "flatten", "relu"}));
  const bool dense = layer.type == "dense", conv = layer.type == "conv2d", pool = layer.type == "max_pool2d";
  ASSIGN_OR_RETURN(layer.name, f.String("name", ""));
  if (layer.name.size() > 256) return f.Invalid("name", "is longer than 256 characters");
  ASSIGN_OR_RETURN(layer.units, f.Int("units", 0, LayerSize(dense, "Dense")));
  ASSIGN_OR_RETURN(layer.filters, f.Int("filters", 0, LayerSize(conv, "Conv2D")));
  ASSIGN_OR_RETURN(layer.kernel_size, f.Int("kernel_size", 0, LayerSize(conv, "Conv2D")));
  ASSIGN_OR_RETURN(layer.padding, f.String("padding", "valid", {"valid", "same"}));
  ASSIGN_OR_RETURN(layer.pool_size, f.Int("pool_size", 2, LayerSize(pool, "MaxPooling2D")));
  ASSIGN_OR_RETURN(layer.activation, f.String("activation", "linear", {"linear", "relu", ""}));
  ASSIGN_OR_RETURN(layer.use_bias, f.Bool("use_bias", true));
  ASSIGN_OR_RETURN(layer.kernel_initializer,
                   ParseInitializer(f, "kernel_initializer", InitializerSpec{"glorot_uniform"}));
  ASSIGN_OR_RETURN(layer.bias_initializer, ParseInitializer(f, "bias_initializer", InitializerSpec{"zeros"}));
  RETURN_IF_ERROR(f.NoUnknownKeys());  // first: a misspelt size is named as such
  // Sizes without a default: a dense layer needs units, a conv2d filters and kernel_size.
  for (const auto& [key, value, needed] : {std::tuple<const char*, int64_t, bool>{"units", layer.units, dense},
                                           {"filters", layer.filters, conv},
                                           {"kernel_size", layer.kernel_size, conv}}) {
    if (needed && value == 0) {
      return f.Invalid(key, absl::StrCat("is required for a ", layer.type, " layer (a positive size, as Keras's ",
                                         dense ? "Dense" : "Conv2D", " requires)"));
    }
  }
  if (layer.activation == "linear") layer.activation = "";
  return layer;
}

absl::Status ParseModel(JsonFields& top, ModelSpec* model) {
  const json* value = top.Find("model");
  if (value == nullptr) return Invalid("model", "is missing; give {\"input_shape\": [...], \"layers\": [...]}");
  RETURN_IF_ERROR(JsonFields::RequireObject(*value, "model", kPrefix));
  JsonFields f(*value, "model", kPrefix);
  // The model's keys are declared before any check between them, so a misspelt key ("feilds") is
  // named as such rather than reported as the dense or CTR model it leaves.
  for (const char* key : {"input_shape", "fields", "numeric_inputs", "loss", "layers", "keras_model", "keras_json",
                          "from_logits", "dynamic_tables"}) {
    f.Find(key);
  }
  RETURN_IF_ERROR(f.NoUnknownKeys());
  if (internal_job_spec::HasKerasModel(f)) return internal_job_spec::ParseKerasModel(f, model);
  if (f.Find("from_logits") != nullptr) {
    return Invalid("model.from_logits", "is for Keras models (keras_model / keras_json); the layers' models "
                                        "always give logits");
  }
  if (f.Find("dynamic_tables") != nullptr) {
    return Invalid("model.dynamic_tables", "names Keras Embedding layers (keras_model / keras_json); a field of "
                                           "model.fields is made dynamic by its own \"dynamic\" object");
  }
  RETURN_IF_ERROR(internal_job_spec::ParseCtrModel(f, model));
  if (!model->is_ctr()) {
    ASSIGN_OR_RETURN(model->input_shape, f.IntList("input_shape", DimensionRange(), kMaxRank));
    if (model->input_shape.empty()) {
      return Invalid("model.input_shape", "is missing or empty, e.g. [28, 28, 1] (or give model.fields for CTR)");
    }
  }
  const char* default_loss = model->is_ctr() ? "binary_crossentropy" : "sparse_categorical_crossentropy";
  ASSIGN_OR_RETURN(model->loss,
                   f.String("loss", default_loss, {"sparse_categorical_crossentropy", "binary_crossentropy", "mse"}));
  if (model->is_ctr() != (model->loss == "binary_crossentropy")) {
    return Invalid("model.loss", model->is_ctr() ? "must be binary_crossentropy for a model with fields (CTR)"
                                                 : "binary_crossentropy needs model.fields (a CTR model)");
  }
  const json* layers = f.Find("layers");
  if (layers == nullptr || !layers->is_array() || layers->empty()) {
    return Invalid("model.layers", "must be a non-empty list of layers");
  }
  if (layers->size() > kMaxLayers)
    return Invalid("model.layers", absl::StrCat("has more than ", kMaxLayers, " layers"));
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

absl::Status ParseLearningRate(JsonFields& opt, LearningRateSpec* s) {
  const json* lr = opt.Find("learning_rate");
  const std::string lp = opt.Where("learning_rate");
  if (lr == nullptr) return absl::OkStatus();
  if (lr->is_number()) {
    s->initial = lr->get<double>();
    return CheckInRange(s->initial, LearningRateRange(), kPrefix + lp);
  }
  if (!lr->is_object()) return Invalid(lp, "must be a number or a schedule object");
  JsonFields f(*lr, lp, kPrefix);
  ASSIGN_OR_RETURN(s->schedule,
                   f.String("schedule", "constant", {"constant", "exponential_decay", "piecewise_constant"}));
  const bool decay = s->schedule == "exponential_decay";
  ASSIGN_OR_RETURN(s->initial, f.Number("initial", s->initial, LearningRateRange()));
  ASSIGN_OR_RETURN(
      s->decay_steps,
      f.Int("decay_steps", 0, decay ? DimensionRange("(as Keras's ExponentialDecay)") : IntBetween(0, kMaxDimension)));
  ASSIGN_OR_RETURN(s->decay_rate,
                   f.Number("decay_rate", 1.0, PositiveNumber("(a rate of 0 or less stops or reverses learning)")));
  ASSIGN_OR_RETURN(s->staircase, f.Bool("staircase", false));
  ASSIGN_OR_RETURN(s->boundaries, f.IntList("boundaries", IntAtLeast(0), kMaxScheduleEntries));
  ASSIGN_OR_RETURN(s->values, f.NumberList("values", LearningRateRange(), kMaxScheduleEntries + 1));
  RETURN_IF_ERROR(f.NoUnknownKeys());
  for (size_t i = 1; i < s->boundaries.size(); ++i) {
    if (s->boundaries[i] <= s->boundaries[i - 1]) {
      return Invalid(lp + ".boundaries", absl::StrCat("must increase: entry ", i, " (", s->boundaries[i],
                                                      ") is not above the one before (", s->boundaries[i - 1], ")"));
    }
  }
  if (s->schedule == "piecewise_constant" && s->values.size() != s->boundaries.size() + 1) {
    return Invalid(lp, "piecewise_constant needs one more value than boundaries (as Keras's PiecewiseConstantDecay)");
  }
  return absl::OkStatus();
}

absl::Status ParseOptimizer(JsonFields& top, OptimizerSpec* opt) {
  const std::vector<std::string> types = {"sgd", "adagrad", "adam", "rmsprop", "ftrl", "lazy_adam"};
  const json* value = top.Find("optimizer");
  if (value == nullptr) return absl::OkStatus();
  if (value->is_string()) {
    opt->type = value->get<std::string>();
    if (std::find(types.begin(), types.end(), opt->type) == types.end()) {
      return Invalid("optimizer", NotOneOfMessage(opt->type, types));
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(JsonFields::RequireObject(*value, "optimizer", kPrefix));
  JsonFields f(*value, "optimizer", kPrefix);
  OptimizerSpec d;
  ASSIGN_OR_RETURN(opt->type, f.String("type", "adam", types));
  ASSIGN_OR_RETURN(opt->momentum,
                   f.Number("momentum", d.momentum, NumberBetween(0, false, 1, false, "(as Keras's SGD)")));
  ASSIGN_OR_RETURN(opt->nesterov, f.Bool("nesterov", d.nesterov));
  ASSIGN_OR_RETURN(opt->beta_1, f.Number("beta_1", d.beta_1,
                                         NumberBetween(0, false, 1, true,
                                                       "(as PyTorch's Adam checks; at 1 Adam's bias correction "
                                                       "divides by zero)")));
  ASSIGN_OR_RETURN(opt->beta_2,
                   f.Number("beta_2", d.beta_2, NumberBetween(0, false, 1, true, "(as PyTorch's Adam checks)")));
  ASSIGN_OR_RETURN(opt->epsilon, f.Number("epsilon", d.epsilon, PositiveNumber()));
  ASSIGN_OR_RETURN(opt->initial_accumulator_value, f.Number("initial_accumulator_value", d.initial_accumulator_value,
                                                            NonNegativeNumber("(as Keras's Adagrad)")));
  ASSIGN_OR_RETURN(opt->rho, f.Number("rho", d.rho,
                                      NumberBetween(0, false, 1, true,
                                                    "(at 1 RMSprop's average of squared gradients never moves)")));
  ASSIGN_OR_RETURN(opt->centered, f.Bool("centered", d.centered));
  // Ftrl's arguments, under Keras's names, with Keras's checks.
  const std::string ftrl = "(as Keras's Ftrl)";
  ASSIGN_OR_RETURN(opt->learning_rate_power,
                   f.Number("learning_rate_power", d.learning_rate_power,
                            NumberBetween(-std::numeric_limits<double>::max(), false, 0, false, ftrl)));
  ASSIGN_OR_RETURN(opt->l1, f.Number("l1_regularization_strength", d.l1, NonNegativeNumber(ftrl)));
  ASSIGN_OR_RETURN(opt->l2, f.Number("l2_regularization_strength", d.l2, NonNegativeNumber(ftrl)));
  ASSIGN_OR_RETURN(opt->l2_shrinkage,
                   f.Number("l2_shrinkage_regularization_strength", d.l2_shrinkage, NonNegativeNumber(ftrl)));
  ASSIGN_OR_RETURN(opt->beta, f.Number("beta", d.beta, NonNegativeNumber(ftrl)));
  RETURN_IF_ERROR(ParseLearningRate(f, &opt->learning_rate));
  RETURN_IF_ERROR(f.NoUnknownKeys());
  // Ftrl divides by the square root of its accumulator: TensorFlow's Ftrl refuses a start of 0.
  if (opt->type == "ftrl") {
    RETURN_IF_ERROR(CheckInRange(opt->initial_accumulator_value, PositiveNumber("(as TensorFlow's Ftrl)"),
                                 kPrefix + f.Where("initial_accumulator_value")));
  }
  return absl::OkStatus();
}

absl::Status ParseData(JsonFields& top, DataSpec* data) {
  const json* value = top.Find("data");
  if (value == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(JsonFields::RequireObject(*value, "data", kPrefix));
  JsonFields f(*value, "data", kPrefix);
  DataSpec d;
  ASSIGN_OR_RETURN(data->dataset,
                   f.String("dataset", d.dataset, {"fashion_mnist", "csv", "synthetic_linear", "criteo", "tfrecord"}));
  const bool synthetic = data->dataset == "synthetic_linear";
  const bool criteo = IsCtrDataset(data->dataset);
  const bool tfrecord = data->dataset == "tfrecord";
  ASSIGN_OR_RETURN(data->dir, f.String("dir", criteo ? "" : d.dir));
  ASSIGN_OR_RETURN(data->train_files, f.StringList("train_files", internal_job_spec::kMaxDataFiles));
  ASSIGN_OR_RETURN(data->test_files, f.StringList("test_files", internal_job_spec::kMaxDataFiles));
  ASSIGN_OR_RETURN(data->skip_bad_lines, f.Bool("skip_bad_lines", false));
  ASSIGN_OR_RETURN(data->allow_test_in_train, f.Bool("allow_test_in_train", false));
  ASSIGN_OR_RETURN(data->train_file, f.String("train_file", ""));
  ASSIGN_OR_RETURN(data->test_file, f.String("test_file", ""));
  ASSIGN_OR_RETURN(data->label_column,
                   f.Int("label_column", -1, IntBetween(-1, kMaxDimension, "(-1: the last column)")));
  ASSIGN_OR_RETURN(data->header, f.Bool("header", false));
  ASSIGN_OR_RETURN(data->num_examples,
                   f.Int("num_examples", 0, synthetic ? DimensionRange() : IntBetween(0, kMaxDimension)));
  ASSIGN_OR_RETURN(data->shuffle_seed, f.Int("shuffle_seed", 0, AnyInt()));
  RETURN_IF_ERROR(internal_job_spec::ParseTfExampleFeatures(f, tfrecord, &data->features));
  RETURN_IF_ERROR(f.NoUnknownKeys());
  if (!criteo && (!data->train_files.empty() || !data->test_files.empty() || data->skip_bad_lines)) {
    return Invalid("data", "train_files, test_files and skip_bad_lines are for criteo and tfrecord data");
  }
  if (tfrecord && (data->train_files.empty() || data->test_files.empty())) {
    return Invalid(data->train_files.empty() ? "data.train_files" : "data.test_files",
                   "is required for tfrecord data (there is no default set of TFRecord files)");
  }
  if (criteo && data->train_files.empty() != data->test_files.empty()) {
    return Invalid(data->train_files.empty() ? "data.train_files" : "data.test_files",
                   "is missing: give both train_files and test_files, or neither for the default synthetic set");
  }
  if (data->dataset == "csv" && data->train_file.empty()) return Invalid("data.train_file", "is required for csv data");
  if (data->dataset == "csv" && data->train_file == data->test_file && !data->allow_test_in_train) {
    return Invalid("data.test_file", absl::StrCat("is the training file too (\"", data->train_file,
                                                  "\"): the test metrics would be measured on training data; give "
                                                  "a held-out file, or set data.allow_test_in_train to true"));
  }
  if (synthetic && data->num_examples <= 0)
    return Invalid("data.num_examples", "must be positive for synthetic_linear data");
  return absl::OkStatus();
}

absl::Status ParseSchedule(JsonFields& top, ScheduleSpec* s) {
  const json* value = top.Find("schedule");
  if (value == nullptr) return Invalid("schedule", "is missing; give {\"epochs\": N} or {\"steps\": N}");
  RETURN_IF_ERROR(JsonFields::RequireObject(*value, "schedule", kPrefix));
  JsonFields f(*value, "schedule", kPrefix);
  ScheduleSpec d;
  const IntRange count = IntBetween(0, kMaxDimension);
  ASSIGN_OR_RETURN(s->epochs, f.Int("epochs", 0, count));
  ASSIGN_OR_RETURN(s->steps, f.Int("steps", 0, count));
  ASSIGN_OR_RETURN(s->steps_per_closure, f.Int("steps_per_closure", d.steps_per_closure, DimensionRange()));
  ASSIGN_OR_RETURN(s->eval_every_steps, f.Int("eval_every_steps", -1, count));  // absent: every epoch
  ASSIGN_OR_RETURN(s->checkpoint_every_steps, f.Int("checkpoint_every_steps", 0, count));
  ASSIGN_OR_RETURN(s->checkpoint_every_secs, f.Int("checkpoint_every_secs", 0, count));
  ASSIGN_OR_RETURN(s->keep_checkpoints, f.Int("keep_checkpoints", d.keep_checkpoints, DimensionRange()));
  RETURN_IF_ERROR(f.NoUnknownKeys());
  if ((s->epochs > 0) == (s->steps > 0)) return Invalid("schedule", "needs exactly one of epochs or steps, positive");
  return absl::OkStatus();
}

absl::Status ParsePartitioner(JsonFields& top, PartitionerSpec* spec) {
  const json* value = top.Find("partitioner");
  if (value == nullptr) return absl::OkStatus();
  const std::string p = "partitioner";
  std::string kind;
  if (value->is_string()) {
    kind = value->get<std::string>();
  } else {
    RETURN_IF_ERROR(JsonFields::RequireObject(*value, p, kPrefix));
    JsonFields f(*value, p, kPrefix);
    PartitionerSpec d;
    ASSIGN_OR_RETURN(kind, f.String("type", "none"));
    ASSIGN_OR_RETURN(spec->num_shards, f.Int("num_shards", d.num_shards, IntBetween(0, kMaxDimension)));
    ASSIGN_OR_RETURN(spec->min_shard_bytes,
                     f.Int("min_shard_bytes", d.min_shard_bytes, IntBetween(0, kMaxCheckedBytes)));
    ASSIGN_OR_RETURN(spec->max_shard_bytes,
                     f.Int("max_shard_bytes", d.max_shard_bytes, IntBetween(0, kMaxCheckedBytes)));
    ASSIGN_OR_RETURN(spec->max_shards, f.Int("max_shards", d.max_shards, IntBetween(-1, kMaxDimension)));
    ASSIGN_OR_RETURN(spec->bytes_per_string,
                     f.Int("bytes_per_string", d.bytes_per_string, IntBetween(0, kMaxDimension)));
    ASSIGN_OR_RETURN(spec->strategy, f.String("strategy", d.strategy, {"div", "mod"}));
    RETURN_IF_ERROR(f.NoUnknownKeys());
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
  RETURN_IF_ERROR(JsonFields::RequireObject(doc, "", kPrefix));
  JsonFields top(doc, "", kPrefix);
  JobSpec spec;
  ASSIGN_OR_RETURN(spec.name, top.String("name", "job"));
  if (spec.name.size() > 256) return top.Invalid("name", "is longer than 256 characters");
  RETURN_IF_ERROR(ParseModel(top, &spec.model));
  RETURN_IF_ERROR(ParseOptimizer(top, &spec.optimizer));
  RETURN_IF_ERROR(ParseData(top, &spec.data));
  if (spec.model.is_graph()) RETURN_IF_ERROR(internal_job_spec::CheckKerasModelData(spec));
  if (!spec.model.is_graph() && spec.model.is_ctr() != IsCtrDataset(spec.data.dataset)) {
    return Invalid("data.dataset", spec.model.is_ctr() ? "must be criteo or tfrecord for a model with fields (CTR)"
                                                       : spec.data.dataset + " needs a CTR model (model.fields)");
  }
  if (spec.data.dataset == "tfrecord") {
    RETURN_IF_ERROR(internal_job_spec::CheckTfExampleFeatures(spec));
    internal_job_spec::ApplyTfExampleBags(&spec);
  }
  RETURN_IF_ERROR(ParseSchedule(top, &spec.schedule));
  RETURN_IF_ERROR(ParsePartitioner(top, &spec.partitioner));
  ASSIGN_OR_RETURN(spec.batch_size, top.Int("batch_size", 64, DimensionRange()));
  ASSIGN_OR_RETURN(spec.mode, top.String("mode", "async", {"async", "sync"}));
  ASSIGN_OR_RETURN(int64_t seed, top.Int("seed", 42, IntAtLeast(0)));
  spec.seed = static_cast<uint64_t>(seed);
  ASSIGN_OR_RETURN(spec.sync_timeout_ms, top.Int("sync_timeout_ms", 60000, DimensionRange()));
  ASSIGN_OR_RETURN(spec.terminate_on_nan, top.Bool("terminate_on_nan", true));
  ASSIGN_OR_RETURN(spec.divergence_loss_factor,
                   top.Number("divergence_loss_factor", 1000, NonNegativeNumber("(0 turns the loss-growth rule off)")));
  if (spec.divergence_loss_factor > 0 && spec.divergence_loss_factor < 2) {
    return top.Invalid("divergence_loss_factor", "must be 0 (off) or at least 2: a loss may rise a little by chance");
  }
  ASSIGN_OR_RETURN(spec.ps_replicas,
                   top.Int("ps_replicas", 0, IntBetween(0, 1, "one backup per shard is the most supported")));
  if (spec.ps_replicas > 0 && spec.mode == "sync") {
    return Invalid("ps_replicas", "needs mode \"async\": sync mode with backup shards is not supported");
  }
  RETURN_IF_ERROR(internal_job_spec::CheckDynamicTables(spec));
  RETURN_IF_ERROR(top.NoUnknownKeys());
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
  internal_job_spec::KerasModelToJson(spec.model, &model);
  json data = {{"dataset", d.dataset},           {"dir", d.dir},
               {"train_file", d.train_file},     {"test_file", d.test_file},
               {"label_column", d.label_column}, {"header", d.header},
               {"num_examples", d.num_examples}, {"shuffle_seed", d.shuffle_seed}};
  if (d.allow_test_in_train) data["allow_test_in_train"] = true;
  if (IsCtrDataset(d.dataset)) {
    data["train_files"] = d.train_files;
    data["test_files"] = d.test_files;
    data["skip_bad_lines"] = d.skip_bad_lines;
  }
  if (d.dataset == "tfrecord") data["features"] = internal_job_spec::TfExampleFeaturesToJson(d.features);
  json j{
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
      {"terminate_on_nan", spec.terminate_on_nan},
      {"divergence_loss_factor", spec.divergence_loss_factor},
      {"ps_replicas", spec.ps_replicas},
  };
  // Not given: after every epoch, which the spec says by leaving the key out.
  if (s.eval_every_steps >= 0) j["schedule"]["eval_every_steps"] = s.eval_every_steps;
  return j;
}

absl::Status CheckPsReplicas(const JobSpec& spec, int num_ps) {
  if (spec.ps_replicas <= num_ps - 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("job spec: ps_replicas ", spec.ps_replicas, " needs at least ",
                                                 spec.ps_replicas + 1, " ps tasks (each backup on another ps than its "
                                                 "primary) but the cluster has ", num_ps,
                                                 ": add ps tasks or set ps_replicas to ", std::max(0, num_ps - 1)));
}

absl::StatusOr<JobSpec> LoadJobSpec(const std::string& name_or_path) {
  if (IsJobPreset(name_or_path)) {
    ASSIGN_OR_RETURN(json doc, JobPresetJson(name_or_path));
    return JobSpecFromJson(doc);
  }
  if (name_or_path.find('/') == std::string::npos && name_or_path.find('.') == std::string::npos) {
    return absl::NotFoundError(
        absl::StrCat("job \"", name_or_path, "\" is neither a preset (", JobPresetNames(), ") nor a JSON file path"));
  }
  ASSIGN_OR_RETURN(json doc, ReadJsonFile(name_or_path));
  RETURN_IF_ERROR(internal_job_spec::InlineKerasJson(name_or_path, &doc));
  return JobSpecFromJson(doc);
}

}  // namespace pstrain
