#include "propdag/objective.h"

namespace propdag::internal {
namespace {

// Cases with at least three and at most this many constraints also get the average of each
// pair. Two constraints get none: CaseSearch::joint_margin finds the best weights of the two
// rows' linear bounds per box, and a third row is a third of every backward pass. On lsnc
// quadrotor2d_state_0's Lyapunov case (two constraints) the search took the same boxes without
// it (2.05 M) at 19% more boxes a second.
constexpr Eigen::Index kPairRows = 5;

}  // namespace

Mat row_weights(Eigen::Index k) {
  std::vector<Vec> rows;
  for (Eigen::Index r = 0; r < k; ++r) rows.push_back(Vec::Unit(k, r));
  if (k >= 3 && k <= kPairRows)
    for (Eigen::Index i = 0; i < k; ++i)
      for (Eigen::Index j = i + 1; j < k; ++j)
        rows.push_back(0.5 * (Vec::Unit(k, i) + Vec::Unit(k, j)));
  if (k >= 3) rows.push_back(Vec::Constant(k, 1.0 / static_cast<double>(k)));
  Mat w(static_cast<Eigen::Index>(rows.size()), k);
  for (size_t r = 0; r < rows.size(); ++r)
    w.row(static_cast<Eigen::Index>(r)) = rows[r].transpose();
  return w;
}

std::vector<Mat> objective_of(const Model& model, const SpecCase& c) {
  const auto k = static_cast<Eigen::Index>(c.unsafe.size());
  const Mat w = row_weights(k);
  std::vector<Mat> objective;
  Eigen::Index at = 0;
  for (int o : model.dag().outputs()) {
    Mat m(k, model.numel(o));
    for (Eigen::Index r = 0; r < k; ++r) m.row(r) = c.unsafe[r].coef.segment(at, m.cols());
    at += m.cols();
    objective.push_back(w * m);
  }
  return objective;
}

Vec rhs_of(const SpecCase& c) {
  Vec rhs(static_cast<Eigen::Index>(c.unsafe.size()));
  for (Eigen::Index r = 0; r < rhs.size(); ++r) rhs[r] = c.unsafe[r].rhs;
  return row_weights(rhs.size()) * rhs;
}

}  // namespace propdag::internal
