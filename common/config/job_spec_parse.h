// Pieces shared by the job spec's parsers (job_spec.cc, job_spec_ctr.cc): every error is
// InvalidArgument "job spec: <path> <why>", naming the field as the user wrote it; objects are read
// through JsonFields, so unknown keys are refused naming the nearest known one.
// Not a public interface: use JobSpecFromJson (job_spec.h).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_CONFIG_JOB_SPEC_PARSE_H_
#define PSTRAIN_COMMON_CONFIG_JOB_SPEC_PARSE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/config/json_fields.h"
#include "nlohmann/json.hpp"

namespace pstrain {
namespace internal_job_spec {

inline constexpr char kPrefix[] = "job spec: ";
// Most paths or globs in data.train_files / data.test_files.
inline constexpr size_t kMaxDataFiles = 100000;

absl::Status Invalid(const std::string& path, const std::string& why);

// parent[key] as an initializer: a name ("glorot_uniform") or {"type": ..., arguments}; `spec` when
// absent. "uniform" (Keras's name) is random_uniform.
absl::StatusOr<InitializerSpec> ParseInitializer(JsonFields& parent, const std::string& key, InitializerSpec spec);
nlohmann::json InitializerToJson(const InitializerSpec& s);

// The model's CTR part: "numeric_inputs" and "fields" read from `model` (the reader of the object at
// "model"; its other keys are the caller's). Derives spec->input_shape for the dense tower, its
// width checked against kMaxDimension and each table's bytes against kMaxCheckedBytes. Leaves
// `spec` a dense model when "fields" is absent.
absl::Status ParseCtrModel(JsonFields& model, ModelSpec* spec);
// The job-level rules of dynamic tables (EmbeddingFieldSpec::dynamic), checked once mode,
// ps_replicas and the optimizer are known: async mode only, no backup shards (ps_replicas 0), and
// an optimizer that updates only the rows a step touches (not adam). InvalidArgument naming the
// field and what to change.
absl::Status CheckDynamicTables(const JobSpec& spec);
// One dynamic table's object {"max_rows" (required), "admission_threshold", "ttl_steps"} at
// `path`, and its canonical form.
absl::StatusOr<DynamicTableSpec> ParseDynamicTable(const nlohmann::json& value, const std::string& path);
nlohmann::json DynamicTableToJson(const DynamicTableSpec& spec);
// Writes the CTR part of `spec` into the canonical model object (nothing for dense models).
void CtrModelToJson(const ModelSpec& spec, nlohmann::json* model);

// The Keras part (job_spec_keras.cc): whether model has keras_model or keras_json; parses them with
// loss and from_logits (refusing the keys of the other model kinds); the canonical form.
bool HasKerasModel(JsonFields& model);
absl::Status ParseKerasModel(JsonFields& model, ModelSpec* spec);
void KerasModelToJson(const ModelSpec& spec, nlohmann::json* model);
// A Keras model against the job's data: one with integer (id) inputs needs criteo or tfrecord data
// and binary_crossentropy, one without needs the other datasets. InvalidArgument naming the key.
absl::Status CheckKerasModelData(const JobSpec& spec);
// A job file's model.keras_json (a path, relative to `spec_path`'s folder) read into
// model.keras_model; errors name the key and the file.
absl::Status InlineKerasJson(const std::string& spec_path, nlohmann::json* doc);
// data.features (tfrecord data only; refused for other data): an object {"label": name,
// "numeric": [names], "categorical": [entries]}, label required, names non-empty. A categorical
// entry is a name (one id per example) or a bag {"name", "combiner": sum|mean|sqrtn, optional
// "weights": name, "max_length": n (default kDefaultBagMaxLength)}.
absl::Status ParseTfExampleFeatures(JsonFields& data, bool tfrecord, TfExampleFeatureSpec* spec);
// The features against the model: one numeric name per numeric input, one categorical name per
// field, no name used twice (weights included). A Keras model's bag takes one column of an integer
// input (a field), whose Embedding layers combine the bag's ids there; the bags and one-id features
// of one input of shape (k,) share its tables.
absl::Status CheckTfExampleFeatures(const JobSpec& spec);
// Copies each bag's combiner into its model field (EmbeddingFieldSpec::combiner).
void ApplyTfExampleBags(JobSpec* spec);
nlohmann::json TfExampleFeaturesToJson(const TfExampleFeatureSpec& spec);

}  // namespace internal_job_spec
}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_JOB_SPEC_PARSE_H_
