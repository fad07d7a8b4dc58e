// The lowering of RNN, GRU and LSTM (every form: GRU with linear_before_reset=0, peepholes, other
// activations, clip, sequence_lens): a helper method of the generated class that loops over the
// static time steps, with the directions batched on a dim of their own:
//     def rnn_steps1(self, x, h):
//         """RNN over 5 time steps."""
//         xw = x @ self.rnn_w1 + self.rnn_b1
//         ys = []
//         for t in range(5):
//             h = torch.tanh(xw[t] + h @ self.rnn_r1)
//             ys.append(h)
//         return torch.stack(ys), h
// and forward calls it: `y1, h1 = self.rnn_steps1(x.unsqueeze(1), h0)  # RNN_0`.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "torchonnx/ops/recurrent.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx::recurrent {

namespace {

// The modules the loop's lines use: torch.where and torch.stack, and the activations' own.
py::Namespaces steps_uses(const Spec& s) {
  py::Namespaces uses{py::Ns::kTorch};
  for (const Activation& a : s.acts) uses.add(a.info->uses);
  return uses;
}

using common::DType;
using common::Status;
using common::Tensor;

std::string apply(const Spec& s, int k, const std::string& arg) {
  std::string x = arg;
  if (s.clip) {
    const bool simple = std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    });
    x = (simple ? x : "(" + x + ")") + ".clamp(" + py_float(-*s.clip) + ", " + py_float(*s.clip) +
        ")";
  }
  const Activation& a = s.acts[k];
  std::string out;
  for (char c : a.info->pattern) {
    out += c == '$'   ? x
           : c == 'A' ? py_float(a.alpha)
           : c == 'B' ? py_float(a.beta)
                      : std::string(1, c);
  }
  return out;
}

// Direction-major [dirs, cols, n] transposed gate blocks of W or R, as a parameter.
std::string gate_matrix(Context& ctx, const Spec& s, const Tensor& m, int64_t cols,
                        const std::vector<int>& gates, std::string_view hint) {
  const int64_t n = static_cast<int64_t>(gates.size()) * s.hidden;
  std::vector<double> v(s.dirs * cols * n);
  for (int64_t d = 0; d < s.dirs; ++d) {
    const std::vector<double> rows = blocks(m, s, d, 0, cols, gates);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < cols; ++j) v[(d * cols + j) * n + i] = rows[i * cols + j];
    }
  }
  return ctx.buffer(Tensor::from_double(v, {s.dirs, cols, n}, s.dtype), hint, true);
}

// [dirs, 1, n] sum of the bias halves in `halves` (0: W's, 1: R's) for `gates`, or "".
std::string gate_bias(Context& ctx, const Spec& s, const std::vector<int>& halves,
                      const std::vector<int>& gates, std::string_view hint) {
  if (!s.b) return "";
  const int64_t n = static_cast<int64_t>(gates.size()) * s.hidden;
  std::vector<double> v(s.dirs * n, 0.0);
  for (int64_t d = 0; d < s.dirs; ++d) {
    for (int half : halves) {
      const std::vector<double> part =
          blocks(*s.b, s, d, int64_t{half} * s.gates * s.hidden, 1, gates);
      for (int64_t i = 0; i < n; ++i) v[d * n + i] += part[i];
    }
  }
  return ctx.buffer(Tensor::from_double(v, {s.dirs, 1, n}, s.dtype), hint, true);
}

std::string plus(const std::string& bias) { return bias.empty() ? "" : " + " + bias; }

// One peephole vector ([dirs, 1, H]) of P = [dirs, 3 * H] (i, o, f).
std::string peephole(Context& ctx, const Spec& s, int k, std::string_view hint) {
  const std::vector<double> p = ctx.constant(kP)->to_double();
  std::vector<double> v;
  for (int64_t d = 0; d < s.dirs; ++d) {
    v.insert(v.end(), p.begin() + (d * 3 + k) * s.hidden, p.begin() + (d * 3 + k + 1) * s.hidden);
  }
  return ctx.buffer(Tensor::from_double(v, {s.dirs, 1, s.hidden}, s.dtype), hint, true);
}

// The time-major input with a direction dim, the buffers that reorder the steps, and the mask.
struct Steps {
  std::string x, order, valid;  ///< order: "" or an index suffix "[self.a, self.b]"
};

Steps steps(Context& ctx, const Spec& s) {
  Steps out;
  const std::string x = ctx.in(kX) + (s.batch_first ? ".transpose(0, 1)" : "");
  if (s.lens.empty() && s.dirs == 1) {
    out.x = x + (s.reverse_only ? ".flip(0)" : "") + ".unsqueeze(1)";
    out.order = s.reverse_only ? ".flip(0)" : "";
    return out;
  }
  // order[t, d, b]: the time step direction d processes at step t (reversed prefixes for the
  // reverse direction); it is its own inverse, so it also maps the results back.
  const int64_t T = s.steps, B = s.lens.empty() ? 1 : s.batch;
  std::vector<int64_t> order(T * s.dirs * B);
  std::vector<double> valid(T * B);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = s.lens.empty() ? T : s.lens[b];
      valid[t * B + b] = t < len;
      for (int64_t d = 0; d < s.dirs; ++d) {
        const bool reverse = s.reverse_only || d == 1;
        order[(t * s.dirs + d) * B + b] = reverse && t < len ? len - 1 - t : t;
      }
    }
  }
  std::vector<int64_t> dir_ids;
  for (int64_t d = 0; d < s.dirs; ++d) dir_ids.push_back(d);
  if (s.lens.empty()) {
    const std::string o = ctx.buffer(Tensor::from_int64(order, {T, s.dirs}), "time_index");
    const std::string dirs = ctx.buffer(Tensor::from_int64(dir_ids, {s.dirs}), "direction_index");
    out.x = x + "[" + o + "]";
    out.order = "[" + o + ", " + dirs + "]";
    return out;
  }
  std::vector<int64_t> batch_ids;
  for (int64_t b = 0; b < B; ++b) batch_ids.push_back(b);
  const std::string o = ctx.buffer(Tensor::from_int64(order, {T, s.dirs, B}), "time_index");
  const std::string dirs = ctx.buffer(Tensor::from_int64(dir_ids, {s.dirs, 1}), "direction_index");
  const std::string batch = ctx.buffer(Tensor::from_int64(batch_ids, {B}), "batch_index");
  out.x = x + "[" + o + ", " + batch + "]";
  out.order = "[" + o + ", " + dirs + ", " + batch + "]";
  out.valid = ctx.buffer(Tensor::from_double(valid, {T, 1, B, 1}, DType::kBool), "valid_steps");
  return out;
}

// `update` of state `v` at step t, kept where the step is past the sequence's end.
std::string masked(const Steps& st, const std::string& update, const std::string& v) {
  return st.valid.empty() ? update : "torch.where(" + st.valid + "[t], " + update + ", " + v + ")";
}

std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string zeros_state(Context& ctx, const Spec& s) {
  const std::string batch = !s.dynamic_batch
                                ? std::to_string(s.batch)
                                : ctx.in(kX) + (s.batch_first ? ".shape[0]" : ".shape[1]");
  return ctx.in(kX) + ".new_zeros(" + std::to_string(s.dirs) + ", " + batch + ", " +
         std::to_string(s.hidden) + ")";
}

}  // namespace

Status lower_steps(Context& ctx, const Spec& s) {
  const Steps st = steps(ctx, s);
  std::vector<std::string> params{"x", "h"}, lines, loop;
  if (s.gates == 1) {
    const std::string w = gate_matrix(ctx, s, *s.w, s.input, {0}, "rnn_w");
    const std::string r = gate_matrix(ctx, s, *s.r, s.hidden, {0}, "rnn_r");
    lines.push_back("xw = x @ " + w + plus(gate_bias(ctx, s, {0, 1}, {0}, "rnn_b")));
    loop.push_back("h = " + masked(st, apply(s, 0, "xw[t] + h @ " + r), "h"));
  } else if (s.gates == 3) {
    const std::string wzr = gate_matrix(ctx, s, *s.w, s.input, {0, 1}, "gru_w_zr");
    const std::string wh = gate_matrix(ctx, s, *s.w, s.input, {2}, "gru_w_h");
    const std::string rzr = gate_matrix(ctx, s, *s.r, s.hidden, {0, 1}, "gru_r_zr");
    const std::string rh = gate_matrix(ctx, s, *s.r, s.hidden, {2}, "gru_r_h");
    const bool lbr = s.linear_before_reset;
    lines.push_back("xzr = x @ " + wzr + plus(gate_bias(ctx, s, {0, 1}, {0, 1}, "gru_b_zr")));
    lines.push_back(
        "xh = x @ " + wh +
        plus(gate_bias(ctx, s, lbr ? std::vector{0} : std::vector{0, 1}, {2}, "gru_b_h")));
    const std::string candidate =
        lbr ? "xh[t] + r * (h @ " + rh + plus(gate_bias(ctx, s, {1}, {2}, "gru_rb_h")) + ")"
            : "xh[t] + (r * h) @ " + rh;
    loop.push_back("z, r = " + apply(s, 0, "xzr[t] + h @ " + rzr) + ".chunk(2, -1)");
    loop.push_back("h = " + masked(st, "(1 - z) * " + apply(s, 1, candidate) + " + z * h", "h"));
  } else {
    const std::string w = gate_matrix(ctx, s, *s.w, s.input, {0, 1, 2, 3}, "lstm_w");
    const std::string r = gate_matrix(ctx, s, *s.r, s.hidden, {0, 1, 2, 3}, "lstm_r");
    params.push_back("c");
    lines.push_back("xw = x @ " + w + plus(gate_bias(ctx, s, {0, 1}, {0, 1, 2, 3}, "lstm_b")));
    std::string pi, po, pf;
    if (s.peepholes) {
      pi = " + " + peephole(ctx, s, 0, "peephole_i") + " * c";
      po = " + " + peephole(ctx, s, 1, "peephole_o") + " * c";
      pf = " + " + peephole(ctx, s, 2, "peephole_f") + " * c";
    }
    const std::string in_gate = apply(s, 0, "i" + pi);
    const std::string forget = s.input_forget ? "(1 - " + in_gate + ")" : apply(s, 0, "f" + pf);
    loop.push_back("i, o, f, g = (xw[t] + h @ " + r + ").chunk(4, -1)");
    // The input and forget peepholes see the previous cell state, the output gate's the new one.
    loop.push_back("c = " +
                   masked(st, forget + " * c + " + in_gate + " * " + apply(s, 1, "g"), "c"));
    loop.push_back("h = " + masked(st, apply(s, 0, "o" + po) + " * " + apply(s, 2, "c"), "h"));
  }
  lines.push_back("ys = []");
  lines.push_back("for t in range(" + std::to_string(s.steps) + "):");
  loop.push_back("ys.append(h)");
  for (const std::string& l : loop) lines.push_back("    " + l);
  std::string y = "torch.stack(ys)";
  if (!st.valid.empty()) y += " * " + st.valid;
  if (!st.valid.empty() && (!st.order.empty() || s.batch_first)) y = "(" + y + ")";
  y += st.order + (s.batch_first ? ".permute(2, 0, 1, 3)" : "");
  const std::string post = s.batch_first ? ".transpose(0, 1)" : "";
  std::vector<std::string> results{y, "h" + post, "c" + post};
  results.resize(std::min<size_t>(ctx.num_outputs(), s.gates == 4 ? 3 : 2));
  lines.push_back("return " + join(results));
  const std::string zeros = zeros_state(ctx, s);
  const std::string h0 = initial_state(ctx, s, kH0), c0 = initial_state(ctx, s, kC0);
  std::vector<std::string> args{st.x, h0.empty() ? zeros : h0};
  if (s.gates == 4) args.push_back(c0.empty() ? zeros : c0);
  const std::string doc = s.op + " over " + std::to_string(s.steps) + " time step" +
                          (s.steps == 1 ? "" : "s") + ", directions on dim 1.";
  const std::string fn =
      ctx.method(lower_case(s.op) + "_steps", params, doc, std::move(lines), steps_uses(s));
  const std::string expr = fn + "(" + join(args) + ")";
  return emit_outputs(ctx, s, expr, {});  // a method call on names
}

}  // namespace torchonnx::recurrent
