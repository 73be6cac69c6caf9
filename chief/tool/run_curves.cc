#include "chief/tool/run_curves.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/platform/file_rules.h"
#include "common/config/json_util.h"
#include "common/platform/status_macros.h"

namespace pstrain {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Number(const nlohmann::json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : kNaN;
}

CurvePoint PointOf(const nlohmann::json& r, bool eval) {
  CurvePoint p;
  p.step = Number(r, "step");
  p.wall_seconds = Number(r, "wall_time");
  p.loss = Number(r, eval ? "test_loss" : "loss");
  p.accuracy = Number(r, eval ? "test_accuracy" : "accuracy");
  p.auc = Number(r, eval ? "test_auc" : "auc");
  p.examples_per_second = Number(r, "examples_per_second");
  p.max_staleness = kNaN;
  auto it = r.find("staleness");
  if (it != r.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (v.is_number())
        p.max_staleness = std::isnan(p.max_staleness) ? v.get<double>() : std::max(p.max_staleness, v.get<double>());
    }
  }
  return p;
}

absl::Status ReadRecords(const std::string& file, RunCurves* out) {
  // file_rules.h: a regular file itself, lines of at most 1 MiB, at most 4 GiB.
  return ForEachLineWithRules(file, kMetricsFile, [&](int64_t n, absl::string_view line) -> absl::Status {
    if (line.empty()) return absl::OkStatus();
    absl::StatusOr<nlohmann::json> r = ParseJson(line, absl::StrCat(file, " line ", n));
    if (!r.ok()) return r.status();
    if (!r->is_object()) return absl::InvalidArgumentError(absl::StrCat(file, " line ", n, " is not a JSON object"));
    const bool eval = r->value("kind", "") == "eval";
    (eval ? out->eval : out->train).push_back(PointOf(*r, eval));
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<RunCurves> LoadRunCurves(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir;
  std::string file;
  if (fs::is_regular_file(path, ec)) {
    file = path;
    dir = fs::path(path).parent_path();
  } else if (fs::is_regular_file(fs::path(path) / "metrics.jsonl", ec)) {
    dir = path;
  } else if (fs::is_regular_file(fs::path(path) / "model" / "metrics.jsonl", ec)) {
    dir = fs::path(path) / "model";
  } else {
    return absl::NotFoundError(absl::StrCat("no metrics.jsonl in ", path, " (looked at ", path, "/metrics.jsonl and ",
                                            path, "/model/metrics.jsonl): give a run dir, a model dir or the file"));
  }
  if (file.empty()) file = (dir / "metrics.jsonl").string();
  RunCurves run;
  run.metrics_file = file;
  // A demo run dir ends in .../<run>/model: name the run after <run>.
  fs::path named = fs::absolute(dir, ec).lexically_normal();
  if (named.filename().empty()) named = named.parent_path();
  if (named.filename() == "model" && named.has_parent_path()) named = named.parent_path();
  run.name = named.filename().string();
  RETURN_IF_ERROR(ReadRecords(file, &run));
  const fs::path evaluator = dir / "eval" / "metrics.jsonl";
  if (fs::is_regular_file(evaluator, ec)) RETURN_IF_ERROR(ReadRecords(evaluator.string(), &run));
  std::stable_sort(run.eval.begin(), run.eval.end(),
                   [](const CurvePoint& a, const CurvePoint& b) { return a.step < b.step; });
  if (run.train.empty() && run.eval.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(file, " has no records yet"));
  }
  return run;
}

}  // namespace pstrain
