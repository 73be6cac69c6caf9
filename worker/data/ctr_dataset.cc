#include "worker/data/ctr_dataset.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/platform/status_macros.h"
#include "worker/data/criteo_reader.h"
#include "worker/data/ctr_default_data.h"
#include "worker/data/file_reader.h"
#include "worker/data/tf_example_ctr.h"
#include "worker/data/tfrecord_reader.h"

namespace pstrain {

std::string CtrCacheDir(Env* env, const DataSpec& data, const std::string& data_dir) {
  if (!data_dir.empty()) return data_dir;
  if (!data.dir.empty()) return data.dir;
  return DefaultCacheDirFromEnvironment(env);
}

namespace {

// The file itself, whatever path names it ("./a.tsv", a symlink), or `path` when it cannot be resolved.
std::string RealPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out(real);
  std::free(real);
  return out;
}

// A glob such as "day_*.tsv" easily matches the test day too: the run would train on its test
// set and report test metrics that mean nothing, without a word.
absl::Status CheckTestNotInTrain(const DataSpec& data) {
  absl::StatusOr<std::vector<std::string>> train = ExpandDataFiles(data.train_files);
  absl::StatusOr<std::vector<std::string>> test = ExpandDataFiles(data.test_files);
  if (!train.ok() || !test.ok()) return absl::OkStatus();  // the reader names a missing file
  std::map<std::string, std::string> test_files;
  for (const std::string& file : *test) test_files.emplace(RealPath(file), file);
  for (const std::string& file : *train) {
    auto it = test_files.find(RealPath(file));
    if (it == test_files.end()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "data.train_files matches ", file, ", which is a test file too (", it->second,
        " from data.test_files): the model would train on its test set and its test metrics would mean nothing; "
        "narrow the training pattern, or set data.allow_test_in_train to true in the job spec"));
  }
  return absl::OkStatus();
}

}  // namespace

bool UsesDefaultCtrData(const DataSpec& data) { return data.train_files.empty() && data.test_files.empty(); }

absl::StatusOr<CtrSyntheticSummary> EnsureJobDefaultCtrData(Env* env, const DataSpec& data,
                                                            const std::string& data_dir) {
  return EnsureDefaultCtrData(env, CtrCacheDir(env, data, data_dir));
}

absl::StatusOr<std::vector<std::string>> CtrSplitFiles(Env* env, const DataSpec& data, Split split,
                                                       const std::string& data_dir) {
  if (!UsesDefaultCtrData(data)) {
    if (!data.allow_test_in_train) RETURN_IF_ERROR(CheckTestNotInTrain(data));
    return split == Split::kTrain ? data.train_files : data.test_files;
  }
  ASSIGN_OR_RETURN(CtrSyntheticSummary summary, EnsureJobDefaultCtrData(env, data, data_dir));
  return std::vector<std::string>{split == Split::kTrain ? summary.train_path : summary.test_path};
}

absl::StatusOr<int64_t> CountCtrLines(Env* env, const DataSpec& data, Split split, const std::string& data_dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> patterns, CtrSplitFiles(env, data, split, data_dir));
  ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandDataFiles(patterns));
  int64_t lines = 0;
  if (data.dataset == "tfrecord") {
    for (const std::string& file : files) {
      ASSIGN_OR_RETURN(int64_t records, CountTfRecords(file));
      lines += records;
    }
    return lines;
  }
  for (const std::string& file : files) {
    char last = '\n';
    RETURN_IF_ERROR(ReadMaybeGzipFileInChunks(file, 1 << 20, [&](absl::string_view chunk) {
      lines += std::count(chunk.begin(), chunk.end(), '\n');
      if (!chunk.empty()) last = chunk.back();
      return absl::OkStatus();
    }));
    if (last != '\n') ++lines;  // a last line without its newline
  }
  return lines;
}

absl::StatusOr<Dataset> LoadCtrDataset(Env* env, const JobSpec& job, Split split, const std::string& data_dir, int part,
                                       int num_parts) {
  ASSIGN_OR_RETURN(std::vector<std::string> patterns, CtrSplitFiles(env, job.data, split, data_dir));
  std::vector<int64_t> table_sizes;
  // 0 for a dynamic table: its ids are kept whole (no modulo), the ps places them by hash.
  for (const EmbeddingFieldSpec& f : job.model.fields) table_sizes.push_back(f.dynamic ? 0 : f.vocabulary_size);
  CtrData data;
  if (job.data.dataset == "tfrecord") {
    TfRecordCtrOptions options;
    options.files_or_globs = patterns;
    options.features = job.data.features;
    options.table_sizes = std::move(table_sizes);
    options.skip_bad_records = job.data.skip_bad_lines;
    options.part = part;
    options.num_parts = num_parts;
    ASSIGN_OR_RETURN(data, ReadTfRecordCtr(env, options));
  } else {
    CriteoOptions options;
    options.files_or_globs = patterns;
    options.num_numeric = static_cast<int>(job.model.numeric_inputs);
    options.num_categorical = static_cast<int>(job.model.fields.size());
    options.table_sizes = std::move(table_sizes);
    options.skip_bad_lines = job.data.skip_bad_lines;
    options.part = part;
    options.num_parts = num_parts;
    ASSIGN_OR_RETURN(data, ReadCriteo(options));
  }
  if (data.size == 0) {
    std::string files;
    for (const std::string& f : patterns) absl::StrAppend(&files, files.empty() ? "" : ", ", f);
    return absl::InvalidArgumentError(
        absl::StrCat("the ", split == Split::kTrain ? "training" : "test", " data (", files, ") has no examples",
                     num_parts > 1 ? absl::StrCat(" for part ", part, " of ", num_parts) : std::string()));
  }
  Dataset d;
  d.size = data.size;
  d.example_shape = {job.model.numeric_inputs};
  d.features = std::move(data.numeric);
  if (d.features.empty()) d.features.assign(1, 0.f);  // a data() pointer for 0 numeric inputs
  d.targets = std::move(data.labels);
  d.target_width = 1;
  d.ids = std::move(data.ids);
  d.ids_per_example = data.num_categorical;
  d.bags = std::move(data.bags);
  d.bad_lines_skipped = data.bad_lines_skipped;
  d.first_bad_line = std::move(data.first_bad_line);
  return d;
}

}  // namespace pstrain
