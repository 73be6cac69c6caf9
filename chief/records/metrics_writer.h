// MetricsWriter: appends one JSON document per line to a metrics file (e.g.
// "<model_dir>/metrics.jsonl"), flushed after each line so a crash loses at most the line being
// written and other tools can follow the file while the job runs.
// Thread-safety: Write may be called from any thread.
#ifndef PSTRAIN_CHIEF_RECORDS_METRICS_WRITER_H_
#define PSTRAIN_CHIEF_RECORDS_METRICS_WRITER_H_

#include <fstream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"

namespace pstrain {

class MetricsWriter {
 public:
  // Opens `path` for appending. Internal naming the path when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<MetricsWriter>> Open(const std::string& path);

  // Writes `record` as one line. Internal when the write fails.
  absl::Status Write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  explicit MetricsWriter(std::string path) : path_(std::move(path)) {}
  const std::string path_;
  absl::Mutex mu_;
  std::ofstream out_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_RECORDS_METRICS_WRITER_H_
