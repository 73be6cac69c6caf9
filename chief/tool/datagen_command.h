// `pstrain datagen ctr`: writes a synthetic CTR data set in Criteo's layout with a known answer
// (worker/data/ctr_synthetic.h) and prints the Bayes-optimal test AUC and log loss; with
// --default, makes sure the default set is in the cache (generating it once) and prints its paths.
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_DATAGEN_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_DATAGEN_COMMAND_H_

namespace pstrain {

class Env;

// Entry point for `pstrain datagen ARGS...` (argv[1] is "datagen"). Returns the process exit code:
// 0 done, 2 bad flags (message on stderr), 1 when the files cannot be written.
// `env` (not owned; REQUIRES: non-null) reads and writes the files.
int DatagenMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_DATAGEN_COMMAND_H_
