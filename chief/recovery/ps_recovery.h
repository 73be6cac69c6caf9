// PsRecovery: brings one lost ps task back into a running job. It waits (bounded) for a ps to
// answer at the lost one's address, asks it which shards it holds, and when the same process came
// back (a network cut, SIGSTOP/SIGCONT) restores nothing; otherwise it puts that ps's shards back
// (values and optimizer slots) from a checkpoint, or re-initialises them, touching no other ps.
// The report says what the loss cost (see PsRecoveryReport). No gRPC here: PsClient interfaces.
// Thread-safety: Probe and Recover may be called from any thread; a ps's recovery runs on one.
#ifndef PSTRAIN_CHIEF_RECOVERY_PS_RECOVERY_H_
#define PSTRAIN_CHIEF_RECOVERY_PS_RECOVERY_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/platform/env.h"
#include "nlohmann/json.hpp"
#include "proto/common.pb.h"
#include "proto/ps.pb.h"
#include "ps/client/ps_client.h"

namespace pstrain {

// The chief's flag that bounds the wait for a lost ps (named in the error when it expires).
inline constexpr char kPsRecoveryTimeoutFlag[] = "--ps_recovery_timeout_secs";

struct PsRecoveryOptions {
  int64_t timeout_ms = 300000;       // how long a lost ps may take to answer again
  int64_t poll_interval_ms = 1000;   // between two probes of a silent ps
  // Polled between two probes: true ends the wait at once (SIGTERM must not wait out timeout_ms).
  std::function<bool()> stopping;
};

// Where a lost ps's shards come from when they have to be put back.
struct PsRestoreSource {
  std::string checkpoint_dir;  // "" : re-initialise from the initializers (no checkpoint yet)
  int64_t checkpoint_step = 0;
  RestoreRequest restore;      // used with a checkpoint
  CreateShardsRequest create;  // used without one (initialize = true)
};

// What one loss of a ps came to.
struct PsRecoveryReport {
  int ps = 0;
  std::string peer;             // "ps:1 at host:port"
  std::string cause;            // why it was taken for lost
  int64_t global_step = 0;      // the chief's global step at the loss
  bool intact = false;          // it came back holding every shard: nothing restored
  std::string source;           // the checkpoint restored, "initializers", or "" when intact
  int64_t checkpoint_step = 0;  // the step of `source` (0 for the initializers)
  // Updates of this ps that are gone, in global steps: global_step - checkpoint_step (0 when
  // intact). Why that counts them in async mode: every worker step pushes to every ps and the ps
  // applies each push as an update of its own; num_workers worker steps make one global step, so
  // since the checkpoint this ps applied (global_step - checkpoint_step) global steps of updates,
  // and the restore throws exactly those away (the other ps keep theirs). The chief counts
  // finished closures only, so pushes of closures still running at the loss come on top.
  int64_t lost_updates = 0;
  double pause_seconds = 0.0;   // from the loss to the ps serving again
  // A metrics.jsonl record, kind "ps_recovery".
  nlohmann::json ToJson() const;
  // One log line.
  std::string Describe() const;
};

class PsRecovery {
 public:
  // `ps[i]` and `probes[i]` reach ps task i (not owned; must outlive this object). Probes carry a
  // short deadline (a silent ps must not hold the chief for minutes); calls that move shards go
  // through `ps`. `probes` empty: the `ps` clients probe too.
  PsRecovery(Env* env, std::vector<PsClient*> ps, std::vector<PsClient*> probes, PsRecoveryOptions options);

  enum class State { kSilent, kMissingShards, kIntact };
  // One probe: a handshake, then the shards the ps holds against `shards` (the names it must hold).
  // `why` (may be null) gets the probe's error or the missing shard.
  State Probe(int ps, const std::vector<std::string>& shards, std::string* why = nullptr);

  // Waits until ps `ps` answers (polling every poll_interval_ms, at most timeout_ms from
  // `lost_at_micros`), then: all `shards` held -> nothing restored; else the shards come back from
  // `source()` (called once, only then). Errors: Unavailable naming the ps, its cause and the flag
  // when it never answers; Cancelled when `options.stopping` says so before it answers; the ps's
  // error (naming it) when restoring fails.
  absl::StatusOr<PsRecoveryReport> Recover(int ps, const std::string& cause, int64_t global_step,
                                           int64_t lost_at_micros, const std::vector<std::string>& shards,
                                           const std::function<absl::StatusOr<PsRestoreSource>()>& source);

  // Puts ps `ps`'s shards back from `source` now (sync mode rolls every ps back this way).
  absl::Status PutBack(int ps, const PsRestoreSource& source);

 private:
  Env* const env_;
  const std::vector<PsClient*> ps_;
  const std::vector<PsClient*> probes_;
  const PsRecoveryOptions options_;
};

// The names of the shards that ps task `ps_task` holds under `plan`, dynamic table shards included
// (Probe finds those in PsStatsResponse.dynamic_shards).
std::vector<std::string> ShardNamesOnPs(const VariablePlanProto& plan, int ps_task);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECOVERY_PS_RECOVERY_H_
