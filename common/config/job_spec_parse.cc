#include "common/config/job_spec_parse.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace internal_job_spec {

using nlohmann::json;

absl::Status Invalid(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(kPrefix, path, " ", why));
}

absl::StatusOr<InitializerSpec> ParseInitializer(JsonFields& parent, const std::string& key, InitializerSpec spec) {
  const json* value = parent.Find(key);
  if (value == nullptr) return spec;
  const std::string where = parent.Where(key);
  const std::vector<std::string> types = {"zeros",         "ones",          "constant",       "random_normal",
                                          "random_uniform", "uniform",       "truncated_normal", "glorot_uniform",
                                          "glorot_normal", "he_normal",     "he_uniform",     "lecun_normal",
                                          "lecun_uniform"};
  if (value->is_string()) {
    spec = InitializerSpec{value->get<std::string>()};
    if (std::find(types.begin(), types.end(), spec.type) == types.end()) {
      return Invalid(where, NotOneOfMessage(spec.type, types));
    }
  } else {
    RETURN_IF_ERROR(JsonFields::RequireObject(*value, where, kPrefix));
    JsonFields f(*value, where, kPrefix);
    InitializerSpec d;
    ASSIGN_OR_RETURN(spec.type, f.String("type", "", types));
    ASSIGN_OR_RETURN(spec.value, f.Number("value", d.value, AnyNumber()));
    ASSIGN_OR_RETURN(spec.mean, f.Number("mean", d.mean, AnyNumber()));
    ASSIGN_OR_RETURN(spec.stddev, f.Number("stddev", d.stddev, NonNegativeNumber("(as Keras's RandomNormal)")));
    ASSIGN_OR_RETURN(spec.minval, f.Number("minval", d.minval, AnyNumber()));
    ASSIGN_OR_RETURN(spec.maxval, f.Number("maxval", d.maxval, AnyNumber()));
    RETURN_IF_ERROR(f.NoUnknownKeys());
    if (spec.minval > spec.maxval) {
      return Invalid(where, absl::StrCat("minval ", spec.minval, " is larger than maxval ", spec.maxval));
    }
  }
  if (spec.type == "uniform") spec.type = "random_uniform";  // Keras's short name
  return spec;
}

json InitializerToJson(const InitializerSpec& s) {
  return json{{"type", s.type},     {"value", s.value},   {"mean", s.mean},
              {"stddev", s.stddev}, {"minval", s.minval}, {"maxval", s.maxval}};
}

}  // namespace internal_job_spec
}  // namespace pstrain
