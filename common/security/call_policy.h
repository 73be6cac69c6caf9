// Who may call what, by the caller's task type (from the cluster certificate it presented): the
// chief may call anything; workers (and ps tasks, which forward updates to backups) pull and push;
// the evaluator only reads. Every cluster member may ask any task's health, handshake, status and
// ps stats. One table serves the gRPC services and the tensor channel, whose pulls and pushes are
// named like PsService's ("/pstrain.PsService/Pull").
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_SECURITY_CALL_POLICY_H_
#define PSTRAIN_COMMON_SECURITY_CALL_POLICY_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// Where servers say which calls and connections they refused, one line each (empty: std::cerr).
using SecurityLog = std::function<void(const std::string& line)>;

inline constexpr char kPsPullMethod[] = "/pstrain.PsService/Pull";
inline constexpr char kPsPushMethod[] = "/pstrain.PsService/Push";

// OK when the task `caller` ("worker:0", as in its certificate's common name) may call `method`
// (a gRPC method path, "/package.Service/Method"); PermissionDenied naming the caller, the call and
// who may make it otherwise. A caller that is not a task of the cluster ("", "admin") may call
// nothing. Methods the table does not list are the chief's.
absl::Status AuthorizeCall(absl::string_view caller, absl::string_view method);

// "pstrain.PsService/CreateShards" for "/pstrain.PsService/CreateShards" (for messages).
std::string MethodName(absl::string_view method);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_SECURITY_CALL_POLICY_H_
