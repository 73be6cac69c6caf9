// `pstrain train`: trains a job in this one process with no cluster (the baseline a user debugs
// with, and the compute-only figure for benchmarks). Starts from the cluster's initial weights,
// prints one line per epoch and a final JSON summary on stdout.
// Thread-safety: runs on the calling thread (plus its compute threads).
#ifndef PSTRAIN_CHIEF_TOOL_TRAIN_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_TRAIN_COMMAND_H_

namespace pstrain {

class Env;

// Entry point for `pstrain train ARGS...` (argv[1] is "train"). Returns the exit code: 0 done,
// 2 bad flags/job/data, 1 runtime failure; messages go to stderr.
// `env` (not owned; REQUIRES: non-null) reads and writes the files.
int TrainMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_TRAIN_COMMAND_H_
