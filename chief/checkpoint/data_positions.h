// DataPositions: how far the chief has handed out each training data part. Part i is the training
// examples a worker with index i would read (example j belongs to part j % num_parts; CTR jobs: the
// part's own files); a part's position is the number of its batches handed out so far, so batch
// `position` of epoch position / batches_per_epoch is the next one. The chief decides the data of
// every closure here: a closure is given a part and position when it is handed out, and a failed
// closure keeps them, so whichever worker re-runs it trains the same examples.
// Saved with every checkpoint as "data_positions.json"; a restarted chief continues each part's
// stream where the restored global step left it.
// Thread-safety: Assign, Snapshot and Reset may be called from any thread.
#ifndef PSTRAIN_CHIEF_CHECKPOINT_DATA_POSITIONS_H_
#define PSTRAIN_CHIEF_CHECKPOINT_DATA_POSITIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "chief/coordinator/closure_queue.h"
#include "common/platform/env.h"

namespace pstrain {

// The file in a checkpoint directory that holds the positions.
inline constexpr char kDataPositionsFile[] = "data_positions.json";

class DataPositions {
 public:
  // Every part at position 0. REQUIRES: num_parts >= 1.
  explicit DataPositions(int num_parts);

  int num_parts() const { return num_parts_; }

  // Gives a training closure its data when it has none yet: the part (closure->data_part when
  // already chosen, e.g. a sync round's, else `worker`'s own part) and that part's next position;
  // the part then advances by closure->num_steps. A closure that has a position already (a re-run
  // of a failed one) is left unchanged. Evaluation closures are left unchanged.
  // REQUIRES: 0 <= worker < num_parts.
  void Assign(int worker, Closure* closure);

  std::vector<int64_t> Snapshot() const;
  // REQUIRES: positions.size() == num_parts.
  void Reset(std::vector<int64_t> positions);

  // The positions of a job at `global_step` when nothing better is known: every part read one
  // batch per global step (exact for sync mode and for async runs whose workers kept pace).
  static std::vector<int64_t> FromStep(int64_t global_step, int num_parts);

  // {"global_step": S, "positions": [p0, p1, ...]} as saved in a checkpoint.
  static std::string ToJson(int64_t global_step, const std::vector<int64_t>& positions);
  // The positions saved in checkpoint directory `dir`: nullopt when it has no such file (a
  // checkpoint of an older version); InvalidArgument naming the file when it does not parse or
  // holds another number of parts than `num_parts` (a different worker count).
  static absl::StatusOr<std::optional<std::vector<int64_t>>> Load(Env* env, const std::string& dir, int num_parts);

 private:
  const int num_parts_;
  mutable absl::Mutex mu_;
  std::vector<int64_t> positions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_CHECKPOINT_DATA_POSITIONS_H_
