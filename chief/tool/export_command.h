// `pstrain export --checkpoint=DIR --format=keras|keras2|onnx --out=PATH`: writes a checkpoint of a
// Keras model (model.keras_model) as Keras weights (Keras 3's .weights.h5, or Keras 2's legacy .h5)
// or as an ONNX model, for use outside pstrain; the model's to_json comes with it (PATH.json, unless
// the format carries the model itself, as ONNX does).
// Thread-safety: runs on the calling thread only.
#ifndef PSTRAIN_CHIEF_TOOL_EXPORT_COMMAND_H_
#define PSTRAIN_CHIEF_TOOL_EXPORT_COMMAND_H_

namespace pstrain {

class Env;

// Entry point for `pstrain export ARGS...`. Returns the process exit code (2 for bad flags, a
// missing checkpoint or a model that is not a Keras model; 1 when the checkpoint or the write
// fails), the message on stderr. `env` (not owned; REQUIRES: non-null) reads and writes the files.
int ExportMain(Env* env, int argc, char** argv);

}  // namespace pstrain

#endif  // PSTRAIN_CHIEF_TOOL_EXPORT_COMMAND_H_
