// Sequence ops over sequences whose length and positions are known at compile time: a sequence
// is a list of tensor values, so SequenceConstruct/Insert/Erase/Empty only edit that list,
// SequenceAt and SequenceLength read it, SplitToSequence becomes Split or Gather, and
// ConcatFromSequence becomes Concat (or a stack).
#include "shapeonnx/control_flow_builder.h"

namespace shapeonnx::detail {

namespace {

class SequenceExpander : public Builder {
 public:
  SequenceExpander(Graph& graph, const Graph& prefix, const Node& node, Sequences* sequences)
      : Builder(graph, prefix, node, nullptr), sequences_(*sequences) {}

  Status run() {
    const std::string& op = node_.op_type;
    if (node_.outputs.size() != 1 || node_.outputs[0].empty()) return error("expects one output");
    const std::string& out = node_.outputs[0];
    if (op == "SequenceEmpty") return define(out, {});
    if (op == "SequenceConstruct") return define(out, node_.inputs);
    if (op == "SplitToSequence") return split(out);
    ASSIGN_OR_RETURN(std::vector<std::string> seq, input_sequence());
    if (op == "SequenceLength") {
      graph_.initializers[out] = Tensor::from_int64({static_cast<int64_t>(seq.size())}, {});
      return {};
    }
    if (op == "ConcatFromSequence") return concat(seq, out);
    const bool insert = op == "SequenceInsert";
    const size_t position_input = insert ? 2 : 1;
    const int64_t size = static_cast<int64_t>(seq.size());
    int64_t pos = insert ? size : size - 1;  // defaults: append, erase the last
    if (node_.has_input(position_input)) {
      const Tensor* p = known(node_.inputs[position_input]);
      if (!p || p->numel() != 1) return error("position is not known at compile time");
      pos = p->int_at(0);
      if (pos < 0) pos += size;
    }
    const int64_t limit = insert ? size : size - 1;  // Insert may target one past the end
    if (pos < 0 || pos > limit) return error("position out of range");
    if (op == "SequenceAt") {
      bind(seq[static_cast<size_t>(pos)], out);
      return {};
    }
    if (insert) {
      if (!node_.has_input(1)) return error("missing the tensor to insert");
      seq.insert(seq.begin() + pos, node_.inputs[1]);
    } else {
      seq.erase(seq.begin() + pos);
    }
    return define(out, std::move(seq));
  }

 private:
  Status define(const std::string& name, std::vector<std::string> tensors) {
    for (const std::string& t : tensors) {
      if (t.empty()) return error("empty tensor name in a sequence");
    }
    sequences_[name] = std::move(tensors);
    return {};
  }

  Result<std::vector<std::string>> input_sequence() const {
    if (!node_.has_input(0)) return error("missing the sequence input");
    auto it = sequences_.find(node_.inputs[0]);
    if (it == sequences_.end()) {
      return error("sequence '" + node_.inputs[0] +
                   "' is not built inside the model (a graph input or a loop-carried sequence)");
    }
    return it->second;
  }

  // Chunks along `axis`: of size 1 without a split input (squeezed unless keepdims), of the given
  // sizes for a 1-D split, of a scalar split's size (the last one shorter) otherwise.
  Status split(const std::string& out) {
    const common::Value* v = prefix_.find(node_.inputs[0]);
    if (!v || !v->is_static()) return error("input shape is not static");
    const common::Dims& dims = *v->shape;
    const int64_t rank = static_cast<int64_t>(dims.size());
    int64_t axis = node_.attr_int("axis", 0);
    if (axis < -rank || axis >= rank) return error("axis out of range");
    if (axis < 0) axis += rank;
    const int64_t length = dims[static_cast<size_t>(axis)];
    std::vector<std::string> parts;
    if (!node_.has_input(1) && node_.attr_int("keepdims", 1) == 0) {
      for (int64_t i = 0; i < length; ++i) {
        parts.push_back(gather(node_.inputs[0], i, axis, "element" + std::to_string(i)));
      }
      return define(out, std::move(parts));
    }
    std::vector<int64_t> sizes;
    if (!node_.has_input(1)) {
      sizes.assign(static_cast<size_t>(length), 1);
    } else {
      const Tensor* s = known(node_.inputs[1]);
      if (!s) return error("split is not known at compile time");
      if (s->dims.empty()) {
        const int64_t chunk = s->int_at(0);
        if (chunk <= 0) return error("split must be positive");
        for (int64_t done = 0; done < length; done += chunk)
          sizes.push_back(std::min(chunk, length - done));
      } else {
        sizes = s->to_int64();
      }
    }
    int64_t total = 0;
    for (int64_t size : sizes) total += size;
    if (total != length || sizes.empty())
      return error("split sizes do not add up to the axis length");
    Node n;
    n.name = fresh(node_.name + "/split");
    n.op_type = "Split";
    n.inputs = {node_.inputs[0]};
    n.attrs.push_back(Attribute::make_int("axis", axis));
    if (graph_.opset() >= 13) {
      n.inputs.push_back(
          constant(Tensor::from_int64(sizes, {static_cast<int64_t>(sizes.size())}), "split_sizes"));
    } else {
      n.attrs.push_back(Attribute::make_ints("split", sizes));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      n.outputs.push_back(fresh(node_.name + "/part" + std::to_string(i)));
      parts.push_back(n.outputs.back());
    }
    add(std::move(n));
    return define(out, std::move(parts));
  }

  Status concat(const std::vector<std::string>& seq, const std::string& out) {
    if (seq.empty()) return error("concatenating an empty sequence leaves no shape");
    if (!node_.has_attr("axis")) return error("missing attribute 'axis'");
    const int64_t axis = node_.attr_int("axis", 0);
    if (node_.attr_int("new_axis", 0) != 0) {
      stack(seq, axis, "stack", out);
    } else {
      emit("Concat", seq, {Attribute::make_int("axis", axis)}, "concat", out);
    }
    return {};
  }

  Sequences& sequences_;
};

}  // namespace

const std::set<std::string, std::less<>>& sequence_ops() {
  static const std::set<std::string, std::less<>> ops = {
      "SequenceEmpty", "SequenceConstruct", "SequenceInsert",  "SequenceErase",
      "SequenceAt",    "SequenceLength",    "SplitToSequence", "ConcatFromSequence"};
  return ops;
}

bool is_sequence_op(const Node& node) {
  return node.domain.empty() && sequence_ops().count(node.op_type);
}

Status expand_sequence_node(Graph& graph, const Graph& prefix, const Node& node,
                            Sequences* sequences, std::vector<Node>* out) {
  SequenceExpander expander(graph, prefix, node, sequences);
  RETURN_IF_ERROR(expander.run());
  expander.take_nodes(out);
  return {};
}

}  // namespace shapeonnx::detail
