// Worker::RunSteps: a closure's steps, one loop per mode (sync: steps tagged with the global
// step, those every ps applied already skipped; async: each push applied at once, or kept in
// flight during the next step with overlap_push).
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/metrics/binary_metrics.h"
#include "common/platform/env.h"
#include "common/platform/status_macros.h"
#include "worker/step/divergence_check.h"
#include "worker/step/push_in_flight.h"
#include "worker/step/worker.h"
#include "worker/step/worker_state.h"

namespace pstrain {

// Sync re-runs: how long a step whose pulled versions are mixed waits for them to agree (see
// SyncStepAppliedAlready) before it is computed from what it has.
constexpr int kMixedVersionTries = 500;
constexpr int64_t kMixedVersionWaitMicros = 2000;

// What a closure's steps did: the response's numbers and the closure's log line.
struct Worker::ClosureTally {
  double compute_s = 0, wait_s = 0;
  int64_t staleness = 0;  // async: the largest of its pushes
  int64_t skipped = 0;    // sync: steps every ps had applied already
  BatchMetrics metrics;
  std::map<int64_t, int64_t> examples_by_epoch;  // epoch of the part -> examples trained
  int64_t per_epoch = 1;                         // batches per epoch of the part

  // Times of one step: start, batch ready, pulled, computed, pushed (env micros).
  void AddStep(const int64_t (&t)[5], int64_t position, int64_t examples) {
    examples_by_epoch[position / per_epoch] += examples;
    compute_s += ((t[1] - t[0]) + (t[3] - t[2])) * 1e-6;
    wait_s += ((t[2] - t[1]) + (t[4] - t[3])) * 1e-6;
  }
};

absl::Status Worker::RunSteps(const RunStepsRequest& request, RunStepsResponse* response) {
  ASSIGN_OR_RETURN(std::shared_ptr<Job> job, CurrentJob());
  if (request.data_position() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("data_position ", request.data_position(), " is negative"));
  }
  ASSIGN_OR_RETURN(PartContext * ctx, PartFor(job.get(), request.data_part()));
  absl::MutexLock part_lock(&ctx->mu);
  response->set_closure_id(request.closure_id());
  ClosureTally tally;
  tally.per_epoch = ctx->train->BatchesPerEpoch(ctx->batch);
  ctx->train->Seek(request.data_position(), ctx->batch);
  RETURN_IF_ERROR(job->sync ? RunSyncSteps(*job, ctx, request, &tally) : RunAsyncSteps(*job, ctx, request, &tally));
  ReportClosure(request, *ctx, tally, response);
  return absl::OkStatus();
}

absl::Status Worker::RunSyncSteps(const Job& job, PartContext* ctx, const RunStepsRequest& request,
                                  ClosureTally* tally) {
  for (int k = 0; k < request.num_steps(); ++k) {
    RETURN_IF_ERROR(CheckNotStopping());
    const int64_t sync_step = request.first_step() + k;
    const int64_t examples_before = tally->metrics.examples;
    int64_t t[5] = {};
    t[0] = env_->NowMicros();
    ASSIGN_OR_RETURN(const SparseLookup* lookup, NextBatch(ctx));
    t[1] = env_->NowMicros();
    RETURN_IF_ERROR(ctx->exchange->PullAll(sync_step, &ctx->params, lookup));
    t[2] = env_->NowMicros();
    ASSIGN_OR_RETURN(bool applied, SyncStepAppliedAlready(ctx, sync_step, lookup));
    if (applied) {
      ++tally->skipped;
      continue;
    }
    RETURN_IF_ERROR(
        ComputeStep(job, ctx, absl::StrCat("global step ", sync_step, " on ", options_.task), &tally->metrics));
    t[3] = env_->NowMicros();
    // Tagged with the data part, so the ps collects each part once per step whichever worker
    // computed it.
    RETURN_IF_ERROR(PushNow(ctx, lookup, /*sync=*/true, sync_step).status());
    t[4] = env_->NowMicros();
    tally->AddStep(t, request.data_position() + k, tally->metrics.examples - examples_before);
  }
  return absl::OkStatus();
}

absl::Status Worker::RunAsyncSteps(const Job& job, PartContext* ctx, const RunStepsRequest& request,
                                   ClosureTally* tally) {
  // OverlapsPushes: the previous step's push, still in flight. Every return waits for it and
  // counts its acknowledgement, so the closure ends with no push of its own outstanding.
  PushInFlight in_flight;
  absl::Cleanup finish_on_return = [&] { FinishPush(ctx, &in_flight, tally).IgnoreError(); };
  for (int k = 0; k < request.num_steps(); ++k) {
    RETURN_IF_ERROR(CheckNotStopping());
    const int64_t examples_before = tally->metrics.examples;
    int64_t t[5] = {};
    t[0] = env_->NowMicros();
    ASSIGN_OR_RETURN(const SparseLookup* lookup, NextBatch(ctx));
    t[1] = env_->NowMicros();
    RETURN_IF_ERROR(ctx->exchange->PullAll(0, &ctx->params, lookup));
    t[2] = env_->NowMicros();
    RETURN_IF_ERROR(ComputeStep(job, ctx,
                                absl::StrCat(options_.task, "'s step ", k + 1, " of closure ", request.closure_id()),
                                &tally->metrics));
    t[3] = env_->NowMicros();
    if (ctx->push_exchange != nullptr) {
      RETURN_IF_ERROR(StartPush(ctx, lookup, &in_flight, tally));
    } else {
      ASSIGN_OR_RETURN(int64_t stale, PushNow(ctx, lookup, /*sync=*/false, -1));
      tally->staleness = std::max(tally->staleness, stale);
    }
    t[4] = env_->NowMicros();
    tally->AddStep(t, request.data_position() + k, tally->metrics.examples - examples_before);
  }
  return FinishPush(ctx, &in_flight, tally);
}

absl::Status Worker::CheckNotStopping() const {
  if (stopping_) return absl::CancelledError(absl::StrCat(options_.task, " is shutting down"));
  return absl::OkStatus();
}

absl::StatusOr<const SparseLookup*> Worker::NextBatch(PartContext* ctx) {
  ctx->train->Next(ctx->batch, &ctx->batch_buffer);
  if (ctx->dedupe == nullptr) return nullptr;
  RETURN_IF_ERROR(ctx->dedupe->Build(&ctx->batch_buffer, &ctx->lookup));
  return &ctx->lookup;
}

absl::StatusOr<bool> Worker::SyncStepAppliedAlready(PartContext* ctx, int64_t step, const SparseLookup* lookup) {
  // Steps every ps applied already included this part's gradient (a sync step completes only with
  // every part); a ps that is past the step while another is not got this part's push there
  // before the loss.
  auto [lowest, highest] = ctx->exchange->PulledVersionRange();
  // Some ps past the step and others not: another execution of this part (a silent worker that
  // resumed, or the lost one) has pushed to some ps; its pushes to the others are usually in
  // flight, so wait a little for them rather than compute from mixed versions.
  for (int tries = 0; lowest == step && highest > step && tries < kMixedVersionTries; ++tries) {
    env_->SleepForMicros(kMixedVersionWaitMicros);
    RETURN_IF_ERROR(ctx->exchange->PullAll(step, &ctx->params, lookup));
    std::tie(lowest, highest) = ctx->exchange->PulledVersionRange();
  }
  if (lowest > step) return true;
  if (highest > step) {
    Log(absl::StrCat("global step ", step, " of data part ", ctx->part,
                     ": some ps applied it already and others wait for this part; the gradient for the others "
                     "is computed from partly newer variables (not exact for this step)"));
  }
  return false;
}

absl::Status Worker::ComputeStep(const Job& job, PartContext* ctx, const std::string& step, BatchMetrics* metrics) {
  if (job.spec.terminate_on_nan) {  // a table's entry holds only the rows pulled for this step
    RETURN_IF_ERROR(CheckVariablesFinite(step, "as pulled from the ps", job.variables, ctx->params));
  }
  const int64_t examples_before = metrics->examples;
  const double loss_before = metrics->loss_sum;
  RETURN_IF_ERROR(ctx->replicas->Compute(ctx->params, ctx->batch_buffer, ctx->loss_scale, &ctx->grads, metrics));
  const double loss = (metrics->loss_sum - loss_before) / std::max<int64_t>(1, metrics->examples - examples_before);
  RETURN_IF_ERROR(ctx->loss_growth.Observe(step, loss));
  if (!job.spec.terminate_on_nan) return absl::OkStatus();
  return CheckStepFinite(step, loss, job.variables, ctx->grads);
}

absl::StatusOr<int64_t> Worker::PushNow(PartContext* ctx, const SparseLookup* lookup, bool sync, int64_t sync_step) {
  absl::StatusOr<int64_t> pushed = ctx->exchange->PushAll(ctx->part, sync, ctx->grads, lookup, sync_step);
  absl::MutexLock lock(&mu_);  // a failed push may still have been acknowledged by other ps
  ctx->exchange->TakeAcknowledgedPushes(&acked_);
  return pushed;
}

absl::Status Worker::StartPush(PartContext* ctx, const SparseLookup* lookup, PushInFlight* in_flight,
                               ClosureTally* tally) {
  RETURN_IF_ERROR(FinishPush(ctx, in_flight, tally));
  // This step's gradient and rows go out on the push exchange, staleness counted against this
  // step's pull; the next step computes into the buffers the last push used.
  std::swap(ctx->grads, ctx->push_grads);
  std::swap(ctx->lookup, ctx->push_lookup);
  ctx->push_exchange->CopyPulledVersions(*ctx->exchange);
  const SparseLookup* push_lookup = lookup == nullptr ? nullptr : &ctx->push_lookup;
  in_flight->Start([ctx, push_lookup] {
    return ctx->push_exchange->PushAll(ctx->part, /*tag_with_pulled_version=*/false, ctx->push_grads, push_lookup);
  });
  return absl::OkStatus();
}

absl::Status Worker::FinishPush(PartContext* ctx, PushInFlight* in_flight, ClosureTally* tally) {
  if (!in_flight->active()) return absl::OkStatus();
  absl::StatusOr<int64_t> pushed = in_flight->Wait();
  {
    absl::MutexLock lock(&mu_);  // a failed push may still have been acknowledged by other ps
    ctx->push_exchange->TakeAcknowledgedPushes(&acked_);
  }
  if (!pushed.ok()) return pushed.status();
  tally->staleness = std::max(tally->staleness, *pushed);
  return absl::OkStatus();
}

void Worker::ReportClosure(const RunStepsRequest& request, const PartContext& ctx, const ClosureTally& tally,
                           RunStepsResponse* response) const {
  const BatchMetrics& metrics = tally.metrics;
  response->set_steps_done(request.num_steps());
  response->set_examples(metrics.examples);  // trained here: steps applied already are not
  response->set_loss_sum(metrics.loss_sum);
  response->set_correct(metrics.correct);
  response->set_max_staleness(tally.staleness);
  response->set_compute_seconds(tally.compute_s);
  response->set_wait_seconds(tally.wait_s);
  // Binary models: the closure's AUC over its own examples (the chief averages them by examples).
  if (!metrics.logits.empty()) response->set_train_auc(ExactAuc(metrics.labels, metrics.logits));
  // One line per closure: what it trained, by epoch of its part (the data-order tests read it).
  std::string by_epoch;
  for (const auto& [epoch, examples] : tally.examples_by_epoch) {
    absl::StrAppend(&by_epoch, by_epoch.empty() ? "" : ",", epoch, ":", examples);
  }
  Log(absl::StrCat("closure ", request.closure_id(), ": data part ", ctx.part, " batches ", request.data_position(),
                   "..", request.data_position() + request.num_steps() - 1, " examples by epoch ",
                   by_epoch.empty() ? "none" : by_epoch, " (", ctx.train->shard_size(), " per epoch)",
                   tally.skipped > 0 ? absl::StrCat("; ", tally.skipped, " steps applied already") : ""));
}

}  // namespace pstrain
