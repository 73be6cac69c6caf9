// JsonFields: reads the fields of one JSON object for a validating parser (job specs and anything
// a user writes as JSON). Each read names its key, type, default and valid range right where the
// field is parsed, so adding a field is one line that also makes the key known; NoUnknownKeys()
// then refuses any key no read asked for, naming the nearest known one ("optimiser": did you mean
// "optimizer"?). Messages name the field's path ("model.layers[2].units") and quote bounded
// excerpts of bad values.
//
//   JsonFields f(obj, "optimizer", "job spec: ");
//   ASSIGN_OR_RETURN(spec.beta_1, f.Number("beta_1", 0.9, NumberBetween(0, false, 1, true, "(...)")));
//   RETURN_IF_ERROR(f.NoUnknownKeys());
//
// Thread-safety: one reader per thread; the object must outlive it.
#ifndef PSTRAIN_COMMON_CONFIG_JSON_FIELDS_H_
#define PSTRAIN_COMMON_CONFIG_JSON_FIELDS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/value_range.h"
#include "nlohmann/json.hpp"

namespace pstrain {

class JsonFields {
 public:
  // `path` names the object in messages ("" for the document's top level); `prefix` starts every
  // message ("job spec: "). REQUIRES: `obj` outlives the reader.
  JsonFields(const nlohmann::json& obj, std::string path, std::string prefix);

  // InvalidArgument (prefix + path) unless the value is an object; use before reading fields.
  static absl::Status RequireObject(const nlohmann::json& value, const std::string& path, const std::string& prefix);

  // Typed reads: `fallback` when the key is absent or null; InvalidArgument naming the field for
  // the wrong type, a value outside `range` (integers are int64, numbers finite), or a string not
  // in `one_of` (when non-empty; the message suggests the nearest allowed value).
  absl::StatusOr<int64_t> Int(const std::string& key, int64_t fallback, const IntRange& range);
  absl::StatusOr<double> Number(const std::string& key, double fallback, const NumberRange& range);
  absl::StatusOr<bool> Bool(const std::string& key, bool fallback);
  absl::StatusOr<std::string> String(const std::string& key, const std::string& fallback,
                                     const std::vector<std::string>& one_of = {});
  // Lists (absent or null: empty), each entry in range, at most `max_size` entries.
  absl::StatusOr<std::vector<int64_t>> IntList(const std::string& key, const IntRange& each, size_t max_size);
  absl::StatusOr<std::vector<double>> NumberList(const std::string& key, const NumberRange& each, size_t max_size);
  // A string or a list of strings (absent or null: empty), each non-empty, at most `max_size`.
  absl::StatusOr<std::vector<std::string>> StringList(const std::string& key, size_t max_size);
  // A field the caller parses itself (a sub-object, a number-or-object, ...): declares the key
  // known and returns it, or nullptr when absent or null.
  const nlohmann::json* Find(const std::string& key);

  // InvalidArgument for the first key (in document order) that no read asked for.
  absl::Status NoUnknownKeys() const;

  // "path.key" (or "key" at the top level), for messages about a field.
  std::string Where(const std::string& key) const;
  // InvalidArgument "<prefix><path.key> <why>".
  absl::Status Invalid(const std::string& key, const std::string& why) const;

 private:
  // The list at `key` (nullptr when absent or null); InvalidArgument when it is not a list of at
  // most `max_size` entries (`what`: "integers", "numbers").
  absl::StatusOr<const nlohmann::json*> List(const std::string& key, const char* what, size_t max_size);

  const nlohmann::json& obj_;
  const std::string path_;
  const std::string prefix_;
  std::set<std::string> known_;
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_JSON_FIELDS_H_
