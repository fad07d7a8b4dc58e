// Resize (opsets 10-19) and Upsample (7-9): nearest, linear and cubic, computed separably: every
// output coordinate of every axis gets a list of (input index, weight) taps. Also AffineGrid.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/eval/kernels.h"
#include "common/resize_filter.h"

namespace common::eval {
namespace {

struct Tap {
  int64_t index;
  double weight;
};

struct ResizeSpec {
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string nearest = "round_prefer_floor";  // or "simple" (Upsample, Resize-10)
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // linear and cubic: the filter stretched by 1 / scale when < 1
  double extrapolation = 0;
  std::vector<double> scales;  // per axis
  Dims out;                    // per axis
  /// Per axis, the resized length in the coordinate formulas. onnxruntime uses the integer output
  /// size; ONNX's reference uses input size * scale unrounded (they differ for align_corners when
  /// in * scale is not an integer). We follow onnxruntime, the executor folding must agree with.
  std::vector<double> length;
  std::vector<double> roi;  // starts then ends, per axis (tf_crop_and_resize)
};

/// Input coordinate of output coordinate x along one axis; nullopt outside (tf_crop_and_resize).
std::optional<double> source_coord(const ResizeSpec& s, size_t axis, int64_t x, int64_t in) {
  double scale = s.scales[axis], xr = static_cast<double>(x), len = s.length[axis];
  const std::string& t = s.transform;
  if (t == "asymmetric") return xr / scale;
  if (t == "align_corners") return len == 1 ? 0.0 : xr * (in - 1) / (len - 1);
  if (t == "pytorch_half_pixel") return len > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
  if (t == "tf_half_pixel_for_nn") return (xr + 0.5) / scale;
  if (t == "half_pixel_symmetric") {
    double adjust = s.out[axis] / (scale * in), center = in / 2.0;
    return center * (1 - adjust) + (xr + 0.5) / scale - 0.5;
  }
  if (t == "tf_crop_and_resize") {
    size_t rank = s.roi.size() / 2;
    double start = s.roi[axis], end = s.roi[rank + axis];
    double v = len > 1 ? start * (in - 1) + xr * (end - start) * (in - 1) / (len - 1)
                       : 0.5 * (start + end) * (in - 1);
    if (v < 0 || v > in - 1) return std::nullopt;
    return v;
  }
  return (xr + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const ResizeSpec& s, size_t axis, double v) {
  const std::string& m = s.nearest;
  double fl = std::floor(v);
  if (m == "floor") return saturating_int64(fl);
  if (m == "ceil") return saturating_int64(std::ceil(v));
  if (m == "simple") return saturating_int64(s.scales[axis] < 1 ? std::ceil(v) : fl);
  if (v - fl == 0.5) return saturating_int64(m == "round_prefer_ceil" ? fl + 1 : fl);
  return saturating_int64(std::round(v));
}

std::vector<double> cubic_weights(double r, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

/// The taps of one output coordinate; empty when it lies outside (extrapolation value).
std::vector<Tap> taps_for(const ResizeSpec& s, size_t axis, int64_t x, int64_t in) {
  auto v = source_coord(s, axis, x, in);
  if (!v) return {};
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (s.mode == "nearest") return {{clamp(nearest_index(s, axis, *v)), 1.0}};
  if (s.antialias) {
    std::vector<Tap> taps;
    for (const ResizeTap& t :
         antialias_taps(s.mode == "cubic", *v, in, s.scales[axis], s.cubic_a, s.exclude_outside)) {
      taps.push_back({t.index, t.weight});
    }
    return taps;
  }
  const int64_t base = saturating_int64(std::floor(*v));
  double r = *v - static_cast<double>(base);
  if (s.mode == "linear") return {{clamp(base), 1 - r}, {clamp(base + 1), r}};
  std::vector<double> w = cubic_weights(r, s.cubic_a);
  std::vector<Tap> taps;
  double total = 0;
  for (int k = 0; k < 4; ++k) {
    int64_t i = base - 1 + k;
    if (s.exclude_outside && (i < 0 || i >= in)) continue;
    taps.push_back({clamp(i), w[k]});
    total += w[k];
  }
  if (s.exclude_outside && total != 0)
    for (Tap& t : taps) t.weight /= total;
  return taps;
}

/// out = sum over tap combinations of prod(weights) * x[indices]; all in double.
Tensor apply_taps(const Tensor& x, const std::vector<std::vector<std::vector<Tap>>>& taps,
                  const Dims& out_dims, double extrapolation) {
  Tensor out = make_tensor(DType::kDouble, out_dims);
  auto in = x.span<double>();
  auto o = out.mutable_span<double>();
  Dims st = strides_of(x.dims);
  size_t rank = out_dims.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i, next_index(idx, out_dims)) {
    // Depth-first over axes: (axis, partial offset, partial weight).
    double sum = 0;
    bool outside = false;
    std::vector<std::pair<int64_t, double>> partial{{0, 1.0}}, next;
    for (size_t d = 0; d < rank && !outside; ++d) {
      const auto& t = taps[d][idx[d]];
      outside = t.empty();
      next.clear();
      for (auto [off, w] : partial)
        for (const Tap& tap : t)
          if (tap.weight != 0) next.push_back({off + tap.index * st[d], w * tap.weight});
      partial.swap(next);
    }
    for (auto [off, w] : partial) sum += w * in[off];
    o[i] = outside ? extrapolation : sum;
  }
  return out;
}

Result<Outputs> run_resize(const Ctx& c, const Tensor& x, ResizeSpec& s) {
  size_t rank = x.dims.size();
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic")
    return c.error("unknown mode '" + s.mode + "'");
  RETURN_IF_ERROR(check_size(c, s.out));
  std::vector<std::vector<std::vector<Tap>>> taps(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (s.out[d] < 0) return c.error("negative output size");
    if (x.dims[d] == 0 && s.out[d] > 0) return c.error("cannot resize an empty axis");
    for (int64_t o = 0; o < s.out[d]; ++o) taps[d].push_back(taps_for(s, d, o, x.dims[d]));
  }
  ASSIGN_OR_RETURN(Tensor xd, cast_tensor(c, x, DType::kDouble));
  Tensor y = apply_taps(xd, taps, s.out, s.extrapolation);
  ASSIGN_OR_RETURN(Tensor back, cast_tensor(c, y, x.dtype));
  return Outputs{std::move(back)};
}

/// Per-axis scales and output sizes from the scales/sizes inputs (with opset-18 axes and
/// keep_aspect_ratio_policy).
Status plan_sizes(const Ctx& c, const Tensor& x, ResizeSpec& s) {
  auto rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> axes(rank);
  for (int64_t i = 0; i < rank; ++i) axes[i] = i;
  if (c.node().has_attr("axes")) {
    ASSIGN_OR_RETURN(axes, c.at(normalize_axes(c.node().attr_ints("axes"), rank)));
  }
  s.scales.assign(rank, 1.0);
  s.out = x.dims;
  s.length.assign(x.dims.begin(), x.dims.end());
  const Tensor* scales = c.in(2);
  const Tensor* sizes = c.in(3);
  if (sizes && sizes->numel() > 0) {
    auto v = ints_of(*sizes);
    if (v.size() != axes.size()) return c.error("sizes length does not match the axes");
    std::string policy = c.node().attr_string("keep_aspect_ratio_policy", "stretch");
    double common_scale = policy == "not_larger" ? 1e300 : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double r = static_cast<double>(v[i]) / static_cast<double>(x.dims[axes[i]]);
      common_scale = policy == "not_larger" ? std::min(common_scale, r) : std::max(common_scale, r);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (policy == "stretch") {
        s.out[a] = v[i];
        s.length[a] = static_cast<double>(v[i]);
        s.scales[a] = static_cast<double>(v[i]) / static_cast<double>(x.dims[a]);
      } else {
        s.scales[a] = common_scale;
        s.out[a] = saturating_int64(std::round(common_scale * x.dims[a]));
        s.length[a] = static_cast<double>(s.out[a]);
      }
    }
    return {};
  }
  if (!scales || scales->numel() == 0) return c.error("needs scales or sizes");
  if (static_cast<size_t>(scales->numel()) != axes.size())
    return c.error("scales length does not match the axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    double sc = static_cast<float>(scalar_double(*scales, static_cast<int64_t>(i)));
    if (!(sc > 0)) return c.error("scales must be positive");
    s.scales[axes[i]] = sc;
    s.out[axes[i]] = saturating_int64(std::floor(x.dims[axes[i]] * sc));
    s.length[axes[i]] = static_cast<double>(s.out[axes[i]]);
  }
  return {};
}

Result<Outputs> resize_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ResizeSpec s;
  s.mode = c.node().attr_string("mode", "nearest");
  if (c.opset() < 11) {  // Resize-10: X, scales; asymmetric like Upsample
    std::vector<const Tensor*> ins{c.in(0), nullptr, c.in(1)};
    Ctx c10{c.graph(), c.node(), ins, c.opset()};
    s.transform = "asymmetric";
    s.nearest = "simple";
    RETURN_IF_ERROR(plan_sizes(c10, *x, s));
    return run_resize(c, *x, s);
  }
  s.transform = c.node().attr_string("coordinate_transformation_mode", "half_pixel");
  s.nearest = c.node().attr_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = c.node().attr_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = c.node().attr_int("exclude_outside", 0) != 0;
  s.antialias = c.node().attr_int("antialias", 0) != 0;
  s.extrapolation = c.node().attr_float("extrapolation_value", 0.0f);
  RETURN_IF_ERROR(plan_sizes(c, *x, s));
  if (s.transform == "tf_crop_and_resize") {
    const Tensor* roi = c.in(1);
    size_t rank = x->dims.size();
    if (!roi || roi->numel() == 0) return c.error("tf_crop_and_resize needs roi");
    std::vector<double> r(2 * rank);
    for (size_t d = 0; d < rank; ++d) r[d] = 0, r[rank + d] = 1;
    auto axes_attr = c.node().attr_ints("axes");
    std::vector<int64_t> axes(rank);
    for (size_t d = 0; d < rank; ++d) axes[d] = static_cast<int64_t>(d);
    if (!axes_attr.empty()) axes = axes_attr;
    if (static_cast<size_t>(roi->numel()) != 2 * axes.size()) return c.error("bad roi length");
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
      r[a] = scalar_double(*roi, static_cast<int64_t>(i));
      r[rank + a] = scalar_double(*roi, static_cast<int64_t>(i + axes.size()));
    }
    s.roi = r;
  }
  return run_resize(c, *x, s);
}

/// Upsample: scales attribute (opset 7) or input (9); asymmetric coordinates.
Result<Outputs> upsample_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ResizeSpec s;
  s.mode = c.node().attr_string("mode", "nearest");
  s.transform = "asymmetric";
  s.nearest = "simple";
  Tensor scales;
  if (c.in(1)) {
    scales = *c.in(1);
  } else {
    auto f = c.node().attr_floats("scales");
    scales = Tensor::from_floats(f, {static_cast<int64_t>(f.size())});
  }
  std::vector<const Tensor*> ins{x, nullptr, &scales};
  Ctx cu{c.graph(), c.node(), ins, c.opset()};
  RETURN_IF_ERROR(plan_sizes(cu, *x, s));
  return run_resize(c, *x, s);
}

/// AffineGrid: for every output position, theta [N, k, k + 1] times (x, y[, z], 1), where the
/// normalized coordinates run from -1 to 1 over pixel corners (align_corners) or centres.
Result<Outputs> affine_grid_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* theta, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* size_in, c.need(1));
  const std::vector<int64_t> size = ints_of(*size_in);
  const auto k = static_cast<int64_t>(size.size()) - 2;
  if ((k != 2 && k != 3) || theta->dims != Dims{size[0], k, k + 1})
    return c.error("theta must be [N, 2, 3] with a 4-D size or [N, 3, 4] with a 5-D size");
  const bool align = c.node().attr_int("align_corners", 0) != 0;
  Dims dims = {size[0]};
  dims.insert(dims.end(), size.begin() + 2, size.end());  // D, H, W: z, y, x
  dims.push_back(k);
  RETURN_IF_ERROR(check_size(c, dims));
  auto coord = [align](int64_t i, int64_t n) {
    if (align)
      return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : 0.0;
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
  };
  return visit_floating(c, theta->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor out = make_tensor(theta->dtype, dims);
    auto o = out.mutable_span<T>();
    Dims spatial(dims.begin() + 1, dims.end() - 1);
    std::vector<int64_t> idx(spatial.size(), 0);
    const int64_t points = num_elements(spatial);
    for (int64_t n = 0; n < size[0]; ++n) {
      std::fill(idx.begin(), idx.end(), 0);
      for (int64_t p = 0; p < points; ++p, next_index(idx, spatial)) {
        std::vector<double> base(k + 1, 1.0);  // x, y[, z], 1
        for (int64_t a = 0; a < k; ++a) base[a] = coord(idx[k - 1 - a], spatial[k - 1 - a]);
        for (int64_t r = 0; r < k; ++r) {
          double v = 0;
          for (int64_t j = 0; j <= k; ++j)
            v += scalar_double(*theta, (n * k + r) * (k + 1) + j) * base[j];
          o[(n * points + p) * k + r] = static_cast<T>(v);
        }
      }
    }
    return Outputs{std::move(out)};
  });
}

}  // namespace

void register_resize(KernelRegistry& r) {
  r.add("Resize", {resize_kernel, true});
  r.add("Upsample", {upsample_kernel, true});
  r.add("AffineGrid", {affine_grid_kernel, true});
}

}  // namespace common::eval
