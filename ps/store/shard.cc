#include "ps/store/shard.h"

#include <atomic>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/tensor/tensor_proto.h"
#include "common/wire/sync_push_status.h"
#include "ps/store/initializers.h"

namespace pstrain {
namespace {

std::vector<absl::Span<float>> SlotSpans(std::vector<Tensor>& slots) {
  std::vector<absl::Span<float>> spans;
  spans.reserve(slots.size());
  for (Tensor& t : slots) spans.push_back(t.flat());
  return spans;
}

void RunAll(std::vector<std::function<void()>>& fns) {
  for (auto& f : fns) f();
}

}  // namespace

ShardOptions OptionsForShard(const ShardOptions& job, const ShardSpecProto& spec) {
  ShardOptions o = job;
  if (spec.non_trainable()) o.optimizer = Optimizer::Additive();
  return o;
}

Shard::Shard(ShardSpecProto spec, ShardOptions options, Tensor values, std::vector<Tensor> slots, int64_t version)
    : spec_(std::move(spec)),
      options_(std::move(options)),
      shape_(values.shape()),
      num_bytes_(values.num_bytes()),
      rows_(shape_.empty() ? 1 : shape_[0]),
      row_elements_(shape_.empty() ? 1 : NumElements(absl::MakeConstSpan(shape_).subspan(1))),
      snapshot_pool_(TensorPool::Create(shape_, 4)),
      gradient_pool_(TensorPool::Create(shape_, 4)),
      values_(std::make_shared<Tensor>(std::move(values))),
      slots_(std::move(slots)),
      version_(version) {}

Shard::~Shard() { Abort(absl::AbortedError(absl::StrCat("shard ", name(), " was dropped"))); }

absl::Status Shard::CheckGradient(DataType dtype, absl::Span<const int64_t> shape, size_t bytes) const {
  if (dtype != DT_FLOAT) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", name(), ": gradient dtype ", DataType_Name(dtype),
                                                   " does not match the shard's DT_FLOAT"));
  }
  if (std::vector<int64_t>(shape.begin(), shape.end()) != shape_) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", name(), ": gradient shape ", ShapeString(shape),
                                                   " does not match the shard's shape ", ShapeString(shape_)));
  }
  if (bytes != num_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", name(), ": gradient of shape ", ShapeString(shape),
                                                   " needs ", num_bytes_, " bytes but ", bytes, " arrived"));
  }
  return absl::OkStatus();
}

int64_t Shard::CountNonFinite(absl::string_view data) { return CountNonFiniteFloats(data); }

void Shard::PrepareWriteLocked() {
  // New references are only taken under mu_, which this holds, so a count of 1 stays 1.
  if (values_.use_count() > 1) {
    // A pull is still sending these values: update a copy, so that pulls never copy.
    std::shared_ptr<Tensor> fresh = snapshot_pool_->Get();
    if (num_bytes_ > 0) std::memcpy(fresh->raw(), values_->raw(), num_bytes_);
    values_ = std::move(fresh);
  } else {
    // Pairs with the release of the last pull's reference: its reads come before these writes.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
}

void Shard::FinishUpdateLocked(Clock::time_point start, std::vector<std::function<void()>>* run_after) {
  ++version_;
  const int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  update_nanos_.fetch_add(nanos, std::memory_order_relaxed);
  if (options_.update_latency != nullptr) options_.update_latency->Observe(nanos * 1e-9);
  while (!version_waiters_.empty() && version_waiters_.begin()->first <= version_) {
    ReadyCallback cb = std::move(version_waiters_.begin()->second);
    version_waiters_.erase(version_waiters_.begin());
    run_after->push_back([cb = std::move(cb)] { cb(absl::OkStatus()); });
  }
}

void Shard::ApplyLocked(const float* grad, std::vector<std::function<void()>>* run_after) {
  const auto start = Clock::now();
  if (grad != nullptr) {
    PrepareWriteLocked();
    const size_t n = static_cast<size_t>(values_->num_elements());
    std::vector<absl::Span<float>> slots = SlotSpans(slots_);
    options_.optimizer->Apply(absl::MakeConstSpan(grad, n), values_->flat(), slots, version_);
  }
  FinishUpdateLocked(start, run_after);
}

int64_t Shard::ApplyNow(const char* grad, int* forward_to) {
  std::vector<std::function<void()>> run_after;
  int64_t v;
  {
    absl::MutexLock l(&mu_);
    if (grad != nullptr && reinterpret_cast<uintptr_t>(grad) % alignof(float) != 0) {
      Tensor aligned(DType::kFloat32, shape_);
      std::memcpy(aligned.raw(), grad, num_bytes_);
      ApplyLocked(aligned.data<float>(), &run_after);
    } else {
      ApplyLocked(reinterpret_cast<const float*>(grad), &run_after);
    }
    v = version_;
    if (forward_to != nullptr) *forward_to = forward_to_;
  }
  RunAll(run_after);
  return v;
}

absl::Status Shard::CheckSyncPushLocked(int worker, int64_t step) const {
  if (worker < 0 || worker >= options_.num_workers) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", name(), ": data part ", worker, " is outside 0..",
                                                   options_.num_workers - 1, " (sync mode with ", options_.num_workers,
                                                   " workers)"));
  }
  if (step < version_) {
    return absl::FailedPreconditionError(absl::StrCat("shard ", name(), ": ", kStaleSyncPush, " ", worker,
                                                      " for step ", step, "; the shard is at version ", version_,
                                                      " (step ", step, " was applied already), pull again"));
  }
  if (step > version_) {
    return absl::FailedPreconditionError(absl::StrCat("shard ", name(), ": push from part ", worker, " for step ",
                                                      step, " is ahead of the shard's version ", version_,
                                                      "; push gradients for the version you pulled"));
  }
  if (PendingLocked(worker)) {
    return absl::FailedPreconditionError(absl::StrCat("shard ", name(), ": ", kDuplicateSyncPush, " ", worker,
                                                      " for step ", step,
                                                      "; its gradient is already collected and is applied once"));
  }
  return absl::OkStatus();
}

absl::Status Shard::CheckSyncPush(int worker, int64_t step) const {
  absl::ReaderMutexLock l(&mu_);
  return CheckSyncPushLocked(worker, step);
}

absl::Status Shard::AddSyncGradient(int worker, int64_t step, const char* grad, AppliedCallback applied) {
  std::vector<std::function<void()>> run_after;
  {
    absl::MutexLock l(&mu_);
    absl::Status s = CheckSyncPushLocked(worker, step);
    if (!s.ok()) return s;
    Tensor copy(DType::kFloat32, shape_);  // zeros when the gradient was skipped as non-finite
    if (grad != nullptr) std::memcpy(copy.raw(), grad, num_bytes_);
    pending_.emplace(worker, std::move(copy));
    AwaitSyncStepLocked(std::move(applied), &run_after);
  }
  RunAll(run_after);
  return absl::OkStatus();
}

void Shard::AwaitSyncStepLocked(AppliedCallback applied, std::vector<std::function<void()>>* run_after) {
  applied_waiters_.push_back(std::move(applied));
  if (static_cast<int>(pending_.size() + pending_rows_.size()) == options_.num_workers) {
    CompleteSyncStepLocked(run_after);
  }
}

void Shard::CompleteSyncStepLocked(std::vector<std::function<void()>>* run_after) {
  if (!pending_rows_.empty()) {
    // A table: the rows of all workers summed per row, in worker-index order, applied once.
    size_t expected = 0;
    for (const auto& [worker, rows] : pending_rows_) expected += rows.rows.size();
    RowAccumulator sum(row_elements_, expected);
    for (const auto& [worker, rows] : pending_rows_) sum.Add(rows);
    pending_rows_.clear();
    pending_.clear();  // a table takes rows only (PsServer checks), so this is empty
    ApplyRowsLocked(sum.Take(), run_after);
  } else {
    CompleteDenseSyncStepLocked(run_after);
  }
  const int64_t v = version_;
  for (AppliedCallback& cb : applied_waiters_) run_after->push_back([cb = std::move(cb), v] { cb(v); });
  applied_waiters_.clear();
}

void Shard::CompleteDenseSyncStepLocked(std::vector<std::function<void()>>* run_after) {
  // Sum in worker-index order (std::map order) so the result does not depend on arrival order.
  auto it = pending_.begin();
  if (sum_.num_elements() != values_->num_elements()) sum_ = Tensor(DType::kFloat32, shape_);
  std::memcpy(sum_.raw(), it->second.raw(), num_bytes_);
  float* sum = sum_.data<float>();
  const int64_t n = sum_.num_elements();
  for (++it; it != pending_.end(); ++it) {
    const float* g = it->second.data<float>();
    for (int64_t i = 0; i < n; ++i) sum[i] += g[i];
  }
  pending_.clear();
  ApplyLocked(sum, run_after);
}

std::vector<int> Shard::MissingWorkers(int64_t step) const {
  absl::ReaderMutexLock l(&mu_);
  std::vector<int> missing;
  if (step != version_) return missing;
  for (int w = 0; w < options_.num_workers; ++w) {
    if (!PendingLocked(w)) missing.push_back(w);
  }
  return missing;
}

int64_t Shard::version() const {
  absl::ReaderMutexLock l(&mu_);
  return version_;
}

void Shard::WhenVersionAtLeast(int64_t min_version, ReadyCallback ready) {
  {
    absl::MutexLock l(&mu_);
    if (version_ < min_version) {
      version_waiters_.emplace(min_version, std::move(ready));
      return;
    }
  }
  ready(absl::OkStatus());
}

void Shard::Read(ShardValue* out) const {
  out->set_name(name());
  TensorProto* value = out->mutable_value();
  value->set_dtype(DT_FLOAT);
  value->clear_shape();
  for (int64_t d : shape_) value->add_shape(d);
  {
    absl::ReaderMutexLock l(&mu_);
    out->set_version(version_);
    value->set_data(reinterpret_cast<const char*>(values_->raw()), num_bytes_);
  }
  pulls_.fetch_add(1, std::memory_order_relaxed);
  bytes_out_.fetch_add(static_cast<int64_t>(num_bytes_), std::memory_order_relaxed);
}

ShardSnapshot Shard::Snapshot() const {
  absl::ReaderMutexLock l(&mu_);
  ShardSnapshot snap;
  snap.values = *values_;
  snap.slots = slots_;
  snap.version = version_;
  return snap;
}

void Shard::WithState(
    const std::function<void(const Tensor& values, const std::vector<Tensor>& slots, int64_t version)>& fn) const {
  absl::ReaderMutexLock l(&mu_);
  fn(*values_, slots_, version_);
}

std::shared_ptr<const Tensor> Shard::SnapshotValues(int64_t* version) const {
  std::shared_ptr<const Tensor> buffer;
  {
    absl::ReaderMutexLock l(&mu_);
    *version = version_;
    buffer = values_;
  }
  pulls_.fetch_add(1, std::memory_order_relaxed);
  bytes_out_.fetch_add(static_cast<int64_t>(num_bytes_), std::memory_order_relaxed);
  return buffer;
}

void Shard::Abort(const absl::Status& why) {
  std::vector<AppliedCallback> applied;
  std::multimap<int64_t, ReadyCallback> waiters;
  {
    absl::MutexLock l(&mu_);
    applied.swap(applied_waiters_);
    waiters.swap(version_waiters_);
    pending_.clear();
    pending_rows_.clear();
  }
  for (auto& cb : applied) cb(why);
  for (auto& [v, cb] : waiters) cb(why);
}

ShardStats Shard::Stats() const {
  ShardStats s;
  s.set_name(name());
  s.set_pulls(pulls_.load(std::memory_order_relaxed));
  s.set_pushes(pushes_.load(std::memory_order_relaxed));
  s.set_bytes_in(bytes_in_.load(std::memory_order_relaxed));
  s.set_bytes_out(bytes_out_.load(std::memory_order_relaxed));
  s.set_rejected_pushes(rejected_.load(std::memory_order_relaxed));
  s.set_skipped_non_finite(skipped_.load(std::memory_order_relaxed));
  s.set_update_seconds_total(static_cast<double>(update_nanos_.load(std::memory_order_relaxed)) * 1e-9);
  s.set_version(version());
  s.set_rows_pulled(rows_pulled_.load(std::memory_order_relaxed));
  s.set_rows_pushed(rows_pushed_.load(std::memory_order_relaxed));
  return s;
}

absl::Duration MaxSyncTimeout(const std::vector<std::shared_ptr<Shard>>& shards) {
  absl::Duration d = absl::ZeroDuration();
  for (const auto& s : shards) d = std::max(d, s->options().sync_timeout);
  return d;
}

std::string MissingWorkersText(const std::vector<int>& missing, int num_workers) {
  return absl::StrCat("workers [", absl::StrJoin(missing, ", "), "] (", num_workers - static_cast<int>(missing.size()),
                      " of ", num_workers, " pushed)");
}

}  // namespace pstrain
