// Appends nodes, constants and initializers to an ONNX GraphProto with unique names, for the ONNX
// export (onnx_export.h). Values are named by the caller's prefix (the Keras layer) and a counter;
// a layer's last node is then renamed to the layer's own name.
// Thread-safety: one object per export; not shared.
#ifndef PSTRAIN_COMMON_GRAPH_ONNX_GRAPH_BUILDER_H_
#define PSTRAIN_COMMON_GRAPH_ONNX_GRAPH_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/onnx.pb.h"

namespace pstrain {

class OnnxGraphBuilder {
 public:
  // An attribute of a node: one int, float, or a list of ints.
  struct Attr {
    std::string name;
    enum Kind { kInt, kFloat, kInts } kind;
    int64_t i = 0;
    float f = 0;
    std::vector<int64_t> ints;
    static Attr Int(std::string n, int64_t v) { return {std::move(n), kInt, v, 0, {}}; }
    static Attr Float(std::string n, float v) { return {std::move(n), kFloat, 0, v, {}}; }
    static Attr Ints(std::string n, std::vector<int64_t> v) { return {std::move(n), kInts, 0, 0, std::move(v)}; }
  };

  // Not owned; must outlive the builder.
  explicit OnnxGraphBuilder(onnx::GraphProto* graph) : graph_(graph) {}

  // Sets the prefix of the names that follow (a layer's name).
  void SetPrefix(const std::string& prefix) { prefix_ = prefix; }

  // Adds a node `op` of one output and returns the output's name.
  std::string Node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<Attr>& attrs = {});

  // A float / int64 constant as an initializer; returns its name. An empty shape is a scalar.
  std::string FloatConst(const std::vector<int64_t>& shape, const std::vector<float>& values);
  std::string FloatScalar(float v) { return FloatConst({}, {v}); }
  std::string Int64Const(const std::vector<int64_t>& values);  // a 1-D tensor

  // An initializer called `name` (a Keras variable).
  void Initializer(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values);

  // Makes `value` available as `name`: renames the output of the node that made `value` when that
  // node is the graph's last (made under the current prefix), else adds an Identity.
  void Finish(const std::string& value, const std::string& name);

 private:
  std::string NextName(const std::string& what);

  onnx::GraphProto* graph_;
  std::string prefix_;
  int64_t counter_ = 0;
  int first_node_of_prefix_ = 0;
};

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_GRAPH_ONNX_GRAPH_BUILDER_H_
