#include "chief/coordinator/training_budget.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "common/config/value_range.h"
#include "common/platform/checked_math.h"
#include "common/platform/env.h"
#include "common/platform/file_rules.h"
#include "common/platform/status_macros.h"
#include "worker/data/ctr_dataset.h"
#include "worker/data/file_reader.h"

namespace pstrain {

absl::StatusOr<int64_t> TrainExamples(Env* env, const DataSpec& data) {
  if (data.dataset == "fashion_mnist") return 60000;
  if (data.dataset == "synthetic_linear") return data.num_examples;
  if (data.dataset == "csv") {
    // Read as the workers read it (file_reader.h: file_rules.h's rules, gzip or plain), counting
    // the lines that are not blank.
    static constexpr FileRules kCsvFile{"CSV file", INT64_MAX, true, kMaxDataLineBytes};
    int64_t lines = 0, line = 1, length = 0;
    bool blank = true;
    RETURN_IF_ERROR(ReadMaybeGzipFileInChunks(data.train_file, 1 << 20, [&](absl::string_view chunk) {
      for (const char c : chunk) {
        if (c == '\n') {
          lines += blank ? 0 : 1;
          blank = true;
          length = 0;
          ++line;
          continue;
        }
        if (++length > kMaxDataLineBytes) return CheckLineLength(data.train_file, kCsvFile, line, length);
        if (!absl::ascii_isspace(static_cast<unsigned char>(c))) blank = false;
      }
      return absl::OkStatus();
    }));
    lines += blank ? 0 : 1;
    return data.header && lines > 0 ? lines - 1 : lines;
  }
  if (IsCtrDataset(data.dataset)) return CountCtrLines(env, data, Split::kTrain, "");
  return absl::InvalidArgumentError(absl::StrCat("unknown data.dataset \"", data.dataset, "\""));
}

absl::StatusOr<TrainingBudget> ComputeBudget(const JobSpec& spec, int64_t train_examples, int num_workers) {
  if (spec.batch_size < num_workers) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size ", spec.batch_size, " is smaller than the ", num_workers,
                                                   " workers: each worker needs at least one "
                                                   "example per step"));
  }
  if (spec.mode == "sync" && spec.batch_size % num_workers != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sync mode: batch_size ", spec.batch_size, " must be a multiple of the number of workers (",
                     num_workers, ") so that every worker computes an equal share of each global batch"));
  }
  TrainingBudget b;
  b.train_examples = train_examples;
  b.steps_per_epoch = train_examples > 0 ? (train_examples + spec.batch_size - 1) / spec.batch_size : 0;
  if (spec.schedule.steps > 0) {
    b.total_steps = spec.schedule.steps;
  } else if (spec.schedule.epochs > 0 && b.steps_per_epoch > 0) {
    if (!CheckedMul(spec.schedule.epochs, b.steps_per_epoch, &b.total_steps) || b.total_steps > kMaxDimension) {
      return absl::InvalidArgumentError(absl::StrCat("schedule: ", spec.schedule.epochs, " epochs of ",
                                                     b.steps_per_epoch, " steps are more than ", kMaxDimension,
                                                     " global steps"));
    }
  } else {
    return absl::InvalidArgumentError("schedule: give schedule.steps or schedule.epochs (> 0)");
  }
  if (b.steps_per_epoch == 0) b.steps_per_epoch = b.total_steps;
  return b;
}

}  // namespace pstrain
