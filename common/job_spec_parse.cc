#include "common/job_spec_parse.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json_util.h"
#include "common/status_macros.h"

namespace pstrain {
namespace internal_job_spec {

using nlohmann::json;

absl::Status Invalid(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("job spec: ", path, " ", why));
}

absl::Status RequireObject(const json& value, const std::string& path) {
  if (value.is_object()) return absl::OkStatus();
  return Invalid(path, absl::StrCat("must be an object, got ", DumpJson(value)));
}

absl::Status RequireOneOf(const std::string& value, const std::set<std::string>& allowed, const std::string& path) {
  if (allowed.count(value)) return absl::OkStatus();
  std::string list;
  for (const auto& a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", a);
  return Invalid(path, absl::StrCat("\"", value, "\" is not one of: ", list));
}

namespace {

// Levenshtein distance, for "did you mean" hints.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

absl::Status RejectUnknownKeys(const json& obj, std::initializer_list<const char*> known, const std::string& path) {
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    if (std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) continue;
    std::string nearest;
    size_t best = SIZE_MAX;
    for (const char* k : known) {
      const size_t d = EditDistance(key, k);
      if (d < best) best = d, nearest = k;
    }
    std::string known_list;
    for (const char* k : known) absl::StrAppend(&known_list, known_list.empty() ? "" : ", ", k);
    return Invalid(absl::StrCat(path, ".", key),
                   absl::StrCat("is not a known key; did you mean ", nearest, "? (known: ", known_list, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> IntInRange(const json& obj, const std::string& key, int64_t fallback, int64_t min, int64_t max,
                                   const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  ASSIGN_OR_RETURN(int64_t v, OptionalInt(obj, key, fallback, path));
  if (v < min || v > max) {
    return Invalid(absl::StrCat(path, ".", key), min == 1 && v < 1
                                                     ? std::string("must be positive")
                                                     : absl::StrCat("must be in [", min, ", ", max, "], got ", v));
  }
  return v;
}

absl::StatusOr<std::vector<std::string>> StringList(const json& obj, const std::string& key, const std::string& path) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  const std::string where = absl::StrCat(path, ".", key);
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return Invalid(absl::StrCat(where, "[", i, "]"), absl::StrCat("must be a string, got ", DumpJson((*it)[i])));
      }
      out.push_back((*it)[i].get<std::string>());
    }
  } else {
    return Invalid(where, absl::StrCat("must be a string or a list of strings, got ", DumpJson(*it)));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty()) return Invalid(absl::StrCat(where, "[", i, "]"), "must not be empty");
  }
  return out;
}

absl::StatusOr<InitializerSpec> ParseInitializer(const json& obj, const std::string& key, InitializerSpec spec,
                                                 const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return spec;
  const std::string where = path + "." + key;
  if (it->is_string()) {
    spec = InitializerSpec{it->get<std::string>()};
  } else {
    RETURN_IF_ERROR(RequireObject(*it, where));
    ASSIGN_OR_RETURN(spec.type, OptionalString(*it, "type", "", where));
    InitializerSpec d;
    ASSIGN_OR_RETURN(spec.value, OptionalNumber(*it, "value", d.value, where));
    ASSIGN_OR_RETURN(spec.mean, OptionalNumber(*it, "mean", d.mean, where));
    ASSIGN_OR_RETURN(spec.stddev, OptionalNumber(*it, "stddev", d.stddev, where));
    ASSIGN_OR_RETURN(spec.minval, OptionalNumber(*it, "minval", d.minval, where));
    ASSIGN_OR_RETURN(spec.maxval, OptionalNumber(*it, "maxval", d.maxval, where));
  }
  if (spec.type == "uniform") spec.type = "random_uniform";  // Keras's short name
  RETURN_IF_ERROR(RequireOneOf(spec.type,
                               {"zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal",
                                "glorot_uniform", "he_normal"},
                               where));
  return spec;
}

json InitializerToJson(const InitializerSpec& s) {
  return json{{"type", s.type},     {"value", s.value},   {"mean", s.mean},
              {"stddev", s.stddev}, {"minval", s.minval}, {"maxval", s.maxval}};
}

}  // namespace internal_job_spec
}  // namespace pstrain
