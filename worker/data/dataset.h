// In-memory datasets for training and evaluation: Fashion-MNIST IDX files (gzipped or not, scaled
// to [0,1]), CSV tables, the synthetic linear-regression data of the `linear` preset and CTR data
// in Criteo's layout (ctr_dataset.h). Every
// error a user can cause (missing file, bad magic, wrong sizes, truncation, bad CSV cell) names
// the file.
// Thread-safety: a loaded Dataset is immutable; share it freely across threads.
#ifndef PSTRAIN_WORKER_DATA_DATASET_H_
#define PSTRAIN_WORKER_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "worker/data/ctr_data.h"

namespace pstrain {

class Env;

struct Dataset {
  std::vector<int64_t> example_shape;  // per example, e.g. [28, 28, 1]
  int64_t size = 0;                    // examples
  std::vector<float> features;         // size * NumElements(example_shape)
  std::vector<int32_t> labels;         // classification: size class ids
  std::vector<float> targets;          // regression: size * target_width values
  int64_t target_width = 0;            // 0 for classification
  // CTR data (criteo): ids_per_example categorical ids per example, row-major, each already in
  // its field's table; features are the numeric inputs and targets the 0/1 labels.
  std::vector<int64_t> ids;
  int64_t ids_per_example = 0;
  std::vector<IdBags> bags;            // tfrecord bag fields (ctr_data.h): one per bag field

  int64_t bad_lines_skipped = 0;       // criteo with skip_bad_lines
  std::string first_bad_line;          // what the first skipped line had wrong
  int64_t example_floats() const;
};

enum class Split { kTrain, kTest };

// Loads the split of the job's data. `data_dir` overrides data.dir when non-empty. The features
// must fit model.input_shape, the labels the model's outputs. `env` (not owned; here and below)
// gives the memory budget a file may fill and reads CTR data. A file's (decompressed) bytes may
// fill at most `max_file_bytes` (the process's --memory_budget_bytes; 0: the host's default
// budget), counted while reading. Errors: NotFound (missing file), InvalidArgument / DataLoss (bad
// contents, a file too large, a FIFO or device), each naming the file.
absl::StatusOr<Dataset> LoadDataset(Env* env, const JobSpec& job, Split split, const std::string& data_dir = "",
                                    int64_t max_file_bytes = 0);

// Fashion-MNIST (or MNIST) IDX pair: images [n, rows, cols, 1] scaled to [0,1] and uint8 labels.
absl::StatusOr<Dataset> LoadIdxDataset(Env* env, const std::string& images_path, const std::string& labels_path,
                                       int64_t max_file_bytes = 0);

// A CSV file of numbers: one example per line, `label_column` (-1 = last) the label (a class id
// when `classification`, else the regression target), the other columns the features. A line may
// hold at most kMaxDataLineBytes (file_rules.h).
absl::StatusOr<Dataset> LoadCsvDataset(Env* env, const std::string& path, int64_t label_column, bool header,
                                       bool classification, int64_t max_file_bytes = 0);

// y = a.x + b + noise with x ~ U(-1,1)^features; a, b and the noise come from `seed` (the test
// split uses another stream of the same a, b).
Dataset SyntheticLinearDataset(int64_t examples, int64_t features, uint64_t seed, Split split);

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_DATA_DATASET_H_
