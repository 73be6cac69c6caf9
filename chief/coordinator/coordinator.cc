#include "chief/coordinator/coordinator.h"

#include <cmath>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "chief/checkpoint/model_dir.h"
#include "chief/coordinator/job_protos.h"
#include "common/config/json_util.h"
#include "common/plan/memory_budget.h"
#include "common/plan/model_variables.h"
#include "common/plan/variable_planner.h"
#include "common/platform/status_macros.h"
#include "common/wire/protocol_version.h"
#include "common/plan/optimizer_defaults.h"

namespace pstrain {
namespace {

constexpr int kMaxRescueThreads = 3;  // lost workers whose parts one live worker can run at once

}  // namespace

nlohmann::json JobSummary::ToJson() const {
  nlohmann::json j;
  j["state"] = state;
  j["global_step"] = global_step;
  j["total_steps"] = total_steps;
  j["start_step"] = start_step;
  j["examples"] = examples;
  j["seconds"] = seconds;
  j["train_seconds"] = train_seconds;
  j["examples_per_second"] = examples_per_second;
  j["final_test_loss"] = final_eval ? nlohmann::json(final_eval->loss) : nlohmann::json(nullptr);
  j["final_test_accuracy"] = final_eval && std::isfinite(final_eval->accuracy) ? nlohmann::json(final_eval->accuracy)
                                                                               : nlohmann::json(nullptr);
  if (final_eval && std::isfinite(final_eval->auc)) {
    j["final_test_auc"] = final_eval->auc;
    j["final_test_logloss"] = final_eval->loss;
  }
  if (std::isfinite(final_train_auc)) j["final_train_auc"] = final_train_auc;
  if (std::isfinite(bayes_test_auc)) j["bayes_test_auc"] = bayes_test_auc;
  j["final_test_examples"] = final_eval ? final_eval->examples : 0;
  j["checkpoint"] = checkpoint;
  j["metrics_file"] = metrics_file;
  j["lost_workers"] = lost_workers;
  return j;
}

Coordinator::Coordinator(Env* env, JobSpec spec, std::vector<PsClient*> ps, std::vector<WorkerClient*> workers,
                         std::vector<std::string> ps_addresses, CoordinatorOptions options)
    : env_(env),
      spec_(std::move(spec)),
      spec_json_(DumpJson(JobSpecToJson(spec_))),
      ps_(std::move(ps)),
      workers_(std::move(workers)),
      ps_addresses_(std::move(ps_addresses)),
      options_(std::move(options)),
      num_workers_(static_cast<int>(workers_.size())) {
  MetricsRegistry* registry = options_.metrics;
  if (registry == nullptr) {
    own_registry_ = std::make_unique<MetricsRegistry>();
    registry = own_registry_.get();
  }
  gauges_ = std::make_unique<ChiefMetrics>(registry);
}

Coordinator::~Coordinator() {
  if (ps_watch_ != nullptr) ps_watch_->Stop();
  queue_.Shutdown();
  if (pool_ != nullptr) pool_->Stop();
}

void Coordinator::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void Coordinator::SetState(const std::string& state) {
  absl::MutexLock lock(&mu_);
  state_ = state;
}

void Coordinator::RequestStop() { stop_requested_ = true; }

absl::StatusOr<JobSummary> Coordinator::Run() {
  start_micros_ = env_->NowMicros();
  absl::Status s = Prepare();
  if (s.ok() && options_.init_only) return InitOnly();
  if (s.ok()) {
    pool_->Start();
    if (ps_watch_ != nullptr) ps_watch_->Start();
    SetState("training");
    s = TrainLoop();
    train_seconds_ = (env_->NowMicros() - train_start_micros_) * 1e-6;
    if (s.ok()) MaybeReport(true);  // the last training window, before the final evaluation
  }
  JobSummary summary;
  if (s.ok() && !stop_requested_ && HasTestData()) {
    SetState("evaluating");
    absl::StatusOr<EvalResult> eval = Evaluate();
    if (eval.ok()) summary.final_eval = *eval;
    s = eval.status();
  }
  if (s.ok() && !options_.model_dir.empty() && last_checkpoint_step_ != tracker_->global_step()) {
    s = SaveCheckpointTolerant(/*final=*/true);
  }
  if (ps_watch_ != nullptr) ps_watch_->Stop();
  queue_.Shutdown();
  if (pool_ != nullptr) pool_->Stop();
  if (!s.ok()) {
    SetState("failed");
    if (tracker_ == nullptr) return s;
    return absl::Status(s.code(), absl::StrCat("at global step ", tracker_->global_step(), ": ", s.message()));
  }
  SetState(stop_requested_ ? "stopped" : "done");
  summary.state = stop_requested_ ? "stopped" : "done";
  summary.global_step = tracker_->global_step();
  summary.total_steps = budget_.total_steps;
  summary.start_step = start_step_;
  summary.examples = tracker_->examples();
  summary.seconds = (env_->NowMicros() - start_micros_) * 1e-6;
  summary.train_seconds = train_seconds_;
  summary.examples_per_second = train_seconds_ > 0 ? summary.examples / train_seconds_ : 0.0;
  summary.final_train_auc = tracker_->last_auc();
  summary.metrics_file = metrics_ != nullptr ? metrics_->path() : "";
  absl::MutexLock lock(&mu_);
  summary.checkpoint = last_checkpoint_;
  summary.lost_workers = lost_workers_;
  return summary;
}

bool Coordinator::HasTestData() const { return spec_.data.dataset != "csv" || !spec_.data.test_file.empty(); }

absl::StatusOr<JobSummary> Coordinator::InitOnly() {
  if (checkpoints_ == nullptr) return absl::InvalidArgumentError("initializing only needs a model dir");
  RETURN_IF_ERROR(SaveCheckpoint());
  SetState("initialized");
  JobSummary summary;
  summary.state = "initialized";
  summary.global_step = summary.start_step = start_step_;
  summary.total_steps = budget_.total_steps;
  absl::MutexLock lock(&mu_);
  summary.checkpoint = last_checkpoint_;
  return summary;
}

absl::Status Coordinator::Prepare() {
  if (num_workers_ == 0 || ps_.empty()) {
    return absl::InvalidArgumentError("the cluster needs at least one ps and one worker task");
  }
  ASSIGN_OR_RETURN(int64_t train_examples, TrainExamples(env_, spec_.data));
  ASSIGN_OR_RETURN(budget_, ComputeBudget(spec_, train_examples, num_workers_));
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(spec_.model));
  ASSIGN_OR_RETURN(VariablePlan plan, PlanVariables(variables, spec_.partitioner, static_cast<int>(ps_.size())));
  RETURN_IF_ERROR(CheckPsReplicas(spec_, static_cast<int>(ps_.size())));
  RETURN_IF_ERROR(AddBackups(spec_.ps_replicas, &plan));
  RETURN_IF_ERROR(CheckMemory(plan));
  plan_ = VariablePlanToProto(plan, spec_.seed);
  if (!options_.model_dir.empty()) {
    RETURN_IF_ERROR(PrepareModelDir());
    RETURN_IF_ERROR(env_->CreateDirs(options_.model_dir));
    checkpoints_ = std::make_unique<CheckpointManager>(env_, options_.model_dir,
                                                       static_cast<int>(spec_.schedule.keep_checkpoints), ps_);
    ASSIGN_OR_RETURN(metrics_, MetricsWriter::Open(options_.model_dir + "/metrics.jsonl"));
  }
  const std::vector<WorkerClient*> wait_workers = options_.init_only ? std::vector<WorkerClient*>() : workers_;
  Log(absl::StrCat("waiting for ", ps_.size(), " ps and ", wait_workers.size(), " workers"));
  ClusterWaitOptions wait = options_.wait;
  wait.stopping = [this] { return stop_requested_.load(); };
  RETURN_IF_ERROR(WaitForCluster(env_, ps_, wait_workers, wait, options_.log));
  RETURN_IF_ERROR(CreateOrRestore());
  gauges_->SetPlan(budget_.total_steps, start_step_);
  tracker_start_micros_ = env_->NowMicros();
  if (!options_.model_dir.empty()) {
    const double start_unix = UnixSeconds() - (env_->NowMicros() - tracker_start_micros_) * 1e-6;
    events_ = std::make_unique<RunEvents>(options_.model_dir, start_unix);
  }
  if (data_ == nullptr) data_ = std::make_unique<DataPositions>(num_workers_);
  tracker_ = std::make_unique<ProgressTracker>(env_, num_workers_, spec_.batch_size, budget_.total_steps,
                                               budget_.steps_per_epoch, start_step_, MetricsKindOf(spec_.model));
  if (!options_.init_only) RETURN_IF_ERROR(ConfigureAll());
  if (!HasTestData()) Log("the job has no test data (data.test_file is not set): no evaluation");
  WorkerPoolOptions pool_options = options_.pool;
  // Sync mode: a live worker runs lost workers' parts of a round beside its own.
  if (spec_.mode == "sync") pool_options.rescue_threads = std::min(num_workers_ - 1, kMaxRescueThreads);
  pool_ = std::make_unique<WorkerPool>(
      env_, workers_, &queue_, this, [this](int worker) { return MakeConfigure(worker); }, pool_options);
  PsRecoveryOptions recovery = options_.ps_recovery;
  recovery.stopping = [this] { return stop_requested_.load(); };
  recovery_ = std::make_unique<PsRecovery>(env_, ps_, options_.ps_probes, recovery);
  if (options_.ps_health_interval_ms > 0) {
    ps_watch_ = std::make_unique<PsHealthWatch>(
        env_, options_.ps_probes.empty() ? ps_ : options_.ps_probes, options_.ps_health_interval_ms,
        [this](int ps, const absl::Status& cause) { OnPsTrouble(ps, cause); });
  }
  last_report_micros_ = last_checkpoint_micros_ = train_start_micros_ = env_->NowMicros();
  record_every_steps_ = std::max<int64_t>(1, (budget_.total_steps - start_step_) / std::max(1, options_.record_points));
  next_record_step_ = start_step_ + record_every_steps_;
  sync_next_step_ = start_step_;
  absl::MutexLock lock(&mu_);
  ready_ = true;
  return absl::OkStatus();
}

absl::Status Coordinator::CheckMemory(const VariablePlan& plan) const {
  if (options_.memory_budget_bytes <= 0) return absl::OkStatus();
  const int64_t budget = options_.memory_budget_bytes;
  const std::string raise = absl::StrCat("raise pstrain-chief's ", kMemoryBudgetFlag,
                                         " (the budget of every task; default half of this host's memory)");
  ASSIGN_OR_RETURN(const int slots, OptimizerSlotCount(spec_.optimizer));
  ASSIGN_OR_RETURN(std::vector<int64_t> ps_bytes, PsTaskBytes(plan, slots));
  for (size_t i = 0; i < ps_bytes.size(); ++i) {
    RETURN_IF_ERROR(CheckMemoryBudget(ps_[i]->peer(), ps_bytes[i],
                                      absl::StrCat("variable values and ", slots, " optimizer slots each"), budget,
                                      absl::StrCat(raise, ", add ps tasks, or make the model smaller")));
  }
  // The largest worker share of the batch, at most what that worker's data shard holds.
  int64_t batch = (spec_.batch_size + num_workers_ - 1) / num_workers_;
  const int64_t examples = ExamplesInMemory(spec_.data);
  if (examples > 0) batch = std::min(batch, examples / num_workers_ + 1);
  ASSIGN_OR_RETURN(ComputeBytes worker,
                   EstimateComputeBytes(spec_.model, batch, examples, /*slots=*/0, /*applies_updates=*/false));
  return CheckMemoryBudget(workers_.empty() ? "a worker" : workers_[0]->peer(), worker.total(), worker.Describe(),
                           budget, absl::StrCat(raise, ", lower batch_size, or make the model smaller"));
}

absl::Status Coordinator::PrepareModelDir() {
  ASSIGN_OR_RETURN(std::vector<std::string> earlier, EarlierRunEntries(env_, options_.model_dir));
  if (earlier.empty()) return absl::OkStatus();
  if (options_.start_over) {
    ASSIGN_OR_RETURN(std::string aside, MoveEarlierRunAside(env_, options_.model_dir));
    Log(absl::StrCat("starting over: moved the earlier run (", absl::StrJoin(earlier, ", "), ") aside into ", aside));
    return absl::OkStatus();
  }
  if (!options_.restore) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model dir ", options_.model_dir, " holds an earlier run (", absl::StrJoin(earlier, ", "),
        "); --restore=false would mix the two runs' checkpoints and metrics. Give --start_over to move the earlier "
        "run aside into ",
        options_.model_dir,
        "/previous-run-<time>/ and train from step 0, or use another "
        "--model_dir"));
  }
  return absl::OkStatus();
}

absl::Status Coordinator::CreateOrRestore() {
  std::optional<FoundCheckpoint> found;
  if (checkpoints_ != nullptr && options_.restore && !options_.start_over) {
    std::vector<std::string> warnings;
    absl::StatusOr<std::optional<FoundCheckpoint>> latest = checkpoints_->FindLatest(&warnings);
    for (const std::string& w : warnings) Log(w);
    if (!latest.ok()) {
      return absl::Status(latest.status().code(),
                          absl::StrCat(latest.status().message(),
                                       "\nThe job stops rather than train from step 0 over them. Repair or restore "
                                       "those files, move them away, or give --start_over to move the earlier run "
                                       "aside into ",
                                       options_.model_dir, "/previous-run-<time>/ and train from step 0"));
    }
    found = *std::move(latest);
  }
  const bool initial_values = options_.initial_values != nullptr && !found.has_value();
  if (options_.initial_values != nullptr && found.has_value()) {
    Log(absl::StrCat("--init_from is not used: resuming from ", found->dir,
                     " (a checkpoint wins over starting values, as TensorFlow restores over initial values)"));
  }
  if (initial_values) {
    ASSIGN_OR_RETURN(found, InitialValuesCheckpoint());
  }
  std::vector<std::future<absl::Status>> calls;
  for (size_t i = 0; i < ps_.size(); ++i) {
    calls.push_back(std::async(std::launch::async, [this, i, &found]() -> absl::Status {
      const int task = static_cast<int>(i);
      absl::Status s;
      if (found.has_value()) {
        absl::StatusOr<RestoreRequest> request = MakeRestoreRequest(spec_, plan_, task, num_workers_, found->dir);
        RestoreResponse restored;
        s = request.ok() ? ps_[i]->Restore(*request, &restored) : request.status();
      } else {
        absl::StatusOr<CreateShardsRequest> request = MakeCreateShardsRequest(spec_, plan_, task, num_workers_, true);
        CreateShardsResponse created;
        s = request.ok() ? ps_[i]->CreateShards(*request, &created) : request.status();
      }
      if (s.ok()) return s;
      return absl::Status(s.code(), absl::StrCat(found ? "restoring " + found->dir + " on " : "creating variables on ",
                                                 ps_[i]->peer(), ": ", s.message()));
    }));
  }
  absl::Status first;
  for (auto& c : calls) {
    absl::Status s = c.get();
    if (first.ok()) first = s;
  }
  RETURN_IF_ERROR(first);
  if (found.has_value()) {
    start_step_ = found->index.global_step;
    last_checkpoint_step_ = start_step_;
    RestoreDataPositions(found->dir);
    absl::MutexLock lock(&mu_);
    last_checkpoint_ = found->dir;
    Log(initial_values ? absl::StrCat("restored the starting values of ", found->dir, " on ", ps_.size(), " ps tasks")
                       : absl::StrCat("resumed from ", found->dir, " at step ", start_step_));
  } else {
    Log(absl::StrCat("created ", plan_.variables_size(), " variables on ", ps_.size(), " ps tasks"));
  }
  return absl::OkStatus();
}

absl::StatusOr<FoundCheckpoint> Coordinator::InitialValuesCheckpoint() {
  if (checkpoints_ == nullptr) {
    return absl::InvalidArgumentError(
        "--init_from needs a model dir: its values reach the ps as the checkpoint ckpt-0 written there");
  }
  std::map<std::string, std::string> files = options_.initial_dynamic_files;
  files[kDataPositionsFile] = DataPositions::ToJson(0, DataPositions(num_workers_).Snapshot());
  absl::StatusOr<std::string> dir = checkpoints_->SaveValues(0, spec_json_, plan_, *options_.initial_values, files,
                                                             options_.initial_dynamic_shards);
  if (!dir.ok()) {
    return absl::Status(dir.status().code(), absl::StrCat("writing the starting values (--init_from) into ",
                                                          options_.model_dir, ": ", dir.status().message()));
  }
  ASSIGN_OR_RETURN(CheckpointIndex index, ReadCheckpointIndex(env_, *dir));
  Log(absl::StrCat("wrote the starting values (--init_from) of ", plan_.variables_size(), " variables as ", *dir));
  return FoundCheckpoint{*dir, std::move(index)};
}

void Coordinator::RestoreDataPositions(const std::string& dir) {
  data_ = std::make_unique<DataPositions>(num_workers_);
  absl::StatusOr<std::optional<std::vector<int64_t>>> saved = DataPositions::Load(env_, dir, num_workers_);
  std::vector<int64_t> positions = DataPositions::FromStep(start_step_, num_workers_);
  if (saved.ok() && saved->has_value()) {
    positions = **saved;
    Log(absl::StrCat("resumed data positions (batches per part) ", absl::StrJoin(positions, ","), " from ", dir));
  } else {
    Log(absl::StrCat(saved.ok() ? absl::StrCat(dir, " has no ", kDataPositionsFile, " (an older checkpoint)")
                                : std::string(saved.status().message()),
                     ": every data part continues at batch ", start_step_, " (one per global step)"));
  }
  data_->Reset(std::move(positions));
}

void Coordinator::AssignData(int worker, Closure* closure) { data_->Assign(worker, closure); }

ConfigureRequest Coordinator::MakeConfigure(int worker) const {
  ConfigureRequest r;
  r.set_protocol_version(kProtocolVersion);
  r.set_job_spec_json(spec_json_);
  {
    absl::MutexLock lock(&plan_mu_);
    *r.mutable_plan() = plan_;
  }
  for (const std::string& a : ps_addresses_) r.add_ps_addresses(a);
  r.set_worker_index(worker);
  r.set_num_workers(num_workers_);
  r.set_global_step(tracker_ != nullptr ? tracker_->global_step() : start_step_);
  return r;
}

absl::Status Coordinator::ConfigureAll() {
  for (int i = 0; i < num_workers_; ++i) {
    ConfigureResponse response;
    absl::Status s = workers_[i]->Configure(MakeConfigure(i), &response, options_.pool.configure_timeout_ms);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(workers_[i]->peer(), " rejected its configuration: ", s.message()));
    }
  }
  Log(absl::StrCat("configured ", num_workers_, " workers; training ", budget_.total_steps, " steps of ",
                   spec_.batch_size, " examples (", spec_.mode, " mode)"));
  return absl::OkStatus();
}

void Coordinator::OnTrainResult(int worker, const Closure& closure, const RunStepsResponse& response) {
  tracker_->OnTrainResult(worker, closure.num_steps, response);
  gauges_->OnTrainResult(workers_[worker]->peer(), closure.num_steps, response.examples(), response.max_staleness(),
                         tracker_->global_step());
}

void Coordinator::OnEvalResult(int worker, const Closure& closure, const EvaluateResponse& response) {
  absl::MutexLock lock(&mu_);
  if (eval_ != nullptr) eval_->Add(closure.shard_index, response);
}

absl::Status Coordinator::OnWorkerLost(int worker, const absl::Status& cause) {
  const std::string peer = workers_[worker]->peer();
  gauges_->OnWorkerLost(peer);
  Log(absl::StrCat("lost ", peer, " (", cause.message(), "); ",
                   spec_.mode == "sync" ? "its data part of each round is re-run on another worker"
                                        : "its closure goes to another worker",
                   " with the same examples, polling it"));
  absl::MutexLock lock(&mu_);
  lost_workers_.push_back(peer);
  return absl::OkStatus();
}

void Coordinator::OnWorkerBack(int worker) {
  gauges_->OnWorkerBack(workers_[worker]->peer());
  Log(absl::StrCat(workers_[worker]->peer(), " is back and re-configured at step ", tracker_->global_step()));
}

}  // namespace pstrain
