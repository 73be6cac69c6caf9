// `pstrain plan`: shows how a job's variables (or one variable given by flags) are partitioned and
// placed on the ps tasks, as a table or JSON, before anything starts.
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_PLAN_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_PLAN_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"

namespace pstrain {

class Env;

// Entry point for `pstrain plan ARGS...` (argv[0] is "pstrain", argv[1] "plan"). Prints the plan
// to stdout and returns the process exit code (2 for bad flags, job or TF_CONFIG, with the message
// on stderr).
// `env` (not owned; REQUIRES: non-null) gives the host's memory budget.
int PlanMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_PLAN_COMMAND_H_
