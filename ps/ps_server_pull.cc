// PsServer's pull path: waiting for versions without blocking, then answering with the values
// (unary) or pooled snapshots (streaming). See ps_server.h.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ps/parked_call.h"
#include "ps/ps_server.h"

namespace pstrain {

void PsServer::WhenPullReady(const PullRequest* request,
                             std::function<absl::Status(const std::vector<std::shared_ptr<Shard>>&)> ready,
                             DoneCallback done) {
  absl::StatusOr<std::vector<std::shared_ptr<Shard>>> shards =
      Lookup({request->shard_names().begin(), request->shard_names().end()});
  if (!shards.ok()) return done(shards.status());
  int64_t bytes = 0;
  for (const auto& s : *shards) bytes += static_cast<int64_t>(s->num_bytes());
  if (bytes > kMaxMessageBytes) {
    return done(absl::InvalidArgumentError(absl::StrCat("pull of ", shards->size(), " shards (", bytes,
                                                        " bytes) exceeds the 2 GiB message limit; pull fewer "
                                                        "shards per call")));
  }
  std::vector<std::shared_ptr<Shard>> lagging;
  for (const auto& s : *shards) {
    if (s->version() < request->min_version()) lagging.push_back(s);
  }
  if (lagging.empty()) return done(ready(*shards));
  const int64_t min_version = request->min_version();
  ParkedCall::Handlers h;
  h.on_success = [shards = *shards, ready = std::move(ready)](const std::vector<int64_t>&) { return ready(shards); };
  h.done = std::move(done);
  h.on_shutdown = [this] { return UnavailableStatus(); };
  const absl::Duration timeout = MaxSyncTimeout(lagging);
  h.describe_timeout = [lagging, min_version, timeout] {
    std::vector<std::string> parts;
    for (const auto& s : lagging) {
      const int64_t v = s->version();
      if (v >= min_version) continue;
      std::string part = absl::StrCat("shard ", s->name(), " is at version ", v);
      if (s->options().mode == UPDATE_SYNC) {
        absl::StrAppend(&part, " (step ", v, " is missing ",
                        MissingWorkersText(s->MissingWorkers(v), s->options().num_workers), ")");
      }
      parts.push_back(part);
    }
    return absl::DeadlineExceededError(absl::StrCat("pull timed out after ", absl::FormatDuration(timeout),
                                                    " waiting for version ", min_version, ": ",
                                                    absl::StrJoin(parts, "; ")));
  };
  auto call = ParkedCall::Create(static_cast<int>(lagging.size()), std::move(h));
  call->Arm(&timer_, absl::Now() + timeout);
  for (size_t i = 0; i < lagging.size(); ++i) {
    lagging[i]->WhenVersionAtLeast(min_version, [call, i](absl::Status s) {
      if (s.ok()) {
        call->PartDone(static_cast<int>(i), int64_t{0});
      } else {
        call->PartDone(static_cast<int>(i), s);
      }
    });
  }
}

void PsServer::Pull(const PullRequest* request, PullResponse* response, DoneCallback done) {
  WhenPullReady(
      request,
      [response](const std::vector<std::shared_ptr<Shard>>& shards) {
        response->clear_values();
        for (const auto& s : shards) s->Read(response->add_values());
        return absl::OkStatus();
      },
      std::move(done));
}

void PsServer::PullSnapshots(const PullRequest* request, PulledCallback done) {
  auto pulled = std::make_shared<std::vector<PulledTensor>>();
  WhenPullReady(
      request,
      [pulled](const std::vector<std::shared_ptr<Shard>>& shards) {
        for (const auto& s : shards) {
          PulledTensor t;
          t.name = s->name();
          t.shape = s->shape();
          t.values = s->SnapshotValues(&t.version);
          pulled->push_back(std::move(t));
        }
        return absl::OkStatus();
      },
      [pulled, done = std::move(done)](absl::Status s) { done(std::move(s), std::move(*pulled)); });
}

}  // namespace pstrain
