// Worker: the logic of one worker task, behind the WorkerService RPCs. Configure receives the job
// and the variable plan; RunSteps(k) runs k training steps (pull every shard, compute gradients
// on this worker's next batch, push each ps its gradient shards); Evaluate(i of n) runs the model
// over shard i of the test set. No gRPC here: ps tasks are reached through PsClient objects made
// by a factory, gradients through GradientComputer objects made by another (CPU or CUDA).
// Thread-safety: every method is safe to call from any thread; closures of one data part are
// serialised, closures of different parts run concurrently.
#ifndef PSTRAIN_WORKER_STEP_WORKER_H_
#define PSTRAIN_WORKER_STEP_WORKER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/config/job_spec.h"
#include "proto/worker.pb.h"
#include "ps/client/ps_client.h"
#include "worker/step/gradient_computer.h"
#include "worker/step/replica_set.h"

namespace pstrain {

class Env;
class PushInFlight;
class ShardIterator;
class VariableExchange;
struct Dataset;
struct SparseLookup;

struct WorkerOptions {
  std::string task = "worker:0";  // for messages and handshakes
  int threads = 1;                // compute threads in all, shared by the replicas
  int replicas = 1;               // local replicas: the batch is split over them, gradients summed
  std::string data_dir;           // overrides the job's data.dir when non-empty
  // Async jobs: a step's push stays in flight while the next step pulls and computes, and is
  // waited for before that step pushes (so that step's pull may lack this worker's own last
  // update: one more unit of staleness). -1: when the job keeps backups (ps_replicas > 0), whose
  // pushes are answered only once the backup has them; 0: never; 1: always. Sync jobs: never.
  int overlap_push = -1;
  std::function<void(const std::string&)> log;  // one line per closure and event (may be empty)
};

// This worker's share of the global batch: batch_size / num_workers, the first
// (batch_size % num_workers) workers taking one more example.
int64_t WorkerBatchSize(int64_t global_batch, int worker_index, int num_workers);

// The seed a job's training shards are shuffled with (data.shuffle_seed, or one derived from the
// job seed when that is 0).
uint64_t TrainShuffleSeed(const JobSpec& job);

// Makes the client of ps task `index` at `address`.
using PsClientFactory = std::function<absl::StatusOr<std::unique_ptr<PsClient>>(const std::string& address, int index)>;

class Worker {
 public:
  // `env` (not owned; REQUIRES: non-null, outlives this) gives the clock, the sleeps between a sync
  // re-run's pulls and the data files. `compute` builds one GradientComputer per replica (e.g.
  // NewCpuGradientComputer).
  Worker(Env* env, WorkerOptions options, PsClientFactory ps_factory, GradientComputerFactory compute);
  ~Worker();

  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response);

  // InvalidArgument for a bad job spec, a plan that does not fit the model, bad worker index;
  // NotFound / DataLoss for missing or corrupt data files (named); FailedPrecondition on a
  // protocol mismatch.
  absl::Status Configure(const ConfigureRequest& request, ConfigureResponse* response);

  // Runs request.num_steps() steps on batches data_position.. of data part request.data_part()
  // (any part: a lost worker's closure is re-run on another worker with the same examples).
  // Closures of different parts may run at the same time (each part has its own buffers); those
  // of one part are serialised. Sync mode: steps every ps applied already are skipped (their
  // update included this part), a push the ps already holds for the part is not an error.
  // FailedPrecondition before Configure; InvalidArgument for a part out of range; ABORTED "ps:N
  // ..." when a ps is gone, silent or restarted without its shards (common/wire/ps_trouble.h: the chief
  // re-runs the closure once that ps is back; this worker stays configured); other errors of a ps
  // name it. Steps done before an error have been pushed (with overlap_push, an error ends the
  // closure only once the push still in flight is answered; the first error is returned).
  absl::Status RunSteps(const RunStepsRequest& request, RunStepsResponse* response);

  // Pulls the current variables and evaluates test examples EvalRange(size, shard_index, num_shards).
  absl::Status Evaluate(const EvaluateRequest& request, EvaluateResponse* response);

  // ps_replicas: the chief promoted backups after losing a ps; `request.plan` says where every
  // shard lives now. Reroutes pulls and pushes (after the closure running now, if any).
  // FailedPrecondition before Configure; InvalidArgument for a plan that does not fit the model.
  absl::Status Reassign(const ReassignRequest& request, ReassignResponse* response);

  // Pushes each ps acknowledged per shard since this worker started (for checking that no
  // acknowledged update was lost).
  std::map<std::string, int64_t> AcknowledgedPushes();

  // Makes RunSteps stop before its next step (Cancelled) and refuses new work; for shutdown.
  // A ps call already in flight is not interrupted.
  void Shutdown();

 private:
  struct Job;          // everything Configure builds
  struct PartContext;  // one data part's examples and buffers
  struct ClosureTally;  // what a closure's steps did, for its response

  absl::StatusOr<std::shared_ptr<Job>> BuildJob(const ConfigureRequest& request);
  // The context of data `part`, built on first use (CTR: the part's files loaded then).
  absl::StatusOr<PartContext*> PartFor(Job* job, int part);
  absl::StatusOr<std::shared_ptr<Job>> CurrentJob();
  // Whether `job`'s closures keep a step's push in flight during the next step (overlap_push).
  bool OverlapsPushes(const Job& job) const;
  void Log(const std::string& line) const;

  // The step loops of RunSteps, one per mode. REQUIRES: ctx->mu held, ctx->train at the closure's
  // first batch. Each returns at the first error, with the steps before it pushed.
  absl::Status RunSyncSteps(const Job& job, PartContext* ctx, const RunStepsRequest& request, ClosureTally* tally);
  absl::Status RunAsyncSteps(const Job& job, PartContext* ctx, const RunStepsRequest& request, ClosureTally* tally);
  // Cancelled once Shutdown was called.
  absl::Status CheckNotStopping() const;
  // Moves ctx->batch_buffer to the part's next batch. CTR models: returns the batch's unique ids
  // per table (ctx->lookup), all the rows its step pulls; other models: null.
  absl::StatusOr<const SparseLookup*> NextBatch(PartContext* ctx);
  // Sync: whether global step `step` needs no gradient from this part, every ps having applied it
  // already (a re-run of a lost worker's closure). REQUIRES: the step's variables pulled; while
  // the ps disagree, pulls them again for a while.
  absl::StatusOr<bool> SyncStepAppliedAlready(PartContext* ctx, int64_t step, const SparseLookup* lookup);
  // The gradients of ctx->params on the batch into ctx->grads, the metrics added to `metrics`;
  // with terminate_on_nan, an error naming `step` for a non-finite variable, loss or gradient.
  absl::Status ComputeStep(const Job& job, PartContext* ctx, const std::string& step, BatchMetrics* metrics);
  // Pushes ctx->grads on ctx->exchange and counts what was acknowledged; returns the push's
  // staleness. Sync (`sync_step` >= 0): tagged with the data part and the step.
  absl::StatusOr<int64_t> PushNow(PartContext* ctx, const SparseLookup* lookup, bool sync, int64_t sync_step);
  // Overlapped pushes: starts this step's push (ctx->grads, ctx->lookup) on ctx->push_exchange,
  // after waiting for the previous one. REQUIRES: ctx->push_exchange non-null.
  absl::Status StartPush(PartContext* ctx, const SparseLookup* lookup, PushInFlight* in_flight, ClosureTally* tally);
  // Waits for the push in flight, if any, counts what it got acknowledged and its staleness.
  absl::Status FinishPush(PartContext* ctx, PushInFlight* in_flight, ClosureTally* tally);
  // Fills `response` from `tally` and logs the closure's line.
  void ReportClosure(const RunStepsRequest& request, const PartContext& ctx, const ClosureTally& tally,
                     RunStepsResponse* response) const;

  Env* const env_;  // not owned
  const WorkerOptions options_;
  const PsClientFactory ps_factory_;
  const GradientComputerFactory compute_;
  absl::Mutex mu_;
  // Replaced by Configure; a closure running on the previous job keeps it alive until it ends.
  std::shared_ptr<Job> job_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> acked_ ABSL_GUARDED_BY(mu_);  // per shard
  std::atomic<bool> stopping_{false};
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_WORKER_H_
