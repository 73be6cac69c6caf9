// How long a job trains, in global steps (a global step is `batch_size` examples, the GLOBAL
// batch): `schedule.steps`, or `schedule.epochs` times the steps of one epoch over the training
// set (the last partial batch counts as a step, as tf.data's batch() keeps it).
// Thread-safety: pure functions.
#ifndef PSTRAIN_CHIEF_COORDINATOR_TRAINING_BUDGET_H_
#define PSTRAIN_CHIEF_COORDINATOR_TRAINING_BUDGET_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"

namespace pstrain {

class Env;

struct TrainingBudget {
  int64_t train_examples = 0;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
};

// Number of training examples of the job's data set: 60000 for Fashion-MNIST, num_examples for
// synthetic_linear, the data lines of a CSV file, the lines of a criteo job's training files (the
// default synthetic set generated first when the job names none), the records of a tfrecord job's. NotFound naming the file when a
// file is missing. `env` (not owned) reads criteo files and finds the default set's cache.
absl::StatusOr<int64_t> TrainExamples(Env* env, const DataSpec& data);

// InvalidArgument when neither steps nor epochs is positive or the batch does not fit the
// workers (sync mode needs batch_size to be a multiple of num_workers).
absl::StatusOr<TrainingBudget> ComputeBudget(const JobSpec& spec, int64_t train_examples, int num_workers);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_COORDINATOR_TRAINING_BUDGET_H_
