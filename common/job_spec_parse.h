// Validating helpers shared by the job spec's parsers (job_spec.cc, job_spec_ctr.cc): every error
// is InvalidArgument "job spec: <path> <why>", naming the field as the user wrote it.
// Not a public interface: use JobSpecFromJson (job_spec.h).
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_JOB_SPEC_PARSE_H_
#define PSTRAIN_COMMON_JOB_SPEC_PARSE_H_

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "common/job_spec.h"
#include "nlohmann/json.hpp"

namespace pstrain {
namespace internal_job_spec {

absl::Status Invalid(const std::string& path, const std::string& why);
absl::Status RequireObject(const nlohmann::json& value, const std::string& path);
absl::Status RequireOneOf(const std::string& value, const std::set<std::string>& allowed, const std::string& path);

// InvalidArgument for a key of `obj` outside `known`, naming the nearest known key
// ("model.fields[2].vocab_size is not a known key; did you mean vocabulary_size?").
absl::Status RejectUnknownKeys(const nlohmann::json& obj, std::initializer_list<const char*> known,
                               const std::string& path);

// An integer field in [min, max]; `fallback` when absent or null (not range-checked).
absl::StatusOr<int64_t> IntInRange(const nlohmann::json& obj, const std::string& key, int64_t fallback, int64_t min,
                                   int64_t max, const std::string& path);

// A string, or a list of strings (empty when absent or null).
absl::StatusOr<std::vector<std::string>> StringList(const nlohmann::json& obj, const std::string& key,
                                                    const std::string& path);

// obj[key] as an initializer: a name ("glorot_uniform") or {"type": ..., arguments}; `spec` when
// absent. "uniform" (Keras's name) is random_uniform.
absl::StatusOr<InitializerSpec> ParseInitializer(const nlohmann::json& obj, const std::string& key,
                                                 InitializerSpec spec, const std::string& path);
nlohmann::json InitializerToJson(const InitializerSpec& s);

// The model's CTR part: "numeric_inputs" and "fields" of `model` (the JSON object at "model").
// Derives spec->input_shape for the dense tower. Leaves `spec` a dense model when "fields" is absent.
absl::Status ParseCtrModel(const nlohmann::json& model, ModelSpec* spec);
// Writes the CTR part of `spec` into the canonical model object (nothing for dense models).
void CtrModelToJson(const ModelSpec& spec, nlohmann::json* model);

}  // namespace internal_job_spec
}  // namespace pstrain

#endif  // PSTRAIN_COMMON_JOB_SPEC_PARSE_H_
