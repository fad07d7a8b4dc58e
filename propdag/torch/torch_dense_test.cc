// The torch engine's dense maps against Eigen products of the same weight: a small weight copied
// to the engine (with W+ and W-), and a large one (2^22 entries) read from the model's float or
// double storage a block at a time. Every product of the map: apply, adjoint, adjoint_rows and
// the interval ends.
#include <ATen/ops/from_blob.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "propdag/test_util.h"
#include "propdag/torch/torch_ops.h"

namespace propdag::torch_engine::internal {
namespace {

const LinearTerm& first_dense_term(const Model& m) {
  for (int n = 0; n < m.dag().size(); ++n)
    if (auto* a = dynamic_cast<const AffineOp*>(m.op(n)))
      if (a->terms().front().dense) return a->terms().front();
  ADD_FAILURE() << "no dense term";
  static const LinearTerm none;
  return none;
}

void expect_near(const Mat& got, const Mat& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  const double scale = 1 + want.cwiseAbs().maxCoeff();
  EXPECT_LE((got - want).cwiseAbs().maxCoeff(), 1e-12 * scale) << what;
}

TEST(TorchDense, MapsEqualEigenProducts) {
  const at::TensorOptions opts = at::TensorOptions().dtype(at::kDouble);
  for (auto [in, out] : {std::pair<int64_t, int64_t>{64, 32}, {4096, 1024}})
    for (common::DType dtype : {common::DType::kFloat, common::DType::kDouble}) {
      const std::string what = std::to_string(in) + " x " + std::to_string(out) +
                               (dtype == common::DType::kFloat ? " float" : " double");
      Model model = test::two_layer_net(in, out, 2, dtype, 3);
      const LinearTerm& t = first_dense_term(model);
      const Mat w = dense_matrix(t);  // out x in
      ASSERT_EQ(w.rows(), out);
      std::unique_ptr<LinearMap> map = dense_map(t, opts);
      EXPECT_STREQ(map->kind(), "dense");
      std::mt19937 rng(4);
      std::uniform_real_distribution<double> u(-1, 1);
      Mat x = Mat::NullaryExpr(3, in, [&] { return u(rng); });
      Mat y = Mat::NullaryExpr(3, out, [&] { return u(rng); });
      expect_near(to_mat(map->apply(to_tensor(x, opts))), x * w.transpose(), what + " apply");
      expect_near(to_mat(map->adjoint(to_tensor(y, opts))), y * w, what + " adjoint");
      std::vector<int64_t> picked{out - 1, 0, out / 2};
      at::Tensor rows = at::from_blob(picked.data(), {3}, at::kLong).clone();
      Mat want_rows(3, in);
      for (int i = 0; i < 3; ++i) want_rows.row(i) = w.row(picked[static_cast<size_t>(i)]);
      expect_near(to_mat(map->adjoint_rows(rows, out, opts, {}, nullptr)), want_rows,
                  what + " rows");
      // Ends of the box [x, x + |y'|]: each from the entries' signs (W+ lo + W- hi, ...).
      Mat hi = x + Mat::NullaryExpr(3, in, [&] { return std::abs(u(rng)); });
      const Mat wp = w.cwiseMax(0.0), wn = w.cwiseMin(0.0);
      TBox e = map->ends(to_tensor(x, opts), to_tensor(hi, opts));
      expect_near(to_mat(e.lo), x * wp.transpose() + hi * wn.transpose(), what + " lo");
      expect_near(to_mat(e.hi), hi * wp.transpose() + x * wn.transpose(), what + " hi");
    }
}

}  // namespace
}  // namespace propdag::torch_engine::internal
