// Conv, ConvTranspose and Col2Im over any number of spatial dims (direct loops: constant folding
// sees small tensors), and the window geometry the pools share. Sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <utility>

#include "common/eval/kernels.h"
#include "common/eval/window.h"
#include "common/op_params.h"

namespace common::eval {

Result<Window> plan_window(const Ctx& c, const Dims& in, const Dims& kernel) {
  Result<common::Window> read = read_window(c.node(), in.size(), kernel);
  if (!read.ok()) return c.error(read.error().message);
  if (read->kernel != kernel) return c.error("kernel_shape does not match the weight");
  Window w{in, kernel, read->strides, read->dilations, {}, {}, {}};
  for (size_t d = 0; d < in.size(); ++d) {
    Result<common::WindowDim> dim = window_dim(*read, d, in[d]);
    if (!dim.ok()) return c.error(dim.error().message);
    w.pad_begin.push_back(dim->pad_begin);
    w.pad_end.push_back(dim->pad_end);
    w.out.push_back(dim->out);
  }
  return w;
}

namespace {

/// X and W of Conv and ConvTranspose: the same dtype, the same rank >= 3.
Result<std::pair<const Tensor*, const Tensor*>> conv_operands(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* wt, c.need(1));
  if (x->dims.size() < 3 || wt->dims.size() != x->dims.size() || x->dtype != wt->dtype)
    return c.error("X and W must have the same type and rank >= 3");
  return std::pair{x, wt};
}

Result<Outputs> conv_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(auto operands, conv_operands(c));
  const Tensor *x = operands.first, *wt = operands.second, *bias = c.in(2);
  int64_t n = x->dims[0], ch = x->dims[1], m = wt->dims[0], group = c.node().attr_int("group", 1);
  if (group <= 0 || ch % group != 0 || m % group != 0 || wt->dims[1] != ch / group)
    return c.error("channels do not match group " + std::to_string(group));
  Dims in(x->dims.begin() + 2, x->dims.end()), kernel(wt->dims.begin() + 2, wt->dims.end());
  ASSIGN_OR_RETURN(Window w, plan_window(c, in, kernel));
  Dims dims{n, m};
  dims.insert(dims.end(), w.out.begin(), w.out.end());
  RETURN_IF_ERROR(check_size(c, dims));
  int64_t in_sz = num_elements(in), out_sz = num_elements(w.out), k_sz = num_elements(kernel);
  int64_t cg = ch / group, mg = m / group;
  std::vector<double> bv(static_cast<size_t>(m), 0);
  if (bias)
    for (int64_t oc = 0; oc < m; ++oc) bv[static_cast<size_t>(oc)] = scalar_double(*bias, oc);
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    Tensor y = make_tensor(x->dtype, dims);
    auto px = x->span<T>(), pw = wt->span<T>();
    auto o = y.mutable_span<T>();
    std::vector<int64_t> pos(w.out.size(), 0);
    // Per output position, the taps that fall inside the input (offset, index in the kernel),
    // shared by every batch, output channel and input channel.
    std::vector<std::pair<int64_t, int64_t>> taps;
    taps.reserve(static_cast<size_t>(k_sz));
    for (int64_t p = 0; p < out_sz; ++p, next_index(pos, w.out)) {
      taps.clear();
      int64_t t = 0;
      for_each_tap(w, pos, [&](int64_t off, bool inside, bool) {
        if (inside) taps.emplace_back(off, t);
        ++t;
      });
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t oc = 0; oc < m; ++oc) {
          const int64_t g = oc / mg;
          double acc = bv[static_cast<size_t>(oc)];
          for (int64_t ic = 0; ic < cg; ++ic) {
            const T* xs = px.data() + (b * ch + g * cg + ic) * in_sz;
            const T* ws = pw.data() + (oc * cg + ic) * k_sz;
            for (const auto& [off, tap] : taps)
              acc += static_cast<double>(xs[off]) * static_cast<double>(ws[tap]);
          }
          o[(b * m + oc) * out_sz + p] = static_cast<T>(acc);
        }
      }
    }
    return Outputs{std::move(y)};
  });
}

/// ConvTranspose output sizes and begin pads: from output_shape (or auto_pad SAME_*, which
/// asks for in * stride) the total padding is derived and split as the ONNX spec says.
Result<Window> plan_transpose(const Ctx& c, const Dims& in, const Dims& kernel) {
  size_t k = in.size();
  Result<common::Window> read = read_window(c.node(), k, kernel);
  if (!read.ok()) return c.error(read.error().message);
  if (read->kernel != kernel) return c.error("kernel_shape does not match the weight");
  Window w{in, kernel, read->strides, read->dilations, read->pad_begin, read->pad_end, Dims(k)};
  Dims out_pad = c.node().attr_ints("output_padding", Dims(k, 0));
  Dims out_shape = c.node().attr_ints("output_shape");
  if (out_pad.size() != k || (!out_shape.empty() && out_shape.size() != k))
    return c.error("output_padding or output_shape do not match the spatial rank");
  const std::string& auto_pad = read->auto_pad;
  bool same = read->same();
  for (size_t d = 0; d < k; ++d) {
    int64_t full = w.strides[d] * (in[d] - 1) + out_pad[d] + (kernel[d] - 1) * w.dilations[d] + 1;
    if (out_shape.empty() && !same) {
      w.out[d] = full - w.pad_begin[d] - w.pad_end[d];
      continue;
    }
    w.out[d] = out_shape.empty() ? in[d] * w.strides[d] : out_shape[d];
    int64_t total = full - w.out[d];  // negative when output_shape asks for more than full
    int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2)
    w.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    w.pad_end[d] = total - w.pad_begin[d];
  }
  return w;
}

/// ConvTranspose: every input element scatters x * W[tap] to out[i * stride - pad + tap * dil].
Result<Outputs> conv_transpose_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(auto operands, conv_operands(c));
  const Tensor *x = operands.first, *wt = operands.second, *bias = c.in(2);
  int64_t n = x->dims[0], ch = x->dims[1], group = c.node().attr_int("group", 1);
  if (group <= 0 || ch % group != 0 || wt->dims[0] != ch) return c.error("W does not match X");
  int64_t mg = wt->dims[1], m = mg * group, cg = ch / group;
  Dims in(x->dims.begin() + 2, x->dims.end()), kernel(wt->dims.begin() + 2, wt->dims.end());
  ASSIGN_OR_RETURN(Window w, plan_transpose(c, in, kernel));
  Dims dims{n, m};
  dims.insert(dims.end(), w.out.begin(), w.out.end());
  RETURN_IF_ERROR(check_size(c, dims));
  size_t k = in.size();
  int64_t in_sz = num_elements(in), out_sz = num_elements(w.out), k_sz = num_elements(kernel);
  Dims ost = strides_of(w.out);
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    std::vector<double> acc(std::max<int64_t>(num_elements(dims), 0), 0);
    auto px = x->span<T>(), pw = wt->span<T>();
    std::vector<int64_t> pos(k, 0), tap(k, 0);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ic = 0; ic < ch; ++ic) {
        int64_t g = ic / cg;
        std::fill(pos.begin(), pos.end(), 0);
        for (int64_t i = 0; i < in_sz; ++i, next_index(pos, in)) {
          double xv = px[(b * ch + ic) * in_sz + i];
          std::fill(tap.begin(), tap.end(), 0);
          for (int64_t t = 0; t < k_sz; ++t, next_index(tap, kernel)) {
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0; d < k && inside; ++d) {
              int64_t o = pos[d] * w.strides[d] - w.pad_begin[d] + tap[d] * w.dilations[d];
              inside = o >= 0 && o < w.out[d];
              off += o * ost[d];
            }
            if (!inside) continue;
            for (int64_t oc = 0; oc < mg; ++oc) {
              double wv = pw[(ic * mg + oc) * k_sz + t];
              acc[(b * m + g * mg + oc) * out_sz + off] += xv * wv;
            }
          }
        }
      }
    }
    Tensor y = make_tensor(x->dtype, dims);
    auto o = y.mutable_span<T>();
    for (size_t i = 0; i < acc.size(); ++i) {
      int64_t oc = (static_cast<int64_t>(i) / std::max<int64_t>(out_sz, 1)) % m;
      o[i] = static_cast<T>(acc[i] + (bias ? scalar_double(*bias, oc) : 0));
    }
    return Outputs{std::move(y)};
  });
}

/// Col2Im(input [N, C * prod(block), L], image_shape, block_shape): every column element added
/// to the image position its block and kernel position give (common::col2im_offsets).
Result<Outputs> col2im_kernel(const Ctx& c) {
  ASSIGN_OR_RETURN(const Tensor* x, c.need(0));
  ASSIGN_OR_RETURN(const Tensor* image_in, c.need(1));
  ASSIGN_OR_RETURN(const Tensor* block_in, c.need(2));
  const Dims image = ints_of(*image_in), block = ints_of(*block_in);
  Result<common::Window> w = read_window(c.node(), image.size(), block);
  if (!w.ok()) return c.error(w.error().message);
  int64_t blocks = 0;
  Result<std::vector<int64_t>> offsets = col2im_offsets(*w, image, &blocks);
  if (!offsets.ok()) return c.error(offsets.error().message);
  const int64_t kernel = static_cast<int64_t>(offsets->size()) / std::max<int64_t>(blocks, 1);
  if (x->dims.size() != 3 || kernel == 0 || x->dims[1] % kernel != 0 || x->dims[2] != blocks)
    return c.error("input must be [N, C * prod(block_shape), number of blocks]");
  const int64_t n = x->dims[0], ch = x->dims[1] / kernel, plane = num_elements(image);
  Dims dims = {n, ch};
  dims.insert(dims.end(), image.begin(), image.end());
  RETURN_IF_ERROR(check_size(c, dims));
  return visit_floating(c, x->dtype, [&]<class T>(Tag<T>) -> Result<Outputs> {
    std::vector<double> acc(static_cast<size_t>(n * ch * plane), 0.0);
    auto in = x->span<T>();
    const int64_t column = kernel * blocks;  // elements per (n, c)
    for (int64_t g = 0; g < n * ch; ++g) {
      for (int64_t e = 0; e < column; ++e) {
        const int64_t at = (*offsets)[e];
        if (at >= 0) acc[g * plane + at] += static_cast<double>(in[g * column + e]);
      }
    }
    Tensor out = make_tensor(x->dtype, dims);
    auto o = out.mutable_span<T>();
    for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<T>(acc[i]);
    return Outputs{std::move(out)};
  });
}

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add("Col2Im", {col2im_kernel, true});
  r.add("Conv", {conv_kernel, true});
  r.add("ConvTranspose", {conv_transpose_kernel, true});
}

}  // namespace common::eval
