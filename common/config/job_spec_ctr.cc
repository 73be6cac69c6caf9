// The CTR part of a job spec's model: numeric inputs and categorical fields with their embedding
// tables (see EmbeddingFieldSpec in job_spec.h and the README's CTR section).
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/config/job_spec_parse.h"
#include "common/config/value_range.h"
#include "common/platform/checked_math.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace internal_job_spec {
namespace {

using nlohmann::json;

// Bounds that catch typos (a vocabulary of 10^15 rows) while leaving room for real tables; a
// table's bytes are bounded by the checked arithmetic below and by the plan's memory budget.
constexpr int64_t kMaxVocabulary = int64_t{1} << 40;
constexpr int64_t kMaxEmbeddingDim = 65536;
constexpr int64_t kMaxFields = 100000;
constexpr int64_t kMaxNumericInputs = 1000000;


// One entry of model.fields: {"vocabulary_size" or "dynamic", "embedding_dim", optional "name",
// "embeddings_initializer", and "count" (that many identical fields, named automatically, each
// with its own table: a dynamic spec is copied to each)}.
absl::Status ParseFieldEntry(const json& entry, const std::string& path, std::vector<EmbeddingFieldSpec>* fields) {
  RETURN_IF_ERROR(JsonFields::RequireObject(entry, path, kPrefix));
  JsonFields f(entry, path, kPrefix);
  EmbeddingFieldSpec field;
  ASSIGN_OR_RETURN(field.name, f.String("name", ""));
  if (field.name.size() > 256) return f.Invalid("name", "is longer than 256 characters");
  ASSIGN_OR_RETURN(field.vocabulary_size,
                   f.Int("vocabulary_size", 0, IntBetween(1, kMaxVocabulary, "(the table's rows)")));
  ASSIGN_OR_RETURN(field.embedding_dim,
                   f.Int("embedding_dim", 0, IntBetween(1, kMaxEmbeddingDim, "(the table's columns)")));
  ASSIGN_OR_RETURN(field.embeddings_initializer,
                   ParseInitializer(f, "embeddings_initializer", field.embeddings_initializer));
  ASSIGN_OR_RETURN(int64_t count, f.Int("count", 1, IntBetween(1, kMaxFields, "(identical fields)")));
  const json* dynamic = f.Find("dynamic");
  RETURN_IF_ERROR(f.NoUnknownKeys());
  if (dynamic != nullptr) {
    if (field.vocabulary_size != 0) {
      return f.Invalid("dynamic", "cannot be given with vocabulary_size: a dynamic table has no vocabulary (ids are "
                                  "taken whole); drop vocabulary_size, or drop dynamic for a fixed table");
    }
    ASSIGN_OR_RETURN(field.dynamic, ParseDynamicTable(*dynamic, f.Where("dynamic")));
  } else if (field.vocabulary_size == 0) {
    return f.Invalid("vocabulary_size",
                     "is missing (the table's rows; or give \"dynamic\": {\"max_rows\": N} for a table without a "
                     "vocabulary)");
  }
  if (field.embedding_dim == 0) return f.Invalid("embedding_dim", "is missing (the table's columns)");
  if (count > 1 && !field.name.empty()) {
    return f.Invalid("name", "cannot name several fields (count > 1); drop the name or the count");
  }
  if (static_cast<int64_t>(fields->size()) + count > kMaxFields) {
    return f.Invalid("count", absl::StrCat("makes more than ", kMaxFields, " fields"));
  }
  fields->insert(fields->end(), count, field);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseCtrModel(JsonFields& model, ModelSpec* spec) {
  const json* fields = model.Find("fields");
  ASSIGN_OR_RETURN(spec->numeric_inputs,
                   model.Int("numeric_inputs", 0, IntBetween(0, kMaxNumericInputs, "(numeric features)")));
  if (fields == nullptr) {
    if (spec->numeric_inputs != 0) {
      return Invalid("model.numeric_inputs", "needs model.fields (a CTR model); a dense model uses input_shape");
    }
    return absl::OkStatus();
  }
  if (!fields->is_array() || fields->empty()) {
    return Invalid("model.fields",
                   "must be a non-empty list of categorical fields, e.g. [{\"vocabulary_size\": 100000, "
                   "\"embedding_dim\": 16}]");
  }
  if (static_cast<int64_t>(fields->size()) > kMaxFields) {
    return Invalid("model.fields", absl::StrCat("has more than ", kMaxFields, " entries"));
  }
  if (model.Find("input_shape") != nullptr) {
    return Invalid("model.input_shape",
                   "must not be given with model.fields: the dense layers' input is numeric_inputs plus the "
                   "fields' embedding_dim");
  }
  std::vector<size_t> entry_of;  // per field: its entry in model.fields
  for (size_t i = 0; i < fields->size(); ++i) {
    RETURN_IF_ERROR(ParseFieldEntry((*fields)[i], absl::StrCat("model.fields[", i, "]"), &spec->fields));
    entry_of.resize(spec->fields.size(), i);
  }
  int64_t tower_inputs = spec->numeric_inputs;
  int64_t table_bytes = 0;  // all tables' float32 values: one size in bytes (the plan's budget bounds it)
  std::map<std::string, int> counts;
  std::set<std::string> names;
  for (size_t i = 0; i < spec->fields.size(); ++i) {
    EmbeddingFieldSpec& f = spec->fields[i];
    if (f.name.empty()) {
      const int n = counts["embedding"]++;
      f.name = n == 0 ? "embedding" : absl::StrCat("embedding_", n);
    }
    if (!names.insert(f.name).second) {
      return Invalid(absl::StrCat("model.fields[", entry_of[i], "].name"),
                     absl::StrCat("\"", f.name, "\" is used twice"));
    }
    tower_inputs += f.embedding_dim;  // at most kMaxFields * kMaxEmbeddingDim + kMaxNumericInputs: no overflow
    const std::string what = absl::StrCat(kPrefix, "model.fields[", entry_of[i], "] (table ", f.name, ")");
    const int64_t rows = f.dynamic ? f.dynamic->max_rows : f.vocabulary_size;
    ASSIGN_OR_RETURN(const int64_t bytes, CheckedNumBytes({rows, f.embedding_dim}, sizeof(float), what));
    ASSIGN_OR_RETURN(table_bytes, CheckedSizeSum(table_bytes, bytes, what));
  }
  // The dense tower's input width is a dimension like any other (int32 in the kernels).
  RETURN_IF_ERROR(CheckInRange(tower_inputs, DimensionRange("(numeric_inputs plus the fields' embedding_dim)"),
                               absl::StrCat(kPrefix, "model: the dense layers' input width")));
  spec->input_shape = {tower_inputs};
  return absl::OkStatus();
}

// A field's "dynamic": {"admission_threshold", "ttl_steps", "max_rows"}, given in place of
// vocabulary_size: a table without a vocabulary whose rows are made on first use (ps/README.md,
// "Dynamic tables"). The job-level rules (async mode, no ps_replicas) are CheckDynamicTables'.
absl::StatusOr<DynamicTableSpec> ParseDynamicTable(const json& value, const std::string& path) {
  RETURN_IF_ERROR(JsonFields::RequireObject(value, path, kPrefix));
  JsonFields d(value, path, kPrefix);
  DynamicTableSpec spec;
  ASSIGN_OR_RETURN(spec.admission_threshold,
                   d.Int("admission_threshold", 1, IntBetween(1, 255, "(pushes before an id becomes a row)")));
  ASSIGN_OR_RETURN(spec.ttl_steps,
                   d.Int("ttl_steps", 0, IntAtLeast(0, "(steps without an update before a row is dropped; 0: never)")));
  ASSIGN_OR_RETURN(spec.max_rows,
                   d.Int("max_rows", 0, IntBetween(1, kMaxVocabulary, "(the table's capacity over all ps tasks)")));
  RETURN_IF_ERROR(d.NoUnknownKeys());
  if (spec.max_rows == 0) {
    return d.Invalid("max_rows", "is required: the most rows the table holds over all ps tasks (its memory budget; "
                                 "the least recently updated rows are dropped beyond it)");
  }
  return spec;
}

json DynamicTableToJson(const DynamicTableSpec& spec) {
  return {{"admission_threshold", spec.admission_threshold}, {"ttl_steps", spec.ttl_steps}, {"max_rows", spec.max_rows}};
}

absl::Status CheckDynamicTables(const JobSpec& spec) {
  for (size_t i = 0; i < spec.model.fields.size(); ++i) {
    const EmbeddingFieldSpec& f = spec.model.fields[i];
    if (!f.dynamic) continue;
    const std::string field = absl::StrCat("model.fields (field \"", f.name, "\")");
    const std::string instead = spec.model.is_graph()
                                    ? absl::StrCat("drop layer '", f.name, "' from model.dynamic_tables")
                                    : "give the field a vocabulary_size in place of \"dynamic\"";
    if (spec.mode != "async") {
      return Invalid(field, absl::StrCat("is a dynamic table, which needs mode \"async\" (the job's mode is \"",
                                         spec.mode, "\"): set mode to \"async\", or ", instead));
    }
    if (spec.ps_replicas > 0) {
      return Invalid(field, absl::StrCat("is a dynamic table, whose shards have no backups, but ps_replicas is ",
                                         spec.ps_replicas, ": set ps_replicas to 0, or ", instead));
    }
    if (spec.optimizer.type == "adam") {
      return Invalid(field, absl::StrCat("is a dynamic table, which optimizer adam cannot update (adam updates "
                                         "every row on each step): use lazy_adam (Adam on the rows a step "
                                         "touches) or another optimizer, or ", instead));
    }
  }
  return absl::OkStatus();
}

void CtrModelToJson(const ModelSpec& spec, json* model) {
  if (!spec.is_ctr()) return;
  model->erase("input_shape");  // derived
  json fields = json::array();
  for (const EmbeddingFieldSpec& f : spec.fields) {
    json field{{"name", f.name},
               {"embedding_dim", f.embedding_dim},
               {"embeddings_initializer", InitializerToJson(f.embeddings_initializer)}};
    if (f.dynamic) {
      field["dynamic"] = DynamicTableToJson(*f.dynamic);
    } else {
      field["vocabulary_size"] = f.vocabulary_size;
    }
    fields.push_back(std::move(field));
  }
  (*model)["numeric_inputs"] = spec.numeric_inputs;
  (*model)["fields"] = std::move(fields);
}

namespace {

constexpr int64_t kDefaultBagMaxLength = 4096;
constexpr int64_t kMaxBagLength = int64_t{1} << 20;

// One entry of data.features.categorical: a feature name, or a bag object.
absl::Status ParseCategoricalEntry(const json& entry, const std::string& path, std::string* name,
                                   TfExampleBagSpec* bag) {
  if (entry.is_string()) {
    *name = entry.get<std::string>();
    if (name->empty()) return Invalid(path, "is empty; name the tf.Example feature");
    return absl::OkStatus();
  }
  if (!entry.is_object()) {
    return Invalid(path, "must be a feature name or a bag {\"name\": ..., \"combiner\": \"sum\" | \"mean\" | "
                         "\"sqrtn\", \"weights\": name (optional), \"max_length\": n (optional)}");
  }
  JsonFields f(entry, path, kPrefix);
  ASSIGN_OR_RETURN(*name, f.String("name", ""));
  ASSIGN_OR_RETURN(bag->combiner, f.String("combiner", ""));
  ASSIGN_OR_RETURN(bag->weights, f.String("weights", ""));
  ASSIGN_OR_RETURN(bag->max_length,
                   f.Int("max_length", kDefaultBagMaxLength, IntBetween(1, kMaxBagLength, "(ids in one bag)")));
  RETURN_IF_ERROR(f.NoUnknownKeys());
  if (name->empty()) return f.Invalid("name", "is required: the tf.Example feature holding the bag's ids");
  if (bag->combiner.empty()) {
    return f.Invalid("combiner",
                     "is required for a bag: sum, mean or sqrtn (a feature of one id is given by its name)");
  }
  if (bag->combiner != "sum" && bag->combiner != "mean" && bag->combiner != "sqrtn") {
    return f.Invalid("combiner", absl::StrCat("is \"", bag->combiner, "\"; want sum, mean or sqrtn (as "
                                              "tf.nn.embedding_lookup_sparse's combiner)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseTfExampleFeatures(JsonFields& data, bool tfrecord, TfExampleFeatureSpec* spec) {
  const nlohmann::json* value = data.Find("features");
  if (value == nullptr) {
    if (tfrecord) {
      return data.Invalid("features", "is required for tfrecord data: {\"label\": name, \"numeric\": [names], "
                                      "\"categorical\": [names]} naming the tf.Example features");
    }
    return absl::OkStatus();
  }
  if (!tfrecord) return data.Invalid("features", "is for tfrecord data only");
  const std::string path = data.Where("features");
  RETURN_IF_ERROR(JsonFields::RequireObject(*value, path, kPrefix));
  JsonFields f(*value, path, kPrefix);
  ASSIGN_OR_RETURN(spec->label, f.String("label", ""));
  ASSIGN_OR_RETURN(spec->numeric, f.StringList("numeric", 10000));
  const nlohmann::json* categorical = f.Find("categorical");
  RETURN_IF_ERROR(f.NoUnknownKeys());
  spec->categorical.clear();
  spec->bags.clear();
  if (categorical != nullptr) {
    const std::string where = f.Where("categorical");
    if (categorical->is_string()) {
      RETURN_IF_ERROR(ParseCategoricalEntry(*categorical, where, &spec->categorical.emplace_back(),
                                            &spec->bags.emplace_back()));
    } else if (!categorical->is_array() || categorical->size() > 10000) {
      return Invalid(where, "must be a list of at most 10000 entries: feature names or bags");
    } else {
      for (size_t i = 0; i < categorical->size(); ++i) {
        RETURN_IF_ERROR(ParseCategoricalEntry((*categorical)[i], absl::StrCat(where, "[", i, "]"),
                                              &spec->categorical.emplace_back(), &spec->bags.emplace_back()));
      }
    }
  }
  bool any_bag = false;
  for (const TfExampleBagSpec& bag : spec->bags) any_bag = any_bag || bag.is_bag();
  if (!any_bag) spec->bags.clear();  // all fixed-length: the plain form
  if (spec->label.empty()) return f.Invalid("label", "is required: the name of the tf.Example feature holding the label");
  return absl::OkStatus();
}

absl::Status CheckTfExampleFeatures(const JobSpec& spec) {
  const TfExampleFeatureSpec& f = spec.data.features;
  if (static_cast<int64_t>(f.numeric.size()) != spec.model.numeric_inputs) {
    return Invalid("data.features.numeric", absl::StrCat("names ", f.numeric.size(), " features but the model has ",
                                                        spec.model.numeric_inputs, " numeric inputs; name one each"));
  }
  if (f.categorical.size() != spec.model.fields.size()) {
    return Invalid("data.features.categorical",
                   absl::StrCat("names ", f.categorical.size(), " features but the model has ", spec.model.fields.size(),
                                " fields (model.fields, counts included); name one each"));
  }
  std::vector<std::string> weights;
  for (size_t c = 0; c < f.categorical.size(); ++c) {
    if (!f.is_bag(c)) continue;
    if (!f.bags[c].weights.empty()) weights.push_back(f.bags[c].weights);
  }
  std::set<std::string> seen{f.label};
  const std::vector<std::string>* lists[] = {&f.numeric, &f.categorical, &weights};
  for (const auto* list : lists) {
    for (const std::string& name : *list) {
      if (!seen.insert(name).second) {
        return Invalid("data.features", absl::StrCat("names feature \"", name,
                                                    "\" twice; each input (and each bag's weights) needs its own"));
      }
    }
  }
  return absl::OkStatus();
}

void ApplyTfExampleBags(JobSpec* spec) {
  const TfExampleFeatureSpec& f = spec->data.features;
  for (size_t c = 0; c < spec->model.fields.size(); ++c) {
    spec->model.fields[c].combiner = f.is_bag(c) ? f.bags[c].combiner : "";
  }
}

nlohmann::json TfExampleFeaturesToJson(const TfExampleFeatureSpec& spec) {
  json categorical = json::array();
  for (size_t c = 0; c < spec.categorical.size(); ++c) {
    if (!spec.is_bag(c)) {
      categorical.push_back(spec.categorical[c]);
      continue;
    }
    const TfExampleBagSpec& bag = spec.bags[c];
    json entry = {{"name", spec.categorical[c]}, {"combiner", bag.combiner}, {"max_length", bag.max_length}};
    if (!bag.weights.empty()) entry["weights"] = bag.weights;
    categorical.push_back(std::move(entry));
  }
  return {{"label", spec.label}, {"numeric", spec.numeric}, {"categorical", std::move(categorical)}};
}

}  // namespace internal_job_spec

absl::Status OverrideCtrDataFiles(const std::string& train_files, const std::string& test_files,
                                  const std::string& flag_prefix, JobSpec* job) {
  if (train_files.empty() && test_files.empty()) return absl::OkStatus();
  const std::string flag = absl::StrCat(flag_prefix, train_files.empty() ? "test_files" : "train_files");
  if (!IsCtrDataset(job->data.dataset)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " is for criteo and tfrecord jobs (CTR models); job \"",
                                                   job->name, "\" reads ", job->data.dataset));
  }
  auto split = [](const std::string& list) {
    std::vector<std::string> out;
    for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
      out.emplace_back(absl::StripAsciiWhitespace(part));
    }
    return out;
  };
  if (!train_files.empty()) job->data.train_files = split(train_files);
  if (!test_files.empty()) job->data.test_files = split(test_files);
  if (job->data.train_files.empty() || job->data.test_files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " needs ", flag_prefix, job->data.train_files.empty() ? "train_files" : "test_files",
                     " too: the job has no files of its own for that split (it uses the default synthetic set)"));
  }
  return absl::OkStatus();
}

}  // namespace pstrain
