// Scatters: ScatterND (the data viewed as rows, indexed by linear row numbers) and
// ScatterElements / Scatter (torch's scatter along the axis), with their reductions.
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::Dims;
using common::Status;
using common::Tensor;

// ScatterND as a scatter over the data viewed as [prod(dims[:k]), rest], with linear row
// indices computed from the index tuples (at compile time when they are constant).
// ".scatter(" for reduction none, else the reducing form; empty for unknown reductions.
std::string scatter_call(const std::string& reduction, int64_t axis, const std::string& index,
                         const std::string& src) {
  const std::string args = std::to_string(axis) + ", " + index + ", " + src;
  if (reduction == "none") return ".scatter(" + args + ")";
  if (reduction == "add") return ".scatter_add(" + args + ")";
  if (reduction == "mul") return ".scatter_reduce(" + args + ", \"prod\")";
  if (reduction == "max") return ".scatter_reduce(" + args + ", \"amax\")";
  if (reduction == "min") return ".scatter_reduce(" + args + ", \"amin\")";
  return "";
}

Status scatter_nd(Context& ctx) {
  const std::string reduction = ctx.node().attr_string("reduction", "none");
  const Dims& data = ctx.shape(0);
  const Dims& is = ctx.shape(1);
  const int64_t k = is.back();
  int64_t rows = 1, rest = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) (d < k ? rows : rest) *= data[d];
  std::vector<int64_t> strides(k, 1);
  for (int64_t j = k - 1; j > 0; --j) strides[j - 1] = strides[j] * data[j];
  std::string lin;
  bool spare_row = false;
  if (const Tensor* idx = ctx.constant(1)) {
    const std::vector<int64_t> v = idx->to_int64();
    std::vector<int64_t> rows_of;
    for (size_t t = 0; t + k <= v.size(); t += k) {
      int64_t r = 0;
      for (int64_t j = 0; j < k; ++j)
        r += (v[t + j] < 0 ? v[t + j] + data[j] : v[t + j]) * strides[j];
      rows_of.push_back(r);
    }
    const int64_t m = static_cast<int64_t>(rows_of.size());
    lin = ctx.buffer(Tensor::from_int64(rows_of, {m, 1}), "rows");
  } else {
    // Tuples with an index outside [-dim, dim) (ONNX: an error, or no tuple at all when the
    // indices came from an empty slice) go to an extra row that is dropped afterwards.
    const std::string dims =
        ctx.buffer(Tensor::from_int64(Dims(data.begin(), data.begin() + k), {k}), "dims");
    const std::string st = ctx.buffer(Tensor::from_int64(strides, {k}), "strides");
    const std::string tuples = as_long(ctx, 1, ctx.in(1));
    lin =
        ctx.local(py::Expr::raw("torch.where(((" + tuples + " >= -" + dims + ") & (" + tuples +
                                    " < " + dims + ")).all(-1), (torch.remainder(" + tuples + ", " +
                                    dims + ") * " + st + ").sum(-1), " + std::to_string(rows) + ")",
                                {py::Ns::kTorch}),
                  "rows") +
        ".reshape(-1, 1)";
    spare_row = true;
  }
  const std::string r = std::to_string(rest);
  const std::string call = scatter_call(reduction, 0, lin + ".expand(-1, " + r + ")",
                                        ctx.in(2) + ".reshape(-1, " + r + ")");
  if (call.empty()) return ctx.error("unknown reduction '" + reduction + "'");
  std::string table = ctx.in(0) + ".reshape(" + std::to_string(rows) + ", " + r + ")";
  if (spare_row) {
    table = ctx.local(py::Expr::raw(table, {}), "table");
    table = "torch.cat([" + table + ", " + table + "[:1]])";
  }
  std::string expr = table + call + (spare_row ? "[:" + std::to_string(rows) + "]" : "") +
                     ".reshape" + py_tuple(data);
  // torch.cat adds the spare row.
  return ctx.emit(
      py::Expr::raw(expr, spare_row ? py::Namespaces{py::Ns::kTorch} : py::Namespaces{}), "scatter",
      false);
}

Status scatter_elements(Context& ctx) {
  const std::string reduction = ctx.node().attr_string("reduction", "none");
  ASSIGN_OR_RETURN(const int64_t axis, axis_at(ctx, ctx.node().attr_int("axis", 0), ctx.rank(0)));
  const int64_t dim = ctx.shape(0)[axis];
  const Tensor* idx = ctx.constant(1);
  std::string index =
      idx ? ctx.buffer(wrapped_indices(*idx, dim), "indices")
          : "torch.remainder(" + as_long(ctx, 1, ctx.in(1)) + ", " + std::to_string(dim) + ")";
  const std::string call = scatter_call(reduction, axis, index, ctx.in(2));
  if (call.empty()) return ctx.error("unknown reduction '" + reduction + "'");
  // torch.remainder wraps computed indices.
  return ctx.emit(
      py::Expr::raw(ctx.in(0) + call, idx ? py::Namespaces{} : py::Namespaces{py::Ns::kTorch}),
      "scatter", false);
}

}  // namespace

void register_index_scatter(HandlerRegistry& t) {
  t.add("ScatterND", scatter_nd);
  t.add("ScatterElements", scatter_elements);
  t.add("Scatter", scatter_elements);
}

}  // namespace torchonnx
