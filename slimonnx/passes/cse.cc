// Common subexpressions: two nodes with the same op, attributes and inputs (small constants
// compared by content) compute the same values, so the later one is dropped and its uses read the
// earlier.
#include <algorithm>
#include <functional>
#include <map>
#include <string_view>
#include <unordered_map>

#include "slimonnx/pass.h"
#include "slimonnx/rewrite.h"

namespace slimonnx {
namespace {

using common::Node;
using common::Tensor;

// Constants up to this size are compared by content (shapes, axes, indices, scalars).
constexpr int64_t kMaxComparedElements = 4096;

bool mergeable(const Node& n) {
  if (!is_onnx(n) || n.inputs.empty() || n.outputs.empty()) return false;
  if (n.op_type.find("Random") != std::string::npos || n.op_type == "Multinomial" ||
      n.op_type == "Dropout") {
    return false;
  }
  return std::none_of(n.attrs.begin(), n.attrs.end(), [](const common::Attribute& a) {
    return a.type == common::AttrType::kGraph;
  });
}

bool same_attrs(const Node& a, const Node& b) {
  if (a.attrs.size() != b.attrs.size()) return false;
  for (const common::Attribute& x : a.attrs) {
    const common::Attribute* y = b.attr(x.name);
    if (y == nullptr || !(*y == x)) return false;
  }
  return true;
}

// Maps each small initializer to the first initializer with the same dtype, dims and bytes.
class ConstantNames {
 public:
  explicit ConstantNames(const common::Graph& g) {
    for (const auto& entry : g.initializers) {
      const std::string& name = entry.first;
      const Tensor& t = entry.second;
      if (t.numel() > kMaxComparedElements) continue;
      std::vector<std::string>& bucket = buckets_[std::hash<std::string_view>{}(t.raw)];
      auto same = std::find_if(bucket.begin(), bucket.end(), [&](const std::string& other) {
        const Tensor& o = g.initializers.at(other);
        return o.dtype == t.dtype && o.dims == t.dims && o.raw == t.raw;
      });
      if (same == bucket.end()) {
        bucket.push_back(name);
        canonical_[name] = name;
      } else {
        canonical_[name] = *same;
      }
    }
  }
  const std::string& operator()(const std::string& value) const {
    auto it = canonical_.find(value);
    return it == canonical_.end() ? value : it->second;
  }

 private:
  std::unordered_map<size_t, std::vector<std::string>> buckets_;
  std::unordered_map<std::string, std::string> canonical_;
};

// Op(X...) twice with equal attributes -> one Op(X...)
common::Result<int64_t> merge_common(common::Graph& g) {
  Editor ed(g);
  const ConstantNames canonical(g);
  std::map<std::string, std::vector<int>> seen;  // op + canonical inputs -> earlier nodes
  for (int i = 0; i < static_cast<int>(ed.size()); ++i) {
    if (!ed.live(i) || !mergeable(ed.node(i))) continue;
    std::string key = ed.node(i).op_type;
    for (const std::string& in : ed.node(i).inputs) {
      key += '\0';
      key += canonical(in);
    }
    std::vector<int>& earlier = seen[key];
    int match = -1;
    for (int j : earlier) {
      const Node& a = ed.node(i);
      const Node& b = ed.node(j);
      if (!ed.live(j) || !same_attrs(a, b) || a.outputs.size() != b.outputs.size()) continue;
      bool ok = true;
      for (size_t k = 0; k < a.outputs.size() && ok; ++k) {
        ok = !a.outputs[k].empty()
                 ? !b.outputs[k].empty() && ed.can_replace(a.outputs[k], b.outputs[k]) &&
                       !(ed.is_graph_output(a.outputs[k]) && ed.is_graph_output(b.outputs[k]))
                 : true;
      }
      if (ok) {
        match = j;
        break;
      }
    }
    if (match < 0) {
      earlier.push_back(i);
      continue;
    }
    const std::vector<std::string> outs = ed.node(i).outputs;
    ed.remove_node(i);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].empty()) ed.replace_all_uses(outs[k], ed.node(match).outputs[k]);
    }
    ed.count();
  }
  return ed.finish();
}

}  // namespace

void register_cse_passes(PassRegistry& table) {
  table.add("common-subexpression",
            {"merge nodes with the same op, attributes and inputs (small constants by content)",
             merge_common});
}

}  // namespace slimonnx
