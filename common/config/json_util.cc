#include "common/config/json_util.h"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/platform/file_rules.h"

namespace pstrain {
namespace {

// Line and column (1-based) of byte offset `pos` in `text`.
std::pair<int, int> LineColumn(absl::string_view text, size_t pos) {
  int line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::string Where(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

// Byte offset where arrays and objects first nest deeper than kMaxJsonDepth, or npos. Brackets
// inside strings do not count; malformed text is left to the parser.
size_t TooDeepAt(absl::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::string_view::npos;
}

// Appends an excerpt of `v` to `out` while `out` is shorter than `limit`; false once cut.
bool AppendExcerpt(const nlohmann::json& v, size_t limit, std::string* out) {
  if (out->size() >= limit) return false;
  if (v.is_array() || v.is_object()) {
    const bool array = v.is_array();
    out->push_back(array ? '[' : '{');
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out->push_back(',');
      first = false;
      if (!array) {
        *out += QuotedExcerpt(it.key(), limit);
        out->push_back(':');
      }
      if (!AppendExcerpt(*it, limit, out)) return false;
    }
    out->push_back(array ? ']' : '}');
    return out->size() <= limit;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    *out += QuotedExcerpt(s, limit - std::min(limit, out->size()) + 2);
    return out->size() <= limit;
  }
  *out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out->size() <= limit;
}

}  // namespace

std::string QuotedExcerpt(absl::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return absl::StrCat("\"", text, "\"");
  return absl::StrCat("\"", text.substr(0, max_chars), "...\"");
}

std::string JsonExcerpt(const nlohmann::json& value, size_t max_chars) {
  std::string out;
  if (AppendExcerpt(value, max_chars, &out)) return out;
  if (out.size() > max_chars) out.resize(max_chars);
  return out + "...";
}

absl::StatusOr<int64_t> JsonToInt64(const nlohmann::json& value, const std::string& path) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " = ", u, " is out of range (at most ", INT64_MAX, ")"));
    }
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
    if (std::floor(d) == d && std::isfinite(d)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " = ", d, " is out of range"));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(path, " must be an integer, got ", JsonExcerpt(value)));
}

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what) {
  if (const size_t at = TooDeepAt(text); at != absl::string_view::npos) {
    auto [line, col] = LineColumn(text, at);
    return absl::InvalidArgumentError(absl::StrCat(what, " nests arrays and objects deeper than ", kMaxJsonDepth,
                                                   " levels (at line ", line, ", column ", col, ", byte ", at,
                                                   "); pstrain's documents need a few levels"));
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const size_t pos = e.byte > 0 ? e.byte - 1 : 0;
    auto [line, col] = LineColumn(text, pos);
    std::string msg = e.what();
    const size_t cut = msg.find(": ");  // drop nlohmann's "[json.exception.parse_error.101] " prefix
    if (msg.rfind("[json.exception", 0) == 0 && cut != std::string::npos) msg = msg.substr(cut + 2);
    // nlohmann quotes the whole last token ("last read: '...'"), which may be a huge string.
    constexpr size_t kMaxDetail = 200;
    if (msg.size() > kMaxDetail) msg = msg.substr(0, kMaxDetail) + "...";
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON: error at line ", line, ", column ",
                                                   col, " (byte ", pos, "): ", msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON: ", QuotedExcerpt(e.what(), 200)));
  }
}

absl::StatusOr<std::string> ReadJsonText(const std::string& path) {
  // file_rules.h: a regular file (a FIFO or /dev/zero is refused, never read), at most 256 MiB.
  return ReadFileWithRules(path, kJsonDocumentFile);
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadJsonText(path);
  if (!text.ok()) return text.status();
  return ParseJson(*text, path);
}

absl::StatusOr<double> OptionalNumber(const nlohmann::json& obj, const std::string& key, double fallback,
                                      const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be a number, got ", JsonExcerpt(*it)));
  }
  const double v = it->get<double>();
  if (!std::isfinite(v)) return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be a finite number"));
  return v;
}

absl::StatusOr<int64_t> OptionalInt(const nlohmann::json& obj, const std::string& key, int64_t fallback,
                                    const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  return JsonToInt64(*it, Where(path, key));
}

absl::StatusOr<bool> OptionalBool(const nlohmann::json& obj, const std::string& key, bool fallback,
                                  const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be true or false, got ", JsonExcerpt(*it)));
  }
  return it->get<bool>();
}

absl::StatusOr<std::string> OptionalString(const nlohmann::json& obj, const std::string& key,
                                           const std::string& fallback, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be a string, got ", JsonExcerpt(*it)));
  }
  return it->get<std::string>();
}

std::string DumpJson(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pstrain
