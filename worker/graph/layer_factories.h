// The factories of graph_layer.cc's MakeGraphLayer, one per source file of layers (internal).
// Each returns null for a kind it does not make.
// Thread-safety: plain functions.
#ifndef PSTRAIN_WORKER_GRAPH_LAYER_FACTORIES_H_
#define PSTRAIN_WORKER_GRAPH_LAYER_FACTORIES_H_

#include <memory>

#include "worker/graph/graph_layer.h"

namespace pstrain {

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeDenseLayer(const GraphLayerSpec& spec);  // Dense, Activation, ReLU, Cross
template <typename T>
std::unique_ptr<GraphLayer<T>> MakeShapeLayer(const GraphLayerSpec& spec);  // Input, Flatten, Reshape, Dropout, Concatenate
template <typename T>
std::unique_ptr<GraphLayer<T>> MakeMergeLayer(const GraphLayerSpec& spec);  // Add, Subtract, Multiply, Average, Dot, DotInteraction
template <typename T>
std::unique_ptr<GraphLayer<T>> MakeNormLayer(const GraphLayerSpec& spec);  // LayerNormalization, BatchNormalization
template <typename T>
std::unique_ptr<GraphLayer<T>> MakeConvLayer(const GraphLayerSpec& spec);  // Conv2D, MaxPooling2D, AveragePooling2D
// Float: a Conv2D with the MaxPooling2D after it fused in, and that MaxPooling2D (which then passes
// the pooled values on); null otherwise (conv_layers.cc says when).
template <typename T>
std::unique_ptr<GraphLayer<T>> MakeFusedConvLayer(const ModelGraph& graph, int index);
template <typename T>
std::unique_ptr<GraphLayer<T>> MakePoolLayer(const GraphLayerSpec& spec);  // Embedding, global pooling

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_GRAPH_LAYER_FACTORIES_H_
