#include "worker/step/worker.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"
#include "common/plan/model_variables.h"
#include "common/platform/env.h"
#include "common/platform/status_macros.h"
#include "common/wire/protocol_version.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/exchange/variable_exchange.h"
#include "worker/step/ctr_evaluation.h"
#include "worker/step/divergence_check.h"
#include "worker/step/worker_state.h"

namespace pstrain {
namespace {

// A part's exchanges over its ps clients `ps`, routed by `plan`: the one its steps pull (and
// push) on and, with `overlap` (Worker::OverlapsPushes), the one its push in flight runs on.
absl::Status MakeExchanges(const std::vector<VariableSpec>& variables, const VariablePlanProto& plan,
                           const std::vector<std::unique_ptr<PsClient>>& ps, bool overlap,
                           std::unique_ptr<VariableExchange>* exchange,
                           std::unique_ptr<VariableExchange>* push_exchange) {
  std::vector<PsClient*> clients;
  for (const auto& client : ps) clients.push_back(client.get());
  if (overlap) {
    ASSIGN_OR_RETURN(*push_exchange, VariableExchange::Create(variables, plan, clients));
  }
  ASSIGN_OR_RETURN(*exchange, VariableExchange::Create(variables, plan, std::move(clients)));
  return absl::OkStatus();
}

}  // namespace

int64_t WorkerBatchSize(int64_t global_batch, int worker_index, int num_workers) {
  return global_batch / num_workers + (worker_index < global_batch % num_workers ? 1 : 0);
}

uint64_t TrainShuffleSeed(const JobSpec& job) {
  return job.data.shuffle_seed != 0 ? static_cast<uint64_t>(job.data.shuffle_seed) : MixSeed(job.seed, 0x5EED);
}

Worker::Worker(Env* env, WorkerOptions options, PsClientFactory ps_factory, GradientComputerFactory compute)
    : env_(env), options_(std::move(options)), ps_factory_(std::move(ps_factory)), compute_(std::move(compute)) {}

Worker::~Worker() = default;

absl::Status Worker::Handshake(const HandshakeRequest& request, HandshakeResponse* response) {
  response->set_protocol_version(kProtocolVersion);
  response->set_task(options_.task);
  response->set_build("pstrain-worker");
  return CheckProtocolVersion(request.protocol_version(), request.caller().empty() ? "the caller" : request.caller());
}

absl::StatusOr<std::shared_ptr<Worker::Job>> Worker::BuildJob(const ConfigureRequest& request) {
  RETURN_IF_ERROR(CheckProtocolVersion(request.protocol_version(), "the chief"));
  auto job = std::make_shared<Job>();
  ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(request.job_spec_json(), "the job spec from the chief"));
  ASSIGN_OR_RETURN(job->spec, JobSpecFromJson(doc));
  job->num_workers = request.num_workers();
  job->worker_index = request.worker_index();
  if (job->num_workers < 1 || job->worker_index < 0 || job->worker_index >= job->num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker_index ", job->worker_index, " is out of range for ", job->num_workers, " workers"));
  }
  if (WorkerBatchSize(job->spec.batch_size, job->num_workers - 1, job->num_workers) < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size ", job->spec.batch_size, " is smaller than the ",
                                                   job->num_workers, " workers sharing it"));
  }
  job->sync = job->spec.mode == "sync";
  job->plan = request.plan();
  ASSIGN_OR_RETURN(job->variables, ModelVariables(job->spec.model));
  job->ps_addresses.assign(request.ps_addresses().begin(), request.ps_addresses().end());
  if (!job->spec.model.is_ctr()) {  // CTR parts are loaded per part (PartFor)
    ASSIGN_OR_RETURN(Dataset train, LoadDataset(env_, job->spec, Split::kTrain, options_.data_dir));
    if (train.size < job->num_workers) {
      return absl::InvalidArgumentError(
          absl::StrCat("the training set has ", train.size, " examples, too few for ", job->num_workers, " workers"));
    }
    job->all_train = std::make_shared<const Dataset>(std::move(train));
  }
  // A csv job without a test file trains but cannot evaluate (Evaluate says so).
  if (job->spec.data.dataset != "csv" || !job->spec.data.test_file.empty()) {
    ASSIGN_OR_RETURN(Dataset test, LoadDataset(env_, job->spec, Split::kTest, options_.data_dir));
    job->test = std::make_shared<const Dataset>(std::move(test));
  }
  // This worker's own part now, so a bad plan or missing data fails Configure, not a closure.
  RETURN_IF_ERROR(PartFor(job.get(), job->worker_index).status());
  return job;
}

absl::StatusOr<Worker::PartContext*> Worker::PartFor(Job* job, int part) {
  if (part < 0 || part >= job->num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("data part ", part, " is out of range for ", job->num_workers, " workers (0..",
                     job->num_workers - 1, ")"));
  }
  absl::MutexLock lock(&job->mu);
  auto found = job->parts.find(part);
  if (found != job->parts.end()) return found->second.get();
  auto ctx = std::make_unique<PartContext>();
  ctx->loss_growth = LossGrowthCheck(job->spec.divergence_loss_factor);
  ctx->part = part;
  ctx->batch = WorkerBatchSize(job->spec.batch_size, part, job->num_workers);
  // Sync: the ps adds the pushes of all parts for one update, so each pushes grad/global batch.
  // Async: every push is an update of its own, covering this part's batch.
  ctx->loss_scale = 1.f / static_cast<float>(job->sync ? job->spec.batch_size : ctx->batch);
  for (size_t i = 0; i < job->ps_addresses.size(); ++i) {
    ASSIGN_OR_RETURN(auto client, ps_factory_(job->ps_addresses[i], static_cast<int>(i)));
    ctx->ps.push_back(std::move(client));
  }
  RETURN_IF_ERROR(MakeExchanges(job->variables, job->plan, ctx->ps, OverlapsPushes(*job), &ctx->exchange,
                                &ctx->push_exchange));
  ASSIGN_OR_RETURN(ctx->replicas, ReplicaSet::Create(job->spec.model, options_.replicas, options_.threads, compute_));
  if (job->spec.model.is_ctr()) {
    ASSIGN_OR_RETURN(ctx->dedupe, IdDeduper::ForModel(job->spec.model, job->variables));
    // CTR data can be far larger than memory allows per worker: each part's own files only,
    // loaded when a closure of that part first arrives here.
    ASSIGN_OR_RETURN(Dataset train,
                     LoadCtrDataset(env_, job->spec, Split::kTrain, options_.data_dir, part, job->num_workers));
    ctx->train = std::make_unique<ShardIterator>(std::make_shared<const Dataset>(std::move(train)), 0, 1,
                                                 TrainShuffleSeed(job->spec));
  } else {
    ctx->train = std::make_unique<ShardIterator>(job->all_train, part, job->num_workers, TrainShuffleSeed(job->spec));
  }
  if (part != job->worker_index) {
    Log(absl::StrCat(options_.task, " prepared data part ", part, " (", ctx->train->shard_size(),
                     " examples) to re-run closures of a lost worker"));
  }
  PartContext* raw = ctx.get();
  job->parts[part] = std::move(ctx);
  return raw;
}

absl::Status Worker::Configure(const ConfigureRequest& request, ConfigureResponse* response) {
  ASSIGN_OR_RETURN(std::shared_ptr<Job> job, BuildJob(request));
  Log(absl::StrCat("configured as worker ", request.worker_index(), " of ", request.num_workers(), " at global step ",
                   request.global_step()));
  absl::MutexLock lock(&mu_);
  job_ = std::move(job);
  return absl::OkStatus();
}

absl::Status Worker::Reassign(const ReassignRequest& request, ReassignResponse* response) {
  ASSIGN_OR_RETURN(std::shared_ptr<Job> job, CurrentJob());
  // The plan first, so a part built from now on routes by it; then every built part, each after
  // the closure it runs now (its lock), so no step mixes two routings.
  std::vector<PartContext*> parts;
  {
    absl::MutexLock lock(&job->mu);
    job->plan = request.plan();
    for (auto& [index, ctx] : job->parts) parts.push_back(ctx.get());
  }
  for (PartContext* ctx : parts) {
    absl::MutexLock part_lock(&ctx->mu);
    std::unique_ptr<VariableExchange> exchange, push_exchange;
    RETURN_IF_ERROR(MakeExchanges(job->variables, request.plan(), ctx->ps, ctx->push_exchange != nullptr, &exchange,
                                  &push_exchange));
    {
      absl::MutexLock lock(&mu_);
      ctx->exchange->TakeAcknowledgedPushes(&acked_);
      if (ctx->push_exchange != nullptr) ctx->push_exchange->TakeAcknowledgedPushes(&acked_);
    }
    ctx->exchange = std::move(exchange);
    ctx->push_exchange = std::move(push_exchange);
  }
  return absl::OkStatus();
}

bool Worker::OverlapsPushes(const Job& job) const {
  if (job.sync) return false;
  return options_.overlap_push > 0 || (options_.overlap_push < 0 && job.spec.ps_replicas > 0);
}

std::map<std::string, int64_t> Worker::AcknowledgedPushes() {
  absl::MutexLock lock(&mu_);
  return acked_;
}

void Worker::Shutdown() { stopping_ = true; }

void Worker::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

absl::StatusOr<std::shared_ptr<Worker::Job>> Worker::CurrentJob() {
  absl::MutexLock lock(&mu_);
  if (job_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(options_.task, " is not configured yet"));
  return job_;
}

absl::Status Worker::Evaluate(const EvaluateRequest& request, EvaluateResponse* response) {
  ASSIGN_OR_RETURN(std::shared_ptr<Job> job_ref, CurrentJob());
  if (request.num_shards() < 1 || request.shard_index() < 0 || request.shard_index() >= request.num_shards()) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation shard ", request.shard_index(), " of ", request.num_shards(), " is out of range"));
  }
  Job& job = *job_ref;
  ASSIGN_OR_RETURN(PartContext * ctx, PartFor(&job, job.worker_index));  // its buffers
  absl::MutexLock part_lock(&ctx->mu);
  if (job.test == nullptr) {
    return absl::FailedPreconditionError("the job has no test data to evaluate: set data.test_file in the job spec");
  }
  const std::string at = absl::StrCat("evaluation on ", options_.task);
  auto pull = [&job, ctx, &at](const SparseLookup* lookup, std::vector<Tensor>* params) -> absl::Status {
    RETURN_IF_ERROR(ctx->exchange->PullAll(0, params, lookup));
    if (!job.spec.terminate_on_nan) return absl::OkStatus();
    return CheckVariablesFinite(at, "as pulled from the ps", job.variables, *params);
  };
  auto [begin, end] = EvalRange(job.test->size, request.shard_index(), request.num_shards());
  BatchMetrics metrics;
  if (ctx->dedupe != nullptr) {
    CtrEvalSteps steps;
    steps.fetch_rows = [&pull](const SparseLookup& lookup, std::vector<Tensor>* params) {
      return pull(&lookup, params);
    };
    steps.evaluate = [ctx](absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* m) {
      return ctx->replicas->Evaluate(params, batch, m);
    };
    RETURN_IF_ERROR(EvaluateCtrRange(*job.test, begin, end, steps, ctx->dedupe.get(), &ctx->params, &metrics));
    // Every logit and label of the shard: the chief computes the AUC over the whole test set.
    response->set_logits(metrics.logits.data(), metrics.logits.size() * sizeof(float));
    response->set_labels(metrics.labels.data(), metrics.labels.size() * sizeof(float));
  } else {
    RETURN_IF_ERROR(pull(nullptr, &ctx->params));
    constexpr int64_t kEvalBatch = 256;  // keeps activations cache-sized
    for (int64_t b = begin; b < end; b += kEvalBatch) {
      FillRange(*job.test, b, std::min(end, b + kEvalBatch), &ctx->batch_buffer);
      RETURN_IF_ERROR(ctx->replicas->Evaluate(ctx->params, ctx->batch_buffer, &metrics));
    }
  }
  response->set_examples(metrics.examples);
  response->set_loss_sum(metrics.loss_sum);
  response->set_correct(metrics.correct);
  return absl::OkStatus();
}

}  // namespace pstrain
