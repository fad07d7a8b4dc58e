// TfIdfVectorizer over integer token ids: every n-gram position pattern (length n, gap `skip`
// between its items) is known statically, so the counts are a gather, a comparison with the pool
// and a sum; a 0/1 matrix (holding the weights for IDF and TFIDF) maps them to output slots.
#include <algorithm>
#include <string>
#include <vector>

#include "torchonnx/context.h"
#include "torchonnx/ops/util.h"
#include "torchonnx/pyfmt.h"

namespace torchonnx {

namespace {

using common::DType;
using common::Status;
using common::Tensor;

Status tfidf_vectorizer(Context& ctx) {
  const common::Node& node = ctx.node();
  if (ctx.dtype(0) != DType::kInt64 && ctx.dtype(0) != DType::kInt32) {
    return ctx.error("only integer token ids are supported (pool_int64s)");
  }
  if (ctx.rank(0) < 1 || ctx.rank(0) > 2) return ctx.error("input must be 1-D or 2-D");
  const std::string mode = node.attr_string("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return ctx.error("unknown mode " + mode);
  const int64_t min_n = node.attr_int("min_gram_length", 1);
  const int64_t max_n = node.attr_int("max_gram_length", 1);
  const int64_t max_skip = node.attr_int("max_skip_count", 0);
  const std::vector<int64_t> pool = node.attr_ints("pool_int64s", {});
  const std::vector<int64_t> starts = node.attr_ints("ngram_counts", {});
  const std::vector<int64_t> slots = node.attr_ints("ngram_indexes", {});
  const std::vector<float> weights = node.attr_floats("weights", {});
  const bool slots_ok = std::all_of(slots.begin(), slots.end(),
                                    [](int64_t s) { return s >= 0 && s < (int64_t{1} << 24); });
  if (slots.empty() || !slots_ok || min_n < 1 || max_n < min_n || max_skip < 0 ||
      (!weights.empty() && weights.size() != slots.size())) {
    return ctx.error("inconsistent n-gram attributes");
  }
  const int64_t length = ctx.shape(0).back();
  const int64_t skips = std::min(max_skip, length);  // longer skips fit no n-gram of n >= 2
  if (length > (int64_t{1} << 20) || (skips + 1) * length > (int64_t{1} << 26) / max_n) {
    return ctx.error("input too long for the n-gram position tables");
  }
  const int64_t outputs = *std::max_element(slots.begin(), slots.end()) + 1;
  const py::Expr x = as_long(ctx, 0, py::Expr::name(ctx.in(0)));
  std::vector<py::Expr> counts;  // per n: [..., pool n-grams of length n]
  std::vector<double> mapping;   // rows: the pool n-grams counted, in `counts` order
  int64_t ngram = 0;             // index of the first n-gram of length n in ngram_indexes
  for (int64_t n = 1; n <= static_cast<int64_t>(starts.size()); ++n) {
    const int64_t begin = starts[n - 1];
    const int64_t end =
        n < static_cast<int64_t>(starts.size()) ? starts[n] : static_cast<int64_t>(pool.size());
    if (begin < 0 || begin > end || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % n != 0) {
      return ctx.error("ngram_counts does not match pool_int64s");
    }
    const int64_t grams = (end - begin) / n;
    const int64_t first = ngram;
    ngram += grams;
    if (n < min_n || n > max_n || grams == 0) continue;
    // Positions of every n-gram of the input: one row per (skip, start); unigrams once.
    std::vector<int64_t> positions;
    for (int64_t skip = 0; skip <= (n == 1 ? 0 : skips); ++skip) {
      for (int64_t i = 0; i + (n - 1) * (skip + 1) < length; ++i) {
        for (int64_t k = 0; k < n; ++k) positions.push_back(i + k * (skip + 1));
      }
    }
    if (positions.empty()) continue;
    const int64_t windows = static_cast<int64_t>(positions.size()) / n;
    const py::Expr pos =
        py::Expr::name(ctx.buffer(Tensor::from_int64(positions, {windows, n}), "positions"));
    const std::vector<int64_t> wanted(pool.begin() + begin, pool.begin() + end);
    const py::Expr table =
        py::Expr::name(ctx.buffer(Tensor::from_int64(wanted, {grams, n}), "pool"));
    py::Expr grams_at = x.index({py::lit("..."), pos}).method("unsqueeze", {py::lit(-2)});
    py::Expr found = py::binary("==", grams_at, table).method("all", {py::lit(-1)});
    counts.push_back(py::Expr::name(ctx.local(found.method("sum", {py::lit(-2)}), "counts")));
    if (grams * outputs > (int64_t{1} << 26)) return ctx.error("n-gram table too large");
    for (int64_t g = 0; g < grams; ++g) {
      if (first + g >= static_cast<int64_t>(slots.size())) {
        return ctx.error("ngram_indexes is shorter than the pool");
      }
      std::vector<double> row(outputs, 0.0);
      const double w = weights.empty() || mode == "TF" ? 1.0 : weights[first + g];
      row[slots[first + g]] = w;
      mapping.insert(mapping.end(), row.begin(), row.end());
    }
  }
  std::vector<int64_t> out_dims = ctx.out_shape();
  if (counts.empty())
    // py_tuple spells a one-dim size `(n,)`, which a call's argument list cannot hold.
    return ctx.emit(
        py::Expr::raw(x.str() + ".new_zeros" + py_tuple(out_dims) + ".float()", x.uses()), "tfidf",
        ctx.batched(0) && ctx.rank(0) == 2);
  const int64_t rows = static_cast<int64_t>(mapping.size()) / outputs;
  const py::Expr to_slots = py::Expr::name(
      ctx.buffer(Tensor::from_double(mapping, {rows, outputs}, DType::kFloat), "slots"));
  py::Expr all = counts.size() == 1
                     ? counts[0]
                     : py::call(py::torch("cat"), {py::list(std::move(counts)), py::lit(-1)});
  all = mode == "IDF" ? py::binary(">", all, py::lit(0)).method("float") : all.method("float");
  return ctx.emit(py::binary("@", all, to_slots), "tfidf", ctx.batched(0) && ctx.rank(0) == 2);
}

}  // namespace

void register_text(HandlerRegistry& t) { t.add("TfIdfVectorizer", tfidf_vectorizer); }

}  // namespace torchonnx
