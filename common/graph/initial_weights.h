// A job's starting values from a Keras weights file (`--init_from=PATH` of `pstrain train` and
// `pstrain-chief`): every variable of the job's Keras model, trainable or not (BatchNormalization's
// moving statistics come from the file too), checked against the shapes the model declares. One
// reader for both, so a single process and a cluster refuse the same files with the same words.
//
// A dynamic table (model.dynamic_tables) holds rows by key, not by position, so its Embedding may
// hold any number of rows in the file, and each row gets a key:
//   - PATH.<input>.keys.npy beside the file (what `pstrain export` writes for the layer's id input):
//     the file's row i + 1 is keys[i]'s row; row 0 (export's row for unknown ids) is not used;
//   - without it, row i is id i's row, as in a Keras Embedding.
// The table then starts holding exactly those keys (at most its max_rows).
// Thread-safety: a pure function over files (HDF5 is used one call at a time, keras_weights.h).
#ifndef PSTRAIN_COMMON_GRAPH_INITIAL_WEIGHTS_H_
#define PSTRAIN_COMMON_GRAPH_INITIAL_WEIGHTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/job_spec.h"
#include "common/graph/keras_weights.h"

namespace pstrain {

class Env;

struct InitialWeights {
  // Every variable of the model by name, in the model's shape; a dynamic table's value is its rows,
  // [keys, dim], in the order of its keys below.
  NamedWeights values;
  // Per dynamic table variable: the key of each row of its value (distinct).
  std::map<std::string, std::vector<int64_t>> dynamic_keys;
  // Per dynamic table variable: where its keys came from, for the log ("the keys of FILE", "ids
  // 0..n-1").
  std::map<std::string, std::string> key_sources;
};

// The values of every variable of `job`'s model (ModelVariables' names and shapes) read from the
// Keras weights file at `path` (either layout), keys files through `env`. Every message starts with
// "--init_from=PATH: ". InvalidArgument when the job's model is not a Keras model (a preset or
// layer list: it names the job and how to give one), when the file lacks a variable or holds it in
// another shape (naming the variable, the expected and the found shape), and for a dynamic table
// whose keys file is not an int64 vector, does not have one key per row (row 0 aside), repeats a
// key, or whose rows exceed its max_rows (naming the layer and the numbers); the codes of
// ReadKerasWeights otherwise (NotFound for a missing file). REQUIRES: !path.empty(), env non-null.
absl::StatusOr<InitialWeights> ReadInitialWeights(Env* env, const JobSpec& job, const std::string& path);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_INITIAL_WEIGHTS_H_
