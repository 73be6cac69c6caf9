#include "common/graph/onnx_graph_builder.h"

#include "absl/strings/str_cat.h"

namespace pstrain {

std::string OnnxGraphBuilder::NextName(const std::string& what) {
  // "_" first: Keras variable names never start a weight with it, so no value meets an initializer.
  return absl::StrCat(prefix_, "/_", what, counter_++);
}

std::string OnnxGraphBuilder::Node(const std::string& op, const std::vector<std::string>& inputs,
                                   const std::vector<Attr>& attrs) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op);
  const std::string out = NextName(op);
  node->set_name(out);
  for (const std::string& in : inputs) node->add_input(in);
  node->add_output(out);
  for (const Attr& a : attrs) {
    onnx::AttributeProto* p = node->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case Attr::kInt:
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(a.i);
        break;
      case Attr::kFloat:
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case Attr::kInts:
        p->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
    }
  }
  return out;
}

std::string OnnxGraphBuilder::FloatConst(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  const std::string name = NextName("const");
  Initializer(name, shape, values);
  return name;
}

std::string OnnxGraphBuilder::Int64Const(const std::vector<int64_t>& values) {
  const std::string name = NextName("const");
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return name;
}

void OnnxGraphBuilder::Initializer(const std::string& name, const std::vector<int64_t>& shape,
                                   const std::vector<float>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  t->mutable_float_data()->Add(values.begin(), values.end());
}

void OnnxGraphBuilder::Finish(const std::string& value, const std::string& name) {
  const int n = graph_->node_size();
  if (n > first_node_of_prefix_ && graph_->node(n - 1).output(0) == value) {
    graph_->mutable_node(n - 1)->set_output(0, name);
  } else {
    onnx::NodeProto* node = graph_->add_node();
    node->set_op_type("Identity");
    node->set_name(NextName("Identity"));
    node->add_input(value);
    node->add_output(name);
  }
  first_node_of_prefix_ = graph_->node_size();
}

}  // namespace pstrain
