// Linear relaxations of scalar activations on an input interval [l, u]:
// lo_slope * x + lo_bias <= f(x) <= up_slope * x + up_bias for every x in [l, u].
#pragma once

namespace propdag {

/// A smooth function that is convex below 0 and concave above (sigmoid, tanh), with its first
/// and second derivatives.
struct Curve {
  double (*f)(double);
  double (*df)(double);
  double (*ddf)(double);
};
const Curve& sigmoid_curve();
const Curve& tanh_curve();

/// A line y = slope * x + bias.
struct Line {
  double slope = 0, bias = 0;
};

/// The tangent of `c` at t, moved down (`below`) or up by a margin that covers rounding for every
/// |x| <= reach.
Line tangent_line(const Curve& c, double t, double reach, bool below);

struct Lines {
  double lo_slope = 0, lo_bias = 0, up_slope = 0, up_bias = 0;
  /// Every lower line with a slope in [lo_min, lo_max] and the same lo_bias is valid too (equal
  /// to lo_slope where the lower line is fixed). Optimized bounds (alpha-CROWN) tune it.
  double lo_min = 0, lo_max = 0;
  /// Tangent families (set by curve_lines): with lo_t_min < lo_t_max, the tangent_line of
  /// `curve` at any t in [lo_t_min, lo_t_max] (with this `reach`) is a valid lower line, and
  /// the fixed one is the tangent at lo_t; the same for the upper line. Optimized bounds tune t.
  const Curve* curve = nullptr;
  double reach = 0;
  double lo_t = 0, lo_t_min = 0, lo_t_max = 0, up_t = 0, up_t_min = 0, up_t_max = 0;
};

/// LeakyReLU max(x, alpha x) with 0 <= alpha <= 1 (ReLU: alpha = 0). Stable intervals are exact;
/// crossing ones take the chord as upper line and, as lower line, the slope among {alpha, 1} that
/// is closer to the chord (CROWN's adaptive choice: 1 when u > -l); any slope in [alpha, 1]
/// through the origin is a valid lower line there.
Lines leaky_relu_lines(double l, double u, double alpha);
/// Lines of a Curve. On the convex side (u <= 0) the chord is the upper line and the lower line
/// is any tangent at a point of [l, u]; the concave side (l >= 0) mirrors that. Across 0, the
/// lower line is the chord where the chord stays below the curve (f'(l) >= chord slope),
/// otherwise a tangent at a point of [l, d], d in [l, 0] the point whose tangent passes through
/// (u, f(u)); the upper line mirrors that. The fixed tangent is the one parallel to the chord
/// where the range holds one (the tightest line of that slope), else CROWN's choice (the
/// midpoint, or d).
Lines curve_lines(const Curve& c, double l, double u);
Lines sigmoid_lines(double l, double u);
Lines tanh_lines(double l, double u);
const Curve& exp_curve();
const Curve& softplus_curve();
const Curve& log_curve();
/// Lines of an increasing curve that is convex (`convex`) or concave on all of [l, u]: the chord
/// on the outer side (above a convex curve), and on the inner side the tangent parallel to the
/// chord, where a tangent at any point of [l, u] is valid too (optimized bounds tune it). Not
/// finite, narrower than 1e-9, or f not finite at an end: the constant lines [f(l), f(u)].
Lines bent_lines(const Curve& c, double l, double u, bool convex);
/// exp and softplus log(1 + e^x) (convex), log (concave; [-inf, log u] where l <= 0).
Lines exp_lines(double l, double u);
Lines softplus_lines(double l, double u);
Lines log_lines(double l, double u);
/// Constant lines [lo, hi].
Lines constant_lines(double lo, double hi);

/// Lines of f = sin (or cos, `cosine`) on [l, u], whose range is [lo, hi]. Both have the chord's
/// slope k; the lower bias is the minimum of f(x) - k x over [l, u] and the upper its maximum,
/// found exactly at the ends and at the points of slope k, then widened by a rounding margin. Where
/// the interval lies in a region of fixed convexity one of them is the chord and the other the
/// tangent parallel to it; elsewhere they are still the tightest lines of that slope. Intervals
/// wider than 4 pi, narrower than 1e-9, or not finite get [lo, hi].
Lines sine_lines(double l, double u, bool cosine, double lo, double hi);

/// Linear bounds of a product x * y over x in [lx, ux], y in [ly, uy] (McCormick planes):
/// lo_x * x + lo_y * y + lo_bias <= x * y <= up_x * x + up_y * y + up_bias.
struct Planes {
  double lo_x = 0, lo_y = 0, lo_bias = 0, up_x = 0, up_y = 0, up_bias = 0;
};
/// Lower plane (x - lx)(y - ly) >= 0 and upper plane (x - lx)(uy - y) >= 0 (auto_LiRPA's
/// choice), widened by a rounding margin. The bounds must be finite.
Planes product_planes(double lx, double ux, double ly, double uy);
/// The other two McCormick planes, widened the same: lower (ux - x)(uy - y) >= 0, upper
/// (ux - x)(y - ly) >= 0. Any convex combination of a lower plane of each pair bounds x * y from
/// below (likewise above), which optimized bounds tune.
Planes product_planes_other(double lx, double ux, double ly, double uy);
/// 1 / y on [ly, uy] (0 outside it, bounds finite): the chord above and the tangent at the
/// midpoint below where y > 0 (convex), the reverse where y < 0.
Lines reciprocal_lines(double ly, double uy);
/// Planes of x / y = x * r, r = 1 / y in [lr, ur] (0 outside [ly, uy], bounds finite): r's
/// McCormick planes with x, lr x + lx r - lx lr <= x r <= ur x + lx r - lx ur, where lx r is in
/// turn bounded by reciprocal_lines on the side the sign of lx asks for.
Planes quotient_planes(double lx, double ux, double ly, double uy);

}  // namespace propdag
