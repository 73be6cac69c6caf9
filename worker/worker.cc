#include "worker/worker.h"

#include "absl/strings/str_cat.h"
#include "common/binary_metrics.h"
#include "common/env.h"
#include "common/json_util.h"
#include "common/model_variables.h"
#include "common/protocol_version.h"
#include "common/status_macros.h"
#include "worker/ctr_evaluation.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/divergence_check.h"
#include "worker/variable_exchange.h"

namespace pstrain {

struct Worker::Job {
  JobSpec spec;
  std::vector<VariableSpec> variables;
  int worker_index = 0, num_workers = 1;
  int64_t batch = 0;       // this worker's examples per step
  float loss_scale = 1.f;  // 1 / (examples one ps update covers)
  bool sync = false;
  std::vector<std::unique_ptr<PsClient>> ps;
  std::unique_ptr<VariableExchange> exchange;
  std::unique_ptr<ReplicaSet> replicas;
  std::shared_ptr<const Dataset> test;
  std::unique_ptr<ShardIterator> train;
  std::vector<Tensor> params, grads;
  Batch batch_buffer;
  std::unique_ptr<IdDeduper> dedupe;  // CTR models: the step's unique ids per table
  SparseLookup lookup;
};

int64_t WorkerBatchSize(int64_t global_batch, int worker_index, int num_workers) {
  return global_batch / num_workers + (worker_index < global_batch % num_workers ? 1 : 0);
}

uint64_t TrainShuffleSeed(const JobSpec& job) {
  return job.data.shuffle_seed != 0 ? static_cast<uint64_t>(job.data.shuffle_seed) : MixSeed(job.seed, 0x5EED);
}

Worker::Worker(WorkerOptions options, PsClientFactory ps_factory, GradientComputerFactory compute)
    : options_(std::move(options)), ps_factory_(std::move(ps_factory)), compute_(std::move(compute)) {}

Worker::~Worker() = default;

absl::Status Worker::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  response->set_protocol_version(kProtocolVersion);
  response->set_task(options_.task);
  response->set_build("pstrain-worker");
  return CheckProtocolVersion(request.protocol_version(), request.caller().empty() ? "the caller" : request.caller());
}

absl::StatusOr<std::unique_ptr<Worker::Job>> Worker::BuildJob(const ConfigureRequest& request) {
  RETURN_IF_ERROR(CheckProtocolVersion(request.protocol_version(), "the chief"));
  auto job = std::make_unique<Job>();
  ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(request.job_spec_json(), "the job spec from the chief"));
  ASSIGN_OR_RETURN(job->spec, JobSpecFromJson(doc));
  job->num_workers = request.num_workers();
  job->worker_index = request.worker_index();
  if (job->num_workers < 1 || job->worker_index < 0 || job->worker_index >= job->num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker_index ", job->worker_index, " is out of range for ", job->num_workers, " workers"));
  }
  job->batch = WorkerBatchSize(job->spec.batch_size, job->worker_index, job->num_workers);
  if (job->batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size ", job->spec.batch_size, " is smaller than the ",
                                                   job->num_workers, " workers sharing it"));
  }
  job->sync = job->spec.mode == "sync";
  // Sync: the ps adds the pushes of all workers for one update, so each pushes grad/global batch.
  // Async: every push is an update of its own, covering this worker's batch.
  job->loss_scale = 1.f / static_cast<float>(job->sync ? job->spec.batch_size : job->batch);
  ASSIGN_OR_RETURN(job->variables, ModelVariables(job->spec.model));
  const std::vector<VariableSpec>& variables = job->variables;
  std::vector<PsClient*> ps;
  for (int i = 0; i < request.ps_addresses_size(); ++i) {
    ASSIGN_OR_RETURN(auto client, ps_factory_(request.ps_addresses(i), i));
    ps.push_back(client.get());
    job->ps.push_back(std::move(client));
  }
  ASSIGN_OR_RETURN(job->exchange, VariableExchange::Create(variables, request.plan(), std::move(ps)));
  ASSIGN_OR_RETURN(job->replicas, ReplicaSet::Create(job->spec.model, options_.replicas, options_.threads, compute_));
  if (job->spec.model.is_ctr()) job->dedupe = std::make_unique<IdDeduper>(variables);
  // CTR data can be far larger than memory allows per worker: each reads only its own part.
  const bool parts = job->spec.model.is_ctr();
  ASSIGN_OR_RETURN(Dataset train, parts ? LoadCtrDataset(Env::Default(), job->spec, Split::kTrain, options_.data_dir,
                                                         job->worker_index, job->num_workers)
                                        : LoadDataset(job->spec, Split::kTrain, options_.data_dir));
  // A csv job without a test file trains but cannot evaluate (Evaluate says so).
  if (job->spec.data.dataset != "csv" || !job->spec.data.test_file.empty()) {
    ASSIGN_OR_RETURN(Dataset test, LoadDataset(job->spec, Split::kTest, options_.data_dir));
    job->test = std::make_shared<const Dataset>(std::move(test));
  }
  if (!parts && train.size <= job->worker_index) {
    return absl::InvalidArgumentError(
        absl::StrCat("the training set has ", train.size, " examples, too few for ", job->num_workers, " workers"));
  }
  job->train =
      std::make_unique<ShardIterator>(std::make_shared<const Dataset>(std::move(train)), parts ? 0 : job->worker_index,
                                      parts ? 1 : job->num_workers, TrainShuffleSeed(job->spec));
  return job;
}

absl::Status Worker::Configure(const ConfigureRequest& request, ConfigureResponse* response) {
  ASSIGN_OR_RETURN(auto job, BuildJob(request));
  absl::MutexLock lock(&mu_);
  job_ = std::move(job);
  return absl::OkStatus();
}

absl::Status Worker::Reassign(const ReassignRequest& request, ReassignResponse* response) {
  absl::MutexLock lock(&mu_);
  if (job_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(options_.task, " is not configured yet"));
  std::vector<PsClient*> ps;
  for (const auto& client : job_->ps) ps.push_back(client.get());
  ASSIGN_OR_RETURN(std::unique_ptr<VariableExchange> exchange,
                   VariableExchange::Create(job_->variables, request.plan(), std::move(ps)));
  job_->exchange->TakeAcknowledgedPushes(&acked_);
  job_->exchange = std::move(exchange);
  return absl::OkStatus();
}

std::map<std::string, int64_t> Worker::AcknowledgedPushes() {
  absl::MutexLock lock(&mu_);
  return acked_;
}

void Worker::Shutdown() { stopping_ = true; }

absl::Status Worker::RunSteps(const RunStepsRequest& request, RunStepsResponse* response) {
  absl::MutexLock lock(&mu_);
  if (job_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(options_.task, " is not configured yet"));
  Job& job = *job_;
  Env* env = Env::Default();
  response->set_closure_id(request.closure_id());
  double compute_s = 0, wait_s = 0;
  int64_t staleness = 0;
  BatchMetrics metrics;
  for (int k = 0; k < request.num_steps(); ++k) {
    if (stopping_) return absl::CancelledError(absl::StrCat(options_.task, " is shutting down"));
    const int64_t t0 = env->NowMicros();
    job.train->Next(job.batch, &job.batch_buffer);
    const SparseLookup* lookup = nullptr;
    if (job.dedupe != nullptr) {  // the rows this batch touches are all a CTR step pulls of a table
      RETURN_IF_ERROR(job.dedupe->Build(&job.batch_buffer, &job.lookup));
      lookup = &job.lookup;
    }
    const int64_t t1 = env->NowMicros();
    RETURN_IF_ERROR(job.exchange->PullAll(job.sync ? request.first_step() + k : 0, &job.params, lookup));
    const int64_t t2 = env->NowMicros();
    const std::string step = job.sync
                                 ? absl::StrCat("global step ", request.first_step() + k, " on ", options_.task)
                                 : absl::StrCat(options_.task, "'s step ", k + 1, " of closure ", request.closure_id());
    if (job.spec.terminate_on_nan) {  // a table's entry holds only the rows pulled for this step
      RETURN_IF_ERROR(CheckVariablesFinite(step, "as pulled from the ps", job.variables, job.params));
    }
    const double loss_before = metrics.loss_sum;
    const int64_t examples_before = metrics.examples;
    RETURN_IF_ERROR(job.replicas->Compute(job.params, job.batch_buffer, job.loss_scale, &job.grads, &metrics));
    if (job.spec.terminate_on_nan) {
      const double loss = (metrics.loss_sum - loss_before) / std::max<int64_t>(1, metrics.examples - examples_before);
      RETURN_IF_ERROR(CheckStepFinite(step, loss, job.variables, job.grads));
    }
    const int64_t t3 = env->NowMicros();
    absl::StatusOr<int64_t> pushed = job.exchange->PushAll(job.worker_index, job.sync, job.grads, lookup);
    job.exchange->TakeAcknowledgedPushes(&acked_);  // a failed push may still have been acknowledged by other ps
    ASSIGN_OR_RETURN(int64_t stale, std::move(pushed));
    const int64_t t4 = env->NowMicros();
    if (!job.sync) staleness = std::max(staleness, stale);
    compute_s += ((t1 - t0) + (t3 - t2)) * 1e-6;
    wait_s += ((t2 - t1) + (t4 - t3)) * 1e-6;
    response->set_steps_done(k + 1);
    response->set_examples(metrics.examples);
    response->set_loss_sum(metrics.loss_sum);
    response->set_correct(metrics.correct);
    response->set_max_staleness(staleness);
    response->set_compute_seconds(compute_s);
    response->set_wait_seconds(wait_s);
  }
  // Binary models: the closure's AUC over its own examples (the chief averages them by examples).
  if (!metrics.logits.empty()) response->set_train_auc(ExactAuc(metrics.labels, metrics.logits));
  return absl::OkStatus();
}

absl::Status Worker::Evaluate(const EvaluateRequest& request, EvaluateResponse* response) {
  absl::MutexLock lock(&mu_);
  if (job_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(options_.task, " is not configured yet"));
  if (request.num_shards() < 1 || request.shard_index() < 0 || request.shard_index() >= request.num_shards()) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation shard ", request.shard_index(), " of ", request.num_shards(), " is out of range"));
  }
  Job& job = *job_;
  if (job.test == nullptr) {
    return absl::FailedPreconditionError("the job has no test data to evaluate: set data.test_file in the job spec");
  }
  const std::string at = absl::StrCat("evaluation on ", options_.task);
  auto pull = [&job, &at](const SparseLookup* lookup, std::vector<Tensor>* params) -> absl::Status {
    RETURN_IF_ERROR(job.exchange->PullAll(0, params, lookup));
    if (!job.spec.terminate_on_nan) return absl::OkStatus();
    return CheckVariablesFinite(at, "as pulled from the ps", job.variables, *params);
  };
  auto [begin, end] = EvalRange(job.test->size, request.shard_index(), request.num_shards());
  BatchMetrics metrics;
  if (job.dedupe != nullptr) {
    CtrEvalSteps steps;
    steps.fetch_rows = [&pull](const SparseLookup& lookup, std::vector<Tensor>* params) {
      return pull(&lookup, params);
    };
    steps.evaluate = [&job](absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* m) {
      return job.replicas->Evaluate(params, batch, m);
    };
    RETURN_IF_ERROR(EvaluateCtrRange(*job.test, begin, end, steps, job.dedupe.get(), &job.params, &metrics));
    // Every logit and label of the shard: the chief computes the AUC over the whole test set.
    response->set_logits(metrics.logits.data(), metrics.logits.size() * sizeof(float));
    response->set_labels(metrics.labels.data(), metrics.labels.size() * sizeof(float));
  } else {
    RETURN_IF_ERROR(pull(nullptr, &job.params));
    constexpr int64_t kEvalBatch = 256;  // keeps activations cache-sized
    for (int64_t b = begin; b < end; b += kEvalBatch) {
      FillRange(*job.test, b, std::min(end, b + kEvalBatch), &job.batch_buffer);
      RETURN_IF_ERROR(job.replicas->Evaluate(job.params, job.batch_buffer, &metrics));
    }
  }
  response->set_examples(metrics.examples);
  response->set_loss_sum(metrics.loss_sum);
  response->set_correct(metrics.correct);
  return absl::OkStatus();
}

}  // namespace pstrain
