// Renders a VariablePlan for `pstrain plan`: a human table or the documented JSON shape
// {"variables": [{"name", "shape", "dtype", "shards": [{"name", "offset", "rows", "bytes", "ps"}]}],
//  "ps_bytes": [...]}.
// Thread-safety: pure functions.
#ifndef PSTRAIN_COMMON_PLAN_FORMAT_H_
#define PSTRAIN_COMMON_PLAN_FORMAT_H_

#include <string>

#include "common/variable_planner.h"
#include "nlohmann/json.hpp"

namespace pstrain {

nlohmann::json PlanToJson(const VariablePlan& plan);
std::string PlanToTable(const VariablePlan& plan, const std::string& partitioner_description);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_PLAN_FORMAT_H_
