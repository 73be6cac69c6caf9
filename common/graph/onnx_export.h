// A ModelGraph and its weights as an ONNX model (opset 17, IR version 8) for inference: the same
// function of the inputs as GraphExecutor's inference Forward (Dropout the identity,
// BatchNormalization on its moving statistics), which ONNX Runtime and other ONNX readers run.
//
// The model: one graph input per InputLayer, in the model's input order, named after the layer, of
// type float32 (int64 for an integer InputLayer) and shape ["batch"] + the per-example shape; one
// output named after the output layer; every variable an initializer named as Keras names it
// ("dense/kernel", kept in Keras's layout, e.g. Conv2D's [kh, kw, in, filters], and rearranged by
// nodes of the graph). Images stay NHWC between layers as in Keras; Conv2D and the 2-D poolings
// transpose to ONNX's NCHW and back around their op.
// Thread-safety: plain functions.
#ifndef PSTRAIN_COMMON_GRAPH_ONNX_EXPORT_H_
#define PSTRAIN_COMMON_GRAPH_ONNX_EXPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/graph/float_tensor.h"
#include "common/graph/model_graph.h"
#include "common/platform/env.h"

namespace pstrain {

inline constexpr int64_t kOnnxOpset = 17;      // the default domain's operator set
inline constexpr int64_t kOnnxIrVersion = 8;   // the IR version that goes with opset 17

struct OnnxExportOptions {
  std::string producer_version;  // ModelProto.producer_version (the producer is "pstrain")
  std::string doc_string;        // ModelProto.doc_string, e.g. where the weights came from
};

// The serialized ModelProto of `graph` with `weights`. REQUIRES: `graph` from ReadKerasModelJson
// (validated). `weights`: every variable of the graph by name with its shape (extra entries are
// ignored). InvalidArgument naming the variable that is missing or misshapen, or when the weights
// exceed the 2 GiB a single protobuf ONNX file can hold.
absl::StatusOr<std::string> ExportOnnx(const ModelGraph& graph, const FloatTensorMap& weights,
                                       const OnnxExportOptions& options = OnnxExportOptions());

// ExportOnnx written to `path` through `env` (a temporary file renamed into place, so a reader never
// sees half a model). ExportOnnx's errors, or the Env's for the file.
absl::Status WriteOnnxFile(Env* env, const std::string& path, const ModelGraph& graph, const FloatTensorMap& weights,
                           const OnnxExportOptions& options = OnnxExportOptions());

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_ONNX_EXPORT_H_
