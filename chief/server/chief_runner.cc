#include "chief/server/chief_runner.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <ctime>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "chief/checkpoint/model_dir.h"
#include "chief/coordinator/coordinator.h"
#include "chief/coordinator/job_shutdown.h"
#include "chief/server/chief_service.h"
#include "common/config/json_util.h"
#include "common/platform/exit_codes.h"
#include "ps/client/grpc_ps_client.h"
#include "ps/client/metered_ps_client.h"
#include "ps/client/ps_stats_format.h"
#include "worker/client/grpc_worker_client.h"
#include "worker/data/ctr_dataset.h"

namespace pstrain {
namespace {

absl::Mutex log_mu;

// Turns SIGTERM/SIGINT into Coordinator::RequestStop() on a thread of its own (the signals are
// blocked in every other thread, so no async-signal-safety concerns).
class SignalWatcher {
 public:
  explicit SignalWatcher(Coordinator* coordinator) : coordinator_(coordinator) {
    thread_ = std::thread([this] { Watch(); });
  }
  ~SignalWatcher() {
    done_ = true;
    thread_.join();
  }
  bool fired() const { return fired_; }

 private:
  void Watch() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    const timespec tick = {0, 200 * 1000 * 1000};
    while (!done_) {
      int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        LogLine("chief", absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT",
                                      ": finishing running closures, saving a checkpoint, then stopping"));
        fired_ = true;
        coordinator_->RequestStop();
      }
    }
  }
  Coordinator* const coordinator_;
  std::atomic<bool> done_{false};
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

void BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Each ps's counters after the run, logged per ps and returned for summary.json ("ps_stats"):
// what each ps served, and for tables the rows pulled and pushed. A ps that does not answer is
// logged and left out; the job already succeeded.
nlohmann::json CollectPsStats(const std::vector<PsClient*>& ps, const std::vector<int>& indices) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string task = absl::StrCat("ps:", indices[i]);
    PsStatsResponse stats;
    absl::Status s = ps[i]->GetStats(PsStatsRequest(), &stats);
    if (!s.ok()) {
      LogLine("chief", absl::StrCat("no stats from ", task, ": ", s.message()));
      continue;
    }
    LogLine("chief", absl::StrCat(task, ": ", ShardStatsText(stats.total())));
    for (const DynamicShardStats& d : stats.dynamic_shards()) {
      LogLine("chief", absl::StrCat(task, ": dynamic shard ", d.name(), ": ", d.rows(), " rows (", d.created(),
                                    " created, ", d.evicted_ttl() + d.evicted_cap(), " evicted), ", d.pulls(),
                                    " pulls, ", d.pushes(), " pushes"));
    }
    out.push_back(PsStatsToJson(task, stats));
  }
  return out;
}

}  // namespace

void LogLine(const std::string& who, const std::string& message) {
  std::time_t now = std::time(nullptr);
  char stamp[16];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", std::localtime(&now));
  absl::MutexLock lock(&log_mu);
  std::cerr << "[" << who << " " << stamp << "] " << message << std::endl;
}

int RunChief(Env* env, const ChiefConfig& config) {
  BlockStopSignals();  // before any thread starts, so every thread inherits the mask
  const ClusterSpec& cluster = config.tf_config.cluster;
  // One chief per model dir, held until this process ends: a second one would overwrite the
  // first's checkpoints (or resume its weights as another job).
  std::unique_ptr<FileLock> model_dir_lock;
  if (!config.model_dir.empty()) {
    absl::StatusOr<std::unique_ptr<FileLock>> lock =
        LockModelDir(env, config.model_dir, "owner.lock",
                     absl::StrCat("pstrain-chief, task ", config.tf_config.task->ToString()));
    if (!lock.ok()) {
      LogLine("chief", std::string(lock.status().message()));
      return ExitCodeFor(lock.status());
    }
    model_dir_lock = *std::move(lock);
  }
  std::vector<std::unique_ptr<PsClient>> ps_owned;
  std::vector<std::unique_ptr<WorkerClient>> workers_owned;
  std::vector<PsClient*> ps;
  std::vector<std::unique_ptr<PsClient>> probes_owned;
  std::vector<PsClient*> probes;
  std::vector<WorkerClient*> workers;
  std::vector<std::string> ps_addresses = cluster.Addresses(kPs);
  std::vector<int> ps_indices = cluster.TaskIndices(kPs);
  for (size_t i = 0; i < ps_addresses.size(); ++i) {
    const std::string name = absl::StrCat("ps:", ps_indices[i]);
    ps_owned.push_back(NewGrpcPsClient(ps_addresses[i], name, config.transport));
    if (config.metrics != nullptr) {
      ps_owned.back() = std::make_unique<MeteredPsClient>(std::move(ps_owned.back()), config.metrics, name);
    }
    ps.push_back(ps_owned.back().get());
    // The health watch's and recovery's probes: a short deadline, so a hung ps is found in time.
    probes_owned.push_back(std::make_unique<GrpcPsClient>(ps_addresses[i], name,
                                                          absl::Seconds(config.ps_health_deadline_secs),
                                                          config.transport));
    probes.push_back(probes_owned.back().get());
  }
  std::vector<std::string> worker_addresses = cluster.Addresses(kWorker);
  std::vector<int> worker_indices = cluster.TaskIndices(kWorker);
  for (size_t i = 0; i < worker_addresses.size(); ++i) {
    workers_owned.push_back(NewGrpcWorkerClient(worker_addresses[i],
                                                absl::StrCat("worker:", worker_indices[i], " at ", worker_addresses[i]),
                                                config.transport.tls));
    workers.push_back(workers_owned.back().get());
  }
  CoordinatorOptions options;
  options.model_dir = config.model_dir;
  options.wait.timeout_ms = config.wait_timeout_secs * 1000;
  options.pool.run_steps_timeout_ms = config.closure_timeout_secs * 1000;
  options.pool.evaluate_timeout_ms = config.closure_timeout_secs * 1000;
  options.pool.silence_timeout_ms = config.worker_silence_timeout_secs * 1000;
  options.pool.poll_interval_ms = config.poll_interval_secs * 1000;
  options.progress_interval_ms = config.progress_interval_secs * 1000;
  options.all_workers_lost_timeout_ms = config.all_workers_lost_timeout_secs * 1000;
  options.restore = config.restore;
  options.start_over = config.start_over;
  options.memory_budget_bytes = config.memory_budget_bytes;
  options.init_only = config.init_only;
  options.max_checkpoint_failures = config.max_checkpoint_failures;
  options.log = [](const std::string& line) { LogLine("chief", line); };
  options.metrics = config.metrics;
  options.ps_recovery.timeout_ms = config.ps_recovery_timeout_secs * 1000;
  options.ps_probes = probes;
  options.initial_values = config.initial_values;
  options.initial_dynamic_files = config.initial_dynamic_files;
  options.initial_dynamic_shards = config.initial_dynamic_shards;
  Coordinator coordinator(env, config.job, ps, workers, ps_addresses, options);

  const std::string task = config.tf_config.task->ToString();
  ChiefServiceImpl service(task, [&coordinator] { return coordinator.Status(); });
  absl::StatusOr<std::string> address = cluster.Address(kChief, config.tf_config.task->index);
  std::unique_ptr<grpc::Server> server;
  if (address.ok() || !config.listen.empty()) {
    const std::string listen =
        !config.listen.empty() ? config.listen : absl::StrCat("0.0.0.0:", address->substr(address->rfind(':') + 1));
    absl::StatusOr<std::unique_ptr<grpc::Server>> started =
        StartChiefServer(listen, &service, nullptr, config.metrics, config.transport.tls,
                         [](const std::string& line) { LogLine("chief", line); });
    if (!started.ok()) {
      LogLine("chief", std::string(started.status().message()));
      return kExitRuntimeFailure;
    }
    server = *std::move(started);
  }
  SignalWatcher signals(&coordinator);
  absl::StatusOr<JobSummary> summary = coordinator.Run();
  if (server != nullptr) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (!summary.ok() && signals.fired() && summary.status().code() == absl::StatusCode::kCancelled) {
    // A signal ended a wait (the cluster coming up, a lost ps): nothing could be saved since the
    // newest checkpoint; the ps and workers keep running for the next chief.
    LogLine("chief", absl::StrCat("stopped by a signal: ", summary.status().message(),
                                  "; no checkpoint written (the newest one in the model dir stays)"));
    return kExitStoppedBySignal;
  }
  if (!summary.ok()) {
    const std::string reason(summary.status().message());
    LogLine("chief", absl::StrCat("the job failed: ", reason));
    for (const std::string& line : TellTasksJobEnded(ps, workers, task, reason, JobEnd::kFailed, /*timeout_ms=*/3000)) {
      LogLine("chief", line);
    }
    return ExitCodeFor(summary.status());
  }
  std::string bayes;
  if (config.job.model.is_ctr() && UsesDefaultCtrData(config.job.data)) {
    // The default synthetic set knows its best possible AUC: say how close the run came.
    absl::StatusOr<CtrSyntheticSummary> data = EnsureJobDefaultCtrData(env, config.job.data, "");
    if (data.ok()) {
      summary->bayes_test_auc = data->test.bayes_auc;
      bayes = absl::StrFormat(" (Bayes-optimal on this set: AUC %.4f, log loss %.4f)", data->test.bayes_auc,
                              data->test.bayes_logloss);
    }
  }
  nlohmann::json doc = summary->ToJson();
  doc["ps_stats"] = CollectPsStats(ps, ps_indices);
  const std::string json = DumpJson(doc, 2);
  if (!config.model_dir.empty()) {
    env->WriteFileAtomic(config.model_dir + "/summary.json", json + "\n").IgnoreError();
  }
  std::cout << json << std::endl;
  if (summary->final_eval.has_value()) {
    LogLine("chief", absl::StrCat("done: ", summary->global_step, " steps; final ", FormatEval(*summary->final_eval),
                                  bayes));
  }
  if (!summary->checkpoint.empty()) LogLine("chief", "checkpoint: " + summary->checkpoint);
  if (!summary->metrics_file.empty()) LogLine("chief", "metrics: " + summary->metrics_file);
  if (summary->state == "done") {
    // The job is over: the tasks exit 0 (unless started with --keep_serving), so a compose file,
    // a pod set or a script waiting on them completes. A stopped job's tasks are the
    // orchestrator's to stop; an initialized one's serve the training that follows.
    for (const std::string& line :
         TellTasksJobEnded(ps, workers, task, absl::StrCat("the job is done at step ", summary->global_step),
                           JobEnd::kDone, /*timeout_ms=*/3000)) {
      LogLine("chief", line);
    }
  }
  return summary->state == "stopped" ? kExitStoppedBySignal : kExitOk;
}

}  // namespace pstrain
