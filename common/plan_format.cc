#include "common/plan_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/tensor.h"

namespace pstrain {

nlohmann::json PlanToJson(const VariablePlan& plan) {
  nlohmann::json vars = nlohmann::json::array();
  for (const PlannedVariable& pv : plan.variables) {
    nlohmann::json shards = nlohmann::json::array();
    for (const PlannedShard& s : pv.shards) {
      shards.push_back({{"name", s.name}, {"offset", s.row_offset}, {"rows", s.rows}, {"bytes", s.bytes}, {"ps", s.ps}});
    }
    vars.push_back({{"name", pv.variable.name},
                    {"shape", pv.variable.shape},
                    {"dtype", DTypeName(pv.variable.dtype)},
                    {"shards", shards}});
  }
  return {{"variables", vars}, {"ps_bytes", plan.ps_bytes}};
}

std::string PlanToTable(const VariablePlan& plan, const std::string& partitioner_description) {
  size_t width = 8;
  for (const PlannedVariable& pv : plan.variables) {
    for (const PlannedShard& s : pv.shards) width = std::max(width, s.name.size());
  }
  std::string out = absl::StrCat("partitioner: ", partitioner_description, "; ps tasks: ", plan.num_ps, "\n");
  absl::StrAppend(&out, absl::StrFormat("%-*s  %-14s  %-8s  %8s  %6s  %12s  %3s\n", width, "shard", "variable shape",
                                        "dtype", "offset", "rows", "bytes", "ps"));
  for (const PlannedVariable& pv : plan.variables) {
    for (const PlannedShard& s : pv.shards) {
      absl::StrAppend(&out, absl::StrFormat("%-*s  %-14s  %-8s  %8d  %6d  %12d  %3d\n", width, s.name,
                                            ShapeString(pv.variable.shape), DTypeName(pv.variable.dtype),
                                            s.row_offset, s.rows, s.bytes, s.ps));
    }
  }
  int64_t total = 0;
  for (int64_t b : plan.ps_bytes) total += b;
  for (size_t i = 0; i < plan.ps_bytes.size(); ++i) {
    const double pct = total > 0 ? 100.0 * static_cast<double>(plan.ps_bytes[i]) / static_cast<double>(total) : 0.0;
    absl::StrAppend(&out, absl::StrFormat("ps %d holds %d bytes (%.1f%%)\n", i, plan.ps_bytes[i], pct));
  }
  return out;
}

}  // namespace pstrain
