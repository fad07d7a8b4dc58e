// Text: TfIdfVectorizer.
#include <algorithm>

#include "shapeonnx/rules/rules.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::DType;
using common::Status;

// TfIdfVectorizer(X [C] or [B, C]) -> float [max(ngram_indexes) + 1] or [B, that].
Status tfidf_rule(InferContext& ctx) {
  const std::vector<int64_t> indexes = ctx.node().attr_ints("ngram_indexes", {});
  if (indexes.empty()) return ctx.error("TfIdfVectorizer needs ngram_indexes");
  if (ctx.rank(0) < 1 || ctx.rank(0) > 2)
    return ctx.error("TfIdfVectorizer input must be 1-D or 2-D");
  for (int64_t i : indexes) {
    if (i < 0 || i >= (int64_t{1} << 24)) return ctx.error("ngram_indexes out of range");
  }
  const int64_t size = *std::max_element(indexes.begin(), indexes.end()) + 1;
  Dims out{size};
  if (ctx.rank(0) == 2) out.insert(out.begin(), ctx.shape(0)[0]);
  ctx.set_output(0, DType::kFloat, std::move(out));
  return {};
}

}  // namespace

void register_text_rules(ShapeRegistry& table) { table.add("TfIdfVectorizer", &tfidf_rule); }

}  // namespace shapeonnx
