// The one place where nlohmann::json exceptions are caught and turned into absl::Status.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_JSON_UTIL_H_
#define PSTRAIN_COMMON_JSON_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// Parses `text`. On a syntax error returns InvalidArgument naming `what` (e.g. "TF_CONFIG"), the
// line and column of the error and the parser's explanation.
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what);

// Reads and parses a JSON file. NotFound when it cannot be read; InvalidArgument as ParseJson.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// Typed field access for validating parsers. Each returns InvalidArgument naming `path`
// (e.g. "model.layers[2].units") and the expected type when the field has the wrong type.
// The Optional* forms return `fallback` when `key` is absent or null.
absl::StatusOr<double> OptionalNumber(const nlohmann::json& obj, const std::string& key, double fallback,
                                      const std::string& path);
absl::StatusOr<int64_t> OptionalInt(const nlohmann::json& obj, const std::string& key, int64_t fallback,
                                    const std::string& path);
absl::StatusOr<bool> OptionalBool(const nlohmann::json& obj, const std::string& key, bool fallback,
                                  const std::string& path);
absl::StatusOr<std::string> OptionalString(const nlohmann::json& obj, const std::string& key,
                                           const std::string& fallback, const std::string& path);

// Dumps without throwing on invalid UTF-8 (replaced).
std::string DumpJson(const nlohmann::json& value, int indent = -1);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_JSON_UTIL_H_
