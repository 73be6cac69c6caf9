#include "ps/client/metered_ps_client.h"

#include <chrono>

#include "absl/status/status.h"

namespace pstrain {

MeteredPsClient::MeteredPsClient(std::unique_ptr<PsClient> client, MetricsRegistry* metrics, std::string ps)
    : client_(std::move(client)),
      metrics_(metrics),
      ps_(std::move(ps)),
      handshake_(MakeMethod("Handshake")),
      create_shards_(MakeMethod("CreateShards")),
      pull_(MakeMethod("Pull")),
      push_(MakeMethod("Push")),
      pull_keys_(MakeMethod("PullKeys")),
      push_keys_(MakeMethod("PushKeys")),
      save_(MakeMethod("Save")),
      restore_(MakeMethod("Restore")),
      get_stats_(MakeMethod("GetStats")),
      shutdown_(MakeMethod("Shutdown")) {}

MeteredPsClient::Method MeteredPsClient::MakeMethod(const std::string& name) {
  return {metrics_->GetHistogram("pstrain_ps_client_request_duration_seconds",
                                 "Time a call to a ps took, as its caller saw it (both transports)", LatencyBuckets(),
                                 {{"ps", ps_}, {"method", name}}),
          name};
}

template <typename Call>
absl::Status MeteredPsClient::Timed(const Method& m, Call call) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = call();
  m.seconds->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!s.ok()) {
    metrics_
        ->GetCounter("pstrain_ps_client_errors_total", "Calls to a ps that failed, by status code",
                     {{"ps", ps_}, {"method", m.name}, {"code", absl::StatusCodeToString(s.code())}})
        ->Increment();
  }
  return s;
}

absl::Status MeteredPsClient::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  return Timed(handshake_, [&] { return client_->Handshake(request, response); });
}
absl::Status MeteredPsClient::CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response) {
  return Timed(create_shards_, [&] { return client_->CreateShards(request, response); });
}
absl::Status MeteredPsClient::Pull(const PullRequest& request, PullResponse* response) {
  return Timed(pull_, [&] { return client_->Pull(request, response); });
}
absl::Status MeteredPsClient::Push(const PushRequest& request, PushResponse* response) {
  return Timed(push_, [&] { return client_->Push(request, response); });
}
absl::Status MeteredPsClient::PullKeys(const PullKeysRequest& request, PullKeysResponse* response) {
  return Timed(pull_keys_, [&] { return client_->PullKeys(request, response); });
}

absl::Status MeteredPsClient::PushKeys(const PushKeysRequest& request, PushKeysResponse* response) {
  return Timed(push_keys_, [&] { return client_->PushKeys(request, response); });
}

absl::Status MeteredPsClient::Save(const SaveRequest& request, SaveResponse* response) {
  return Timed(save_, [&] { return client_->Save(request, response); });
}
absl::Status MeteredPsClient::Restore(const RestoreRequest& request, RestoreResponse* response) {
  return Timed(restore_, [&] { return client_->Restore(request, response); });
}
absl::Status MeteredPsClient::GetStats(const PsStatsRequest& request, PsStatsResponse* response) {
  return Timed(get_stats_, [&] { return client_->GetStats(request, response); });
}
absl::Status MeteredPsClient::Shutdown(const ShutdownRequest& request, ShutdownResponse* response) {
  return Timed(shutdown_, [&] { return client_->Shutdown(request, response); });
}

}  // namespace pstrain
