// Sequence ops over sequences whose length and positions are known at compile time: a sequence
// is a list of tensor values, so SequenceConstruct/Insert/Erase/Empty only edit that list,
// SequenceAt and SequenceLength read it, SplitToSequence becomes Split or Gather,
// ConcatFromSequence becomes Concat (or a stack) and SequenceMap copies its body per element.
// Optionals likewise hold a value or not at compile time: Optional records which,
// OptionalHasElement becomes a constant and OptionalGetElement the value.
#include "common/op_params.h"
#include "shapeonnx/control_flow/builder.h"

namespace shapeonnx::detail {

namespace {

class SequenceExpander : public Builder {
 public:
  SequenceExpander(Graph& graph, const Graph& prefix, const Node& node, Sequences* sequences,
                   SameShapePairs* same_shape)
      : Builder(graph, prefix, node, same_shape), sequences_(*sequences) {}

  Status run() {
    const std::string& op = node_.op_type;
    if (op == "SequenceMap") return map();
    if (node_.outputs.size() != 1 || node_.outputs[0].empty()) return error("expects one output");
    const std::string& out = node_.outputs[0];
    if (op == "Identity") {
      if (!node_.has_input(0)) return error("missing input");
      return alias(node_.inputs[0], out);
    }
    if (op == "Where") {  // an If on a run-time condition whose outputs are sequences/optionals
      if (node_.inputs.size() != 3) return error("expects three inputs");
      return choose(node_.inputs[1], node_.inputs[2], out);
    }
    if (op == "Optional") {
      sequences_.optionals[out] =
          node_.has_input(0) ? std::optional<std::string>(node_.inputs[0]) : std::nullopt;
      return {};
    }
    if (op == "OptionalHasElement") {
      bool has = false;  // an omitted input is an empty optional
      if (node_.has_input(0)) {
        auto it = sequences_.optionals.find(node_.inputs[0]);
        has = it == sequences_.optionals.end() || it->second.has_value();
      }
      graph_.initializers[out] = Tensor::from_int64({has ? 1 : 0}, {}, DType::kBool);
      return {};
    }
    if (op == "OptionalGetElement") {
      if (!node_.has_input(0)) return error("missing the optional input");
      const std::string& in = node_.inputs[0];
      auto it = sequences_.optionals.find(in);
      if (it == sequences_.optionals.end()) return alias(in, out);  // a tensor or a sequence
      if (!it->second) return error("optional '" + in + "' holds no value");
      const std::string held = *it->second;
      return alias(held, out);
    }
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
    sequences_.lists[name] = std::move(tensors);
    return {};
  }

  // `out` becomes another name for `in`: the same sequence, the same optional, or (for a tensor)
  // an Identity of it.
  Status alias(const std::string& in, const std::string& out) {
    if (auto it = sequences_.lists.find(in); it != sequences_.lists.end()) {
      std::vector<std::string> copy = it->second;
      return define(out, std::move(copy));
    }
    if (auto it = sequences_.optionals.find(in); it != sequences_.optionals.end()) {
      std::optional<std::string> copy = it->second;
      sequences_.optionals[out] = std::move(copy);
      return {};
    }
    bind(in, out);
    return {};
  }

  // `out` = Where(condition, a, b) for sequences (element by element, equal lengths) and
  // optionals (both holding a value); the pairs must end up with the same shapes.
  Status choose(const std::string& a, const std::string& b, const std::string& out) {
    auto la = sequences_.lists.find(a), lb = sequences_.lists.find(b);
    if (la != sequences_.lists.end() && lb != sequences_.lists.end()) {
      const std::vector<std::string> xs = la->second, ys = lb->second;
      if (xs.size() != ys.size()) {
        return error(
            "the branches' sequences differ in length, so a run-time condition cannot "
            "choose between them in a static graph");
      }
      std::vector<std::string> chosen;
      for (size_t k = 0; k < xs.size(); ++k) {
        chosen.push_back(
            emit("Where", {node_.inputs[0], xs[k], ys[k]}, {}, "element" + std::to_string(k)));
        if (same_shape_) same_shape_->push_back({node_.name, chosen.back(), xs[k], ys[k]});
      }
      return define(out, std::move(chosen));
    }
    auto oa = sequences_.optionals.find(a), ob = sequences_.optionals.find(b);
    if (oa != sequences_.optionals.end() && ob != sequences_.optionals.end()) {
      if (!oa->second || !ob->second) {
        if (oa->second || ob->second) {
          return error(
              "one branch's optional holds a value and the other's does not, so a "
              "run-time condition cannot choose between them in a static graph");
        }
        sequences_.optionals[out] = std::nullopt;
        return {};
      }
      const std::string held = fresh(node_.name + "/value");
      const std::string x = *oa->second, y = *ob->second;
      if (sequences_.count(x) || sequences_.count(y)) {
        RETURN_IF_ERROR(choose(x, y, held));
      } else {
        emit("Where", {node_.inputs[0], x, y}, {}, "value", held);
        if (same_shape_) same_shape_->push_back({node_.name, held, x, y});
      }
      sequences_.optionals[out] = held;
      return {};
    }
    return error("inputs '" + a + "' and '" + b + "' are not both sequences or both optionals");
  }

  // SequenceMap: the body once per element; additional inputs are sequences of the same length
  // (element i goes to copy i) or tensors (every copy reads them).
  Status map() {
    ASSIGN_OR_RETURN(Body body, parse_body(graph_, node_, "body"));
    ASSIGN_OR_RETURN(std::vector<std::string> seq, input_sequence());
    if (body.inputs().size() != node_.inputs.size()) {
      return error("the body must take one input per node input");
    }
    if (body.outputs().size() != node_.outputs.size()) {
      return error("the body must have one output per node output");
    }
    std::vector<std::vector<std::string>> extra(node_.inputs.size());  // empty: a tensor input
    for (size_t j = 1; j < node_.inputs.size(); ++j) {
      auto it = sequences_.lists.find(node_.inputs[j]);
      if (it == sequences_.lists.end()) continue;
      if (it->second.size() != seq.size()) return error("input sequences differ in length");
      extra[j] = it->second;
    }
    std::vector<std::vector<std::string>> results(node_.outputs.size());
    for (size_t i = 0; i < seq.size(); ++i) {
      std::map<std::string, std::string> bound;
      bound[body.inputs()[0]] = seq[i];
      for (size_t j = 1; j < node_.inputs.size(); ++j) {
        bound[body.inputs()[j]] = extra[j].empty() ? node_.inputs[j] : extra[j][i];
      }
      ASSIGN_OR_RETURN(auto outs,
                       instantiate(body, "element" + std::to_string(i), std::move(bound)));
      for (size_t k = 0; k < outs.size(); ++k) results[k].push_back(outs[k]);
    }
    for (size_t k = 0; k < node_.outputs.size(); ++k) {
      if (!node_.outputs[k].empty()) RETURN_IF_ERROR(define(node_.outputs[k], results[k]));
    }
    return {};
  }

  Result<std::vector<std::string>> input_sequence() const {
    if (!node_.has_input(0)) return error("missing the sequence input");
    auto it = sequences_.lists.find(node_.inputs[0]);
    if (it == sequences_.lists.end()) {
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
    const common::Result<int64_t> axis_or = common::normalize_axis(node_.attr_int("axis", 0), rank);
    if (!axis_or.ok()) return error(axis_or.error().message);
    const int64_t axis = *axis_or;
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
      "SequenceEmpty", "SequenceConstruct", "SequenceInsert",     "SequenceErase",
      "SequenceAt",    "SequenceLength",    "SplitToSequence",    "ConcatFromSequence",
      "SequenceMap",   "Optional",          "OptionalHasElement", "OptionalGetElement"};
  return ops;
}

bool is_sequence_op(const Node& node) {
  return node.domain.empty() && sequence_ops().count(node.op_type);
}

Status expand_sequence_node(Graph& graph, const Graph& prefix, const Node& node,
                            Sequences* sequences, SameShapePairs* same_shape,
                            std::vector<Node>* out) {
  SequenceExpander expander(graph, prefix, node, sequences, same_shape);
  RETURN_IF_ERROR(expander.run());
  expander.take_nodes(out);
  return {};
}

}  // namespace shapeonnx::detail
