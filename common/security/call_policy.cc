#include "common/security/call_policy.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/config/cluster_spec.h"

namespace pstrain {
namespace {

struct Rule {
  const char* method;
  std::vector<const char*> types;  // task types that may call it
};

const std::vector<Rule>& Rules() {
  static const auto* rules = new std::vector<Rule>{
      {"/pstrain.PsService/Handshake", {kChief, kWorker, kPs, kEvaluator}},
      {"/pstrain.PsService/GetStats", {kChief, kWorker, kPs, kEvaluator}},
      {kPsPullMethod, {kChief, kWorker, kPs, kEvaluator}},
      {kPsPushMethod, {kChief, kWorker, kPs}},
      // ps_replicas: a primary sends a returned backup its shards' state.
      {"/pstrain.PsService/InstallReplica", {kChief, kPs}},
      {"/pstrain.WorkerService/Handshake", {kChief, kWorker, kPs, kEvaluator}},
      {"/pstrain.ChiefService/Handshake", {kChief, kWorker, kPs, kEvaluator}},
      {"/pstrain.ChiefService/GetStatus", {kChief, kWorker, kPs, kEvaluator}},
      {"/grpc.health.v1.Health/Check", {kChief, kWorker, kPs, kEvaluator}},
      {"/grpc.health.v1.Health/Watch", {kChief, kWorker, kPs, kEvaluator}},
  };
  return *rules;
}

// The task type of "type:index", or "" when `caller` is not of that form.
absl::string_view TaskType(absl::string_view caller) {
  const size_t colon = caller.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == caller.size()) return "";
  for (char c : caller.substr(colon + 1)) {
    if (c < '0' || c > '9') return "";
  }
  const absl::string_view type = caller.substr(0, colon);
  for (absl::string_view known : {kChief, kWorker, kPs, kEvaluator}) {
    if (type == known) return type;
  }
  return "";
}

}  // namespace

std::string MethodName(absl::string_view method) { return std::string(absl::StripPrefix(method, "/")); }

absl::Status AuthorizeCall(absl::string_view caller, absl::string_view method) {
  std::vector<const char*> allowed = {kChief};
  for (const Rule& r : Rules()) {
    if (method == r.method) allowed = r.types;
  }
  const absl::string_view type = TaskType(caller);
  for (const char* t : allowed) {
    if (!type.empty() && type == t) return absl::OkStatus();
  }
  const std::string who = caller.empty() ? "a caller without a task certificate" : std::string(caller);
  return absl::PermissionDeniedError(
      absl::StrCat(who, " may not call ", MethodName(method), " (only ", absl::StrJoin(allowed, ", "), " may)"));
}

}  // namespace pstrain
