// The one place where nlohmann::json exceptions are caught and turned into absl::Status, and the
// one entry for parsing JSON from users, files and peers: documents are bounded in size and in
// nesting depth before nlohmann's recursive code sees them, and messages quote bounded excerpts,
// never a whole value.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_CONFIG_JSON_UTIL_H_
#define PSTRAIN_COMMON_CONFIG_JSON_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace pstrain {

// Deepest nesting of arrays and objects a document may have (TF_CONFIG and job specs need 5).
inline constexpr int kMaxJsonDepth = 64;
// Largest JSON document read from a file (checkpoint indexes of many shards stay far below).
inline constexpr int64_t kMaxJsonFileBytes = int64_t{256} << 20;

// Parses `text`. On a syntax error returns InvalidArgument naming `what` (e.g. "TF_CONFIG"), the
// line and column of the error and the parser's explanation (bounded); InvalidArgument too when
// arrays and objects nest deeper than kMaxJsonDepth, checked before parsing.
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what);

// Reads (ReadJsonText) and parses (ParseJson) a JSON file, with their errors.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// The text of a JSON file under file_rules.h's kJsonDocumentFile rules (kMaxJsonFileBytes): a
// regular file, symlinks followed. NotFound when missing; InvalidArgument for a directory, FIFO or
// device (refused without blocking); OutOfRange for a larger file (reading stops there).
absl::StatusOr<std::string> ReadJsonText(const std::string& path);

// At most `max_chars` characters of `value` as JSON, "..." marking a cut; cost bounded by
// `max_chars`, whatever the size of `value`. For quoting values in error messages.
std::string JsonExcerpt(const nlohmann::json& value, size_t max_chars = 60);
// `text` in double quotes, cut to `max_chars` bytes with "..." (e.g. a user's string in a message).
std::string QuotedExcerpt(absl::string_view text, size_t max_chars = 60);

// The value of a JSON integer (or of a float with an integral value) as int64. InvalidArgument
// naming `path` when it is not an integer or does not fit int64 (18446744073709551615 is reported
// as itself, never as -1).
absl::StatusOr<int64_t> JsonToInt64(const nlohmann::json& value, const std::string& path);

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

#endif  // PSTRAIN_COMMON_CONFIG_JSON_UTIL_H_
