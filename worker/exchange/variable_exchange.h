// VariableExchange: moves a model's variables between a worker and the ps tasks that hold their
// shards. One Pull per ps (all of that ps's shards) and one Push per ps, the ps calls of a step
// running in parallel. Dense variables move whole: their shards are rows [row_offset, row_offset +
// rows), so assembling and splitting are contiguous copies. Embedding tables (VariableSpec::sparse)
// move by rows: only the step's unique ids (SparseLookup), grouped by owning shard (div: contiguous
// ranges; mod: id % shards), travel, in the same one Pull and one Push per ps as the dense shards.
// Every table shard is named in every pull and push (with no ids when the step touches none of its
// rows), so table shards count versions, staleness and sync steps exactly as dense shards do.
// Dynamic tables (VariablePlanProto.Variable.dynamic; async mode only) have no rows to range over:
// their ids are raw int64 keys, shard i of n (on its ShardSpecProto's ps task) holds the keys with
// DynamicKeyOwner(key, n) == i (common/plan/dynamic_key_owner.h), and they move with PullKeys /
// PushKeys, never in Pull / Push: per step one PullKeys per ps that holds some of the step's keys
// and one PushKeys per ps that holds a dynamic shard, each beside (concurrently with) that ps's
// Pull / Push. Dynamic shards have no versions: they add nothing to staleness or version ranges.
// Thread-safety: one PullAll/PushAll at a time per object.
#ifndef PSTRAIN_WORKER_EXCHANGE_VARIABLE_EXCHANGE_H_
#define PSTRAIN_WORKER_EXCHANGE_VARIABLE_EXCHANGE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/plan/model_variables.h"
#include "common/tensor/tensor.h"
#include "proto/common.pb.h"
#include "ps/client/ps_client.h"
#include "worker/cpu/thread_pool.h"
#include "worker/exchange/sparse_lookup.h"
#include "worker/exchange/table_layout.h"

namespace pstrain {

class VariableExchange {
 public:
  // Checks that `plan` holds exactly `variables` (names, shapes, float32, in order), that the
  // shards of each variable tile its rows, and that every shard's ps task has a client.
  // InvalidArgument naming the variable or shard otherwise. `ps` is not owned and must outlive
  // the exchange; ps[i] serves ps task i.
  static absl::StatusOr<std::unique_ptr<VariableExchange>> Create(const std::vector<VariableSpec>& variables,
                                                                  const VariablePlanProto& plan,
                                                                  std::vector<PsClient*> ps);

  // Fills `params` from every ps: dense variable i with the whole variable (resized to its shape),
  // table i with the rows of lookup->unique_ids[i] in that order (shape [U_i, dim]). `min_version`
  // > 0 asks each ps to wait until its shards reach that version (sync mode). `lookup` may be null
  // only for models without tables. A ps that is gone, silent or restarted without its shards
  // (IsPsTrouble) gives ABORTED "ps:N ..." (common/wire/ps_trouble.h); other errors from a ps name it;
  // a reply with a missing shard or a
  // wrong shape is InvalidArgument; an id outside a table's rows is InvalidArgument naming it. A
  // dynamic table takes any int64 key; with one, `min_version` > 0 is FailedPrecondition (dynamic
  // tables train in async mode only).
  absl::Status PullAll(int64_t min_version, std::vector<Tensor>* params, const SparseLookup* lookup = nullptr);

  // Pushes each ps the rows of `grads` it holds: dense variable i's gradient has the variable's
  // shape; table i's is [U_i, dim], the gradient rows of lookup->unique_ids[i] (already summed per
  // id), split by owning shard. With `tag_with_pulled_version` (sync mode) each push carries step =
  // the version pulled last from that ps. Returns the largest staleness seen: per shard, (version
  // after the push - 1) - version pulled, i.e. how many other updates landed between this
  // worker's pull and its update (0 when none; meaningful in async mode). Errors as PullAll's.
  // `tag` is the push's worker_index field: the data part in sync mode. With `sync_step` >= 0
  // (sync mode) every push is tagged with that step instead of the version pulled, a ps whose
  // shards were pulled past it is skipped (it applied that step already, with this part), and a
  // push the ps answers IsAlreadyCountedSyncPush (common/wire/sync_push_status.h) counts as done.
  // Dynamic tables: FailedPrecondition with `tag_with_pulled_version` or `sync_step` >= 0 (async
  // only). Their PushKeys carry step = the highest dense (and range-table) shard version the last
  // PullAll pulled: the ps counts one version per update applied, so that is the job's global step
  // as this worker saw it, which drives the optimizer's schedule and the rows' TTL. 0 when the
  // model has no such shard (its dynamic rows then never expire by TTL).
  absl::StatusOr<int64_t> PushAll(int tag, bool tag_with_pulled_version, const std::vector<Tensor>& grads,
                                  const SparseLookup* lookup = nullptr, int64_t sync_step = -1);

  // The lowest and highest shard version of the last PullAll over every ps.
  std::pair<int64_t, int64_t> PulledVersionRange() const;

  // Takes the versions `from`'s last PullAll pulled as if this exchange had pulled them, so a
  // push made here reports its staleness against them (a push in flight on a second exchange
  // while the first pulls the next step). REQUIRES: both made from the same plan.
  void CopyPulledVersions(const VariableExchange& from) { pulled_ = from.pulled_; }

  int num_ps() const { return static_cast<int>(ps_.size()); }

  // Adds to `out` the pushes each shard's ps acknowledged since the last call (one per shard per
  // successful push; for a dynamic shard, per successful PushKeys to its ps), then resets them. For checking that no
  // acknowledged update was lost.
  void TakeAcknowledgedPushes(std::map<std::string, int64_t>* out);

 private:
  struct ShardSlot {
    std::string name;
    int variable = 0;
    int64_t row_offset = 0, rows = 0;
  };
  // A table shard on a ps: its table and its index among the table's shards.
  struct TableSlot {
    std::string name;
    int variable = 0;
    int table = 0;  // index into tables_
    int shard = 0;
  };
  struct Table {
    int variable = 0;
    TableLayout layout;
    std::vector<std::vector<int64_t>> positions;  // this step: per shard, positions in unique_ids
  };
  // A dynamic table: keys go to shard DynamicKeyOwner(key, positions.size()).
  struct KeyedTable {
    int variable = 0;
    std::string name;
    int64_t dim = 0;
    std::vector<std::vector<int64_t>> positions;  // this step: per shard, positions in unique_ids
  };
  // A dynamic table's shard on a ps.
  struct KeyedSlot {
    std::string name;
    int variable = 0;
    int table = 0;  // index into keyed_
    int shard = 0;
  };

  explicit VariableExchange(std::vector<PsClient*> ps) : ps_(std::move(ps)) {}
  absl::Status AddDense(int v, const VariablePlanProto::Variable& pv);
  absl::Status AddTable(int v, const VariablePlanProto::Variable& pv);
  absl::Status AddKeyed(int v, const VariablePlanProto::Variable& pv);
  // Groups this step's ids of every table by owning shard (Table::positions, KeyedTable::positions).
  absl::Status GroupIds(const SparseLookup* lookup);
  absl::Status PullFrom(int ps, int64_t min_version, std::vector<Tensor>* params, const SparseLookup* lookup);
  absl::Status PullKeysFrom(int ps, const SparseLookup& lookup, std::vector<Tensor>* params);
  absl::Status PushKeysTo(int ps, int worker_index, int64_t step, const std::vector<Tensor>& grads,
                          const SparseLookup& lookup);
  absl::Status ScatterRows(int ps, const PullResponse& response, const SparseLookup& lookup,
                           std::vector<Tensor>* params);
  absl::Status PushTo(int ps, int worker_index, bool tag, const std::vector<Tensor>& grads, const SparseLookup* lookup,
                      int64_t sync_step, int64_t* staleness);
  void FillRows(int ps, const std::vector<Tensor>& grads, const SparseLookup& lookup);
  // Runs fn(p) for every ps with dense or range-table shards and keyed(p) for every ps with dynamic
  // shards, all concurrently; a failure of either maps to ps p (IsPsTrouble: PsTroubleStatus).
  absl::Status ForEachPs(const std::function<absl::Status(int)>& fn,
                         const std::function<absl::Status(int)>& keyed = nullptr);

  std::vector<PsClient*> ps_;
  std::unique_ptr<ThreadPool> pool_;  // one thread per ps, two when the model has dynamic tables
  std::vector<VariableSpec> variables_;
  std::vector<int64_t> row_floats_;  // per variable: floats per row (axis 0)
  std::vector<Table> tables_;
  std::vector<std::vector<ShardSlot>> slots_;        // per ps: its dense shards, in request order
  std::vector<std::vector<TableSlot>> table_slots_;  // per ps: its table shards, in request order
  std::vector<std::vector<int64_t>> pulled_;         // per ps: version pulled per dense, then table slot
  std::vector<PullRequest> pull_requests_;           // per ps, reused
  std::vector<PushRequest> push_requests_;           // per ps, reused
  std::vector<int64_t> acked_;                       // per ps: pushes acknowledged, not yet taken
  std::vector<KeyedTable> keyed_;
  std::vector<std::vector<KeyedSlot>> keyed_slots_;    // per ps: its dynamic shards, in request order
  std::vector<PullKeysRequest> pull_keys_requests_;    // per ps, reused
  std::vector<PullKeysResponse> pull_keys_responses_;  // per ps, reused
  std::vector<PushKeysRequest> push_keys_requests_;    // per ps, reused
  std::vector<int64_t> keyed_acked_;                   // per ps: PushKeys acknowledged, not yet taken
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_EXCHANGE_VARIABLE_EXCHANGE_H_
