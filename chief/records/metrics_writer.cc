#include "chief/records/metrics_writer.h"

#include "absl/strings/str_cat.h"
#include "common/config/json_util.h"

namespace pstrain {

absl::StatusOr<std::unique_ptr<MetricsWriter>> MetricsWriter::Open(const std::string& path) {
  std::unique_ptr<MetricsWriter> w(new MetricsWriter(path));
  absl::MutexLock lock(&w->mu_);
  w->out_.open(path, std::ios::app);
  if (!w->out_) return absl::InternalError(absl::StrCat("cannot open the metrics file ", path, " for appending"));
  return w;
}

absl::Status MetricsWriter::Write(const nlohmann::json& record) {
  absl::MutexLock lock(&mu_);
  out_ << DumpJson(record) << "\n";
  out_.flush();
  if (!out_) return absl::InternalError(absl::StrCat("cannot write to the metrics file ", path_));
  return absl::OkStatus();
}

}  // namespace pstrain
