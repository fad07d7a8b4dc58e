// Linear relaxations of scalar activations on an input interval [l, u]:
// lo_slope * x + lo_bias <= f(x) <= up_slope * x + up_bias for every x in [l, u].
#pragma once

namespace propdag {

struct Lines {
  double lo_slope = 0, lo_bias = 0, up_slope = 0, up_bias = 0;
  /// Every lower line with a slope in [lo_min, lo_max] and the same lo_bias is valid too (equal
  /// to lo_slope where the lower line is fixed). Optimized bounds (alpha-CROWN) tune it.
  double lo_min = 0, lo_max = 0;
};

/// LeakyReLU max(x, alpha x) with 0 <= alpha <= 1 (ReLU: alpha = 0). Stable intervals are exact;
/// crossing ones take the chord as upper line and, as lower line, the slope among {alpha, 1} that
/// is closer to the chord (CROWN's adaptive choice: 1 when u > -l); any slope in [alpha, 1]
/// through the origin is a valid lower line there.
Lines leaky_relu_lines(double l, double u, double alpha);
/// Sigmoid / Tanh: both lines have the chord's slope, shifted down / up by the exact extreme of
/// f(x) - slope * x over [l, u] (at l, u or where f'(x) = slope).
Lines sigmoid_lines(double l, double u);
Lines tanh_lines(double l, double u);
/// Constant lines [lo, hi].
Lines constant_lines(double lo, double hi);

}  // namespace propdag
