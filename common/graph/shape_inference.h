// Shapes and variables of a ModelGraph whose layers and edges are read: each layer's output shape
// (per example) from its inputs', checking that they fit (merges of equal shapes, Dot of vectors,
// ...), and the variables each layer owns, with Keras's names and shapes.
// Thread-safety: a plain function.
#ifndef PSTRAIN_COMMON_GRAPH_SHAPE_INFERENCE_H_
#define PSTRAIN_COMMON_GRAPH_SHAPE_INFERENCE_H_

#include "absl/status/status.h"
#include "common/graph/model_graph.h"

namespace pstrain {

// REQUIRES: graph->layers in topological order with inputs set. Fills output_shape of every layer
// and graph->variables. InvalidArgument naming the layer when shapes do not fit.
absl::Status InferShapesAndVariables(ModelGraph* graph);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_SHAPE_INFERENCE_H_
