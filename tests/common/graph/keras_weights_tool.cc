// Test-only tool for tests/integration/keras_weights_test.sh: reads a Keras model's weights with
// pstrain's reader, shifts every value and writes them in both Keras layouts, so real Keras can
// check that it loads exactly those values. The shift of a variable is 0.5 * (1 + its rank among
// the variable names in byte order), so a value read into or written from the wrong variable shows.
//
//   keras_weights_tool MODEL.json WEIGHTS_IN OUT_KERAS3 OUT_KERAS2
//
// OUT_KERAS3 "-" skips the Keras 3 layout (a model with Keras 2-only layers). Exit 1 with the error
// on stderr when anything fails.
#include <iostream>
#include <string>

#include "common/graph/keras_json.h"
#include "common/graph/keras_weights.h"
#include "common/platform/file_rules.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: keras_weights_tool MODEL.json WEIGHTS_IN OUT_KERAS3|- OUT_KERAS2\n";
    return 2;
  }
  absl::StatusOr<std::string> text = pstrain::ReadFileWithRules(argv[1], pstrain::kJsonDocumentFile);
  if (!text.ok()) {
    std::cerr << text.status() << "\n";
    return 1;
  }
  absl::StatusOr<pstrain::ModelGraph> graph = pstrain::ReadKerasModelJson(*text, argv[1]);
  if (!graph.ok()) {
    std::cerr << graph.status() << "\n";
    return 1;
  }
  absl::StatusOr<pstrain::NamedWeights> weights = pstrain::ReadKerasWeights(*graph, argv[2]);
  if (!weights.ok()) {
    std::cerr << weights.status() << "\n";
    return 1;
  }
  int rank = 0;
  for (auto& [name, value] : *weights) {  // std::map: names in byte order
    const float shift = 0.5f * static_cast<float>(1 + rank++);
    for (float& v : value.values) v += shift;
  }
  if (std::string(argv[3]) != "-") {
    absl::Status s = pstrain::WriteKerasWeights(*graph, *weights, pstrain::KerasWeightsFormat::kKeras3, argv[3]);
    if (!s.ok()) {
      std::cerr << s << "\n";
      return 1;
    }
  }
  absl::Status s = pstrain::WriteKerasWeights(*graph, *weights, pstrain::KerasWeightsFormat::kKeras2, argv[4]);
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  std::cout << argv[1] << ": " << weights->size() << " variables\n";
  return 0;
}
