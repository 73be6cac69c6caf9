// The unary-gRPC PsTransport: pulls and pushes as PsService's Pull and Push calls on a channel the
// caller shares with its control calls. For networks that pass only HTTP/2 (an L7 proxy, a
// service mesh): the tensor channel is faster (README "The wire"), and is the default.
// Thread-safety: thread-safe (gRPC stubs are).
#ifndef PSTRAIN_PS_TRANSPORT_GRPC_TRANSPORT_H_
#define PSTRAIN_PS_TRANSPORT_GRPC_TRANSPORT_H_

#include <memory>
#include <string>

#include "grpcpp/channel.h"
#include "proto/ps.grpc.pb.h"
#include "ps/transport/ps_transport.h"

namespace pstrain {

class GrpcTransport : public PsTransport {
 public:
  // `peer` prefixes every error ("ps:1 at host:port").
  GrpcTransport(std::shared_ptr<grpc::Channel> channel, std::string peer);

  absl::Status Pull(const PullRequest& request, PullResponse* response, absl::Duration timeout) override;
  absl::Status Push(const PushRequest& request, PushResponse* response, absl::Duration timeout) override;

 private:
  const std::string peer_;
  const std::unique_ptr<PsService::Stub> stub_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_TRANSPORT_GRPC_TRANSPORT_H_
