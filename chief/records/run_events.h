// RunEvents: a run's TensorBoard event files, made from the same records as metrics.jsonl so that
// the two always agree. Records with "kind": "eval" go to <model_dir>/eval, all others to
// <model_dir>/train (the two runs Keras's TensorBoard callback writes). Every number of a record
// becomes a scalar at the record's "step": the field name is the tag, without the "test_" prefix
// in eval records (so train and test loss share one chart); an array gives one tag per element,
// "staleness/worker_0", ...; "step", "wall_time" and non-numbers are not scalars. The event's wall
// time is `start_unix` + the record's "wall_time" (seconds since the run started), or now.
// Thread-safety: Record may be called from any thread.
#ifndef PSTRAIN_CHIEF_RECORDS_RUN_EVENTS_H_
#define PSTRAIN_CHIEF_RECORDS_RUN_EVENTS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "chief/records/tfevents_writer.h"
#include "nlohmann/json.hpp"

namespace pstrain {

class RunEvents {
 public:
  RunEvents(std::string model_dir, double start_unix) : model_dir_(std::move(model_dir)), start_unix_(start_unix) {}

  // Appends one event for `record` (creating the run's file on first use). Internal on I/O errors.
  absl::Status Record(const nlohmann::json& record);

  // The scalars of `record` as described above (exposed for tests).
  static Scalars ScalarsOf(const nlohmann::json& record);

 private:
  const std::string model_dir_;
  const double start_unix_;
  absl::Mutex mu_;
  std::unique_ptr<TfEventsWriter> train_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<TfEventsWriter> eval_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECORDS_RUN_EVENTS_H_
