// One variable shard on a ps: its values, optimizer slots and version (updates applied), the
// gradients collected for the current synchronous step, the calls parked until a version is
// reached, and its counters. Every update is serialised by the shard's own mutex, so different
// shards update in parallel and a pull never sees a torn update.
//
// A shard of an embedding table (spec().sparse()) is read and updated by rows: a sparse pull
// gathers rows under the mutex held shared, a sparse push applies its (summed) rows under the
// mutex held exclusively, so a gathered row is never half-updated while the shard's memory stays
// its values and slots (no copies of the whole shard). Local row j holds GLOBAL row
// row_offset + j * stride (div: stride 1; mod: stride = the table's shard count).
//
// Sync mode: step s (= the version a worker pulled) collects exactly one gradient (dense, or rows
// for a table) per worker index 0..N-1, then applies the SUM of the N gradients (per row for a
// table) once (workers push gradients already divided by
// the global batch, so the sum is the mean over the global batch) and bumps the version to s+1.
// The sum runs in worker-index order so a sync run is reproducible bit for bit.
// Callbacks passed in are run after the shard's mutex is released, on the calling thread or on
// the thread whose push completed the step; they must not block.
// Thread-safety: all methods are thread-safe.
#ifndef PSTRAIN_PS_STORE_SHARD_H_
#define PSTRAIN_PS_STORE_SHARD_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics/metrics_registry.h"
#include "common/tensor/tensor.h"
#include "proto/ps.pb.h"
#include "ps/store/optimizer.h"
#include "ps/store/sparse_apply.h"
#include "ps/store/tensor_pool.h"

namespace pstrain {

// Settings shared by the shards created by one CreateShards or Restore call.
struct ShardOptions {
  std::shared_ptr<const Optimizer> optimizer;  // never null
  UpdateMode mode = UPDATE_ASYNC;
  int num_workers = 1;  // sync mode: gradients per step
  absl::Duration sync_timeout = absl::Seconds(60);
  NonFinitePolicy non_finite = NON_FINITE_REJECT;
  Histogram* update_latency = nullptr;  // observes each update's seconds (not owned; may be null)
};

// The options of the shard `spec`: `job`'s, except that a non-trainable variable's shard
// (spec.non_trainable()) adds its pushes as they are (Optimizer::Additive(): no slots).
ShardOptions OptionsForShard(const ShardOptions& job, const ShardSpecProto& spec);

// A consistent copy of a shard's state, for checkpoints.
struct ShardSnapshot {
  Tensor values;
  std::vector<Tensor> slots;  // in optimizer->SlotNames() order
  int64_t version = 0;
};

class Shard {
 public:
  // Called with the version after the step applied, or an error when the shard was replaced.
  using AppliedCallback = std::function<void(absl::StatusOr<int64_t>)>;
  // Called once the version reached the awaited one (OK) or the shard was replaced (Aborted).
  using ReadyCallback = std::function<void(absl::Status)>;

  // REQUIRES: values has ShardShape(spec); slots match options.optimizer->SlotNames() and shape.
  Shard(ShardSpecProto spec, ShardOptions options, Tensor values, std::vector<Tensor> slots, int64_t version);
  ~Shard();

  const std::string& name() const { return spec_.shard_name(); }
  const ShardSpecProto& spec() const { return spec_; }
  const ShardOptions& options() const { return options_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t num_bytes() const { return num_bytes_; }

  // InvalidArgument naming the shard when a gradient has another dtype, shape or byte size.
  absl::Status CheckGradient(DataType dtype, absl::Span<const int64_t> shape, size_t bytes) const;
  // Number of NaN/Inf float32 elements in `data`.
  static int64_t CountNonFinite(absl::string_view data);

  // Async mode: applies `grad` (raw float32 bytes of shape()) now; returns the new version.
  // `forward_to` (may be null): forward_to() as of this update, read with it (replication).
  int64_t ApplyNow(const char* grad, int* forward_to = nullptr);

  // Sync mode, first phase: FailedPrecondition when `worker` already pushed for `step`, `step` is
  // stale (< version) or ahead (> version); InvalidArgument for a worker index outside 0..N-1.
  absl::Status CheckSyncPush(int worker, int64_t step) const;
  // Sync mode: records `worker`'s gradient for `step` (nullptr: a skipped non-finite gradient,
  // counted as zeros) and calls `applied` once the step is applied. Same errors as CheckSyncPush.
  absl::Status AddSyncGradient(int worker, int64_t step, const char* grad, AppliedCallback applied);
  // Worker indices that have not pushed for `step` yet ("" when the step is complete).
  std::vector<int> MissingWorkers(int64_t step) const;

  int64_t version() const;
  // Calls `ready` (now, on this thread, when already reached) once version() >= min_version.
  void WhenVersionAtLeast(int64_t min_version, ReadyCallback ready);
  // Copies the value and version into `out` (name, version, value).
  void Read(ShardValue* out) const;
  ShardSnapshot Snapshot() const;
  // Calls `fn(values, slots, version)` with a consistent state and no copy: updates wait until it
  // returns, pulls do not. `fn` must not call back into the shard.
  void WithState(
      const std::function<void(const Tensor& values, const std::vector<Tensor>& slots, int64_t version)>& fn) const;
  // The values and their version, without a copy: the returned buffer never changes, because an
  // update that finds it still referenced applies to a copy instead (copy on write); counts a pull.
  std::shared_ptr<const Tensor> SnapshotValues(int64_t* version) const;
  // A pooled buffer of the shard's shape for assembling a streamed gradient.
  std::shared_ptr<Tensor> GradientBuffer() const { return gradient_pool_->Get(); }
  // Fails every parked call with `why` (the shard is being replaced or the ps stops).
  void Abort(const absl::Status& why);

  // Table shards. Floats per row (the product of full_shape[1:]).
  int64_t row_elements() const { return row_elements_; }
  // The local rows of `num_ids` GLOBAL row ids (`ids`: int64 little-endian, any alignment), in
  // order. InvalidArgument naming the shard and the first id it does not hold (outside the table,
  // or of another shard: another range for div, another residue for mod) or a size mismatch.
  absl::Status LocalRows(absl::string_view ids, int64_t num_ids, std::vector<int64_t>* rows) const;
  // Copies local `rows` into `out` (rows.size() * row_elements() floats, any alignment), each row
  // whole: no update is half-applied to it. Returns the version they are from; counts a pull of
  // rows.size() rows. REQUIRES: every row < the shard's rows.
  int64_t GatherRows(absl::Span<const int64_t> rows, char* out) const;
  // Async mode: applies `update` (local rows, duplicates already summed) now; returns the new
  // version. An empty update still counts as an update (the version advances, as for dense).
  int64_t ApplyRowsNow(const RowGradients& update, int* forward_to = nullptr);
  // Sync mode: AddSyncGradient for a table: `update` holds `worker`'s summed rows for `step` (empty
  // for a gradient skipped as non-finite). Same errors as CheckSyncPush.
  absl::Status AddSyncRows(int worker, int64_t step, RowGradients update, AppliedCallback applied);

  // Replication (ps_replicas 1; shard_replica.cc). A backup copy is updated only by ApplyReplica,
  // in its primary's order; a primary forwards its updates to ps task forward_to() (-1: none).
  bool is_backup() const { return backup_.load(std::memory_order_acquire); }
  void set_backup(bool backup) { backup_.store(backup, std::memory_order_release); }
  int forward_to() const {
    absl::MutexLock l(&mu_);
    return forward_to_;
  }
  void set_forward_to(int ps) {
    absl::MutexLock l(&mu_);
    forward_to_ = ps;
  }
  // Re-attaching a returned backup: starts forwarding to `ps` and copies the state, in one step,
  // so every update after the copy is forwarded and none before it is.
  ShardSnapshot SnapshotForBackup(int ps);
  // Backup created empty (a returned ps): holds every forward until InstallReplicaState.
  void set_awaiting_state() {
    absl::MutexLock l(&mu_);
    awaiting_state_ = true;
  }
  // Backup: replaces values, slots and version by the primary's (InvalidArgument on a size or
  // slot-count mismatch), drops held forwards up to `version` and applies those that follow.
  absl::Status InstallReplicaState(absl::string_view values, const std::vector<absl::string_view>& slots,
                                   int64_t version);
  // Backup: applies an update its primary applied as version `version` (`dense`: float32 bytes of
  // shape(), any alignment; or `rows`, already summed, for a table shard): at once when this copy
  // is at version - 1, then the held updates that follow it; held (copied) while an earlier one is
  // still on its way (forwards travel in parallel) or the copy awaits its state; dropped when
  // already applied. Returns the version reached. Forwarding the gradient and applying it with the
  // same optimizer in the same order keeps the backup's values and slots bit for bit the primary's.
  // Unavailable, holding nothing, when the update would have to be held and the held updates
  // would pass `max_held_bytes`: the primary retries it once earlier ones have landed. One update
  // is always held, whatever its size, and a retried held version replaces itself.
  absl::StatusOr<int64_t> ApplyReplica(int64_t version, const char* dense, RowGradients rows,
                                       int64_t max_held_bytes);
  // Backup: keeps the update of `version` (as ApplyReplica takes it; dense bytes copied) for
  // ApplyDeferredReplicaUpdates instead of applying it now, and returns true; returns false, keeping
  // nothing, when the kept updates would pass `max_held_bytes`, when this copy awaits its state or
  // has the version already: the caller then calls ApplyReplica, which applies at once. Kept
  // updates are applied by promotion, a state install or an ApplyReplica that reaches them.
  bool DeferReplica(int64_t version, const char* dense, RowGradients* rows, int64_t max_held_bytes);
  // Applies the kept updates that follow this copy's version, in order (not past a missing one);
  // returns how many.
  int64_t ApplyDeferredReplicaUpdates();
  // Promotion: applies the held updates in version order, skipping the missing ones (their pushes
  // were never acknowledged: the primary answers a push only once its backup has it); returns how
  // many it applied.
  int64_t ApplyHeldReplicaUpdates();
  // Updates held by ApplyReplica (waiting for an earlier one) or DeferReplica.
  int64_t held_replica_updates() const;

  void CountRejected() { rejected_.fetch_add(1, std::memory_order_relaxed); }
  void CountSkipped() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  void CountPush(int64_t bytes) {
    pushes_.fetch_add(1, std::memory_order_relaxed);
    bytes_in_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void CountRowPush(int64_t rows, int64_t bytes) {
    CountPush(bytes);
    rows_pushed_.fetch_add(rows, std::memory_order_relaxed);
  }
  ShardStats Stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  // Applies one gradient under mu_, bumps the version and moves satisfied version waiters out.
  void ApplyLocked(const float* grad, std::vector<std::function<void()>>* run_after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for a table's summed rows.
  void ApplyRowsLocked(const RowGradients& update, std::vector<std::function<void()>>* run_after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes values_ safe to update in place: a copy when a pull still holds it (copy on write).
  void PrepareWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bumps the version, counts the update time since `start`, moves satisfied version waiters out.
  void FinishUpdateLocked(Clock::time_point start, std::vector<std::function<void()>>* run_after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sync mode: whether `worker` already pushed for the current step.
  bool PendingLocked(int worker) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return pending_.count(worker) > 0 || pending_rows_.count(worker) > 0;
  }
  // Sync mode: records `worker`'s answer callback and completes the step when all workers pushed.
  void AwaitSyncStepLocked(AppliedCallback applied, std::vector<std::function<void()>>* run_after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckSyncPushLocked(int worker, int64_t step) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void CompleteSyncStepLocked(std::vector<std::function<void()>>* run_after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CompleteDenseSyncStepLocked(std::vector<std::function<void()>>* run_after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A forwarded update held until the ones before it arrived.
  struct HeldUpdate {
    std::vector<float> dense;
    RowGradients rows;
    // What `rows` takes in held_ (its ids and gradients).
    static int64_t RowsBytes(const RowGradients& rows) {
      return static_cast<int64_t>(rows.grads.size() * sizeof(float) + rows.rows.size() * sizeof(int64_t));
    }
    int64_t bytes() const { return static_cast<int64_t>(dense.size() * sizeof(float)) + RowsBytes(rows); }
  };
  // Keeps `version`'s update in held_ (dense bytes copied, rows moved).
  void HoldLocked(int64_t version, const char* dense, RowGradients rows) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes held_'s first update and returns it.
  HeldUpdate TakeFirstHeldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the held updates that follow version_ in order.
  void DrainHeldLocked(std::vector<std::function<void()>>* run_after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies one forwarded update (dense or rows by the shard's kind) under mu_.
  void ApplyReplicaLocked(const float* dense, const RowGradients& rows, std::vector<std::function<void()>>* run_after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ShardSpecProto spec_;
  const ShardOptions options_;
  const std::vector<int64_t> shape_;
  const size_t num_bytes_;
  const int64_t rows_, row_elements_;                // local rows (axis 0) and floats per row
  const std::shared_ptr<TensorPool> snapshot_pool_;  // copies made on write
  const std::shared_ptr<TensorPool> gradient_pool_;

  mutable absl::Mutex mu_;
  // Shared with pulls in flight (SnapshotValues); updated in place only when nothing else holds it.
  std::shared_ptr<Tensor> values_ ABSL_GUARDED_BY(mu_);
  std::vector<Tensor> slots_ ABSL_GUARDED_BY(mu_);
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int, Tensor> pending_ ABSL_GUARDED_BY(mu_);  // sync: worker -> gradient for step version_
  std::map<int, RowGradients> pending_rows_ ABSL_GUARDED_BY(mu_);  // sync, tables: worker -> its rows
  std::vector<AppliedCallback> applied_waiters_ ABSL_GUARDED_BY(mu_);
  std::multimap<int64_t, ReadyCallback> version_waiters_ ABSL_GUARDED_BY(mu_);
  Tensor sum_ ABSL_GUARDED_BY(mu_);  // sync: reused buffer for the sum of a step's gradients
  std::map<int64_t, HeldUpdate> held_ ABSL_GUARDED_BY(mu_);  // backup: version -> update
  int64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;             // of held_'s updates
  std::vector<float> spare_dense_ ABSL_GUARDED_BY(mu_);      // an applied held update's buffer, for the next
  std::atomic<bool> backup_{false};
  int forward_to_ ABSL_GUARDED_BY(mu_) = -1;
  bool awaiting_state_ ABSL_GUARDED_BY(mu_) = false;

  mutable std::atomic<int64_t> pulls_{0}, bytes_out_{0};  // counted by const Read
  mutable std::atomic<int64_t> rows_pulled_{0};
  std::atomic<int64_t> pushes_{0}, bytes_in_{0}, rejected_{0}, skipped_{0}, rows_pushed_{0};
  std::atomic<int64_t> update_nanos_{0};
};

// The longest sync timeout among `shards` (how long a call waiting on all of them may park).
absl::Duration MaxSyncTimeout(const std::vector<std::shared_ptr<Shard>>& shards);

// "workers [1, 3] (2 of 4 pushed)" for messages about a sync step.
std::string MissingWorkersText(const std::vector<int>& missing, int num_workers);

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_SHARD_H_
