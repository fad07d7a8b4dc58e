#include "propdag/point_eval.h"

#include <cstring>
#include <utility>

#include "common/eval/eval.h"

namespace propdag::internal {
namespace {

// Memoized outputs past this many bytes are dropped (all at once) and collected again.
constexpr int64_t kMemoBytes = int64_t{1} << 30;

// Two independent 64-bit hashes of a tensor's element type, dims and bytes (FNV-1a, and a
// multiply-xorshift one), so that equal keys of different contents are not a concern.
std::array<uint64_t, 2> content_hash(const common::Tensor& t) {
  uint64_t a = 1469598103934665603ULL, b = 0x9E3779B97F4A7C15ULL;
  auto mix = [&](uint64_t v) {
    a = (a ^ v) * 1099511628211ULL;
    b = (b + v) * 0xBF58476D1CE4E5B9ULL;
    b ^= b >> 31;
  };
  mix(static_cast<uint64_t>(t.dtype));
  mix(t.dims.size());
  for (int64_t d : t.dims) mix(static_cast<uint64_t>(d));
  const size_t n = t.raw.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, t.raw.data() + i, 8);
    mix(w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, t.raw.data() + i, n - i);
  mix(tail ^ (n << 56));
  return {a, b};
}

}  // namespace

common::Result<Vec> PointEvaluator::outputs(const Vec& x) {
  const common::Graph& g = model_.graph();
  if (memo_.size() != g.nodes.size()) memo_.assign(g.nodes.size(), {});
  if (memo_bytes_ > kMemoBytes) {
    for (auto& m : memo_) m.clear();
    memo_bytes_ = 0;
  }
  std::map<std::string, Value> values;
  Eigen::Index at = 0;
  for (int i : model_.dag().inputs()) {
    const std::string& name = model_.dag().node(i).name;
    const common::Dims& dims = model_.shape(i);
    const int64_t n = common::num_elements(dims);
    if (at + n > x.size())
      return common::Error{"", "", "", "the point has fewer elements than the inputs"};
    auto v = g.values.find(name);
    const common::DType dtype = v != g.values.end() && v->second.dtype != common::DType::kUndefined
                                    ? v->second.dtype
                                    : common::DType::kFloat;
    Value in;
    in.tensor = common::Tensor::from_double(std::vector<double>(x.data() + at, x.data() + at + n),
                                            dims, dtype);
    in.hash = content_hash(in.tensor);
    values[name] = std::move(in);
    at += n;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const common::Node& node = g.nodes[n];
    std::vector<const common::Tensor*> in;
    Key key{n, 0x51ED270B27ULL};
    for (const std::string& name : node.inputs) {
      const common::Tensor* t = nullptr;
      auto it = values.find(name);
      if (!name.empty() && it != values.end()) {
        t = &it->second.tensor;
        key[0] = (key[0] ^ it->second.hash[0]) * 1099511628211ULL;
        key[1] = (key[1] + it->second.hash[1]) * 0xBF58476D1CE4E5B9ULL;
      } else if (!name.empty()) {
        t = g.initializer(name);
        if (t == nullptr) return g.error(node, "input '" + name + "' has no value");
      }
      in.push_back(t);
      key[1] ^= key[1] >> 29;
    }
    auto hit = memo_[n].find(key);
    if (hit == memo_[n].end()) {
      ASSIGN_OR_RETURN(std::vector<common::Tensor> out, common::evaluate(g, node, in));
      std::vector<Value> kept;
      for (common::Tensor& t : out) {
        memo_bytes_ += static_cast<int64_t>(t.raw.size());
        Value v;
        v.hash = content_hash(t);
        v.tensor = std::move(t);
        kept.push_back(std::move(v));
      }
      hit = memo_[n].emplace(key, std::move(kept)).first;
    }
    for (size_t o = 0; o < node.outputs.size() && o < hit->second.size(); ++o)
      if (!node.outputs[o].empty()) values[node.outputs[o]] = hit->second[o];
  }
  std::vector<double> y;
  for (int o : model_.dag().outputs()) {
    const std::string& name = model_.dag().node(o).name;
    auto it = values.find(name);
    if (it == values.end())
      return common::Error{"", "", "", "output '" + name + "' was not computed"};
    if (it->second.tensor.numel() != model_.numel(o))
      return common::Error{
          "", "", "",
          "output '" + name + "' has " + std::to_string(it->second.tensor.numel()) +
              " elements in this run, not its static " + std::to_string(model_.numel(o))};
    const std::vector<double> d = it->second.tensor.to_double();
    y.insert(y.end(), d.begin(), d.end());
  }
  return Vec(Eigen::Map<const Vec>(y.data(), static_cast<Eigen::Index>(y.size())));
}

}  // namespace propdag::internal
