// The default synthetic CTR set (`pstrain datagen ctr` with its default options), generated on
// first use into a cache directory and reused after that, so the `ctr` preset and the demo run
// with no download.
//
// Layout: CACHE_DIR/ctr-default-v2/{train.txt,test.txt,bayes.json}. The "v2" names the
// generator's output: a change to what the default options generate takes a new name, so a stale
// cache is never read. The default CACHE_DIR is $XDG_CACHE_HOME/pstrain, else
// $HOME/.cache/pstrain, else /tmp/pstrain-cache-UID; callers give their own (a flag or an
// environment variable of theirs) by passing it.
//
// Concurrent first use: the set is generated into a private temporary directory and renamed into
// place, so nobody ever sees a half-written set; processes on one host also take an exclusive
// flock(2) on CACHE_DIR/ctr-default-v2.lock while generating, so the others wait for the first
// instead of generating the same files again (where flock does not work, e.g. some network file
// systems, each generates and the first rename wins: still correct). A process that dies while
// generating leaves a temporary directory that the next generator removes.
// Thread-safety: safe to call from many threads and processes at once.
#ifndef PSTRAIN_WORKER_DATA_CTR_DEFAULT_DATA_H_
#define PSTRAIN_WORKER_DATA_CTR_DEFAULT_DATA_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/platform/env.h"
#include "worker/data/ctr_synthetic.h"

namespace pstrain {

inline constexpr char kDefaultCtrDataName[] = "ctr-default-v2";

// The default cache directory for the given environment values (empty = unset).
std::string DefaultCacheDir(absl::string_view xdg_cache_home, absl::string_view home, int uid);
// The same from the environment variables of `env` (not owned): XDG_CACHE_HOME, HOME.
std::string DefaultCacheDirFromEnvironment(Env* env);

// Returns the default set's paths and Bayes figures, generating it into
// CACHE_DIR/ctr-default-v2 first when it is not there. Errors: Internal naming the path when the
// cache cannot be created or written (the message suggests another cache directory).
absl::StatusOr<CtrSyntheticSummary> EnsureDefaultCtrData(Env* env, const std::string& cache_dir);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CTR_DEFAULT_DATA_H_
