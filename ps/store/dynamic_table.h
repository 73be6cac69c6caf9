// A dynamic embedding table (one shard of one): int64 keys -> rows of `dim` floats with the
// optimizer's slots beside each row, made on first push, with no vocabulary size.
//
// Rules:
//  - Lookup of a key the table does not hold gives the initializer's row for it
//    (DynamicRowInitializer: a function of seed, table name and key only) and stores nothing.
//    Lookups never count toward admission (evaluation and serving reads must not admit keys).
//  - Push(keys, grads, step) sums the gradients of repeated keys first (in the order given, as
//    ps/store/sparse_apply.h does), makes the rows of missing keys from the initializer (slots from
//    the optimizer's SlotInitialValue), then runs the optimizer's formula on the touched rows only,
//    so concurrent pushes add, never overwrite. `step` is the caller's count of updates already
//    applied (Keras's iterations): it drives the optimizer's schedule and becomes the rows' last
//    update step. adam, which updates every row, is refused at Create (use lazy_adam).
//  - Admission (admission_threshold N > 1): a missing key is counted in an AdmissionFilter once per
//    push that carries it; it becomes a row at the push that brings its count to N, and that push's
//    update is applied. Earlier pushes' updates for it are dropped and counted
//    (admission_dropped_updates, one per key per push). Counts stay after a row is evicted, so an
//    evicted key that returns is admitted at once. N <= 1: every key is admitted.
//  - TTL (ttl_steps T > 0): EvictExpired(now) drops every row with now - last_update_step > T.
//  - Size cap (max_rows C > 0): when a push leaves more than C rows, the rows with the smallest
//    (last_update_step, key) pairs are dropped until cap_low_water rows remain (default C - C/16:
//    the slack makes the O(rows) selection happen once per C/16 new rows, not per push). This is
//    exact least-recently-updated order with ties broken by the smaller key; rows made by the push
//    itself carry its step and can be dropped only after all older rows.
// Memory: rows x RowBytes() for values and slots, plus at most kMaxOverheadBytesPerRow per row: a
// 16-byte RowHeader (last update step, push bookkeeping) and the key's hash-map slot (16 bytes + 1
// control byte, at a load of at least 7/16 after the map grows: <= 39 bytes), plus the arena's last
// partly used chunk (RowArena::kRowsPerChunk records), records freed by eviction awaiting reuse, and
// the filter (width x depth bytes). The map does not shrink after evictions: bounds hold against
// the largest row count held. MemoryBytes() adds these up from the containers' own sizes.
// Thread-safety: thread-safe. Lookups and reads hold the table's lock shared, so lookups from many
// threads run together; Push, EvictExpired and RestoreState hold it exclusively.
#ifndef PSTRAIN_PS_STORE_DYNAMIC_TABLE_H_
#define PSTRAIN_PS_STORE_DYNAMIC_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/plan/dynamic_row_bytes.h"
#include "ps/store/admission_filter.h"
#include "ps/store/dynamic_row_initializer.h"
#include "ps/store/dynamic_table_state.h"
#include "ps/store/optimizer.h"
#include "ps/store/row_arena.h"

namespace pstrain {

struct DynamicTableOptions {
  std::string name;  // the table's name (shards of one table share it: initial rows depend on it)
  int64_t dim = 0;
  uint64_t seed = 0;
  InitializerProto initializer;  // empty type: zeros
  std::shared_ptr<const Optimizer> optimizer;
  int admission_threshold = 1;     // N: pushes a key needs before it becomes a row; <= 1 admits all
  int64_t filter_width = kDynamicFilterWidth;  // admission filter counters per row (used when N > 1)
  int filter_depth = kDynamicFilterDepth;      // admission filter rows, 1..8
  int64_t ttl_steps = 0;           // T for EvictExpired; 0: no TTL
  int64_t max_rows = 0;            // C; 0: no cap
  int64_t cap_low_water = 0;       // rows left after a cap eviction, < max_rows; 0: C - C/16
};

class DynamicTable {
 public:
  static constexpr int64_t kMaxOverheadBytesPerRow = 16 + 39;

  // InvalidArgument naming the table for an empty name, dim <= 0, no optimizer, an optimizer
  // that updates every row (adam), an unknown initializer, admission_threshold above
  // AdmissionFilter::kMaxCount, a filter size out of range, negative ttl or cap, or
  // cap_low_water >= max_rows.
  static absl::StatusOr<std::unique_ptr<DynamicTable>> Create(DynamicTableOptions options);

  // Writes the values of keys[i] to out[i * dim, (i + 1) * dim). InvalidArgument when
  // out.size() != keys.size() * dim.
  absl::Status Lookup(absl::Span<const int64_t> keys, absl::Span<float> out) const ABSL_LOCKS_EXCLUDED(mu_);

  // Applies gradient rows grads[i * dim, (i + 1) * dim) of keys[i] (see the rules above).
  // InvalidArgument, changing nothing, when grads.size() != keys.size() * dim, step < 0, or a
  // gradient is NaN or infinite (naming the key).
  absl::Status Push(absl::Span<const int64_t> keys, absl::Span<const float> grads, int64_t step)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Drops the rows not updated in the last ttl_steps steps before `current_step`; returns how
  // many. Does nothing (returns 0) without a TTL.
  int64_t EvictExpired(int64_t current_step) ABSL_LOCKS_EXCLUDED(mu_);

  // The values and slots of a held key (values, then each slot), and its last update step; false
  // when the table does not hold it. REQUIRES: values_and_slots.size() == FloatsPerRow().
  bool ReadRow(int64_t key, absl::Span<float> values_and_slots, int64_t* last_update_step) const
      ABSL_LOCKS_EXCLUDED(mu_);

  DynamicTableCounters counters() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t rows() const ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes held by the rows, the key map, the free list and the filter.
  int64_t MemoryBytes() const ABSL_LOCKS_EXCLUDED(mu_);

  // The whole state (rows by ascending key) for a checkpoint.
  DynamicTableState ExportState() const ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces the table's rows, filter, step and counters by `state`. InvalidArgument naming the
  // mismatch, changing nothing, when its name, dim, slot count or filter size differ from this
  // table's, or its sizes are inconsistent. A saved filter is dropped when this table admits every
  // key; a state without one gives a table with admission an empty filter.
  absl::Status RestoreState(const DynamicTableState& state) ABSL_LOCKS_EXCLUDED(mu_);

  const DynamicTableOptions& options() const { return options_; }
  int64_t dim() const { return options_.dim; }
  int num_slots() const { return num_slots_; }
  // dim x (1 + slots): the floats of one row.
  int64_t FloatsPerRow() const { return floats_per_row_; }
  // Bytes of one row's values and slots.
  int64_t RowBytes() const { return FloatsPerRow() * static_cast<int64_t>(sizeof(float)); }

 private:
  DynamicTable(DynamicTableOptions options, DynamicRowInitializer initializer, int num_slots);

  // The scratch list of rows this thread's calls fill (FindRows).
  static std::vector<int64_t>& RowScratch();
  // rows[i] = the record of keys[i], or -1 when the table does not hold it.
  void FindRows(absl::Span<const int64_t> keys, std::vector<int64_t>* rows) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A fresh row for `key`: initial values and slots, header cleared.
  int64_t NewRow(int64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a missing key's push may make its row (admission), counting it once per push.
  bool Admit(int64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the optimizer on the push's distinct rows, in blocks (gather, apply once, scatter).
  void ApplyTouched(const std::vector<int64_t>& rows, const std::vector<float>& grads, int64_t step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EvictOverCap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Remove(int64_t key, int64_t row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t NextPushTag() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DynamicTableOptions options_;
  const DynamicRowInitializer initializer_;
  const int num_slots_;
  const int64_t floats_per_row_;
  std::vector<float> slot_initial_;  // num_slots_ initial values

  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, int64_t> index_ ABSL_GUARDED_BY(mu_);  // key -> arena record
  RowArena arena_ ABSL_GUARDED_BY(mu_);
  AdmissionFilter filter_ ABSL_GUARDED_BY(mu_);
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t push_tag_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<int64_t> counted_this_push_ ABSL_GUARDED_BY(mu_);  // admission: once per push
  DynamicTableCounters counters_ ABSL_GUARDED_BY(mu_);
  // Counted under the shared lock by concurrent lookups.
  mutable std::atomic<int64_t> lookups_{0}, lookups_missing_{0};
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_DYNAMIC_TABLE_H_
