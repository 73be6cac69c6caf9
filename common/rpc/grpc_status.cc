#include "common/rpc/grpc_status.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& s, const std::string& peer) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), absl::StrCat(peer, ": ", s.error_message()));
}

}  // namespace pstrain
