// If / Loop / Scan expansion of one node: bodies copied once per branch, iteration or step.
#include <algorithm>
#include <optional>

#include "common/op_params.h"
#include "shapeonnx/control_flow/builder.h"

namespace shapeonnx::detail {

namespace {

// Expands one control-flow node: the semantics of If, Loop and Scan.
class Expander : public Builder {
 public:
  using Builder::Builder;

  Status run() {
    if (node_.op_type == "If") return expand_if();
    if (node_.op_type == "Loop") return expand_loop();
    return expand_scan();
  }

 private:
  Status expand_if() {
    ASSIGN_OR_RETURN(Body then_body, parse_body(graph_, node_, "then_branch"));
    ASSIGN_OR_RETURN(Body else_body, parse_body(graph_, node_, "else_branch"));
    if (!node_.has_input(0)) return error("missing condition input");
    if (then_body.outputs().size() != node_.outputs.size() ||
        else_body.outputs().size() != node_.outputs.size()) {
      return error("branches must have one output per node output");
    }
    if (const Tensor* cond = known(node_.inputs[0])) {
      if (cond->numel() != 1) return error("condition must hold one element");
      const Body& chosen = cond->int_at(0) ? then_body : else_body;
      ASSIGN_OR_RETURN(auto outs, instantiate(chosen, cond->int_at(0) ? "then" : "else", {}));
      for (size_t k = 0; k < outs.size(); ++k) bind(outs[k], node_.outputs[k]);
      return {};
    }
    if (graph_.opset() < 9) return error("a run-time condition needs Where (opset 9 or later)");
    ASSIGN_OR_RETURN(auto then_outs, instantiate(then_body, "then", {}));
    ASSIGN_OR_RETURN(auto else_outs, instantiate(else_body, "else", {}));
    std::string scalar_shape = constant(Tensor::from_int64({}, {0}), "scalar_shape");
    std::string cond = emit("Reshape", {node_.inputs[0], scalar_shape}, {}, "condition");
    for (size_t k = 0; k < node_.outputs.size(); ++k) {
      if (node_.outputs[k].empty()) continue;
      emit("Where", {cond, then_outs[k], else_outs[k]}, {}, "where", node_.outputs[k]);
      if (same_shape_) {
        same_shape_->push_back({node_.name, node_.outputs[k], then_outs[k], else_outs[k]});
      }
    }
    return {};
  }

  Status expand_loop() {
    ASSIGN_OR_RETURN(Body body, parse_body(graph_, node_, "body"));
    if (node_.inputs.size() < 2) return error("needs the trip count and condition inputs");
    const size_t n_carried = node_.inputs.size() - 2;
    if (body.inputs().size() != n_carried + 2 || body.outputs().size() < n_carried + 1) {
      return error("body inputs/outputs do not match the loop-carried values");
    }
    const size_t n_scan = body.outputs().size() - 1 - n_carried;
    if (node_.outputs.size() > n_carried + n_scan) return error("more outputs than the body has");
    std::optional<int64_t> trip;
    if (node_.has_input(0)) {
      const Tensor* t = known(node_.inputs[0]);
      if (!t || t->numel() != 1) {
        return error("trip count '" + node_.inputs[0] +
                     "' is not known at compile time; only loops with a static number of "
                     "iterations can be unrolled");
      }
      trip = t->int_at(0);
    }
    std::string cond = node_.has_input(1) ? node_.inputs[1] : "";
    if (!trip && cond.empty()) return error("neither a trip count nor a condition: endless loop");
    std::vector<std::string> carried(node_.inputs.begin() + 2, node_.inputs.end());
    std::vector<std::vector<std::string>> scans(n_scan);
    for (int64_t i = 0; !trip || i < *trip; ++i) {
      if (!cond.empty()) {
        const Tensor* c = known(cond);
        if (!c || c->numel() != 1) {
          return error("condition '" + cond + "' of iteration " + std::to_string(i) +
                       " is not known at compile time; only loops with a static number of "
                       "iterations can be unrolled");
        }
        if (!c->int_at(0)) break;
      }
      if (i >= kMaxIterations)
        return error("more than " + std::to_string(kMaxIterations) + " iterations");
      const std::string tag = "iter" + std::to_string(i);
      std::map<std::string, std::string> bound;
      bound[body.inputs()[0]] = constant(Tensor::from_int64({i}, {}), tag + "/iteration");
      bound[body.inputs()[1]] =
          cond.empty() ? constant(Tensor::from_int64({1}, {}, DType::kBool), tag + "/true") : cond;
      for (size_t j = 0; j < n_carried; ++j) bound[body.inputs()[2 + j]] = carried[j];
      ASSIGN_OR_RETURN(auto outs, instantiate(body, tag, std::move(bound)));
      cond = outs[0];
      for (size_t j = 0; j < n_carried; ++j) carried[j] = outs[1 + j];
      for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(outs[1 + n_carried + k]);
    }
    for (size_t j = 0; j < n_carried && j < node_.outputs.size(); ++j) {
      bind(carried[j], node_.outputs[j]);
    }
    for (size_t k = 0; n_carried + k < node_.outputs.size(); ++k) {
      const std::string& out = node_.outputs[n_carried + k];
      if (out.empty()) continue;
      if (scans[k].empty())
        return error("zero iterations leave scan output '" + out + "' without a shape");
      stack(scans[k], 0, "scan" + std::to_string(k), out);
    }
    return {};
  }

  struct Unrolled {
    std::vector<std::string> states;
    std::vector<std::vector<std::string>> per_step;  // per scan output, in step order
  };

  Result<Unrolled> unroll_scan(const Body& body, std::vector<std::string> states,
                               const std::vector<std::string>& scan_inputs,
                               const std::vector<int64_t>& axes,
                               const std::vector<int64_t>& directions, int64_t length,
                               const std::string& tag, size_t n_outputs) {
    // Known before unrolling: fail at once rather than after building millions of nodes.
    const size_t per_step = body.nodes().size() + scan_inputs.size();
    if (length > kMaxIterations)
      return error("more than " + std::to_string(kMaxIterations) + " iterations");
    if (per_step != 0 && static_cast<size_t>(std::max<int64_t>(length, 0)) > kMaxNodes / per_step)
      return error("expansion exceeds " + std::to_string(kMaxNodes) + " nodes");
    Unrolled u;
    u.per_step.resize(n_outputs);
    for (int64_t t = 0; t < length; ++t) {
      const std::string step = tag + "step" + std::to_string(t);
      std::map<std::string, std::string> bound;
      for (size_t j = 0; j < states.size(); ++j) bound[body.inputs()[j]] = states[j];
      for (size_t m = 0; m < scan_inputs.size(); ++m) {
        const int64_t index = directions[m] ? length - 1 - t : t;
        bound[body.inputs()[states.size() + m]] =
            gather(scan_inputs[m], index, axes[m], step + "/slice" + std::to_string(m));
      }
      ASSIGN_OR_RETURN(auto outs, instantiate(body, step, std::move(bound)));
      for (size_t j = 0; j < states.size(); ++j) states[j] = outs[j];
      for (size_t k = 0; k < n_outputs; ++k) u.per_step[k].push_back(outs[states.size() + k]);
    }
    u.states = std::move(states);
    return u;
  }

  Result<int64_t> dim(const std::string& value, int64_t axis) const {
    const common::Value* v = prefix_.find(value);
    if (!v || !v->is_static()) return error("shape of scan input '" + value + "' is not static");
    const int64_t rank = static_cast<int64_t>(v->shape->size());
    const common::Result<int64_t> at = common::normalize_axis(axis, rank);
    if (!at.ok()) return error("scan input '" + value + "': " + at.error().message);
    return (*v->shape)[static_cast<size_t>(*at)];
  }

  Status expand_scan() {
    ASSIGN_OR_RETURN(Body body, parse_body(graph_, node_, "body"));
    const bool batched = graph_.opset() < 9;  // opset 8: sequence_lens first, batch dim 0
    const size_t first = batched ? 1 : 0;
    const int64_t n_scan_in = node_.attr_int("num_scan_inputs", 0);
    if (n_scan_in < 1 || node_.inputs.size() < first + static_cast<size_t>(n_scan_in)) {
      return error("num_scan_inputs does not match the inputs");
    }
    const size_t m = static_cast<size_t>(n_scan_in);
    const size_t n_states = node_.inputs.size() - first - m;
    if (body.inputs().size() != n_states + m || body.outputs().size() < n_states) {
      return error("body inputs/outputs do not match the state and scan inputs");
    }
    const size_t n_out = body.outputs().size() - n_states;
    std::vector<std::string> states(node_.inputs.begin() + static_cast<long>(first),
                                    node_.inputs.begin() + static_cast<long>(first + n_states));
    std::vector<std::string> scan_in(node_.inputs.begin() + static_cast<long>(first + n_states),
                                     node_.inputs.end());
    std::vector<int64_t> axes = node_.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
    std::vector<int64_t> dirs = node_.attr_ints(batched ? "directions" : "scan_input_directions",
                                                std::vector<int64_t>(m, 0));
    std::vector<int64_t> out_axes =
        node_.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
    std::vector<int64_t> out_dirs =
        node_.attr_ints("scan_output_directions", std::vector<int64_t>(n_out, 0));
    if (axes.size() != m || dirs.size() != m || out_axes.size() != n_out ||
        out_dirs.size() != n_out) {
      return error("scan axes/directions attributes do not match the inputs and outputs");
    }
    int64_t length = -1;
    for (size_t k = 0; k < m; ++k) {
      ASSIGN_OR_RETURN(int64_t l, dim(scan_in[k], batched ? 1 : axes[k]));
      if (length >= 0 && l != length) return error("scan inputs differ in sequence length");
      length = l;
    }
    if (length <= 0) return error("a zero-length scan leaves its outputs without a shape");
    auto finish = [&](const Unrolled& u, std::vector<std::string>* state_out,
                      std::vector<std::string>* scan_out, const std::string& tag) {
      for (size_t k = 0; k < n_out; ++k) {
        std::vector<std::string> steps = u.per_step[k];
        if (out_dirs[k]) std::reverse(steps.begin(), steps.end());
        scan_out->push_back(
            stack(steps, batched ? 0 : out_axes[k], tag + "scan" + std::to_string(k)));
      }
      *state_out = u.states;
    };
    std::vector<std::string> final_states, outputs;
    if (!batched) {
      ASSIGN_OR_RETURN(Unrolled u,
                       unroll_scan(body, states, scan_in, axes, dirs, length, "", n_out));
      finish(u, &final_states, &outputs, "");
    } else {
      if (node_.has_input(0)) {
        const Tensor* lens = known(node_.inputs[0]);
        bool uniform = lens != nullptr;
        for (int64_t i = 0; uniform && i < lens->numel(); ++i) uniform = lens->int_at(i) == length;
        if (!uniform) return error("sequence_lens must be static and equal to the sequence length");
      }
      ASSIGN_OR_RETURN(int64_t batch, dim(scan_in[0], 0));
      std::vector<std::vector<std::string>> per_batch_states(n_states), per_batch_out(n_out);
      for (int64_t b = 0; b < batch; ++b) {
        const std::string tag = "batch" + std::to_string(b) + "/";
        std::vector<std::string> sb, xb;
        for (size_t j = 0; j < n_states; ++j)
          sb.push_back(gather(states[j], b, 0, tag + "state" + std::to_string(j)));
        for (size_t k = 0; k < m; ++k)
          xb.push_back(gather(scan_in[k], b, 0, tag + "input" + std::to_string(k)));
        ASSIGN_OR_RETURN(Unrolled u, unroll_scan(body, sb, xb, std::vector<int64_t>(m, 0), dirs,
                                                 length, tag, n_out));
        std::vector<std::string> s, o;
        finish(u, &s, &o, tag);
        for (size_t j = 0; j < n_states; ++j) per_batch_states[j].push_back(s[j]);
        for (size_t k = 0; k < n_out; ++k) per_batch_out[k].push_back(o[k]);
      }
      for (size_t j = 0; j < n_states; ++j)
        final_states.push_back(stack(per_batch_states[j], 0, "state" + std::to_string(j)));
      for (size_t k = 0; k < n_out; ++k)
        outputs.push_back(stack(per_batch_out[k], 0, "output" + std::to_string(k)));
    }
    for (size_t j = 0; j < n_states && j < node_.outputs.size(); ++j) {
      bind(final_states[j], node_.outputs[j]);
    }
    for (size_t k = 0; n_states + k < node_.outputs.size(); ++k) {
      bind(outputs[k], node_.outputs[n_states + k]);
    }
    return {};
  }
};

}  // namespace

Status expand_node(Graph& graph, const Graph& prefix, const Node& node, SameShapePairs* same_shape,
                   std::vector<Node>* out) {
  Expander expander(graph, prefix, node, same_shape);
  RETURN_IF_ERROR(expander.run());
  expander.take_nodes(out);
  return {};
}

}  // namespace shapeonnx::detail
