// Linear regions: a connected group of ops that are affine in their non-constant inputs, sample by
// sample, is rewritten so that every value the rest of the graph reads from it is one Gemm over
// the values it depends on. This collapses the index/arithmetic glue between nonlinearities
// (Slice, Gather, Concat, scaled sums and differences, MatMul by constants) into single layers.
//
// The dependence of each such value on its inputs is measured by running the region's ops with
// the common evaluator in double precision on unit vectors, so the composed weights are exact up
// to one final rounding.
#include "slimonnx/passes/region.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "common/eval/eval.h"
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
    return !collapsed_.empty() && new_nodes() < static_cast<int64_t>(nodes_.size() - kept_.size());
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
    std::map<std::string, std::string> flat;                 // frontier value -> 2-D view
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
      gemm.inputs = {
          x, ed.add_initializer(name + "_weight", float_tensor(wb.first, {width, m}, dtype))};
      if (std::any_of(wb.second.begin(), wb.second.end(), [](double v) { return v != 0; })) {
        gemm.inputs.push_back(
            ed.add_initializer(name + "_bias", float_tensor(wb.second, {m}, dtype)));
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
    int64_t w = 0;  // saturates rather than overflows
    for (const std::string& f : c.frontier) {
      const int64_t e = common::num_elements(*ed_.shape(f));
      if (e < 0 || w > std::numeric_limits<int64_t>::max() - e) {
        return std::numeric_limits<int64_t>::max();
      }
      w += e;
    }
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
        const int64_t per_filter = w.numel() / std::max<int64_t>(1, w.dims[0]);
        per *= static_cast<double>(per_filter);
      } else if (node.op_type == "ConvTranspose") {  // each input feeds C_out / group * kernel
        const Tensor& w = *ed_.initializer(node.inputs[1]);
        const int64_t per_input = w.numel() / std::max<int64_t>(1, w.dims[0]);
        per = static_cast<double>(common::num_elements(*ed_.shape(node.inputs[0]))) *
              static_cast<double>(per_input);
      } else if (node.op_type == "AveragePool") {
        for (int64_t k : node.attr_ints("kernel_shape")) per *= static_cast<double>(k);
      }
      work += per;
    }
    // In double: declared dims can make m * n overflow int64 (found by fuzz_slimonnx, UBSan).
    if (static_cast<double>(m) * static_cast<double>(n) >
        static_cast<double>(std::max(kMaxWeights, 2 * replaced)))
      return false;
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
  common::Result<std::pair<std::vector<double>, std::vector<double>>> measure(const Collapsed& c) {
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

// Region of affine ops (Slice, Gather, Concat, Add/Sub, Mul/Div by constants, MatMul, Gemm, Conv,
// ConvTranspose, BatchNormalization, AveragePool, constant Pad, layout ops)
//   -> per value read outside it: Gemm(Concat(Flatten(inputs...)), W, b) [-> Reshape]
//   when that takes fewer nodes and the composed weights stay small
common::Result<int64_t> collapse_regions(common::Graph& g) {
  Editor ed(g);
  for (std::vector<int>& nodes : linear_regions(ed)) {
    RegionPlan plan(ed, std::move(nodes));
    if (plan.plan()) RETURN_IF_ERROR(plan.apply(ed));
  }
  return ed.finish();
}

}  // namespace

void register_region_passes(PassRegistry& table) {
  table.add("linear-region",
            {"collapse connected affine ops (index glue, scaled sums, constant MatMuls) between "
             "nonlinearities into one Gemm per value read outside",
             collapse_regions, /*late=*/true});
}

}  // namespace slimonnx
