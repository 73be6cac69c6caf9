// A dynamic table's whole state as plain data (the rows with their slots and last-update steps, the
// admission filter's counters, the counters), its checkpoint byte format, and re-sharding: the
// states of M shards of one table split and merged into N shards by DynamicKeyOwner.
//
// Byte format, version 1 (little-endian integers and IEEE floats; hosts are little-endian):
//   "PSDYNTB\0" | u32 version | u32 name bytes, name | i64 dim | i32 slots | i64 step |
//   i64 x kNumCounters (DynamicTableCounters in declaration order) |
//   i64 filter width | i32 filter depth | width x depth u8 counters (width 0: no filter) |
//   i64 rows | rows x i64 keys (strictly ascending) | rows x i64 last-update steps |
//   rows x dim x (1 + slots) f32 (per row: values, then each slot) | u64 XXH64 of all bytes before it.
// Decoding checks the checksum first and every size against the bytes left before allocating, so a
// truncated or edited file gives InvalidArgument (DataLoss for a checksum mismatch) naming what is
// wrong, never a crash or an allocation the file did not pay for.
// Thread-safety: pure functions over values.
#ifndef PSTRAIN_PS_STORE_DYNAMIC_TABLE_STATE_H_
#define PSTRAIN_PS_STORE_DYNAMIC_TABLE_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pstrain {

// What a table counts; all but `rows` accumulate since the table was created (and across restores).
struct DynamicTableCounters {
  int64_t rows = 0;                       // rows held now
  int64_t created = 0;                    // rows made by pushes
  int64_t evicted_ttl = 0;                // rows dropped by EvictExpired
  int64_t evicted_cap = 0;                // rows dropped to stay under max_rows
  int64_t admission_dropped_updates = 0;  // summed gradient rows dropped for keys not admitted yet
  int64_t lookups = 0;                    // keys looked up
  int64_t lookups_missing = 0;            // keys looked up that the table did not hold
  int64_t pushed_rows = 0;                // distinct keys pushed (applied or dropped)
};

struct DynamicTableState {
  static constexpr int kNumCounters = 7;  // DynamicTableCounters without `rows` (derived from keys)

  std::string table_name;
  int64_t dim = 0;
  int32_t num_slots = 0;
  int64_t step = 0;  // the largest step pushed
  DynamicTableCounters counters;
  int64_t filter_width = 0;  // 0: the table has no admission filter
  int32_t filter_depth = 0;
  std::vector<uint8_t> filter_counters;  // filter_depth * filter_width
  std::vector<int64_t> keys;             // strictly ascending
  std::vector<int64_t> last_update_steps;
  std::vector<float> rows;  // keys.size() * dim * (1 + num_slots)

  int64_t FloatsPerRow() const { return dim * (1 + num_slots); }
};

std::string EncodeDynamicTableState(const DynamicTableState& state);

// The state of a table that starts from given rows (`--init_from` Keras weights): each of `keys`
// (distinct, any order) holds its row of `values` ([keys.size(), dim] row-major), every slot s at
// slot_initial[s], last updated at step 0; `created` counts the rows; no admission filter (a table
// with admission restores it empty). InvalidArgument when dim < 1, the sizes disagree or a key
// repeats.
absl::StatusOr<DynamicTableState> InitialDynamicTableState(const std::string& table, int64_t dim,
                                                           const std::vector<float>& slot_initial,
                                                           const std::vector<int64_t>& keys,
                                                           const std::vector<float>& values);
// InvalidArgument / DataLoss naming the problem (see the format above) for bad bytes.
absl::StatusOr<DynamicTableState> DecodeDynamicTableState(absl::string_view bytes);

// The rows of `shards` (the states of every shard of one table, any count) placed on `num_shards`
// shards by DynamicKeyOwner: output shard i holds exactly the keys with DynamicKeyOwner(key, n) == i,
// with their values, slots and last-update steps. Every output gets the largest step and the sum of
// the input filters (keys of one table are disjoint across its shards, so the sum is the union's
// counts; a shard also carrying its neighbours' counts can only admit early, never late). The
// history counters' sums go to output shard 0, so the totals over shards are kept.
// InvalidArgument when num_shards < 1, `shards` is empty, the inputs differ in table name, dim,
// slots or filter size, or a key appears in two inputs.
absl::StatusOr<std::vector<DynamicTableState>> ReshardDynamicTableStates(const std::vector<DynamicTableState>& shards,
                                                                         int num_shards);

// The same over encoded checkpoints: decodes each (errors name the input's index), reshards, encodes.
absl::StatusOr<std::vector<std::string>> ReshardDynamicTableCheckpoints(const std::vector<std::string>& shards,
                                                                        int num_shards);

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_DYNAMIC_TABLE_STATE_H_
