#include "common/json_util.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

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

}  // namespace

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view what) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const size_t pos = e.byte > 0 ? e.byte - 1 : 0;
    auto [line, col] = LineColumn(text, pos);
    std::string msg = e.what();
    const size_t cut = msg.find(": ");  // drop nlohmann's "[json.exception.parse_error.101] " prefix
    if (msg.rfind("[json.exception", 0) == 0 && cut != std::string::npos) msg = msg.substr(cut + 2);
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON: error at line ", line, ", column ",
                                                   col, " (byte ", pos, "): ", msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid JSON: ", e.what()));
  }
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read JSON file ", path, ": no such file or not readable"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseJson(ss.str(), path);
}

absl::StatusOr<double> OptionalNumber(const nlohmann::json& obj, const std::string& key, double fallback,
                                      const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be a number, got ", it->dump()));
  }
  return it->get<double>();
}

absl::StatusOr<int64_t> OptionalInt(const nlohmann::json& obj, const std::string& key, int64_t fallback,
                                    const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be an integer, got ", it->dump()));
}

absl::StatusOr<bool> OptionalBool(const nlohmann::json& obj, const std::string& key, bool fallback,
                                  const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be true or false, got ", it->dump()));
  }
  return it->get<bool>();
}

absl::StatusOr<std::string> OptionalString(const nlohmann::json& obj, const std::string& key,
                                           const std::string& fallback, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, key), " must be a string, got ", it->dump()));
  }
  return it->get<std::string>();
}

std::string DumpJson(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pstrain
