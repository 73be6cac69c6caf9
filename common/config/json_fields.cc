#include "common/config/json_fields.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config/json_util.h"
#include "common/platform/status_macros.h"

namespace pstrain {

JsonFields::JsonFields(const nlohmann::json& obj, std::string path, std::string prefix)
    : obj_(obj), path_(std::move(path)), prefix_(std::move(prefix)) {}

absl::Status JsonFields::RequireObject(const nlohmann::json& value, const std::string& path,
                                       const std::string& prefix) {
  if (value.is_object()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(prefix, path.empty() ? "the document" : path, " must be an object, got ", JsonExcerpt(value)));
}

std::string JsonFields::Where(const std::string& key) const {
  return path_.empty() ? key : absl::StrCat(path_, ".", key);
}

absl::Status JsonFields::Invalid(const std::string& key, const std::string& why) const {
  return absl::InvalidArgumentError(absl::StrCat(prefix_, Where(key), " ", why));
}

const nlohmann::json* JsonFields::Find(const std::string& key) {
  known_.insert(key);
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::StatusOr<int64_t> JsonFields::Int(const std::string& key, int64_t fallback, const IntRange& range) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return fallback;
  absl::StatusOr<int64_t> n = JsonToInt64(*v, prefix_ + Where(key));
  if (!n.ok()) return n.status();
  RETURN_IF_ERROR(CheckInRange(*n, range, prefix_ + Where(key)));
  return *n;
}

absl::StatusOr<double> JsonFields::Number(const std::string& key, double fallback, const NumberRange& range) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) return Invalid(key, absl::StrCat("must be a number, got ", JsonExcerpt(*v)));
  const double d = v->get<double>();
  RETURN_IF_ERROR(CheckInRange(d, range, prefix_ + Where(key)));
  return d;
}

absl::StatusOr<bool> JsonFields::Bool(const std::string& key, bool fallback) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return Invalid(key, absl::StrCat("must be true or false, got ", JsonExcerpt(*v)));
  return v->get<bool>();
}

absl::StatusOr<std::string> JsonFields::String(const std::string& key, const std::string& fallback,
                                               const std::vector<std::string>& one_of) {
  const nlohmann::json* v = Find(key);
  std::string s = fallback;
  if (v != nullptr) {
    if (!v->is_string()) return Invalid(key, absl::StrCat("must be a string, got ", JsonExcerpt(*v)));
    s = v->get<std::string>();
  }
  if (!one_of.empty() && std::find(one_of.begin(), one_of.end(), s) == one_of.end()) {
    return Invalid(key, NotOneOfMessage(s, one_of));
  }
  return s;
}

absl::StatusOr<const nlohmann::json*> JsonFields::List(const std::string& key, const char* what, size_t max_size) {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return v;
  if (!v->is_array()) return Invalid(key, absl::StrCat("must be a list of ", what, ", got ", JsonExcerpt(*v)));
  if (v->size() > max_size) return Invalid(key, absl::StrCat("has ", v->size(), " entries, at most ", max_size));
  return v;
}

absl::StatusOr<std::vector<int64_t>> JsonFields::IntList(const std::string& key, const IntRange& each,
                                                         size_t max_size) {
  std::vector<int64_t> out;
  ASSIGN_OR_RETURN(const nlohmann::json* v, List(key, "integers", max_size));
  if (v == nullptr) return out;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string where = absl::StrCat(prefix_, Where(key), "[", i, "]");
    ASSIGN_OR_RETURN(int64_t n, JsonToInt64((*v)[i], where));
    RETURN_IF_ERROR(CheckInRange(n, each, where));
    out.push_back(n);
  }
  return out;
}

absl::StatusOr<std::vector<double>> JsonFields::NumberList(const std::string& key, const NumberRange& each,
                                                           size_t max_size) {
  std::vector<double> out;
  ASSIGN_OR_RETURN(const nlohmann::json* v, List(key, "numbers", max_size));
  if (v == nullptr) return out;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string where = absl::StrCat(prefix_, Where(key), "[", i, "]");
    if (!(*v)[i].is_number()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " must be a number, got ", JsonExcerpt((*v)[i])));
    }
    const double d = (*v)[i].get<double>();
    RETURN_IF_ERROR(CheckInRange(d, each, where));
    out.push_back(d);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> JsonFields::StringList(const std::string& key, size_t max_size) {
  std::vector<std::string> out;
  const nlohmann::json* one = Find(key);
  if (one != nullptr && one->is_string()) {
    if (one->get_ref<const std::string&>().empty()) return Invalid(key, "must not be empty");
    out.push_back(one->get<std::string>());
    return out;
  }
  ASSIGN_OR_RETURN(const nlohmann::json* v, List(key, "strings", max_size));
  if (v == nullptr) return out;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string where = absl::StrCat(Where(key), "[", i, "]");
    if (!(*v)[i].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix_, where, " must be a string, got ", JsonExcerpt((*v)[i])));
    }
    if ((*v)[i].get_ref<const std::string&>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix_, where, " must not be empty"));
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

absl::Status JsonFields::NoUnknownKeys() const {
  if (!obj_.is_object()) return absl::OkStatus();
  const std::vector<std::string> known(known_.begin(), known_.end());
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (known_.count(it.key()) > 0) continue;
    std::string message =
        absl::StrCat(prefix_, "unknown key ", QuotedExcerpt(it.key()), " in ", path_.empty() ? "the top level" : path_);
    const std::string near = NearestName(it.key(), known);
    if (!near.empty()) absl::StrAppend(&message, "; did you mean \"", near, "\"?");
    absl::StrAppend(&message, " (known keys: ", absl::StrJoin(known, ", "), ")");
    return absl::InvalidArgumentError(message);
  }
  return absl::OkStatus();
}

}  // namespace pstrain
