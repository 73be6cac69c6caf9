// The real Keras fixtures of tests/common/graph/testdata (written by make_keras_fixtures.py there),
// read by the reader's and the executor's tests. PSTRAIN_GRAPH_TESTDATA is the folder, set by CMake.
// Thread-safety: a plain function.
#ifndef PSTRAIN_TESTS_COMMON_GRAPH_KERAS_FIXTURE_H_
#define PSTRAIN_TESTS_COMMON_GRAPH_KERAS_FIXTURE_H_

#include <fstream>
#include <sstream>
#include <string>

#include "common/graph/keras_json.h"
#include "gtest/gtest.h"

namespace pstrain {

// The fixture file's text; a missing file fails the calling test.
inline std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(PSTRAIN_GRAPH_TESTDATA) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The fixture's graph; a fixture the reader refuses fails the calling test (an empty graph).
inline ModelGraph LoadFixtureGraph(const std::string& name) {
  absl::StatusOr<ModelGraph> graph = ReadKerasModelJson(ReadFixture(name), name);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : ModelGraph();
}

}  // namespace pstrain

#endif  // PSTRAIN_TESTS_COMMON_GRAPH_KERAS_FIXTURE_H_
