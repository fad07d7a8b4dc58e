// Node bounds carried into the torch engine (Engine::linear_bounds' node_bounds): intersected
// with those computed before they are used, box by box, and returned for every node, as the
// Eigen engine does with BoundsIn::node_bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "propdag/engine.h"
#include "propdag/test_util.h"
#include "propdag/torch/torch_engine.h"
#include "propdag/torch/torch_test_util.h"
#include "propdag/vnnlib.h"

namespace propdag::torch_engine {
namespace {

using torch_test::engine_for;
using torch_test::existing;
using torch_test::expect_close;
using torch_test::load_acasxu;
using torch_test::one;

constexpr double kInf = std::numeric_limits<double>::infinity();

Interval row(const Boxes& b, Eigen::Index i) {
  return {b.lo.row(i).transpose(), b.hi.row(i).transpose()};
}

// Network 1 (test_util.h), two boxes [-1, 1]^2. Box 0 carries h in [0, 2] (as engine_test.cc's
// NodeBoundsPassedInNarrowThoseOfTheBox: both ReLUs split active), box 1 an infinite row (nothing
// known). Box 0: the ReLUs are the identity, CROWN's y = h1 + h2 = 2 x1 in [-2, 2], and with
// IBP's [0, 4]: [0, 2]; box 1 keeps [0, 3]. Returned: every node's bounds, h's [0, 2] for box 0
// and its own [-2, 2] for box 1; IBP returns none.
TEST(TorchNodeBounds, CarriedBoundsNarrowTheirBoxOnly) {
  Model m = test::build(test::kNet1);
  std::unique_ptr<Engine> engine = engine_for(m);
  const int h = m.dag().find("h");
  Boxes in{Mat::Constant(2, 2, -1), Mat::Constant(2, 2, 1)};
  std::vector<Boxes> nodes(static_cast<size_t>(m.dag().size()));  // empty: nothing known
  nodes[h].lo.resize(2, 2);
  nodes[h].hi.resize(2, 2);
  nodes[h].lo << 0, 0, -kInf, -kInf;
  nodes[h].hi << 2, 2, kInf, kInf;
  auto y = engine->linear_bounds(in, {Mat::Identity(1, 1)}, {Method::kCrown}, nullptr, &nodes);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_DOUBLE_EQ(y->lo(0, 0), 0);
  EXPECT_DOUBLE_EQ(y->hi(0, 0), 2);
  EXPECT_DOUBLE_EQ(y->lo(1, 0), 0);
  EXPECT_DOUBLE_EQ(y->hi(1, 0), 3);
  ASSERT_EQ(nodes.size(), static_cast<size_t>(m.dag().size()));
  for (int n = 0; n < m.dag().size(); ++n) {
    EXPECT_EQ(nodes[n].lo.rows(), 2) << n;
    EXPECT_EQ(nodes[n].lo.cols(), m.numel(n)) << n;
  }
  EXPECT_EQ(nodes[h].lo.row(0), Eigen::RowVector2d(0, 0));
  EXPECT_EQ(nodes[h].hi.row(0), Eigen::RowVector2d(2, 2));
  EXPECT_EQ(nodes[h].lo.row(1), Eigen::RowVector2d(-2, -2));
  EXPECT_EQ(nodes[h].hi.row(1), Eigen::RowVector2d(2, 2));

  y = engine->linear_bounds(in, {Mat::Identity(1, 1)}, {Method::kIbp}, nullptr, &nodes);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_TRUE(nodes.empty());
}

// Halves of every box of `boxes` along `dim`, each box's pair in a row.
Boxes halves(const Boxes& boxes, Eigen::Index dim) {
  const Eigen::Index k = boxes.count(), n = boxes.lo.cols();
  Boxes out{Mat(2 * k, n), Mat(2 * k, n)};
  for (Eigen::Index i = 0; i < k; ++i) {
    const double mid = 0.5 * (boxes.lo(i, dim) + boxes.hi(i, dim));
    for (Eigen::Index j : {2 * i, 2 * i + 1}) {
      out.lo.row(j) = boxes.lo.row(i);
      out.hi.row(j) = boxes.hi.row(i);
    }
    out.hi(2 * i, dim) = mid;
    out.lo(2 * i + 1, dim) = mid;
  }
  return out;
}

// Each box's node bounds carried to both of its halves (rows 2i and 2i + 1).
std::vector<Boxes> to_halves(const std::vector<Boxes>& nodes) {
  std::vector<Boxes> out;
  for (const Boxes& b : nodes) {
    Boxes twice{Mat(2 * b.lo.rows(), b.lo.cols()), Mat(2 * b.lo.rows(), b.lo.cols())};
    for (Eigen::Index i = 0; i < b.lo.rows(); ++i)
      for (Eigen::Index j : {2 * i, 2 * i + 1}) {
        twice.lo.row(j) = b.lo.row(i);
        twice.hi.row(j) = b.hi.row(i);
      }
    out.push_back(std::move(twice));
  }
  return out;
}

// ACAS Xu 1_1 on prop_2's box, CROWN as verify() runs it (every row refined), its five outputs
// as the objective: the box, then its halves along input 0, then their halves along input 1,
// each generation carrying its parents' node bounds, in one torch call per generation. Every
// box's output and node bounds equal the Eigen engine's given the same carried bounds (its own
// chain of linear_bounds calls) within 1e-9 relative; carrying tightens some quarter's output
// bounds over those computed without it; sampled points stay inside the quarters' bounds.
TEST(TorchNodeBounds, AcasXuChainEqualsEigen) {
  auto shared = load_acasxu(VNNCOMP_BENCHMARKS, "1_1", "prop_2");
  if (!shared) GTEST_SKIP() << "shared benchmarks absent";
  auto& [model, spec] = *shared;
  std::unique_ptr<Engine> engine = engine_for(model);
  Options opt;
  opt.refine_stable_rows = true;
  const std::vector<Mat> c{Mat::Identity(5, 5)};
  const Interval whole = spec.hull();
  Boxes boxes{whole.lo.transpose(), whole.hi.transpose()};
  std::vector<Boxes> nodes;                           // the torch engine's, per node (K x numel)
  std::vector<std::vector<Interval>> eigen_nodes(1);  // the Eigen engine's, per box
  Boxes y;
  for (int generation = 0; generation < 3; ++generation) {
    if (generation > 0) {
      boxes = halves(boxes, generation - 1);
      nodes = to_halves(nodes);
      std::vector<std::vector<Interval>> twice;
      for (const auto& e : eigen_nodes) twice.push_back(e), twice.push_back(e);
      eigen_nodes = std::move(twice);
    }
    auto got = engine->linear_bounds(boxes, c, opt, nullptr, &nodes);
    ASSERT_TRUE(got.ok()) << got.error().str();
    y = *got;
    ASSERT_EQ(nodes.size(), static_cast<size_t>(model.dag().size()));
    for (Eigen::Index i = 0; i < boxes.count(); ++i) {
      BoundsIn carried;
      carried.node_bounds = &eigen_nodes[i];
      BoundsOut eigen;
      eigen.want.node_bounds = true;
      auto ref = linear_bounds(model, row(boxes, i), c, opt, carried, &eigen);
      ASSERT_TRUE(ref.ok()) << ref.error().str();
      eigen_nodes[i] = std::move(eigen.node_bounds);
      const std::string what =
          "generation " + std::to_string(generation) + " box " + std::to_string(i);
      expect_close(ref->lo, y.lo.row(i).transpose(), 1e-9, what + " lo");
      expect_close(ref->hi, y.hi.row(i).transpose(), 1e-9, what + " hi");
      for (int n = 0; n < model.dag().size(); ++n) {
        const std::string node = what + " node " + std::to_string(n);
        expect_close(eigen_nodes[i][n].lo, nodes[n].lo.row(i).transpose(), 1e-9, node);
        expect_close(eigen_nodes[i][n].hi, nodes[n].hi.row(i).transpose(), 1e-9, node);
      }
    }
  }
  auto fresh = engine->linear_bounds(boxes, c, opt);
  ASSERT_TRUE(fresh.ok()) << fresh.error().str();
  EXPECT_TRUE(((y.lo - fresh->lo).array() > 1e-9).any() ||
              ((fresh->hi - y.hi).array() > 1e-9).any())
      << "carrying changes nothing here";
  EXPECT_TRUE((y.lo.array() >= fresh->lo.array() - 1e-12).all());
  EXPECT_TRUE((y.hi.array() <= fresh->hi.array() + 1e-12).all());
  std::mt19937 rng(7);
  for (Eigen::Index i = 0; i < boxes.count(); ++i)
    for (int s = 0; s < 50; ++s) {
      Vec x(boxes.lo.cols());
      for (Eigen::Index j = 0; j < x.size(); ++j)
        x[j] = std::uniform_real_distribution<double>(boxes.lo(i, j), boxes.hi(i, j))(rng);
      auto out = output_bounds(model, {x, x}, {Method::kIbp});
      ASSERT_TRUE(out.ok());
      const Vec& v = out->front().lo;
      EXPECT_TRUE((v.array() >= y.lo.row(i).transpose().array() - 1e-9).all()) << i;
      EXPECT_TRUE((v.array() <= y.hi.row(i).transpose().array() + 1e-9).all()) << i;
    }
}

// tllverifybench N=M=16 instance_1_2 on [0, 1]^2 (not its property's box): many ReLU inputs get
// bounds [-a, a] but for rounding, which the two engines round differently. With the lower slope
// chosen by u > -l the engines chose different lines from the third min bank on, and full CROWN
// differed by 8e-4 at the output (9.6% on N=M=40 instance_4_1); with ties taken within 1e-9 of
// the width (relax.cc's leaky_relu_lines) every node's bounds agree.
TEST(TorchNodeBounds, TllOnTheUnitBoxEqualsEigen) {
  const std::string path =
      existing(std::filesystem::path(VNNCOMP_BENCHMARKS) / "tllverifybench_2023" / "onnx" /
               "tllBench_n=2_N=M=16_m=1_instance_1_2.onnx");
  if (path.empty()) GTEST_SKIP() << "shared benchmarks absent";
  auto loaded = propdag::Model::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().str();
  const propdag::Model& model = *loaded;
  std::unique_ptr<Engine> engine = engine_for(model);
  const Eigen::Index outputs = model.numel(model.dag().outputs()[0]);
  const std::vector<Mat> c{Mat::Identity(outputs, outputs)};
  const Interval box{Vec::Zero(model.input_size()), Vec::Ones(model.input_size())};
  Options opt;  // full CROWN
  std::vector<Boxes> nodes;
  auto got = engine->linear_bounds(one(box), c, opt, nullptr, &nodes);
  ASSERT_TRUE(got.ok()) << got.error().str();
  BoundsOut eigen;
  eigen.want.node_bounds = true;
  auto ref = linear_bounds(model, box, c, opt, {}, &eigen);
  ASSERT_TRUE(ref.ok()) << ref.error().str();
  expect_close(ref->lo, got->lo.row(0).transpose(), 1e-9, "output lo");
  expect_close(ref->hi, got->hi.row(0).transpose(), 1e-9, "output hi");
  for (int n = 0; n < model.dag().size(); ++n) {
    const std::string node = "node " + model.dag().node(n).name;
    expect_close(eigen.node_bounds[n].lo, nodes[n].lo.row(0).transpose(), 1e-9, node + " lo");
    expect_close(eigen.node_bounds[n].hi, nodes[n].hi.row(0).transpose(), 1e-9, node + " hi");
  }
}

}  // namespace
}  // namespace propdag::torch_engine
