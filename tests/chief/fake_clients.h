// Fakes of PsClient and WorkerClient for the chief's unit tests: in-process, scriptable failures,
// and counters the tests assert on.
// Thread-safety: every method may be called from any thread.
#ifndef PSTRAIN_TESTS_CHIEF_FAKE_CLIENTS_H_
#define PSTRAIN_TESTS_CHIEF_FAKE_CLIENTS_H_

#include <atomic>
#include <functional>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/wire/protocol_version.h"
#include "ps/client/local_ps_client.h"
#include "ps/client/ps_client.h"
#include "ps/store/ps_server.h"
#include "worker/client/worker_client.h"

namespace pstrain {

// A ps that records the chief's calls and can be "down" or restarted (a fresh process without
// shards); shards and checkpoints are real (an in-process PsServer), so checkpoints verify as in
// production.
class FakePs : public PsClient {
 public:
  explicit FakePs(int index) : index_(index), process_(std::make_shared<Process>(index)) {}
  std::string peer() const override { return absl::StrCat("ps:", index_, " at fake"); }

  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* r) override {
    if (down) return absl::UnavailableError("connection refused");
    return process()->local.Handshake(request, r);
  }
  absl::Status CreateShards(const CreateShardsRequest& r, CreateShardsResponse* out) override {
    {
      absl::MutexLock lock(&mu);
      created.push_back(r);
    }
    return process()->local.CreateShards(r, out);
  }
  absl::Status Pull(const PullRequest& r, PullResponse* out) override { return process()->local.Pull(r, out); }
  absl::Status Push(const PushRequest& r, PushResponse* out) override { return process()->local.Push(r, out); }
  absl::Status Save(const SaveRequest& r, SaveResponse* out) override {
    if (down) return absl::UnavailableError("connection refused");
    {
      absl::MutexLock lock(&mu);
      saved.push_back(r);
    }
    return process()->local.Save(r, out);
  }
  absl::Status Restore(const RestoreRequest& r, RestoreResponse* out) override {
    {
      absl::MutexLock lock(&mu);
      restored.push_back(r);
    }
    return process()->local.Restore(r, out);
  }
  absl::Status GetStats(const PsStatsRequest& r, PsStatsResponse* out) override {
    if (down) return absl::UnavailableError("connection refused");
    return process()->local.GetStats(r, out);
  }
  // A new process at the same address: no shards until the chief creates or restores them.
  void Restart() {
    auto fresh = std::make_shared<Process>(index_);
    absl::MutexLock lock(&process_mu_);
    process_ = std::move(fresh);
  }

  std::atomic<bool> down{false};
  absl::Mutex mu;
  std::vector<CreateShardsRequest> created ABSL_GUARDED_BY(mu);
  std::vector<RestoreRequest> restored ABSL_GUARDED_BY(mu);
  std::vector<SaveRequest> saved ABSL_GUARDED_BY(mu);

 private:
  struct Process {
    explicit Process(int index) : server(Options(index)), local(&server) {}
    PsServer server;
    LocalPsClient local;
  };
  static PsServer::Options Options(int index) {
    PsServer::Options o;
    o.task = absl::StrCat("ps:", index);
    return o;
  }
  std::shared_ptr<Process> process() {
    absl::MutexLock lock(&process_mu_);
    return process_;
  }
  const int index_;
  absl::Mutex process_mu_;
  std::shared_ptr<Process> process_ ABSL_GUARDED_BY(process_mu_);
};

// Each worker step trains batch_size / num_workers examples with a loss that falls with the step;
// evaluation of shard i of n covers test examples [i*T/n, (i+1)*T/n) of a test set of T.
class FakeWorker : public WorkerClient {
 public:
  FakeWorker(int index, int64_t test_examples = 1000) : index_(index), test_examples_(test_examples) {}
  std::string peer() const override { return absl::StrCat("worker:", index_, " at fake"); }

  absl::Status Handshake(const HandshakeRequest&, HandshakeResponse* r, int64_t) override {
    if (down) return absl::UnavailableError("connection refused");
    if (silent) return absl::DeadlineExceededError("Deadline Exceeded");
    r->set_protocol_version(kProtocolVersion);
    r->set_task(absl::StrCat("worker:", index_));
    return absl::OkStatus();
  }
  absl::Status Configure(const ConfigureRequest& r, ConfigureResponse*, int64_t) override {
    if (down) return absl::UnavailableError("connection refused");
    if (!configure_error.ok()) return configure_error;
    absl::MutexLock lock(&mu);
    configures.push_back(r);
    per_step_batch_ = 64 / std::max(1, r.num_workers());
    return absl::OkStatus();
  }
  absl::Status RunSteps(const RunStepsRequest& r, RunStepsResponse* out, int64_t) override;
  absl::Status Evaluate(const EvaluateRequest& r, EvaluateResponse* out, int64_t) override;

  std::atomic<bool> down{false};
  std::atomic<int> fail_next_runs{0};      // fail this many RunSteps with UNAVAILABLE and go down
  std::atomic<int> runs_before_failing{-1};  // >= 0: after this many more RunSteps, go down
  std::atomic<bool>* down_with = nullptr;  // also set when this worker goes down (e.g. a ps)
  // >= 0: after this many more RunSteps, the next one goes silent (as a stopped process: no
  // Handshake answers) and blocks until the test clears `silent`, then finishes normally.
  std::atomic<int> runs_before_silence{-1};
  std::atomic<bool> silent{false};
  absl::Status run_error;                  // returned by every RunSteps when set (non-retryable tests)
  // Once `ps_trouble_when` (set before the run) returns true, one RunSteps runs `ps_trouble_do`
  // and fails as a real worker does when ps `ps_trouble_ps` fails it (ABORTED "ps:N ...").
  std::function<bool()> ps_trouble_when;
  std::function<void()> ps_trouble_do;
  int ps_trouble_ps = 1;
  std::atomic<bool> ps_trouble_done{false};
  absl::Status configure_error;
  std::atomic<int64_t> steps_run{0};
  std::atomic<int64_t> sleep_micros{200};  // per RunSteps, so other workers get closures too
  absl::Mutex mu;
  std::vector<ConfigureRequest> configures ABSL_GUARDED_BY(mu);
  std::vector<RunStepsRequest> runs ABSL_GUARDED_BY(mu);
  std::multiset<int> eval_shards ABSL_GUARDED_BY(mu);

 private:
  const int index_;
  const int64_t test_examples_;
  int64_t per_step_batch_ = 32;
};

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_CHIEF_FAKE_CLIENTS_H_
