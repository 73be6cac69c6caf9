// `pstrain evaluate --checkpoint=DIR`: loads a checkpoint in one process with no cluster
// ("restore without strategy") and prints its test loss and accuracy.
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_EVALUATE_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_EVALUATE_COMMAND_H_

namespace pstrain {

class Env;

// Entry point for `pstrain evaluate ARGS...`. Returns the process exit code (2 for bad flags or a
// missing checkpoint, 1 for a corrupt one), the message on stderr.
// `env` (not owned; REQUIRES: non-null) reads and writes the files.
int EvaluateMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_EVALUATE_COMMAND_H_
