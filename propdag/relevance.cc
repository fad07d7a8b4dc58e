#include "propdag/relevance.h"

#include <algorithm>
#include <utility>

namespace propdag::internal {
namespace {

constexpr size_t kRemembered = 8;

// Marks in `in` the columns that the rows of `term` marked in `out` hold nonzero entries in.
void mark_term(const LinearTerm& t, const std::vector<char>& out, std::vector<char>& in) {
  const auto rows = static_cast<int64_t>(out.size());
  if (t.dense) {  // column-major: down each column, until a marked row's weight is nonzero
    const auto cols = static_cast<int64_t>(in.size());
    for (int64_t col = 0; col < cols; ++col)
      for (int64_t r = 0; r < rows && in[col] == 0; ++r)
        if (out[r] != 0 && (t.w.size() != 0 ? t.w(r, col) != 0 : t.wf(r, col) != 0)) in[col] = 1;
    return;
  }
  if (t.gather) {
    t.gather->for_each([&](int64_t i, int64_t j, double v) {
      if (out[i] != 0 && v != 0) in[j] = 1;
    });
    return;
  }
  if (t.row_entries && t.s.size() == 0) {  // a lazy term: its rows, without building it
    LinearTerm::Entries entries;
    for (int64_t r = 0; r < rows; ++r) {
      if (out[r] == 0) continue;
      entries.clear();
      t.row_entries(r, entries);
      for (const auto& [col, v] : entries)
        if (v != 0) in[col] = 1;
    }
    return;
  }
  const SpMat& s = t.sparse();
  for (int64_t r = 0; r < rows; ++r) {
    if (out[r] == 0) continue;
    for (SpMat::InnerIterator it(s, r); it; ++it)
      if (it.value() != 0) in[it.col()] = 1;
  }
}

// Per objective matrix, which of its columns some row weighs.
std::vector<std::vector<char>> weighed_columns(const std::vector<Mat>& c) {
  std::vector<std::vector<char>> columns(c.size());
  for (size_t o = 0; o < c.size(); ++o) {
    columns[o].resize(c[o].cols());
    for (Eigen::Index col = 0; col < c[o].cols(); ++col)
      columns[o][col] = static_cast<char>((c[o].col(col).array() != 0).any());
  }
  return columns;
}

Relevance relevant(const Model& model, const std::vector<std::vector<char>>& columns) {
  const Dag& dag = model.dag();
  Relevance mark(dag.size());
  auto at = [&](int n) -> std::vector<char>& {
    if (mark[n].empty()) mark[n].assign(model.numel(n), 0);
    return mark[n];
  };
  for (size_t o = 0; o < columns.size() && o < dag.outputs().size(); ++o) {
    if (std::none_of(columns[o].begin(), columns[o].end(), [](char v) { return v != 0; })) continue;
    std::vector<char>& m = at(dag.outputs()[o]);
    for (size_t col = 0; col < columns[o].size() && col < m.size(); ++col)
      m[col] |= columns[o][col];
  }
  for (int n = dag.size() - 1; n >= 0; --n) {  // Dag nodes are stored topologically
    const BoundOp* op = model.op(n);
    if (op == nullptr || mark[n].empty()) continue;
    const std::vector<char>& out = mark[n];
    if (std::none_of(out.begin(), out.end(), [](char v) { return v != 0; })) continue;
    const std::vector<int>& inputs = dag.node(n).inputs;
    auto input = [&](size_t slot) { return slot < inputs.size() ? inputs[slot] : -1; };
    if (const auto* affine = dynamic_cast<const AffineOp*>(op)) {
      for (const LinearTerm& t : affine->terms())
        if (input(static_cast<size_t>(t.slot)) >= 0) mark_term(t, out, at(input(t.slot)));
      continue;
    }
    const int x = input(0);
    if (op->scalar_rule() != nullptr && x >= 0 && model.numel(x) == model.numel(n)) {
      std::vector<char>& in = at(x);
      for (size_t i = 0; i < out.size(); ++i) in[i] = static_cast<char>(in[i] | out[i]);
      continue;
    }
    if (const PairRule* pair = op->pair_rule()) {
      const int y = input(1);
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == 0) continue;
        if (x >= 0) at(x)[pair->x_index()[i]] = 1;
        if (y >= 0) at(y)[pair->y_index()[i]] = 1;
      }
      continue;
    }
    for (int p : inputs)  // any other op: all of every variable input
      if (p >= 0) std::fill(at(p).begin(), at(p).end(), 1);
  }
  for (int n = 0; n < dag.size(); ++n) {
    if (mark[n].empty()) {
      mark[n].assign(model.numel(n), 0);  // reaches no objective column
    } else if (std::all_of(mark[n].begin(), mark[n].end(), [](char v) { return v != 0; })) {
      mark[n].clear();
      mark[n].shrink_to_fit();
    }
  }
  return mark;
}

}  // namespace

Relevance relevant_elements(const Model& model, const std::vector<Mat>& c) {
  return relevant(model, weighed_columns(c));
}

std::shared_ptr<const Relevance> RelevanceCache::get(const Model& model,
                                                     const std::vector<Mat>& c) {
  std::vector<std::vector<char>> columns = weighed_columns(c);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].columns != columns) continue;
      std::rotate(entries_.begin() + static_cast<std::ptrdiff_t>(i),
                  entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1, entries_.end());
      return entries_.back().relevance;
    }
  }
  auto relevance = std::make_shared<const Relevance>(relevant(model, columns));
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({std::move(columns), relevance});
  if (entries_.size() > kRemembered) entries_.erase(entries_.begin());
  return relevance;
}

std::shared_ptr<const Relevance> cached_relevance(const Model& model, const std::vector<Mat>& c) {
  return model.relevance_cache().get(model, c);
}

}  // namespace propdag::internal
