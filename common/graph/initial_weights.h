// A job's starting values from a Keras weights file (`--init_from=PATH` of `pstrain train` and
// `pstrain-chief`): every variable of the job's Keras model, trainable or not (BatchNormalization's
// moving statistics come from the file too), checked against the shapes the model declares. One
// reader for both, so a single process and a cluster refuse the same files with the same words.
// Thread-safety: a pure function over a file (HDF5 is used one call at a time, keras_weights.h).
#ifndef PSTRAIN_COMMON_GRAPH_INITIAL_WEIGHTS_H_
#define PSTRAIN_COMMON_GRAPH_INITIAL_WEIGHTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/graph/keras_weights.h"

namespace pstrain {

// The values of every variable of `job`'s model (ModelVariables' names and shapes) read from the
// Keras weights file at `path` (either layout). Every message starts with "--init_from=PATH: ".
// InvalidArgument when the job's model is not a Keras model (a preset or layer list: it names the
// job and how to give one), when the file lacks a variable or holds it in another shape (naming
// the variable, the expected and the found shape); the codes of ReadKerasWeights otherwise
// (NotFound for a missing file). REQUIRES: !path.empty().
absl::StatusOr<NamedWeights> ReadInitialWeights(const JobSpec& job, const std::string& path);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_INITIAL_WEIGHTS_H_
