// Convolutions: Conv and ConvTranspose (1-D/2-D), and the window geometry the pools share.
// 1-D inputs are handled as 2-D with a height of 1.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>

#include "common/op_params.h"
#include "propdag/ops/util.h"

namespace propdag {
namespace {

using common::Dims;
using common::num_elements;
using common::Result;
using Triplets = std::vector<Eigen::Triplet<double>>;

// Reads a per-spatial-axis attribute as a 2-D (h, w) pair; 1-D ops get `fill` for h.
std::pair<int64_t, int64_t> pair_attr(const std::vector<int64_t>& v, bool one_d, int64_t fill) {
  if (v.empty()) return {fill, fill};
  return one_d ? std::pair{fill, v[0]} : std::pair{v[0], v[1]};
}

}  // namespace

common::Result<Window> window(const OpContext& ctx, const Dims& x, const Dims& kernel,
                              bool forward) {
  if (x.size() != 3 && x.size() != 4) return ctx.error("only 1-D and 2-D windows are supported");
  Result<common::Window> read = common::read_window(ctx.node, x.size() - 2, kernel);
  if (!read.ok()) return ctx.error(read.error().message);
  const common::Window& r = *read;
  if (!kernel.empty() && r.kernel != kernel) return ctx.error("kernel_shape does not match W");
  Window g;
  g.one_d = x.size() == 3;
  g.n = x[0];
  g.c = x[1];
  g.h = g.one_d ? 1 : x[2];
  g.w = x.back();
  std::vector<common::WindowDim> dims;
  for (size_t i = 0; i < r.kernel.size(); ++i) {
    if (!forward) {
      if (r.same()) return ctx.error("ConvTranspose auto_pad SAME_* is not supported");
      const bool valid = r.valid();
      dims.push_back({0, valid ? 0 : r.pad_begin[i], valid ? 0 : r.pad_end[i]});
      continue;
    }
    Result<common::WindowDim> d = common::window_dim(r, i, x[i + 2]);
    if (!d.ok()) return ctx.error(d.error().message);
    dims.push_back(*d);
  }
  const size_t wi = g.one_d ? 0 : 1;  // the width dim
  std::tie(g.kw, g.sw, g.dw) = std::tuple{r.kernel[wi], r.strides[wi], r.dilations[wi]};
  std::tie(g.pw, g.pw_end, g.ow) = std::tuple{dims[wi].pad_begin, dims[wi].pad_end, dims[wi].out};
  if (!g.one_d) {
    std::tie(g.kh, g.sh, g.dh) = std::tuple{r.kernel[0], r.strides[0], r.dilations[0]};
    std::tie(g.ph, g.ph_end, g.oh) = std::tuple{dims[0].pad_begin, dims[0].pad_end, dims[0].out};
  }
  return g;
}

common::Dims out_dims(const Window& g, int64_t channels) {
  return g.one_d ? Dims{g.n, channels, g.ow} : Dims{g.n, channels, g.oh, g.ow};
}

namespace {

Vec channel_bias(const OpContext& ctx, size_t input, int64_t channels, int64_t n, int64_t plane) {
  Vec bias = Vec::Zero(n * channels * plane);
  if (!ctx.present(input)) return bias;
  std::vector<double> b = ctx.constants[input]->to_double();
  for (int64_t i = 0; i < bias.size(); ++i) bias[i] = b[(i / plane) % channels];
  return bias;
}

Result<OpOutputs> conv_rule(const OpContext& ctx) {
  if (!ctx.variable(0) || ctx.variable(1) || ctx.variable(2))
    return ctx.error("Conv needs a variable input and constant weights");
  const Dims& wd = ctx.shape(1);
  ASSIGN_OR_RETURN(Window g, window(ctx, ctx.shape(0), Dims(wd.begin() + 2, wd.end()), true));
  int64_t groups = ctx.node.attr_int("group", 1), m = wd[0], cg = wd[1], mg = m / groups;
  if (cg * groups != g.c) return ctx.error("Conv weight channels do not match the input");
  auto w = std::make_shared<const std::vector<double>>(ctx.constants[1]->to_double());
  const int64_t k = g.kh * g.kw, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  // A lazy term: the matrix is built from these rows on first use (the Eigen engine), not at
  // load, where building TinyYOLO's took most of the time of a torch engine run, which applies
  // the convolution as one. Within a row (one output element) the columns, channel-major then
  // kernel position, only grow, so the matrix is filled in row-major order directly.
  LinearTerm term;
  term.rows = g.n * m * out_plane;
  term.cols = num_elements(ctx.shape(0));
  term.row_entries = [g, m, cg, mg, k, in_plane, out_plane, w](int64_t row,
                                                               LinearTerm::Entries& out) {
    const int64_t ox = row % g.ow, oy = row / g.ow % g.oh, oc = row / out_plane % m,
                  b = row / out_plane / m;
    for (int64_t c = 0; c < cg; ++c) {
      const int64_t col0 = (b * g.c + oc / mg * cg + c) * in_plane;
      const double* wk = &(*w)[(oc * cg + c) * k];
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
          if (ix >= 0 && ix < g.w && wk[ky * g.kw + kx] != 0)
            out.emplace_back(col0 + iy * g.w + ix, wk[ky * g.kw + kx]);
        }
      }
    }
  };
  // Entries: per nonzero weight, the output positions whose tap lands inside the input.
  std::vector<int64_t> fit_y(g.kh, 0), fit_x(g.kw, 0);
  for (int64_t ky = 0; ky < g.kh; ++ky)
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
      fit_y[ky] += iy >= 0 && iy < g.h;
    }
  for (int64_t kx = 0; kx < g.kw; ++kx)
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
      fit_x[kx] += ix >= 0 && ix < g.w;
    }
  for (int64_t i = 0; i < m * cg * k; ++i)
    if ((*w)[i] != 0) term.entries += fit_y[i % k / g.kw] * fit_x[i % g.kw];
  term.entries *= g.n;
  return affine_output(one_term(std::move(term)), channel_bias(ctx, 2, m, g.n, out_plane),
                       out_dims(g, m));
}

// out[b, oc, iy*s - p + ky*d, ...] += x[b, ic, iy, ...] * W[ic, oc % mg, ky, ...]
Result<OpOutputs> conv_transpose_rule(const OpContext& ctx) {
  if (!ctx.variable(0) || ctx.variable(1) || ctx.variable(2))
    return ctx.error("ConvTranspose needs a variable input and constant weights");
  const Dims &x = ctx.shape(0), &wd = ctx.shape(1);
  bool one_d = wd.size() == 3;
  Window g;
  ASSIGN_OR_RETURN(g, window(ctx, x, Dims(wd.begin() + 2, wd.end()), false));
  int64_t groups = ctx.node.attr_int("group", 1), cg = wd[0] / groups, mg = wd[1], m = mg * groups;
  auto [oph, opw] = pair_attr(ctx.node.attr_ints("output_padding"), one_d, 0);
  int64_t oh = g.sh * (g.h - 1) + oph + (g.kh - 1) * g.dh + 1 - g.ph - g.ph_end;
  int64_t ow = g.sw * (g.w - 1) + opw + (g.kw - 1) * g.dw + 1 - g.pw - g.pw_end;
  std::vector<int64_t> shape_attr = ctx.node.attr_ints("output_shape");
  if (!shape_attr.empty()) return ctx.error("ConvTranspose output_shape is not supported");
  std::vector<double> w = ctx.constants[1]->to_double();
  int64_t k = g.kh * g.kw, in_plane = g.h * g.w, out_plane = oh * ow;
  // Filled row by row (one output element at a time) in row-major order, as for Conv: output
  // y takes input iy where y = iy * s - p + ky * d; with ky (and kx) descending, iy (and ix)
  // ascend, so within a row the columns only grow.
  const int64_t rows = g.n * m * out_plane;
  LinearTerm term;
  term.s.resize(rows, num_elements(x));
  term.s.reserve(g.n * g.c * mg * in_plane * k);
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t group = oc / mg, o = oc % mg;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          const int64_t row = (b * m + oc) * out_plane + y * ow + xx;
          term.s.startVec(row);
          for (int64_t c = 0; c < cg; ++c) {
            const int64_t ic = group * cg + c, col0 = (b * g.c + ic) * in_plane;
            const double* wk = &w[(ic * mg + o) * k];
            for (int64_t ky = g.kh - 1; ky >= 0; --ky) {
              const int64_t ty = y + g.ph - ky * g.dh;
              if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.h) continue;
              for (int64_t kx = g.kw - 1; kx >= 0; --kx) {
                const int64_t tx = xx + g.pw - kx * g.dw;
                if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.w || wk[ky * g.kw + kx] == 0)
                  continue;
                term.s.insertBack(row, col0 + ty / g.sh * g.w + tx / g.sw) = wk[ky * g.kw + kx];
              }
            }
          }
        }
    }
  term.s.finalize();
  std::vector<LinearTerm> terms = one_term(std::move(term));
  Dims out = one_d ? Dims{g.n, m, ow} : Dims{g.n, m, oh, ow};
  return affine_output(std::move(terms), channel_bias(ctx, 2, m, g.n, out_plane), out);
}

}  // namespace

void add_conv_rules(RuleTable& table) {
  table.insert(table.end(), {{"Conv", conv_rule}, {"ConvTranspose", conv_transpose_rule}});
}

}  // namespace propdag
