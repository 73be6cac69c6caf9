// RunCurves: the training and test curves of one run, read from its metrics.jsonl (the chief's
// "train" and "eval" records) and, when present, the evaluator sidecar's eval/metrics.jsonl.
// Thread-safety: values; LoadRunCurves reads files only.
#ifndef PSTRAIN_CHIEF_TOOL_RUN_CURVES_H_
#define PSTRAIN_CHIEF_TOOL_RUN_CURVES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pstrain {

// One record's figures; NaN where the record has none.
struct CurvePoint {
  double step = 0;
  double wall_seconds = 0;  // since training started (NaN for the evaluator's records)
  double loss = 0;
  double accuracy = 0;
  double auc = 0;
  double examples_per_second = 0;
  double max_staleness = 0;  // over the workers
};

struct RunCurves {
  std::string name;  // the run's directory name
  std::string metrics_file;
  std::vector<CurvePoint> train;  // in file order
  std::vector<CurvePoint> eval;   // sorted by step
};

// `path` is a run directory (holding model/metrics.jsonl, as deploy/local/demo.sh makes), a model
// dir (holding metrics.jsonl) or a metrics.jsonl file. NotFound naming the places looked at;
// InvalidArgument naming the file and line of a malformed record.
absl::StatusOr<RunCurves> LoadRunCurves(const std::string& path);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_RUN_CURVES_H_
