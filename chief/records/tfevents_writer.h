// TfEventsWriter: TensorBoard event files, in TensorFlow's format, so `tensorboard --logdir
// MODEL_DIR` shows a run's curves. A file is a sequence of TFRecords, each
//   uint64 length | uint32 masked CRC32C of the length | data | uint32 masked CRC32C of the data
// (little-endian; mask: rotate right by 15, add 0xa282ead8), each holding one serialized Event:
// first {file_version "brain.Event:2"}, then one Event per Write with a Summary of scalars
// (Summary.Value.simple_value). Files are named "events.out.tfevents.<secs>.<host>.<pid>.<n>", as
// TensorFlow names them; a run directory may hold several (a restarted chief starts a new one).
// Each event is flushed when written, so TensorBoard follows a running job.
// Thread-safety: Write may be called from any thread.
#ifndef PSTRAIN_CHIEF_RECORDS_TFEVENTS_WRITER_H_
#define PSTRAIN_CHIEF_RECORDS_TFEVENTS_WRITER_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace pstrain {

// CRC-32C (Castagnoli), as TFRecord uses it: Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(absl::string_view data);
uint32_t MaskCrc32c(uint32_t crc);
// One TFRecord holding `data`.
std::string TfRecord(absl::string_view data);

using Scalars = std::vector<std::pair<std::string, double>>;

class TfEventsWriter {
 public:
  // Creates `dir` (and parents) and a new event file in it holding the file_version event.
  // Internal naming the path on I/O errors.
  static absl::StatusOr<std::unique_ptr<TfEventsWriter>> Open(const std::string& dir, double wall_time);

  // One event at `step` with the finite scalars of `scalars` (NaN and Inf are left out; nothing
  // is written when none is left). Internal on a write error.
  absl::Status Write(int64_t step, double wall_time, const Scalars& scalars);
  const std::string& path() const { return path_; }

 private:
  explicit TfEventsWriter(std::string path) : path_(std::move(path)) {}
  absl::Status Append(const std::string& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  std::ofstream out_ ABSL_GUARDED_BY(mu_);
};

// Seconds since the Unix epoch, now.
double UnixSeconds();

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECORDS_TFEVENTS_WRITER_H_
