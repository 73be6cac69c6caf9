// GrpcPsClient: the PsClient of a remote ps task: control calls are blocking unary gRPC calls on
// one channel (message size limits lifted to the 2 GiB protobuf limit); pulls and pushes go over
// the ps's tensor channel on the same port (or gRPC streams, see BulkTransport; calls carrying a
// table's rows then go unary, as the streams carry dense tensors only). Every call
// carries a deadline; a ps that cannot be reached gives UNAVAILABLE, a hung one DEADLINE_EXCEEDED,
// both naming the peer.
// Thread-safety: thread-safe (gRPC channels and stubs are).
#ifndef PSTRAIN_PS_GRPC_PS_CLIENT_H_
#define PSTRAIN_PS_GRPC_PS_CLIENT_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/ps.grpc.pb.h"
#include "ps/grpc_stream_client.h"
#include "ps/ps_client.h"
#include "ps/tensor_channel_client.h"

namespace pstrain {

// How pulls and pushes at or above the stream threshold travel.
enum class BulkTransport {
  kTensorChannel,  // the ps's tensor channel: plain TCP on the ps's port (tensor_channel_client.h)
  kGrpcStream,     // the chunked PullStream / PushStream RPCs, for networks that pass only HTTP/2
};

// kGrpcStream when PSTRAIN_PS_TRANSPORT=grpc, else kTensorChannel (other values than "grpc" and
// "tensor_channel" are reported on stderr once).
BulkTransport BulkTransportFromEnv();

class GrpcPsClient : public PsClient {
 public:
  // `address` "host:port"; `peer_name` e.g. "ps:1" (messages say "ps:1 at host:port");
  // `deadline` bounds each call, and must exceed the sync timeout for sync pushes and pulls.
  GrpcPsClient(const std::string& address, const std::string& peer_name, absl::Duration deadline);

  // Pulls and pushes whose tensors total at least `bytes` go over the bulk transport; smaller ones
  // are unary gRPC calls (0 sends everything over the bulk transport, above kMaxMessageBytes
  // nothing). Default: 0 with the tensor channel (it beats a unary call at every size),
  // kDefaultStreamThresholdBytes with gRPC streams. A pull of shards whose size this client has not
  // seen yet uses the bulk transport.
  void set_stream_threshold_bytes(int64_t bytes) { stream_threshold_bytes_ = bytes; }
  // Default BulkTransportFromEnv(). Call before the client is shared between threads.
  void set_bulk_transport(BulkTransport transport) { bulk_transport_ = transport; }

  std::string peer() const override { return peer_; }
  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response) override;
  absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) override;
  absl::Status Pull(const PullRequest& request, PullResponse* response) override;
  absl::Status Push(const PushRequest& request, PushResponse* response) override;
  absl::Status Save(const SaveRequest& request, SaveResponse* response) override;
  absl::Status Restore(const RestoreRequest& request, RestoreResponse* response) override;
  absl::Status GetStats(const PsStatsRequest& request, PsStatsResponse* response) override;
  // Waits at most 3 s (less when the client's deadline is shorter): a failing job must not hang.
  absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response) override;

 private:
  void Prepare(grpc::ClientContext* context) const;
  // One blocking unary call of `method` with the client's deadline, its status naming the peer.
  template <typename Request, typename Response>
  absl::Status Unary(grpc::Status (PsService::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                     const Request& request, Response* response);
  // Over the bulk transport (bulk_transport_).
  absl::Status PullInBulk(const PullRequest& request, PullResponse* response);
  absl::Status PushInBulk(const PushRequest& request, PushResponse* response);
  // Whether a pull of these shards goes over the bulk transport: their sizes as last seen
  // (unknown: it does), and only when the transport carries table rows (BulkCarries).
  bool PullGoesInBulk(const PullRequest& request) const;
  // Whether the bulk transport carries a call with `sparse_entries` sparse entries (the tensor
  // channel does; the gRPC streams do not, so such calls go unary).
  bool BulkCarries(int sparse_entries) const;
  void RememberSizes(const PullResponse& response);

  const std::string peer_;
  const absl::Duration deadline_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<PsService::Stub> stub_;
  PsStreamClient streams_;
  TensorChannelClient tensor_channel_;
  BulkTransport bulk_transport_;
  std::atomic<int64_t> stream_threshold_bytes_{-1};  // -1: the transport's default
  // The threshold in force.
  int64_t StreamThreshold() const;
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> shard_bytes_ ABSL_GUARDED_BY(mu_);  // sizes seen in pulls
};

// A GrpcPsClient with a 5-minute per-call deadline.
std::unique_ptr<PsClient> NewGrpcPsClient(const std::string& address, const std::string& peer_name);

}  // namespace pstrain

#endif  // PSTRAIN_PS_GRPC_PS_CLIENT_H_
