// Conversions between Eigen matrices and tensors, and the box chunking of the torch engine.
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {

at::Tensor to_tensor(const Vec& v, const at::TensorOptions& opts) {
  return at::from_blob(const_cast<double*>(v.data()), {v.size()}, at::kDouble)
      .to(opts, false, true);
}

at::Tensor to_tensor(const Mat& m, const at::TensorOptions& opts) {
  // Column-major data of m is the row-major data of m^T.
  at::Tensor t = at::from_blob(const_cast<double*>(m.data()), {m.cols(), m.rows()}, at::kDouble);
  return t.t().to(opts, false, true).contiguous();
}

Mat to_mat(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kDouble).contiguous();
  Mat m(c.size(0), c.size(1));
  // Row-major [K, n] data is the column-major data of the n x K transpose.
  m = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      c.data_ptr<double>(), c.size(0), c.size(1));
  return m;
}

Boxes to_boxes(const TBox& b) { return {to_mat(b.lo), to_mat(b.hi)}; }

bool cpu_paths(const at::Device& d) {
  return d.is_cpu() && std::getenv("PROPDAG_TORCH_DEVICE_PATHS") == nullptr;
}

// On the CPU, one call with all boxes at once streams every elementwise step through memory: it
// was 4x slower per box than the Eigen engine on ACAS Xu.
Eigen::Index box_chunk(const Model& m, const std::vector<double>& row_cost,
                       const at::TensorOptions& opts) {
  if (!cpu_paths(opts.device())) return std::numeric_limits<Eigen::Index>::max();
  double rows = 1, widest = 1;
  for (int n = 0; n < m.dag().size(); ++n) {
    widest = std::max(widest, static_cast<double>(m.numel(n)));
    if (row_cost[n] > 0) rows = std::max(rows, static_cast<double>(m.numel(n)));
  }
  const char* env = std::getenv("PROPDAG_TORCH_CHUNK_ENTRIES");
  const double entries = env != nullptr ? std::atof(env) : double{1 << 18};
  const double boxes = entries / (rows * widest);
  if (!(boxes < 0x1p62)) return std::numeric_limits<Eigen::Index>::max();
  return std::max<Eigen::Index>(1, static_cast<Eigen::Index>(boxes));
}

std::vector<Mat> to_mats(const at::Tensor& t) {
  const int64_t k = t.size(0), rows = t.size(1), n = t.size(2);
  const Mat all = to_mat(t.reshape({k, rows * n}));
  std::vector<Mat> out;
  out.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i)
    out.push_back(
        Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            all.row(i).eval().data(), rows, n));
  return out;
}

std::vector<TBox> node_rows(const Model& model, const std::vector<Boxes>& nodes, Eigen::Index k0,
                            Eigen::Index k, Eigen::Index total, const at::TensorOptions& opts) {
  std::vector<TBox> out(static_cast<size_t>(model.dag().size()));
  for (size_t n = 0; n < nodes.size() && n < out.size(); ++n) {
    const Boxes& b = nodes[n];
    if (b.lo.rows() != total || b.hi.rows() != total || b.lo.cols() != b.hi.cols() ||
        b.lo.cols() != model.numel(static_cast<int>(n)))
      continue;
    out[n] = {to_tensor(Mat(b.lo.middleRows(k0, k)), opts),
              to_tensor(Mat(b.hi.middleRows(k0, k)), opts)};
  }
  return out;
}

void store_rows(const std::vector<TBox>& b, Eigen::Index k0, Eigen::Index total,
                std::vector<Boxes>& nodes) {
  if (b.empty()) return;
  nodes.resize(b.size());
  for (size_t n = 0; n < b.size(); ++n) {
    if (!b[n].lo.defined()) continue;
    const Mat lo = to_mat(b[n].lo), hi = to_mat(b[n].hi);
    if (nodes[n].lo.rows() != total) nodes[n] = {Mat(total, lo.cols()), Mat(total, lo.cols())};
    nodes[n].lo.middleRows(k0, lo.rows()) = lo;
    nodes[n].hi.middleRows(k0, hi.rows()) = hi;
  }
}

at::Tensor stack_rows(const std::vector<Mat>& m, Eigen::Index rows, int64_t n,
                      const at::TensorOptions& opts) {
  Mat flat = Mat::Zero(static_cast<Eigen::Index>(m.size()), rows * n);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].size() == 0) continue;
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = m[i];
    flat.row(static_cast<Eigen::Index>(i)) =
        Eigen::Map<const Eigen::RowVectorXd>(row_major.data(), rows * n);
  }
  return to_tensor(flat, opts).reshape({flat.rows(), rows, n});
}

}  // namespace propdag::torch_engine::internal
