// The data of a CTR job (data.dataset "criteo" or "tfrecord") as a Dataset: the files the job
// names, or (criteo only) the default synthetic set (generated into the cache on first use), read
// in Criteo's layout or as tf.Example records (tf_example_ctr.h) with the model's field count and
// table sizes (ids hashed modulo each field's vocabulary_size; a dynamic field's kept whole).
// Thread-safety: pure functions over files (the default set's cache is safe to share).
#ifndef PSTRAIN_WORKER_DATA_CTR_DATASET_H_
#define PSTRAIN_WORKER_DATA_CTR_DATASET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/platform/env.h"
#include "worker/data/ctr_synthetic.h"
#include "worker/data/dataset.h"

namespace pstrain {

// The cache directory of the default set: `data_dir` when given (a --data_dir flag), else the
// job's data.dir, else the user's cache directory (ctr_default_data.h) in `env` (not owned).
std::string CtrCacheDir(Env* env, const DataSpec& data, const std::string& data_dir);

// True when the job trains on the default synthetic set (no train_files / test_files).
bool UsesDefaultCtrData(const DataSpec& data);

// Makes sure the default set is in the cache and returns its summary (paths, Bayes AUC).
// Internal naming the path when the cache cannot be written.
absl::StatusOr<CtrSyntheticSummary> EnsureJobDefaultCtrData(Env* env, const DataSpec& data,
                                                            const std::string& data_dir);

// The files (paths or globs) of `split`: data.train_files / test_files, or the default set's.
// InvalidArgument naming the file when a training pattern matches a test file too (the same file,
// by its real path), unless data.allow_test_in_train.
absl::StatusOr<std::vector<std::string>> CtrSplitFiles(Env* env, const DataSpec& data, Split split,
                                                       const std::string& data_dir);

// The lines (tfrecord: records) of the split's files (gzip read through), an epoch's examples for the chief's step
// budget (bad lines that a job skips are counted too). Errors as reading the files.
absl::StatusOr<int64_t> CountCtrLines(Env* env, const DataSpec& data, Split split, const std::string& data_dir);

// Reads part `part` of `num_parts` of the split (criteo_reader.h says how lines are shared out,
// tf_example_ctr.h records)
// into a Dataset: features [size, numeric_inputs], targets the labels, ids [size, fields].
// Errors as ReadCriteo / ReadTfRecordCtr, naming the file; InvalidArgument when the part is empty.
absl::StatusOr<Dataset> LoadCtrDataset(Env* env, const JobSpec& job, Split split, const std::string& data_dir,
                                       int part = 0, int num_parts = 1);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_CTR_DATASET_H_
