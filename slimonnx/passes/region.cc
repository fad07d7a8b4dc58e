// Linear regions: a connected group of ops that are affine in their non-constant inputs, sample by
// sample, is rewritten so that every value the rest of the graph reads from it is one Gemm over
// the values it depends on. This collapses the index/arithmetic glue between nonlinearities
// (Slice, Gather, Concat, scaled sums and differences, MatMul by constants) into single layers.
//
// The dependence of each such value on its inputs is measured by running the region's ops with
// the common evaluator in double precision on unit vectors, so the composed weights are exact up
// to one final rounding.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string_view>

#include "common/eval.h"
#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

using common::Dims;
using common::DType;
using common::Node;
using common::Tensor;

// A collapsed value may cost at most this many weights, or twice the weights it replaces.
constexpr int64_t kMaxWeights = int64_t{1} << 17;
// Multiply-adds spent measuring one value's weights (one evaluation per input element).
constexpr double kMaxWork = 1e8;

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// The value holds one sample: static shape of rank >= 2 whose first (batch) dim is 1, float type.
const Dims* sample_shape(const Editor& ed, std::string_view v) {
  const Dims* d = ed.shape(v);
  const DType t = ed.dtype(v);
  if (d == nullptr || d->size() < 2 || (*d)[0] != 1) return nullptr;
  if (t != DType::kFloat && t != DType::kDouble) return nullptr;
  return d;
}

// Constant operand of an elementwise op that broadcasts the same way for every sample.
bool per_sample_constant(const Tensor& c, int64_t out_rank) {
  if (c.dtype != DType::kFloat && c.dtype != DType::kDouble) return false;
  return static_cast<int64_t>(c.dims.size()) < out_rank || c.dims.empty() || c.dims[0] == 1;
}

// Axes read from attribute `attr` or from constant input `slot`; nullopt when unknown.
std::optional<std::vector<int64_t>> axes_of(const Editor& ed, const Node& n, size_t slot,
                                            std::string_view attr) {
  if (n.has_attr(attr)) return n.attr_ints(attr);
  if (!n.has_input(slot)) return std::vector<int64_t>{};
  const Tensor* t = ed.initializer(n.inputs[slot]);
  if (t == nullptr) return std::nullopt;
  return t->to_int64();
}

bool avoids_batch_axis(const std::optional<std::vector<int64_t>>& axes, int64_t rank) {
  if (!axes || axes->empty()) return false;
  return std::none_of(axes->begin(), axes->end(),
                      [&](int64_t a) { return norm_axis(a, rank) == 0; });
}

// The node is affine in its non-constant inputs and treats each sample (dim 0) separately.
bool region_op(const Editor& ed, const Node& n) {
  if (!is_onnx(n) || n.outputs.size() != 1 || n.inputs.empty()) return false;
  const Dims* out = sample_shape(ed, n.outputs[0]);
  if (out == nullptr) return false;
  const auto rank = static_cast<int64_t>(out->size());
  int vars = 0;
  for (size_t s = 0; s < n.inputs.size(); ++s) {
    if (n.inputs[s].empty()) continue;
    const Tensor* c = ed.initializer(n.inputs[s]);
    if (c != nullptr) continue;
    if (sample_shape(ed, n.inputs[s]) == nullptr) return false;
    if (ed.dtype(n.inputs[s]) != ed.dtype(n.outputs[0])) return false;
    ++vars;
  }
  if (vars == 0) return false;
  const std::string& op = n.op_type;
  const Tensor* c1 = n.inputs.size() > 1 ? ed.initializer(n.inputs[1]) : nullptr;
  const bool x_var = ed.initializer(n.inputs[0]) == nullptr;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    if (n.inputs.size() != 2) return false;
    if ((op == "Mul" || op == "Div") && vars != 1) return false;
    if (op == "Div" && !x_var) return false;
    for (const std::string& in : n.inputs) {
      const Tensor* c = ed.initializer(in);
      if (c != nullptr && !per_sample_constant(*c, rank)) return false;
    }
    return true;
  }
  if (op == "Neg" || op == "Identity") return true;
  if (op == "MatMul") {
    return x_var && c1 != nullptr && c1->dims.size() == 2 &&
           (c1->dtype == DType::kFloat || c1->dtype == DType::kDouble);
  }
  if (op == "Gemm") {
    if (!x_var || c1 == nullptr || n.attr_int("transA", 0) != 0) return false;
    return n.inputs.size() < 3 || n.inputs[2].empty() || ed.initializer(n.inputs[2]) != nullptr;
  }
  if (op == "Concat") return norm_axis(n.attr_int("axis", 0), rank) != 0;
  if (!x_var || !params_constant(ed, n)) return false;
  if (op == "Conv" || op == "ConvTranspose") return c1 != nullptr;
  if (op == "BatchNormalization") return n.attr_int("training_mode", 0) == 0;
  if (op == "AveragePool") return true;
  const Dims* in = ed.shape(n.inputs[0]);
  const auto in_rank = static_cast<int64_t>(in->size());
  if (op == "Pad") {  // constant padding that leaves the batch axis alone
    if (n.attr_string("mode", "constant") != "constant" || n.has_input(3)) return false;
    std::optional<std::vector<int64_t>> pads = axes_of(ed, n, 1, "pads");
    return pads && static_cast<int64_t>(pads->size()) == 2 * in_rank && (*pads)[0] == 0 &&
           (*pads)[in_rank] == 0;
  }
  if (op == "Slice") {
    return avoids_batch_axis(ed.graph().opset() < 10 ? axes_of(ed, n, 99, "axes")
                                                     : axes_of(ed, n, 3, "axes"),
                             in_rank);
  }
  if (op == "Gather") return c1 != nullptr && norm_axis(n.attr_int("axis", 0), in_rank) != 0;
  if (op == "Reshape" || op == "Expand") return true;  // batch dim 1 in and out (sample_shape)
  if (op == "Flatten") return norm_axis(n.attr_int("axis", 1), in_rank) >= 1;
  if (op == "Squeeze") return avoids_batch_axis(axes_of(ed, n, 1, "axes"), in_rank);
  if (op == "Unsqueeze") return avoids_batch_axis(axes_of(ed, n, 1, "axes"), rank);
  if (op == "Transpose") {
    std::vector<int64_t> perm = n.attr_ints("perm");
    return !perm.empty() && perm[0] == 0;
  }
  if (op == "ReduceSum") {
    return avoids_batch_axis(ed.graph().opset() < 13 ? axes_of(ed, n, 99, "axes")
                                                     : axes_of(ed, n, 1, "axes"),
                             in_rank);
  }
  return false;
}

struct Collapsed {
  std::string y;
  std::string name;                   // of the node that produced y
  std::vector<std::string> frontier;  // sorted by name: the order of the Gemm's input features
  std::vector<int> cone;              // nodes computing y from the frontier, ascending
};

class RegionPlan {
 public:
  RegionPlan(const Editor& ed, std::vector<int> nodes) : ed_(ed), nodes_(std::move(nodes)) {
    inside_.insert(nodes_.begin(), nodes_.end());
  }

  // Decides which values are recomputed by Gemms and which nodes stay. False when the result
  // would not have fewer nodes.
  bool plan() {
    for (int i : nodes_) {
      const Node& n = ed_.node(i);
      for (const std::string& in : variables(n)) {
        if (!inside_.count(ed_.producer(in))) materialized_.insert(in);
      }
      const std::string& y = n.outputs[0];
      if (ed_.is_graph_output(y)) materialized_.insert(y);
      for (int c : ed_.consumers(y)) {
        if (!inside_.count(c)) materialized_.insert(y);
      }
    }
    for (bool changed = true; changed;) {
      changed = false;
      collapsed_.clear();
      for (int i : nodes_) {
        const std::string& y = ed_.node(i).outputs[0];
        if (kept_.count(i) || !materialized_.count(y)) continue;
        Collapsed c = cone_of(y);
        if (c.cone.size() > 1 && affordable(c)) {
          collapsed_.push_back(std::move(c));
          continue;
        }
        kept_.insert(i);  // computed by its own node; its inputs must then exist
        for (const std::string& in : variables(ed_.node(i))) {
          if (inside_.count(ed_.producer(in))) materialized_.insert(in);
        }
        changed = true;
      }
    }
    return !collapsed_.empty() &&
           new_nodes() < static_cast<int64_t>(nodes_.size() - kept_.size());
  }

  // Rewrites the graph as planned.
  common::Status apply(Editor& ed) {
    std::vector<std::pair<Collapsed, std::pair<std::vector<double>, std::vector<double>>>> built;
    for (Collapsed& c : collapsed_) {
      ASSIGN_OR_RETURN(auto wb, measure(c));
      built.emplace_back(std::move(c), std::move(wb));
    }
    std::string base = ed.node(nodes_.front()).name;
    for (int i : nodes_) {
      if (!kept_.count(i)) ed.remove_node(i);
    }
    std::map<std::string, std::string> flat;                // frontier value -> 2-D view
    std::map<std::vector<std::string>, std::string> joined;  // frontier -> Gemm input
    for (auto& [c, wb] : built) {
      const Dims& ydims = *ed.shape(c.y);
      const DType dtype = ed.dtype(c.y);
      std::vector<std::string> parts;
      int64_t width = 0;
      for (const std::string& f : c.frontier) {
        const Dims& d = *ed.shape(f);
        width += common::num_elements(d);
        if (d.size() == 2) {
          parts.push_back(f);
          continue;
        }
        auto it = flat.find(f);
        if (it == flat.end()) {
          Node fl;
          fl.name = ed.graph().fresh_name(base + "_flatten");
          fl.op_type = "Flatten";
          fl.inputs = {f};
          fl.outputs = {ed.add_value(f + "_flat", dtype, {1, common::num_elements(d)})};
          fl.attrs.push_back(common::Attribute::make_int("axis", 1));
          it = flat.emplace(f, fl.outputs[0]).first;
          ed.add_node(std::move(fl));
        }
        parts.push_back(it->second);
      }
      std::string x = parts[0];
      if (parts.size() > 1) {
        auto it = joined.find(c.frontier);
        if (it == joined.end()) {
          Node cat;
          cat.name = ed.graph().fresh_name(base + "_concat");
          cat.op_type = "Concat";
          cat.inputs = parts;
          cat.outputs = {ed.add_value(base + "_features", dtype, {1, width})};
          cat.attrs.push_back(common::Attribute::make_int("axis", 1));
          it = joined.emplace(c.frontier, cat.outputs[0]).first;
          ed.add_node(std::move(cat));
        }
        x = it->second;
      }
      const int64_t m = common::num_elements(ydims);
      const std::string& name = c.name;
      Node gemm;
      gemm.name = name;
      gemm.op_type = "Gemm";
      gemm.inputs = {x, ed.add_initializer(name + "_weight", float_tensor(wb.first, {width, m},
                                                                             dtype))};
      if (std::any_of(wb.second.begin(), wb.second.end(), [](double v) { return v != 0; })) {
        gemm.inputs.push_back(ed.add_initializer(name + "_bias", float_tensor(wb.second, {m},
                                                                                  dtype)));
      }
      if (ydims.size() == 2) {
        gemm.outputs = {c.y};
        ed.add_node(std::move(gemm));
        continue;
      }
      gemm.outputs = {ed.add_value(c.y + "_flat", dtype, {1, m})};
      Node reshape;
      reshape.name = ed.graph().fresh_name(name + "_reshape");
      reshape.op_type = "Reshape";
      std::vector<int64_t> target(ydims.begin(), ydims.end());
      target[0] = 0;  // keep the batch dim of the input
      reshape.inputs = {gemm.outputs[0],
                        ed.add_initializer(name + "_shape",
                                           Tensor::from_int64(target, {int64_t(target.size())}))};
      reshape.outputs = {c.y};
      ed.add_node(std::move(gemm));
      ed.add_node(std::move(reshape));
    }
    ed.count();
    return {};
  }

 private:
  std::vector<std::string> variables(const Node& n) const {
    std::vector<std::string> out;
    for (const std::string& in : n.inputs) {
      if (!in.empty() && ed_.initializer(in) == nullptr) out.push_back(in);
    }
    return out;
  }

  Collapsed cone_of(const std::string& y) const {
    Collapsed c;
    c.y = y;
    c.name = ed_.node(ed_.producer(y)).name;
    std::set<int> cone;
    std::set<std::string> frontier;
    std::vector<int> stack = {ed_.producer(y)};
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (!cone.insert(i).second) continue;
      for (const std::string& in : variables(ed_.node(i))) {
        if (materialized_.count(in)) {
          frontier.insert(in);
        } else {
          stack.push_back(ed_.producer(in));
        }
      }
    }
    c.frontier.assign(frontier.begin(), frontier.end());
    c.cone.assign(cone.begin(), cone.end());
    return c;
  }

  int64_t width(const Collapsed& c) const {
    int64_t w = 0;
    for (const std::string& f : c.frontier) w += common::num_elements(*ed_.shape(f));
    return w;
  }

  bool affordable(const Collapsed& c) const {
    const int64_t m = common::num_elements(*ed_.shape(c.y));
    const int64_t n = width(c);
    int64_t replaced = 0;
    double work = 0;
    for (int i : c.cone) {
      const Node& node = ed_.node(i);
      const double out = static_cast<double>(common::num_elements(*ed_.shape(node.outputs[0])));
      double per = out;
      for (const std::string& in : node.inputs) {
        const Tensor* t = in.empty() ? nullptr : ed_.initializer(in);
        if (t != nullptr && common::is_floating(t->dtype)) replaced += t->numel();
      }
      if (node.op_type == "MatMul" || node.op_type == "Gemm") {
        per *= static_cast<double>(ed_.shape(node.inputs[0])->back());
      } else if (node.op_type == "Conv") {  // each output reads C_in / group * kernel inputs
        const Tensor& w = *ed_.initializer(node.inputs[1]);
        per *= static_cast<double>(w.numel() / std::max<int64_t>(1, w.dims[0]));
      } else if (node.op_type == "ConvTranspose") {  // each input feeds C_out / group * kernel
        const Tensor& w = *ed_.initializer(node.inputs[1]);
        per = static_cast<double>(common::num_elements(*ed_.shape(node.inputs[0]))) *
              static_cast<double>(w.numel() / std::max<int64_t>(1, w.dims[0]));
      } else if (node.op_type == "AveragePool") {
        for (int64_t k : node.attr_ints("kernel_shape")) per *= static_cast<double>(k);
      }
      work += per;
    }
    if (m * n > std::max(kMaxWeights, 2 * replaced)) return false;
    return work * static_cast<double>(n + 1) <= kMaxWork;
  }

  // Nodes the rewrite adds: Flatten per non-2-D frontier value, Concat per distinct frontier of
  // more than one value, a Gemm per value and a Reshape per value that is not 2-D.
  int64_t new_nodes() const {
    std::set<std::string> flat;
    std::set<std::vector<std::string>> joined;
    int64_t count = 0;
    for (const Collapsed& c : collapsed_) {
      count += 1 + (ed_.shape(c.y)->size() != 2 ? 1 : 0);
      for (const std::string& f : c.frontier) {
        if (ed_.shape(f)->size() != 2) flat.insert(f);
      }
      if (c.frontier.size() > 1) joined.insert(c.frontier);
    }
    return count + static_cast<int64_t>(flat.size() + joined.size());
  }

  const Tensor& as_double(const std::string& name) {
    auto it = constants_.find(name);
    if (it != constants_.end()) return it->second;
    const Tensor& t = *ed_.initializer(name);
    Tensor d = common::is_floating(t.dtype)
                   ? Tensor::from_double(t.to_double(), t.dims, DType::kDouble)
                   : t;
    return constants_.emplace(name, std::move(d)).first->second;
  }

  // y = x . W + b over the concatenated frontier x: b from x = 0, row j of W from x = e_j.
  common::Result<std::pair<std::vector<double>, std::vector<double>>> measure(
      const Collapsed& c) {
    const int64_t n = width(c);
    const int64_t m = common::num_elements(*ed_.shape(c.y));
    std::vector<double> w(n * m), b;
    for (int64_t j = -1; j < n; ++j) {
      std::map<std::string, Tensor> env;
      int64_t offset = 0;
      for (const std::string& f : c.frontier) {
        const Dims& d = *ed_.shape(f);
        const int64_t size = common::num_elements(d);
        std::vector<double> v(size, 0.0);
        if (j >= offset && j < offset + size) v[j - offset] = 1.0;
        env.emplace(f, Tensor::from_double(v, d, DType::kDouble));
        offset += size;
      }
      for (int i : c.cone) {
        const Node& node = ed_.node(i);
        std::vector<const Tensor*> inputs;
        for (const std::string& in : node.inputs) {
          if (in.empty()) {
            inputs.push_back(nullptr);
          } else if (ed_.initializer(in) != nullptr) {
            inputs.push_back(&as_double(in));
          } else {
            inputs.push_back(&env.at(in));
          }
        }
        ASSIGN_OR_RETURN(std::vector<Tensor> out, common::evaluate(ed_.graph(), node, inputs));
        env.insert_or_assign(node.outputs[0], std::move(out[0]));
      }
      std::vector<double> y = env.at(c.y).to_double();
      if (j < 0) {
        b = std::move(y);
        continue;
      }
      for (int64_t k = 0; k < m; ++k) w[j * m + k] = y[k] - b[k];
    }
    return std::make_pair(std::move(w), std::move(b));
  }

  const Editor& ed_;
  std::vector<int> nodes_;
  std::set<int> inside_;
  std::set<std::string> materialized_;
  std::set<int> kept_;
  std::vector<Collapsed> collapsed_;
  std::map<std::string, Tensor> constants_;
};

// Nodes upstream of a graph output that is the difference of two computed values (f(x1) - f(x2),
// as networks built for relational specs end). Where the two terms nearly cancel, computing them
// in another order changes the output by the float32 rounding of the terms, far more than the
// rounding of the difference, so their arithmetic is left as it is.
std::vector<bool> feeds_difference_output(const Editor& ed) {
  std::vector<bool> upstream(ed.size(), false);
  std::vector<int> stack;
  for (const std::string& y : ed.graph().outputs) {
    const int p = ed.producer(y);
    if (p < 0) continue;
    const Node& n = ed.node(p);
    int vars = 0;
    for (const std::string& in : n.inputs) vars += !in.empty() && ed.initializer(in) == nullptr;
    if (is_onnx(n) && n.op_type == "Sub" && vars == 2) stack.push_back(p);
  }
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (upstream[i]) continue;
    upstream[i] = true;
    for (const std::string& in : ed.node(i).inputs) {
      const int p = in.empty() ? -1 : ed.producer(in);
      if (p >= 0) stack.push_back(p);
    }
  }
  return upstream;
}

// Connected groups (through values) of region ops, each ascending.
std::vector<std::vector<int>> regions(const Editor& ed) {
  const int size = static_cast<int>(ed.size());
  std::vector<int> parent(size);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<bool> member(size, false);
  const std::vector<bool> kept_order = feeds_difference_output(ed);
  for (int i = 0; i < size; ++i) {
    member[i] = ed.live(i) && !kept_order[i] && region_op(ed, ed.node(i));
  }
  // Joined through values they pass on, and through inputs they share (so that a value read by
  // several of them is flattened or concatenated once).
  std::map<std::string, int> first_reader;
  for (int i = 0; i < size; ++i) {
    if (!member[i]) continue;
    for (const std::string& in : ed.node(i).inputs) {
      if (in.empty() || ed.initializer(in) != nullptr) continue;
      const int p = ed.producer(in);
      if (p >= 0 && member[p]) parent[find(i)] = find(p);
      auto [it, added] = first_reader.emplace(in, i);
      if (!added) parent[find(i)] = find(it->second);
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < size; ++i) {
    if (member[i]) groups[find(i)].push_back(i);
  }
  std::vector<std::vector<int>> out;
  for (auto& [root, nodes] : groups) {
    if (nodes.size() > 1) out.push_back(std::move(nodes));
  }
  return out;
}

// Region of affine ops (Slice, Gather, Concat, Add/Sub, Mul/Div by constants, MatMul, Gemm, Conv,
// ConvTranspose, BatchNormalization, AveragePool, constant Pad, layout ops)
//   -> per value read outside it: Gemm(Concat(Flatten(inputs...)), W, b) [-> Reshape]
//   when that takes fewer nodes and the composed weights stay small
common::Result<int64_t> collapse_regions(common::Graph& g) {
  Editor ed(g);
  for (std::vector<int>& nodes : regions(ed)) {
    RegionPlan plan(ed, std::move(nodes));
    if (plan.plan()) RETURN_IF_ERROR(plan.apply(ed));
  }
  return ed.finish();
}

}  // namespace

void register_region_passes(PassTable& table) {
  table.add("linear-region",
            "collapse connected affine ops (index glue, scaled sums, constant MatMuls) between "
            "nonlinearities into one Gemm per value read outside",
            collapse_regions, /*late=*/true);
}

}  // namespace slimonnx

