// Writes a synthetic CTR data set with a known answer (ctr_planted_model.h) to a directory:
//   train.txt, test.txt  Criteo's TSV layout (criteo_line.h), byte-identical for a given seed
//   bayes.json           the generator's options and parameters, and per split the positive rate
//                        and the Bayes-optimal log loss (test: also the Bayes-optimal AUC), i.e.
//                        the metrics of the true probabilities on those very labels
// bayes.json's keys benchmarks read: "test": {"bayes_auc", "bayes_logloss", "positive_rate",
// "examples"}, "train": {"bayes_logloss", "positive_rate", "examples"}.
// A model may score a little above the "Bayes" AUC on a finite test set by chance (about +-0.002
// with 50,000 examples); on average it cannot.
// Thread-safety: functions over their own files; two writers must not share a directory.
#ifndef PSTRAIN_WORKER_DATA_CTR_SYNTHETIC_H_
#define PSTRAIN_WORKER_DATA_CTR_SYNTHETIC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/platform/env.h"
#include "worker/data/ctr_planted_model.h"

namespace pstrain {

struct CtrSplitSummary {
  int64_t examples = 0;
  double positive_rate = 0.0;
  double bayes_auc = 0.0;  // test only (NaN for train: not computed, it would hold all probabilities)
  double bayes_logloss = 0.0;
};

struct CtrSyntheticSummary {
  std::string train_path, test_path, bayes_path;
  CtrSplitSummary train, test;
};

inline constexpr char kCtrTrainFile[] = "train.txt";
inline constexpr char kCtrTestFile[] = "test.txt";
inline constexpr char kCtrBayesFile[] = "bayes.json";

// Generates the set into `dir` (created if missing; existing files of these names replaced).
// bayes.json is removed first and written last, so its presence means the set is complete. Each
// file is written to a temporary name, fsynced and renamed. Errors: InvalidArgument for bad
// options; Internal naming the path when a file cannot be written.
absl::StatusOr<CtrSyntheticSummary> WriteCtrSyntheticSet(Env* env, const CtrSyntheticOptions& options,
                                                         const std::string& dir);

// The summary of a set written before, from DIR/bayes.json. NotFound when it is missing;
// DataLoss when it cannot be read as one.
absl::StatusOr<CtrSyntheticSummary> ReadCtrSyntheticSummary(Env* env, const std::string& dir);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CTR_SYNTHETIC_H_
