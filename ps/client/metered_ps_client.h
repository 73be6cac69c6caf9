// MeteredPsClient: a PsClient that times every call of the client it wraps, by method, into
// pstrain_ps_client_request_duration_seconds{ps, method} (histogram) and counts failures in
// pstrain_ps_client_errors_total{ps, method, code}: the RPC latency a worker or the chief sees,
// whatever transport carries the call (gRPC or the tensor channel).
// Thread-safety: as the wrapped client (every method may be called concurrently).
#ifndef PSTRAIN_PS_CLIENT_METERED_PS_CLIENT_H_
#define PSTRAIN_PS_CLIENT_METERED_PS_CLIENT_H_

#include <memory>
#include <string>

#include "common/metrics/metrics_registry.h"
#include "ps/client/ps_client.h"

namespace pstrain {

class MeteredPsClient : public PsClient {
 public:
  // `metrics` is not owned and must outlive this client; `ps` labels the series ("ps:0").
  MeteredPsClient(std::unique_ptr<PsClient> client, MetricsRegistry* metrics, std::string ps);

  std::string peer() const override { return client_->peer(); }
  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response) override;
  absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) override;
  absl::Status Pull(const PullRequest& request, PullResponse* response) override;
  absl::Status Push(const PushRequest& request, PushResponse* response) override;
  absl::Status PullKeys(const PullKeysRequest& request, PullKeysResponse* response) override;
  absl::Status PushKeys(const PushKeysRequest& request, PushKeysResponse* response) override;
  absl::Status Save(const SaveRequest& request, SaveResponse* response) override;
  absl::Status Restore(const RestoreRequest& request, RestoreResponse* response) override;
  absl::Status GetStats(const PsStatsRequest& request, PsStatsResponse* response) override;
  absl::Status Promote(const PromoteRequest& request, PromoteResponse* response) override {
    return client_->Promote(request, response);
  }
  absl::Status AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response) override {
    return client_->AttachBackup(request, response);
  }
  absl::Status InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response) override {
    return client_->InstallReplica(request, response);
  }
  absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response) override;

 private:
  struct Method {
    Histogram* seconds;
    std::string name;
  };
  Method MakeMethod(const std::string& name);
  template <typename Call>
  absl::Status Timed(const Method& m, Call call);

  const std::unique_ptr<PsClient> client_;
  MetricsRegistry* const metrics_;
  const std::string ps_;
  const Method handshake_, create_shards_, pull_, push_, pull_keys_, push_keys_, save_, restore_, get_stats_, shutdown_;
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_CLIENT_METERED_PS_CLIENT_H_
