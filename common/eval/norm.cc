// Normalizations: BatchNormalization, InstanceNormalization, GroupNormalization,
// LayerNormalization, MeanVarianceNormalization. Statistics accumulate in double.
#include <cmath>
#include <limits>

#include "common/eval/kernels.h"

namespace common::eval {
namespace {

/// Mean and population variance of n values spaced `stride` apart.
template <class T>
std::pair<double, double> moments(const T* p, int64_t n, int64_t stride) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(p[i * stride]);
  double mean = n ? sum / static_cast<double>(n) : 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(p[i * stride]) - mean;
    sq += d * d;
  }
  return {mean, n ? sq / static_cast<double>(n) : 0};
}

/// Values of a per-channel parameter as doubles (checked to hold `channels` elements).
Result<std::vector<double>> per_channel(const Ctx& c, size_t index, int64_t channels) {
  ASSIGN_OR_RETURN(const Tensor* t, c.need(index));
  if (t->numel() != channels)
    return c.error("input " + std::to_string(index) + " must have " + std::to_string(channels) +
                   " elements");
  std::vector<double> v(channels);
  for (int64_t i = 0; i < channels; ++i) v[i] = scalar_double(*t, i);
  return v;
}

/// BatchNormalization with running statistics; training_mode=1 (opset 14) uses the batch's
/// statistics and also returns the updated running mean and variance.
Result<Outputs> batch_norm_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() < 2) return c.error("input must have rank >= 2");
  if (c.node().attr_int("spatial", 1) == 0) return c.error("spatial=0 is not supported");
  int64_t n = x->dims[0], ch = x->dims[1], inner = prod(x->dims, 2, x->dims.size());
  ASSIGN_OR_RETURN(auto scale, per_channel(c, 1, ch));
  ASSIGN_OR_RETURN(auto bias, per_channel(c, 2, ch));
  ASSIGN_OR_RETURN(auto mean, per_channel(c, 3, ch));
  ASSIGN_OR_RETURN(auto var, per_channel(c, 4, ch));
  double eps = c.node().attr_float("epsilon", 1e-5f);
  double momentum = c.node().attr_float("momentum", 0.9f);
  bool training = c.node().attr_int("training_mode", 0) != 0;
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    auto in = x->span<T>();
    std::vector<double> use_mean = mean, use_var = var;
    if (training) {
      for (int64_t k = 0; k < ch; ++k) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < inner; ++i) sum += in[(b * ch + k) * inner + i];
        double m = sum / static_cast<double>(n * inner);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < inner; ++i) {
            double d = in[(b * ch + k) * inner + i] - m;
            sq += d * d;
          }
        use_mean[k] = m;
        use_var[k] = sq / static_cast<double>(n * inner);
      }
    }
    Tensor y = *x;
    auto o = y.mutable_span<T>();
    for (int64_t i = 0; i < x->numel(); ++i) {
      int64_t k = (i / inner) % ch;
      o[i] =
          static_cast<T>((in[i] - use_mean[k]) / std::sqrt(use_var[k] + eps) * scale[k] + bias[k]);
    }
    Outputs outs{std::move(y)};
    if (!training) return outs;
    Tensor rm = make_tensor(x->dtype, {ch}), rv = make_tensor(x->dtype, {ch});
    for (int64_t k = 0; k < ch; ++k) {
      rm.mutable_span<T>()[k] = static_cast<T>(mean[k] * momentum + use_mean[k] * (1 - momentum));
      rv.mutable_span<T>()[k] = static_cast<T>(var[k] * momentum + use_var[k] * (1 - momentum));
    }
    outs.push_back(std::move(rm));
    outs.push_back(std::move(rv));
    outs.resize(std::min<size_t>(outs.size(), c.num_outputs()));
    return outs;
  });
}

/// InstanceNormalization: per (n, c) over the spatial dims.
Result<Outputs> instance_norm_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() < 2) return c.error("input must have rank >= 2");
  int64_t ch = x->dims[1], inner = prod(x->dims, 2, x->dims.size());
  ASSIGN_OR_RETURN(auto scale, per_channel(c, 1, ch));
  ASSIGN_OR_RETURN(auto bias, per_channel(c, 2, ch));
  double eps = c.node().attr_float("epsilon", 1e-5f);
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor y = *x;
    auto o = y.mutable_span<T>();
    for (int64_t g = 0; inner > 0 && g < x->numel() / inner; ++g) {
      T* p = o.data() + g * inner;
      auto [m, v] = moments(p, inner, 1);
      int64_t k = g % ch;
      for (int64_t i = 0; i < inner; ++i)
        p[i] = static_cast<T>((p[i] - m) / std::sqrt(v + eps) * scale[k] + bias[k]);
    }
    return Outputs{std::move(y)};
  });
}

/// GroupNormalization: per (n, group) over the group's channels and the spatial dims; scale and
/// bias are per channel from opset 21, per group in opset 18.
Result<Outputs> group_norm_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  if (x->dims.size() < 2) return c.error("input must have rank >= 2");
  const int64_t ch = x->dims[1], groups = c.node().attr_int("num_groups", 0);
  if (groups < 1 || ch % groups != 0) return c.error("num_groups must divide the channels");
  const int64_t per_group = ch / groups, spatial = prod(x->dims, 2, x->dims.size());
  const int64_t params = c.opset() >= 21 ? ch : groups;
  ASSIGN_OR_RETURN(auto scale, per_channel(c, 1, params));
  ASSIGN_OR_RETURN(auto bias, per_channel(c, 2, params));
  const double eps = c.node().attr_float("epsilon", 1e-5f);
  const int64_t inner = per_group * spatial;
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor y = *x;
    auto o = y.mutable_span<T>();
    for (int64_t g = 0; inner > 0 && g < x->numel() / inner; ++g) {
      T* p = o.data() + g * inner;
      auto [m, v] = moments(p, inner, 1);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = params == ch ? (g % groups) * per_group + i / spatial : g % groups;
        p[i] = static_cast<T>((p[i] - m) / std::sqrt(v + eps) * scale[k] + bias[k]);
      }
    }
    return Outputs{std::move(y)};
  });
}

/// LayerNormalization (opset 17): normalizes over dims [axis, rank); outputs Y, Mean, InvStdDev.
Result<Outputs> layer_norm_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* scale, c.need(1));
  const Tensor* bias = c.in(2);
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t axis, c.at(normalize_axis(c.node().attr_int("axis", -1), rank)));
  double eps = c.node().attr_float("epsilon", 1e-5f);
  int64_t outer = prod(x->dims, 0, axis), inner = prod(x->dims, axis, rank);
  Dims norm_dims(x->dims.begin() + axis, x->dims.end());
  auto sm = broadcast_map(scale->dims, norm_dims);
  auto bm = bias ? broadcast_map(bias->dims, norm_dims) : std::vector<int64_t>();
  if ((sm.empty() || (bias && bm.empty())) && num_elements(norm_dims) > 0)
    return c.error("Scale or B does not broadcast to the normalized dims");
  Dims stat_dims = x->dims;
  for (int64_t d = axis; d < rank; ++d) stat_dims[d] = 1;
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor y = *x, mean = make_tensor(x->dtype, stat_dims), inv = make_tensor(x->dtype, stat_dims);
    auto o = y.mutable_span<T>();
    for (int64_t g = 0; g < outer; ++g) {
      T* p = o.data() + g * inner;
      auto [m, v] = moments(p, inner, 1);
      double is = 1 / std::sqrt(v + eps);
      mean.mutable_span<T>()[g] = static_cast<T>(m);
      inv.mutable_span<T>()[g] = static_cast<T>(is);
      for (int64_t i = 0; i < inner; ++i) {
        double b = bias ? scalar_double(*bias, bm[i]) : 0;
        p[i] = static_cast<T>((p[i] - m) * is * scalar_double(*scale, sm[i]) + b);
      }
    }
    Outputs outs{std::move(y), std::move(mean), std::move(inv)};
    outs.resize(c.num_outputs());
    return outs;
  });
}

/// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes` (default [0, 2, 3]).
Result<Outputs> mvn_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  auto rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(auto axes, c.at(normalize_axes(c.node().attr_ints("axes", {0, 2, 3}), rank)));
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  // Group elements by their coordinates outside `axes`.
  Dims st = strides_of(x->dims);
  std::vector<int64_t> group(x->numel()), idx(rank, 0);
  int64_t groups = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) groups *= x->dims[d];
  for (int64_t i = 0; i < x->numel(); ++i, next_index(idx, x->dims)) {
    int64_t gi = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) gi = gi * x->dims[d] + idx[d];
    group[i] = gi;
  }
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    auto in = x->span<T>();
    std::vector<double> sum(groups, 0), sq(groups, 0), count(groups, 0);
    for (size_t i = 0; i < in.size(); ++i) sum[group[i]] += in[i], count[group[i]] += 1;
    for (int64_t g = 0; g < groups; ++g) sum[g] /= std::max(count[g], 1.0);
    for (size_t i = 0; i < in.size(); ++i) sq[group[i]] += std::pow(in[i] - sum[group[i]], 2);
    Tensor y = *x;
    auto o = y.mutable_span<T>();
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t g = group[i];
      o[i] = static_cast<T>((in[i] - sum[g]) / (std::sqrt(sq[g] / count[g]) + 1e-9));
    }
    return Outputs{std::move(y)};
  });
}

}  // namespace

void register_norm(KernelRegistry& r) {
  r.add("BatchNormalization", {batch_norm_kernel, true});
  r.add("InstanceNormalization", {instance_norm_kernel, true});
  r.add("LayerNormalization", {layer_norm_kernel});
  r.add("GroupNormalization", {group_norm_kernel, true});
  r.add("MeanVarianceNormalization", {mvn_kernel, true});
}

}  // namespace common::eval
