// PsServer: everything one ps task does, with no RPC code — the shards it holds, pulls, pushes
// (async: applied at once; sync: parked until all workers of the step pushed), checkpoints, stats
// and the handshake. The gRPC service (ps_service.h) and LocalPsClient are thin adapters over it.
//
// Pull and Push never block: they either finish before returning or park the call and finish it
// later from the thread whose push completes the step, or from the timeout thread. `done` runs
// exactly once; request and response must stay valid until it runs.
//
// Gradient semantics: workers push gradients already divided by the GLOBAL batch one update covers.
// ASYNC: each push is applied at once. SYNC (UPDATE_SYNC, num_workers N): the push for step s (the
// version the worker pulled) waits until all N workers pushed for s; the SUM of the N gradients
// (= the mean gradient over the global batch) is applied once, the version becomes s+1, and all N
// pushes are answered. The push's worker_index is the DATA PART it covers (part i = the examples a
// worker with index i reads), so a lost worker's part re-run on another worker counts once.
// Duplicate (part collected for s) or stale (s applied) pushes fail with FAILED_PRECONDITION and
// are never applied twice; the workers take those two as "already counted"
// (IsAlreadyCountedSyncPush in common/wire/sync_push_status.h) and go on; after sync_timeout_ms a push fails with DEADLINE_EXCEEDED naming the missing
// workers (gradients already collected stay, so the step completes when the rest arrive; a worker
// whose push timed out pulls with min_version = s+1 instead of pushing again).
// A push is validated for every shard before anything is applied (unknown shard, dtype/shape/size,
// non-finite values, stale/duplicate step, a row id the shard does not hold): a rejected push
// leaves every shard unchanged.
//
// Embedding tables: a table's shards (ShardSpecProto.sparse) are pulled and pushed by GLOBAL row
// ids only (SparseRows entries), never whole; a dense shard never by rows. A sparse pull gathers
// the rows; a sparse push sums duplicate ids, then applies the optimizer to those rows and their
// slots only (ps/store/sparse_apply.h). Sync mode sums the rows of all workers per row and applies once.
// Table shards count versions like dense ones: every push naming one is one update (the worker
// names every table shard in every push, with no rows when the step touches none).
//
// Dynamic tables (ps_server_dynamic.cc): a table without a row count, held as DynamicTable shards
// (ps/store/dynamic_table.h). Shard i of n holds the int64 keys with DynamicKeyOwner(key, n) == i;
// the caller routes each key to its owner, and the ps refuses a key it does not own (so a wrong
// count or index is caught, never silently split). They are pulled and pushed by keys (PullKeys /
// PushKeys) only, never by Pull / Push or the tensor channel; async mode only (CreateShards
// refuses them with UPDATE_SYNC), without backups. A pull of a key the shard does not hold gives
// the initializer's row and stores nothing; a push makes the rows it needs (subject to admission)
// and applies the optimizer to them. Expiry: each PushKeys, after applying, drops the rows not
// updated in the last ttl_steps steps before its step (EvictExpired), so expiry follows the
// pushers' global step and costs nothing on shards without a TTL. Save writes each dynamic shard's
// DynamicTableState bytes to DynamicShardFileName(table, i, n) in the checkpoint directory;
// Restore reads all of a table's files there (any saved count), re-shards them by key
// (ReshardDynamicTableStates) and keeps this shard's part. Stats: PsStatsResponse.dynamic_shards.
// Thread-safety: all methods are thread-safe.
#ifndef PSTRAIN_PS_STORE_PS_SERVER_H_
#define PSTRAIN_PS_STORE_PS_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/platform/env.h"
#include "common/wire/message_limits.h"
#include "proto/ps.pb.h"
#include "ps/store/background_queue.h"
#include "ps/store/deadline_timer.h"
#include "ps/store/dynamic_table.h"
#include "ps/store/replica_link.h"
#include "ps/store/shard.h"

namespace pstrain {

// A gradient as the ps reads it; `data` is borrowed and only read during the Push call.
struct GradientView {
  std::string name;
  DataType dtype = DT_FLOAT;
  std::vector<int64_t> shape;
  absl::string_view data;
  int64_t non_finite = -1;  // NaN/Inf values in `data` when the caller counted them, else -1
};

// A table shard's gradient rows as the ps reads them; `ids` and `values` are borrowed and only
// read during the Push call.
struct SparseRowsView {
  std::string name;
  int64_t num_ids = 0;
  absl::string_view ids;     // num_ids int64, little-endian
  absl::string_view values;  // float32 [num_ids, row elements]
  int64_t non_finite = -1;   // NaN/Inf values in `values` when the caller counted them, else -1
};

// Views of the gradients `header` lists over `buffers` (one each, in order), with their NaN/Inf
// counts where the caller has them (`non_finite` empty: not counted).
std::vector<GradientView> GradientViews(const PushRequest& header, const std::vector<std::shared_ptr<Tensor>>& buffers,
                                        const std::vector<int64_t>& non_finite = {});
// Views of the sparse entries of `request` over their inline bytes.
std::vector<SparseRowsView> SparseRowsViews(const PushRequest& request);

// OK when `shard` is accessed the way its kind allows: by rows (`as_rows`) for a table shard,
// whole for a dense one; InvalidArgument naming the shard otherwise.
absl::Status CheckRowAccess(const Shard& shard, bool as_rows);

// A pulled shard for streaming: a consistent copy of its values in a pooled buffer, or the
// gathered rows of a table shard (num_ids >= 0, shape [num_ids, row elements]).
struct PulledTensor {
  std::string name;
  int64_t version = 0;
  std::vector<int64_t> shape;
  std::shared_ptr<const Tensor> values;
  int64_t num_ids = -1;
};

// The file of shard `index` of `count` of dynamic table `table` inside a checkpoint directory:
// "dynamic-<table>-<index>-of-<count>.dtab", with every byte of the table name outside
// [A-Za-z0-9_.] written as %XX so that distinct names give distinct files.
std::string DynamicShardFileName(const std::string& table, int index, int count);

// The saved states of every shard of dynamic table `table` in checkpoint directory `dir` (the
// files DynamicShardFileName(table, i, n), i < n, all with one n), in shard order, decoded. NotFound
// when the table has no file there or one of its n is missing; DataLoss naming the file for bad
// bytes or when files of two shard counts are present.
absl::StatusOr<std::vector<DynamicTableState>> ReadDynamicTableFiles(Env* env, const std::string& dir,
                                                                     const std::string& table);

class PsServer {
 public:
  using DoneCallback = std::function<void(absl::Status)>;
  using PulledCallback = std::function<void(absl::Status, std::vector<PulledTensor>)>;

  struct Options {
    std::string task = "ps:0";                           // names this ps in messages
    // Not owned. nullptr: Env::Default(), resolved here once for the timer and the replica links,
    // so the many tests, benchmarks and fuzzers that run a ps on real time need not name it.
    Env* env = nullptr;
    absl::Duration default_timeout = absl::Seconds(60);  // when a request gives sync_timeout_ms 0
    // Most bytes of values and optimizer slots this ps may hold (0: no limit); CreateShards and
    // Restore refuse shards beyond it before allocating them.
    int64_t memory_budget_bytes = 0;
    Histogram* update_latency = nullptr;  // each shard update's seconds (not owned; may be null)
    // Replication (ps_replicas 1, ps_server_replication.cc): this ps's index in cluster.ps, and how
    // to reach another ps task (null: shards with a backup_ps are refused).
    int ps_index = -1;
    ReplicaConnector connect_ps = nullptr;
    int replica_in_flight = 4;                         // forwards in flight per backup ps
    absl::Duration replica_retry_for = absl::Seconds(60);  // how long a forward retries an unreachable backup
    // A backup answers a forward once it holds the update and applies it afterwards, on an
    // idle-priority thread, so neither the primary's answer to the worker nor the CPU the workers
    // use waits for the backup's optimizer. Up to this many bytes of such updates per backup shard
    // (their gradients); past it, and with 0, a forward is applied before it is answered.
    int64_t replica_defer_bytes = int64_t{4} << 20;
    // Most bytes of forwards per backup shard held for an earlier version (or for the shard's
    // state) to land first; past it a forward is refused UNAVAILABLE and the primary retries it.
    int64_t replica_hold_bytes = int64_t{256} << 20;
    std::function<void(const std::string&)> log = nullptr;  // replication events (may be null)
    // Save and Restore: when `confine_checkpoints`, a checkpoint_dir must pass CheckCheckpointDir
    // (confined_path.h) against `checkpoint_root` (empty: any root, but still a ckpt-<step>
    // directory without "..").
    bool confine_checkpoints = false;
    std::string checkpoint_root;
  };

  explicit PsServer(Options options);
  // Runs Shutdown().
  ~PsServer();

  const std::string& task() const { return options_.task; }

  // FailedPrecondition on a protocol version mismatch.
  absl::Status Handshake(const HandshakeRequest& request, HandshakeResponse* response);
  // Creates (or replaces, by name) shards, initialised from their initializers when
  // request.initialize, zeros otherwise. All-or-nothing: InvalidArgument naming the shard for a bad
  // spec, optimizer or mode, or naming the ps when the shards would exceed its memory budget
  // (checked before allocating); FailedPrecondition on a protocol version mismatch. Calls parked
  // on a replaced shard fail with Aborted.
  absl::Status CreateShards(const CreateShardsRequest& request, CreateShardsResponse* response);
  // Values and versions of the named shards, in request order, and the rows of the sparse
  // entries (response.sparse, in order), once each shard has version >= min_version. NotFound for
  // an unknown shard; InvalidArgument when the answer would exceed kMaxMessageBytes, for a shard
  // pulled the way its kind does not allow, or for a row id a shard does not hold (naming both);
  // DeadlineExceeded after the shards' sync timeout, naming the lagging shards.
  void Pull(const PullRequest* request, PullResponse* response, DoneCallback done);
  // Rows of dynamic table shards by key, in request order. NotFound for an unknown dynamic shard;
  // InvalidArgument naming the shard for keys bytes that are not 8 * num_keys, non-empty values,
  // a key the shard does not own (naming its owner), or an answer beyond kMaxMessageBytes.
  absl::Status PullKeys(const PullKeysRequest& request, PullKeysResponse* response);
  // Applies gradient rows of dynamic table shards (file comment). All entries are validated
  // before any is applied: NotFound / InvalidArgument as PullKeys, and for values bytes that are
  // not 4 * num_keys * dim, a negative step, a NaN/Inf gradient, or a shard named twice.
  absl::Status PushKeys(const PushKeysRequest& request, PushKeysResponse* response);
  // Applies (async) or collects (sync) gradients and gradient rows; see the file comment for codes.
  void Push(const PushRequest* request, PushResponse* response, DoneCallback done);
  // Push over borrowed gradient bytes (the streaming paths): the bytes the views point at and
  // `response` must stay valid until `done` runs (a primary forwards them to a backup from there;
  // the names and shapes are only read before this returns).
  // `replica_versions` non-empty: a primary ps forwarding updates it applied (ps_replicas 1), one
  // version per part (dense gradients, then sparse entries); each shard must be a backup here.
  //
  // Replication: a shard whose spec names this ps as its backup_ps (and another as ps_task) is a
  // backup: workers' pulls and pushes of it fail FAILED_PRECONDITION naming its primary. A primary
  // with a backup forwards each update it applies and runs `done` only once the backup has it
  // (replica_link.h for the link's errors).
  void PushGradients(int worker_index, int64_t step, const std::vector<GradientView>& gradients,
                     const std::vector<SparseRowsView>& sparse, PushResponse* response, DoneCallback done,
                     absl::Span<const int64_t> replica_versions = {});
  // The chief lost ps task request.lost_ps(): the backups here of its shards become primaries
  // (their held forwards applied first), and the shards here that it backed up stop forwarding
  // (pending pushes are answered). Lists both. InvalidArgument for lost_ps = this ps.
  absl::Status Promote(const PromoteRequest& request, PromoteResponse* response);
  // The chief: ps task request.backup_ps() is back and holds empty backups of the named shards.
  // For each (a primary here), forwarding to it starts and its state is sent (InstallReplica).
  // NotFound / FailedPrecondition naming a shard that is not a primary here; the link's errors.
  absl::Status AttachBackup(const AttachBackupRequest& request, AttachBackupResponse* response);
  // A primary's shard state for a backup here (see Shard::InstallReplicaState). NotFound;
  // FailedPrecondition when the shard is not a backup here.
  absl::Status InstallReplica(const ReplicaStateRequest& request, ReplicaStateResponse* response);
  // Pull for the streaming paths: same waiting and codes as Pull, answers with pooled snapshots
  // (dense shards, in request order) followed by the gathered rows of each sparse entry.
  void PullSnapshots(const PullRequest* request, PulledCallback done);
  // Pooled buffers, one per gradient `header` lists (name, dtype, shape; its data is ignored), to
  // assemble a streamed push in; NotFound / InvalidArgument as Push.
  absl::StatusOr<std::vector<std::shared_ptr<Tensor>>> GradientBuffers(const PushRequest& header) const;
  // Checks, before a streamed push's bytes are read, that its sparse entries name table shards
  // and that their announced byte sizes fit their num_ids (ids_bytes[i] = 8 * num_ids,
  // values_bytes[i] = num_ids * row bytes) within the message limit. NotFound / InvalidArgument.
  absl::Status CheckSparseSizes(const PushRequest& header, absl::Span<const int64_t> ids_bytes,
                                absl::Span<const int64_t> values_bytes) const;
  // Writes every shard's values, optimizer slots and version into request.checkpoint_dir (created
  // when missing) and lists them; the chief writes the index. Internal on I/O errors;
  // FailedPrecondition naming the shard when one holds NaN/Inf values and its policy is
  // NON_FINITE_REJECT (a diverged model never replaces the last good checkpoint).
  absl::Status Save(const SaveRequest& request, SaveResponse* response);
  // Replaces the shards by those in request.shards, loaded from the checkpoint's rows (any saved
  // partitioning). NotFound for a missing index or variable; DataLoss on a checksum mismatch;
  // InvalidArgument for a bad spec. Optimizer slots missing from the checkpoint start fresh.
  absl::Status Restore(const RestoreRequest& request, RestoreResponse* response);
  // Counters per shard (sorted by name) and their total (total.version: the smallest version).
  absl::Status GetStats(const PsStatsRequest& request, PsStatsResponse* response);

  // The same three on the ps's background thread, for callers that must not block (the gRPC
  // service): `done` runs there once the call finished. Requests and responses must stay valid
  // until then.
  void CreateShardsInBackground(const CreateShardsRequest* request, CreateShardsResponse* response, DoneCallback done);
  void SaveInBackground(const SaveRequest* request, SaveResponse* response, DoneCallback done);
  void RestoreInBackground(const RestoreRequest* request, RestoreResponse* response, DoneCallback done);
  void AttachBackupInBackground(const AttachBackupRequest* request, AttachBackupResponse* response,
                                DoneCallback done);

  // Fails every parked call with Unavailable and every later one that would park, and ends the
  // retries of forwards to an unreachable backup. Idempotent.
  void Shutdown();

 private:
  // A dynamic table shard and its call counters.
  struct DynamicShard {
    DynamicShardSpecProto spec;
    std::unique_ptr<DynamicTable> table;
    std::atomic<int64_t> pulls{0}, pushes{0};
  };
  // Dynamic shards built from `specs` (validated, all-or-nothing), empty ones; InvalidArgument
  // naming the shard for a bad spec, a name used twice or held by a dense shard here.
  absl::StatusOr<std::vector<std::shared_ptr<DynamicShard>>> MakeDynamicShards(
      const google::protobuf::RepeatedPtrField<DynamicShardSpecProto>& specs, const ShardOptions& opts,
      const std::set<std::string>& dense_names) const;
  // Swaps in `shards` by name.
  void InstallDynamic(std::vector<std::shared_ptr<DynamicShard>> shards);
  absl::StatusOr<std::shared_ptr<DynamicShard>> FindDynamic(const std::string& name) const;
  // Save / Restore / GetStats parts for the dynamic shards.
  absl::Status SaveDynamic(const std::string& dir, SaveResponse* response);
  absl::Status RestoreDynamic(const std::string& dir, std::vector<std::shared_ptr<DynamicShard>>& shards);
  void DynamicStats(PsStatsResponse* response) const;

  // A validated push, one part per gradient: the dense gradients first, then the sparse entries
  // (the order of PushResponse.versions).
  struct PushPlan {
    struct Part {
      std::shared_ptr<Shard> shard;
      bool table = false;
      const char* grad = nullptr;  // dense: the gradient's bytes
      RowGradients rows;           // table: the rows, duplicates summed
      bool skipped = false;        // non-finite, skipped under NON_FINITE_SKIP
      int64_t num_ids = 0, bytes = 0;
      // The shard's push counters for this part (rows for a table, bytes for a dense shard).
      void CountPush() const {
        if (table) {
          shard->CountRowPush(num_ids, bytes);
        } else {
          shard->CountPush(bytes);
        }
      }
    };
    std::vector<Part> parts;
    int64_t skipped = 0;
  };
  // A pull's shards (the dense ones, then the sparse entries') and each entry's local rows.
  struct PullPlan {
    std::vector<std::shared_ptr<Shard>> shards;
    std::vector<std::vector<int64_t>> rows;
  };

  absl::StatusOr<std::vector<std::shared_ptr<Shard>>> Lookup(const std::vector<std::string>& names) const;
  // InvalidArgument naming this ps when holding `specs` (with `slots` optimizer slots each) and
  // the shards they do not replace would exceed options_.memory_budget_bytes.
  absl::Status CheckMemoryBudget(const google::protobuf::RepeatedPtrField<ShardSpecProto>& specs, int slots) const;
  absl::StatusOr<ShardOptions> MakeOptions(const OptimizerProto& optimizer, UpdateMode mode, int num_workers,
                                           int64_t sync_timeout_ms, NonFinitePolicy non_finite) const;
  // Swaps in `shards`, aborting the calls parked on the ones they replace.
  void Install(std::vector<std::shared_ptr<Shard>> shards);
  // `forwarded`: a primary's forward (every shard a backup) rather than a worker's push.
  absl::Status ValidatePush(int worker, int64_t step, const std::vector<GradientView>& gradients,
                            const std::vector<SparseRowsView>& sparse, PushPlan* plan, bool forwarded = false) const;
  // One part of ValidatePush each: a dense gradient, a table shard's rows (summed per row).
  absl::Status PrepareDense(int worker, const GradientView& g, PushPlan::Part* part) const;
  absl::Status PrepareRows(int worker, const SparseRowsView& r, PushPlan::Part* part) const;
  absl::Status PlanPull(const PullRequest& request, PullPlan* plan) const;
  void ParkSyncPush(int worker, int64_t step, PushResponse* response, PushPlan plan, DoneCallback done);
  // Calls `ready(plan)` once every shard of the pull has version >= min_version (maybe on another
  // thread), then `done` with its status; or `done` with the failure.
  void WhenPullReady(const PullRequest* request, std::function<absl::Status(const PullPlan&)> ready, DoneCallback done);
  absl::Status UnavailableStatus() const;
  // Replication (ps_server_replication.cc). Sets each shard's role from its spec (backup, or the
  // ps its updates go to), creating links as needed; FailedPrecondition when a shard needs a
  // link and this ps has no connector or no index.
  // `initialized` false: backups created empty wait for their state (AttachBackup).
  absl::Status AssignRoles(const std::vector<std::shared_ptr<Shard>>& shards, bool initialized = true);
  // FailedPrecondition naming the shard's primary when a worker reads or writes a backup.
  absl::Status CheckNotBackup(const Shard& shard) const;
  // Backup side: applies a primary's forwarded parts in its version order (now, or kept for
  // replica_applier_: see Options::replica_defer_bytes).
  absl::Status ApplyForwarded(int worker, const std::vector<GradientView>& gradients,
                              const std::vector<SparseRowsView>& sparse, absl::Span<const int64_t> versions,
                              PushResponse* response);
  // Primary side: forwards the applied parts `forwards` (indices into the request's parts, dense
  // then sparse, with their new versions) to their backups, from the push's own buffers, and runs
  // `done` once all have them, with the first failure.
  struct Forwarded {
    size_t part;
    int64_t version;
    int target;
  };
  void ForwardThenDone(const std::vector<GradientView>& gradients, const std::vector<SparseRowsView>& sparse,
                       const std::vector<Forwarded>& forwards, DoneCallback done);
  ReplicaLink* LinkTo(int ps) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Has replica_applier_ apply `shard`'s kept forwards; ApplyDeferred is its task.
  void ScheduleDeferred(std::shared_ptr<Shard> shard);
  void ApplyDeferred();

  const Options options_;
  Env* const env_;
  DeadlineTimer timer_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Shard>> shards_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<DynamicShard>> dynamic_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::unique_ptr<ReplicaLink>> links_ ABSL_GUARDED_BY(mu_);  // by backup ps index
  // Links detached by Promote, kept until the ps stops: a push may still hold one.
  std::vector<std::unique_ptr<ReplicaLink>> retired_links_ ABSL_GUARDED_BY(mu_);
  // Backup shards with kept forwards that replica_applier_ has not taken yet: it is woken only when
  // this turns non-empty, not once per forward.
  absl::Mutex deferred_mu_;
  std::set<std::shared_ptr<Shard>> deferred_ ABSL_GUARDED_BY(deferred_mu_);
  // Checkpoint I/O and shard creation. Last, so it finishes its tasks before the members they use go.
  BackgroundQueue background_;
  // Applies the forwards a backup kept (ApplyForwarded), when the CPUs are otherwise idle.
  BackgroundQueue replica_applier_{BackgroundQueue::Priority::kIdle};
};

}  // namespace pstrain

#endif  // PSTRAIN_PS_STORE_PS_SERVER_H_
