// The torch engine's convolution maps (torch_ops.h: conv_map): Conv as conv2d forward and
// conv_transpose2d backward, ConvTranspose the other way round, each backward step over the
// window of its coefficients where that is small.
#include <ATen/TensorOperators.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv_transpose2d.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {
namespace {

// A Conv layer as a 2-D convolution (1-D ones with a height of 1); the adjoint is the
// transposed convolution. Asymmetric pads are applied by padding explicitly.
struct ConvGeometry {
  int64_t c = 1, h = 1, w = 1, oc = 1, oh = 1, ow = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, ph_end = 0, pw_end = 0, group = 1;
};

// The window of coefficients `out` ([m, c, h, w]): `in` where it is known on those maps, else
// the rows and columns where some coefficient is nonzero (one search over all of them).
Window maps_window(const at::Tensor& out, const Window& in) {
  Window win{out.size(1), out.size(2), out.size(3), 0, out.size(2), 0, out.size(3)};
  if (in.on(win.c, win.h, win.w)) return in;
  const at::Tensor at_pos = out.reshape({-1, win.h, win.w}).any(0).to(at::kCPU);  // [h, w]
  const at::Tensor in_row = at_pos.any(1), in_col = at_pos.any(0);
  const bool* r = in_row.data_ptr<bool>();
  const bool* c = in_col.data_ptr<bool>();
  while (win.r0 < win.r1 && !r[win.r0]) ++win.r0;
  while (win.r1 > win.r0 && !r[win.r1 - 1]) --win.r1;
  while (win.c0 < win.c1 && !c[win.c0]) ++win.c0;
  while (win.c1 > win.c0 && !c[win.c1 - 1]) --win.c1;
  return win;
}

// A ConvTranspose layer (symmetric pads): conv_transpose2d forward, conv2d as its adjoint.
class ConvTransposeMap : public LinearMap {
 public:
  ConvTransposeMap(at::Tensor weight, const ConvGeometry& g) : w_(std::move(weight)), g_(g) {
    pos_ = w_.clamp_min(0.0), neg_ = w_.clamp_max(0.0);
    const int64_t kh = w_.size(2), kw = w_.size(3);
    oph_ = g.oh - ((g.h - 1) * g.sh - 2 * g.ph + g.dh * (kh - 1) + 1);
    opw_ = g.ow - ((g.w - 1) * g.sw - 2 * g.pw + g.dw * (kw - 1) + 1);
  }
  bool valid() const {
    return oph_ >= 0 && opw_ >= 0 && oph_ < std::max(g_.sh, g_.dh) &&
           opw_ < std::max(g_.sw, g_.dw) && g_.ph == g_.ph_end && g_.pw == g_.pw_end;
  }
  at::Tensor apply(const at::Tensor& x) const override { return run(x, w_); }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    return {run(lo, pos_) + run(hi, neg_), run(hi, pos_) + run(lo, neg_)};
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return adjoint_window(y, {}, nullptr); }
  // Where the coefficients fill at most half of the output's height x width, the convolution
  // runs over the rows and columns of the output that the input positions reading the window
  // read (zeros past the output's edges), and its result is placed into zeros.
  at::Tensor adjoint_window(const at::Tensor& y, const Window& in, Window* place) const override {
    const int64_t m = y.size(0);
    const at::Tensor out = y.reshape({m, g_.oc, g_.oh, g_.ow});
    const Window win = maps_window(out, in);
    Window to{g_.c, g_.h, g_.w, 0, g_.h, 0, g_.w};
    if (!win.small()) {
      if (place != nullptr) *place = to;
      return at::conv2d(out, w_, {}, {g_.sh, g_.sw}, {g_.ph, g_.pw}, {g_.dh, g_.dw}, g_.group)
          .reshape({m, -1});
    }
    // Input rows i read output rows i sh - ph + dh k for k < kh: those from `first` to `end`
    // read some row of [r0, r1).
    auto first = [](int64_t r0, int64_t p, int64_t reach, int64_t s) {
      const int64_t a = r0 + p - reach;
      return a <= 0 ? int64_t{0} : (a + s - 1) / s;
    };
    auto end = [](int64_t r1, int64_t p, int64_t s, int64_t n) {
      return std::min(n, (r1 - 1 + p) / s + 1);
    };
    const int64_t kh = w_.size(2), kw = w_.size(3);
    to.r0 = win.empty() ? 0 : first(win.r0, g_.ph, g_.dh * (kh - 1), g_.sh);
    to.r1 = win.empty() ? 0 : end(win.r1, g_.ph, g_.sh, g_.h);
    to.c0 = win.empty() ? 0 : first(win.c0, g_.pw, g_.dw * (kw - 1), g_.sw);
    to.c1 = win.empty() ? 0 : end(win.c1, g_.pw, g_.sw, g_.w);
    if (place != nullptr) *place = to;
    at::Tensor x = at::zeros({m, g_.c, g_.h, g_.w}, out.options());
    if (to.empty()) return x.reshape({m, -1});
    // The output rows [a, b) and columns [ca, cb) they read, outside the output taken as 0.
    const int64_t a = to.r0 * g_.sh - g_.ph, b = (to.r1 - 1) * g_.sh - g_.ph + g_.dh * (kh - 1) + 1;
    const int64_t ca = to.c0 * g_.sw - g_.pw;
    const int64_t cb = (to.c1 - 1) * g_.sw - g_.pw + g_.dw * (kw - 1) + 1;
    const int64_t ra = std::max<int64_t>(a, 0), rb = std::min(b, g_.oh);
    const int64_t cla = std::max<int64_t>(ca, 0), clb = std::min(cb, g_.ow);
    const at::Tensor crop =
        at::constant_pad_nd(out.narrow(2, ra, rb - ra).narrow(3, cla, clb - cla),
                            {cla - ca, cb - clb, ra - a, b - rb}, 0);
    x.narrow(2, to.r0, to.r1 - to.r0)
        .narrow(3, to.c0, to.c1 - to.c0)
        .copy_(at::conv2d(crop, w_, {}, {g_.sh, g_.sw}, std::vector<int64_t>{0, 0}, {g_.dh, g_.dw},
                          g_.group));
    return x.reshape({m, -1});
  }
  const char* kind() const override { return "conv_transpose"; }

 private:
  at::Tensor run(const at::Tensor& x, const at::Tensor& w) const {
    at::Tensor in = x.reshape({x.size(0), g_.c, g_.h, g_.w});
    return at::conv_transpose2d(in, w, {}, {g_.sh, g_.sw}, {g_.ph, g_.pw}, {oph_, opw_}, g_.group,
                                {g_.dh, g_.dw})
        .reshape({x.size(0), -1});
  }

  at::Tensor w_, pos_, neg_;
  ConvGeometry g_;
  int64_t oph_ = 0, opw_ = 0;
};

class ConvMap : public LinearMap {
 public:
  ConvMap(at::Tensor weight, const ConvGeometry& g) : w_(std::move(weight)), g_(g) {
    pos_ = w_.clamp_min(0.0), neg_ = w_.clamp_max(0.0);
    symmetric_ = g.ph == g.ph_end && g.pw == g.pw_end;
  }
  at::Tensor apply(const at::Tensor& x) const override { return run(x, w_); }
  TBox ends(const at::Tensor& lo, const at::Tensor& hi) const override {
    return {run(lo, pos_) + run(hi, neg_), run(hi, pos_) + run(lo, neg_)};
  }
  at::Tensor adjoint(const at::Tensor& y) const override { return adjoint_window(y, {}, nullptr); }
  at::Tensor adjoint_window(const at::Tensor& y, const Window& in, Window* win) const override {
    at::Tensor out = y.reshape({y.size(0), g_.oc, g_.oh, g_.ow});
    Window place;
    const at::Tensor part = cropped_adjoint(out, in, place);
    if (win != nullptr) *win = place;
    if (part.defined()) return part;
    const int64_t ph = symmetric_ ? g_.ph : 0, pw = symmetric_ ? g_.pw : 0;
    const int64_t th = symmetric_ ? g_.h : g_.h + g_.ph + g_.ph_end;
    const int64_t tw = symmetric_ ? g_.w : g_.w + g_.pw + g_.pw_end;
    const int64_t kh = w_.size(2), kw = w_.size(3);
    const int64_t oph = th - ((g_.oh - 1) * g_.sh - 2 * ph + g_.dh * (kh - 1) + 1);
    const int64_t opw = tw - ((g_.ow - 1) * g_.sw - 2 * pw + g_.dw * (kw - 1) + 1);
    at::Tensor x = at::conv_transpose2d(out, w_, {}, {g_.sh, g_.sw}, {ph, pw}, {oph, opw}, g_.group,
                                        {g_.dh, g_.dw});
    if (!symmetric_) x = x.narrow(2, g_.ph, g_.h).narrow(3, g_.pw, g_.w);
    return x.reshape({y.size(0), -1});
  }
  const char* kind() const override { return "conv"; }

 private:
  // The adjoint where the coefficients' nonzero positions fill at most half of the output's
  // height x width (rows of a backward pass from a few neighbouring elements): the transposed
  // convolution of that window alone, placed into zeros (its rows and columns on the padding
  // dropped). The terms left out are products with 0. The window is `in` when known on the
  // output's maps, else found by one search of the coefficients. Undefined where the window is
  // larger; `place` gets the window of the result (the whole input then).
  at::Tensor cropped_adjoint(const at::Tensor& out, const Window& in, Window& place) const {
    const Window win = maps_window(out, in);
    const int64_t r0 = win.r0, c0 = win.c0, r1 = win.empty() ? r0 : win.r1, c1 = win.c1;
    const int64_t m = out.size(0);
    place = {g_.c, g_.h, g_.w, 0, g_.h, 0, g_.w};
    if (r0 == r1) {
      place.r1 = 0;
      return at::zeros({m, g_.c * g_.h * g_.w}, out.options());
    }
    if (2 * (r1 - r0) * (c1 - c0) > g_.oh * g_.ow) return {};
    const at::Tensor part =
        at::conv_transpose2d(out.narrow(2, r0, r1 - r0).narrow(3, c0, c1 - c0), w_, {},
                             {g_.sh, g_.sw}, {0, 0}, {0, 0}, g_.group, {g_.dh, g_.dw});
    // The part covers padded rows [r0 sh, r0 sh + part rows), input rows from r0 sh - ph on.
    const int64_t y0 = r0 * g_.sh - g_.ph, x0 = c0 * g_.sw - g_.pw;
    const int64_t top = std::max<int64_t>(0, -y0), left = std::max<int64_t>(0, -x0);
    const int64_t rows = std::min(part.size(2), g_.h - y0) - top;
    const int64_t cols = std::min(part.size(3), g_.w - x0) - left;
    at::Tensor x = at::zeros({m, g_.c, g_.h, g_.w}, out.options());
    place.r0 = y0 + top, place.r1 = place.r0 + std::max<int64_t>(rows, 0);
    place.c0 = x0 + left, place.c1 = place.c0 + std::max<int64_t>(cols, 0);
    if (rows > 0 && cols > 0)
      x.narrow(2, y0 + top, rows)
          .narrow(3, x0 + left, cols)
          .copy_(part.narrow(2, top, rows).narrow(3, left, cols));
    return x.reshape({m, -1});
  }

  at::Tensor run(const at::Tensor& x, const at::Tensor& w) const {
    at::Tensor in = x.reshape({x.size(0), g_.c, g_.h, g_.w});
    std::vector<int64_t> pad{g_.ph, g_.pw};
    if (!symmetric_) {
      in = at::constant_pad_nd(in, {g_.pw, g_.pw_end, g_.ph, g_.ph_end}, 0);
      pad = {0, 0};
    }
    at::Tensor y = at::conv2d(in, w, {}, {g_.sh, g_.sw}, pad, {g_.dh, g_.dw}, g_.group);
    return y.reshape({x.size(0), -1});
  }

  at::Tensor w_, pos_, neg_;
  ConvGeometry g_;
  bool symmetric_ = true;
};

std::pair<int64_t, int64_t> pair_of(const std::vector<int64_t>& v, bool one_d, int64_t fill) {
  if (v.empty()) return {fill, fill};
  return one_d ? std::pair{fill, v[0]} : std::pair{v[0], v[1]};
}

}  // namespace

std::unique_ptr<LinearMap> conv_map(const Model& model, int node, const at::TensorOptions& opts) {
  const DagNode& d = model.dag().node(node);
  const common::Node& gn = model.graph().nodes[d.graph_node];
  const bool transposed = gn.op_type == "ConvTranspose";
  if ((gn.op_type != "Conv" && !transposed) || gn.inputs.size() < 2 || d.inputs.empty() ||
      d.inputs[0] < 0 || (transposed && !gn.attr_ints("output_shape").empty()))
    return nullptr;
  const common::Tensor* wt = model.graph().constant(gn.inputs[1]);
  const common::Dims& x = model.shape(d.inputs[0]);
  const common::Dims& y = model.shape(node);
  if (wt == nullptr || (x.size() != 3 && x.size() != 4) || x[0] != 1 || y.size() != x.size() ||
      wt->dims.size() != x.size())
    return nullptr;
  const bool one_d = x.size() == 3;
  const std::string autopad = gn.attr_string("auto_pad", "NOTSET");
  if (autopad != "NOTSET" && autopad != "VALID") return nullptr;  // the sparse form covers them
  ConvGeometry g;
  g.c = x[1], g.h = one_d ? 1 : x[2], g.w = x.back();
  g.oc = y[1], g.oh = one_d ? 1 : y[2], g.ow = y.back();
  std::tie(g.sh, g.sw) = pair_of(gn.attr_ints("strides"), one_d, 1);
  std::tie(g.dh, g.dw) = pair_of(gn.attr_ints("dilations"), one_d, 1);
  std::vector<int64_t> pads = gn.attr_ints("pads");
  if (pads.size() == 2 && one_d) g.pw = pads[0], g.pw_end = pads[1];
  if (pads.size() == 4 && !one_d)
    g.ph = pads[0], g.pw = pads[1], g.ph_end = pads[2], g.pw_end = pads[3];
  g.group = gn.attr_int("group", 1);
  std::vector<double> w(wt->numel());
  for (int64_t i = 0; i < wt->numel(); ++i) w[i] = wt->double_at(i);
  std::vector<int64_t> wd(wt->dims.begin(), wt->dims.end());
  if (one_d) wd.insert(wd.begin() + 2, 1);
  at::Tensor weight = at::from_blob(w.data(), wd, at::kDouble).to(opts, false, true).clone();
  if (transposed) {
    auto t = std::make_unique<ConvTransposeMap>(std::move(weight), g);
    return t->valid() ? std::move(t) : nullptr;
  }
  return std::make_unique<ConvMap>(std::move(weight), g);
}

}  // namespace propdag::torch_engine::internal
