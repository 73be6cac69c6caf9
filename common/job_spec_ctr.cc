// The CTR part of a job spec's model: numeric inputs and categorical fields with their embedding
// tables (see EmbeddingFieldSpec in job_spec.h and the README's CTR section).
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/job_spec_parse.h"
#include "common/json_util.h"
#include "common/status_macros.h"

namespace pstrain {
namespace internal_job_spec {
namespace {

using nlohmann::json;

// Bounds that catch typos (a vocabulary of 10^15 rows) while leaving room for real tables.
constexpr int64_t kMaxVocabulary = int64_t{1} << 40;
constexpr int64_t kMaxEmbeddingDim = 65536;
constexpr int64_t kMaxFields = 100000;
constexpr int64_t kMaxNumericInputs = 1000000;

// One entry of model.fields: {"vocabulary_size", "embedding_dim", optional "name",
// "embeddings_initializer", and "count" (that many identical fields, named automatically)}.
absl::Status ParseFieldEntry(const json& entry, const std::string& path, std::vector<EmbeddingFieldSpec>* fields) {
  RETURN_IF_ERROR(RequireObject(entry, path));
  RETURN_IF_ERROR(
      RejectUnknownKeys(entry, {"name", "vocabulary_size", "embedding_dim", "embeddings_initializer", "count"}, path));
  EmbeddingFieldSpec field;
  ASSIGN_OR_RETURN(field.name, OptionalString(entry, "name", "", path));
  if (!entry.contains("vocabulary_size")) return Invalid(path + ".vocabulary_size", "is missing (the table's rows)");
  if (!entry.contains("embedding_dim")) return Invalid(path + ".embedding_dim", "is missing (the table's columns)");
  ASSIGN_OR_RETURN(field.vocabulary_size, IntInRange(entry, "vocabulary_size", 0, 1, kMaxVocabulary, path));
  ASSIGN_OR_RETURN(field.embedding_dim, IntInRange(entry, "embedding_dim", 0, 1, kMaxEmbeddingDim, path));
  ASSIGN_OR_RETURN(field.embeddings_initializer,
                   ParseInitializer(entry, "embeddings_initializer", field.embeddings_initializer, path));
  ASSIGN_OR_RETURN(int64_t count, IntInRange(entry, "count", 1, 1, kMaxFields, path));
  if (count > 1 && !field.name.empty()) {
    return Invalid(path + ".name", "cannot name several fields (count > 1); drop the name or the count");
  }
  if (static_cast<int64_t>(fields->size()) + count > kMaxFields) {
    return Invalid(path + ".count", absl::StrCat("makes more than ", kMaxFields, " fields"));
  }
  fields->insert(fields->end(), count, field);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseCtrModel(const json& model, ModelSpec* spec) {
  auto it = model.find("fields");
  if (it == model.end() || it->is_null()) {
    if (model.contains("numeric_inputs") && !model["numeric_inputs"].is_null()) {
      return Invalid("model.numeric_inputs", "needs model.fields (a CTR model); a dense model uses input_shape");
    }
    return absl::OkStatus();
  }
  if (!it->is_array() || it->empty()) {
    return Invalid("model.fields",
                   "must be a non-empty list of categorical fields, e.g. [{\"vocabulary_size\": 100000, "
                   "\"embedding_dim\": 16}]");
  }
  if (model.contains("input_shape")) {
    return Invalid("model.input_shape",
                   "must not be given with model.fields: the dense layers' input is numeric_inputs plus the "
                   "fields' embedding_dim");
  }
  ASSIGN_OR_RETURN(spec->numeric_inputs, IntInRange(model, "numeric_inputs", 0, 0, kMaxNumericInputs, "model"));
  std::vector<size_t> entry_of;  // per field: its entry in model.fields
  for (size_t i = 0; i < it->size(); ++i) {
    RETURN_IF_ERROR(ParseFieldEntry((*it)[i], absl::StrCat("model.fields[", i, "]"), &spec->fields));
    entry_of.resize(spec->fields.size(), i);
  }
  int64_t tower_inputs = spec->numeric_inputs;
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
    tower_inputs += f.embedding_dim;
  }
  spec->input_shape = {tower_inputs};
  return absl::OkStatus();
}

void CtrModelToJson(const ModelSpec& spec, json* model) {
  if (!spec.is_ctr()) return;
  model->erase("input_shape");  // derived
  json fields = json::array();
  for (const EmbeddingFieldSpec& f : spec.fields) {
    fields.push_back(json{{"name", f.name},
                          {"vocabulary_size", f.vocabulary_size},
                          {"embedding_dim", f.embedding_dim},
                          {"embeddings_initializer", InitializerToJson(f.embeddings_initializer)}});
  }
  (*model)["numeric_inputs"] = spec.numeric_inputs;
  (*model)["fields"] = std::move(fields);
}

}  // namespace internal_job_spec

absl::Status OverrideCtrDataFiles(const std::string& train_files, const std::string& test_files,
                                  const std::string& flag_prefix, JobSpec* job) {
  if (train_files.empty() && test_files.empty()) return absl::OkStatus();
  const std::string flag = absl::StrCat(flag_prefix, train_files.empty() ? "test_files" : "train_files");
  if (job->data.dataset != "criteo") {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " is for criteo jobs (CTR models); job \"", job->name, "\" reads ", job->data.dataset));
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
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " needs ", flag_prefix, job->data.train_files.empty() ? "train_files" : "test_files",
        " too: the job has no files of its own for that split (it uses the default synthetic set)"));
  }
  return absl::OkStatus();
}

}  // namespace pstrain
