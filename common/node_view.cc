#include "common/node_view.h"

namespace common {
namespace {

const Dims kNoDims;

const Value* find_named(const Graph& graph, const std::string& name) {
  return name.empty() ? nullptr : graph.find(name);
}

DType dtype_of(const Value* v) { return v ? v->dtype : DType::kUndefined; }

const Dims& shape_of(const Value* v) { return v && v->shape ? *v->shape : kNoDims; }

}  // namespace

const Value* NodeView::input_value(size_t i) const {
  return i < num_inputs() ? find_named(graph_, node_.inputs[i]) : nullptr;
}

const Value* NodeView::output_value(size_t i) const {
  return i < num_outputs() ? find_named(graph_, node_.outputs[i]) : nullptr;
}

DType NodeView::dtype(size_t i) const { return dtype_of(input_value(i)); }

const Dims& NodeView::shape(size_t i) const { return shape_of(input_value(i)); }

DType NodeView::out_dtype(size_t i) const { return dtype_of(output_value(i)); }

const Dims& NodeView::out_shape(size_t i) const { return shape_of(output_value(i)); }

const Tensor* NodeView::constant(size_t i) const {
  return has_input(i) ? graph_.constant(node_.inputs[i]) : nullptr;
}

}  // namespace common
