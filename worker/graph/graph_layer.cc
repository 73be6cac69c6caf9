#include "worker/graph/graph_layer.h"

#include "worker/graph/layer_factories.h"

namespace pstrain {

template <typename T>
std::unique_ptr<GraphLayer<T>> MakeGraphLayer(const ModelGraph& graph, int index) {
  if (std::unique_ptr<GraphLayer<T>> layer = MakeFusedConvLayer<T>(graph, index)) return layer;
  const GraphLayerSpec& spec = graph.layers[index];
  for (auto make : {&MakeDenseLayer<T>, &MakeShapeLayer<T>, &MakeMergeLayer<T>, &MakeNormLayer<T>, &MakePoolLayer<T>,
                    &MakeConvLayer<T>}) {
    if (std::unique_ptr<GraphLayer<T>> layer = make(spec)) return layer;
  }
  return nullptr;
}

template std::unique_ptr<GraphLayer<float>> MakeGraphLayer<float>(const ModelGraph&, int);
template std::unique_ptr<GraphLayer<double>> MakeGraphLayer<double>(const ModelGraph&, int);

}  // namespace pstrain
