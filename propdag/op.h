// The per-op bound rule: an interval transformer and one linear relaxation, from which the
// forward (IBP) and backward (CROWN) engines both derive their bounds.
#pragma once

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.h"
#include "propdag/gather.h"

namespace propdag {

struct Curve;
struct Lines;
struct Planes;

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;
using SpMat = Eigen::SparseMatrix<double, Eigen::RowMajor>;

/// Elementwise bounds of a flattened tensor (row-major).
struct Interval {
  Vec lo, hi;
  Eigen::Index size() const { return lo.size(); }
};

/// out += W * in[slot], with W dense, a gather or sparse (rows: output elements, cols: input
/// elements). A gather (`gather` set: at most one entry per row, as index arithmetic) is
/// multiplied by through gather.h and never built as a matrix by the engines. A sparse term may
/// be lazy (`row_entries` set): its matrix is built on the first call of sparse(), so a program
/// that never multiplies by it (the torch engine, which applies convolutions as convolutions)
/// does not pay for it; sparse() builds a gather's matrix likewise. Not thread-safe on first use.
struct LinearTerm {
  using Entries = std::vector<std::pair<int64_t, double>>;
  int slot = 0;
  bool dense = false;
  /// A dense weight, as double or, when large and exact as float (`wf`, `w` empty), as float:
  /// half the memory of a model's largest layers. Read it through the dense_* functions below.
  Mat w;
  Eigen::MatrixXf wf;
  /// The sparse matrix as built so far: read it through sparse(); builders fill it directly.
  mutable SpMat s;
  /// Lazy terms: appends the entries of one row to `out` (columns ascending); `rows` x `cols`
  /// is the matrix's size and `entries` its number of stored entries.
  std::function<void(int64_t row, Entries& out)> row_entries;
  int64_t rows = 0, cols = 0, entries = 0;
  std::shared_ptr<const Gather> gather;

  const SpMat& sparse() const {
    if (gather && s.size() == 0 && gather->rows * gather->cols != 0) s = gather_sparse(*gather);
    if (row_entries && s.size() == 0 && rows * cols != 0) build();
    return s;
  }
  /// Stored coefficients (the matrix's entries), without building a lazy term or a gather.
  int64_t stored() const {
    if (dense) return w.size() + wf.size();
    if (gather) return gather->entries();
    return row_entries ? entries : s.nonZeros();
  }

  LinearTerm() = default;
  LinearTerm(const LinearTerm&) = default;
  LinearTerm& operator=(const LinearTerm&) = default;
  // Eigen 3.4's SparseMatrix has no move constructor, so a moved term would copy its matrix
  // (hundreds of MiB for a large convolution): moving swaps the storage instead.
  LinearTerm(LinearTerm&& other) noexcept
      : slot(other.slot),
        dense(other.dense),
        w(std::move(other.w)),
        wf(std::move(other.wf)),
        row_entries(std::move(other.row_entries)),
        rows(other.rows),
        cols(other.cols),
        entries(other.entries),
        gather(std::move(other.gather)) {
    s.swap(other.s);
  }
  LinearTerm& operator=(LinearTerm&& other) noexcept {
    slot = other.slot;
    dense = other.dense;
    w = std::move(other.w);
    wf = std::move(other.wf);
    s.swap(other.s);
    row_entries = std::move(other.row_entries);
    rows = other.rows, cols = other.cols, entries = other.entries;
    gather = std::move(other.gather);
    return *this;
  }
  ~LinearTerm() = default;

 private:
  void build() const {
    s.resize(rows, cols);
    s.reserve(entries);
    Entries row;
    for (int64_t r = 0; r < rows; ++r) {
      s.startVec(r);
      row.clear();
      row_entries(r, row);
      for (const auto& [col, value] : row) s.insertBack(r, col) = value;
    }
    s.finalize();
  }
};

/// The op's relaxation on the current input bounds.
struct Relaxation {
  enum class Kind {
    kAffine,       ///< out = sum(terms) + bias, exact
    kElementwise,  ///< lo_slope*x+lo_bias <= out <= up_slope*x+up_bias, x = in[0], per element
    kConstant,     ///< out in the op's output interval (no dependency kept)
    /// lo_map*x+lo_bias <= out <= up_map*x+up_bias, x = in[0] (maps: outputs x inputs); with
    /// lo_map1 / up_map1 set, + lo_map1*y / up_map1*y, y = in[1] (products of two variables)
    kLinear,
  };
  Kind kind = Kind::kConstant;
  const std::vector<LinearTerm>* terms = nullptr;  ///< kAffine: owned by the op
  const Vec* bias = nullptr;                       ///< kAffine: owned by the op
  Vec lo_slope, lo_bias, up_slope, up_bias;
  /// kElementwise, optional: the lower slope of element i may be anything in
  /// [lo_min[i], lo_max[i]] with the same lo_bias (empty: fixed). Optimized bounds tune it.
  Vec lo_min, lo_max;
  /// kElementwise, optional: tangent families (see Lines in relax.h). For element i of n, index i
  /// of t0 / t_min / t_max is the lower line's tangent point (CROWN's) and range, index n + i the
  /// upper line's; the tangent_line of `curve` at any point of a range with t_min < t_max is a
  /// valid line there (elsewhere the fixed line stands). Optimized bounds tune the points.
  const Curve* curve = nullptr;
  Vec t0, t_min, t_max, reach;
  /// kLinear: the lower and upper maps on in[0] (none, 0 rows, when in[0] is constant), and on
  /// in[1] (none when the relaxation depends on in[0] only). Held apart from the rest: every
  /// Eigen 3.4 SparseMatrix allocates when constructed, even empty, and has no move operations,
  /// which cost a bound of a small network a fifth of its time while each Relaxation held four.
  struct Maps {
    SpMat lo, up, lo1, up1;
  };
  std::shared_ptr<const Maps> maps;
  /// Sets `maps` to new empty maps, to be filled.
  Maps& new_maps() {
    auto m = std::make_shared<Maps>();
    maps = m;
    return *m;
  }
  const SpMat& lo_map() const { return maps ? maps->lo : empty_map(); }
  const SpMat& up_map() const { return maps ? maps->up : empty_map(); }
  const SpMat& lo_map1() const { return maps ? maps->lo1 : empty_map(); }
  const SpMat& up_map1() const { return maps ? maps->up1 : empty_map(); }
  static const SpMat& empty_map() {
    static const SpMat empty;
    return empty;
  }
  /// kLinear, set by optimized bounds from BoundOp::second_relax (Options::alpha_planes): a
  /// second valid relaxation of the same kind and shapes. Per output element and side, any
  /// convex combination of the two is valid; CROWN takes this one, alpha tunes the weights.
  std::shared_ptr<const Relaxation> second;
};

/// An elementwise op of input 0 alone whose interval and relaxation are, element by element,
/// functions of that element's bounds: an engine that bounds many boxes at once (the torch
/// engine) evaluates it per element over all of them rather than box by box. relax() gives the
/// same lines, gathered per box.
class ScalarRule {
 public:
  virtual ~ScalarRule() = default;
  /// The output's range over [l, u].
  virtual std::pair<double, double> range(double l, double u) const = 0;
  /// Whether relax() gives lines (else the output interval, for every box).
  virtual bool has_lines() const = 0;
  /// The lines on [l, u], whose output is within [lo, hi] (the node's bounds). When the lines
  /// carry no `curve`, any lower slope in [lo_min, lo_max] is valid with the same lo_bias.
  virtual Lines lines(double l, double u, double lo, double hi) const = 0;
};

/// An elementwise product or quotient of input 0 (or a constant) and input 1, with broadcasting:
/// output element i reads element x_index()[i] of input 0 and y_index()[i] of input 1. Its
/// relaxation per element is a pair of planes in those two elements, which an engine that
/// bounds many boxes at once evaluates per element over all of them.
class PairRule {
 public:
  virtual ~PairRule() = default;
  virtual const std::vector<int64_t>& x_index() const = 0;
  virtual const std::vector<int64_t>& y_index() const = 0;
  /// Whether the planes have terms in input 0 (a variable there), in input 1 (not for a square,
  /// x * x, whose lines are on input 0 alone).
  virtual bool uses_x() const = 0;
  virtual bool uses_y() const = 0;
  /// The range of output element i for its inputs in [lx, ux] and [ly, uy] (lx, ux unused when
  /// input 0 is a constant).
  virtual std::pair<double, double> range(int64_t i, double lx, double ux, double ly,
                                          double uy) const = 0;
  /// The planes of every output element for one box's input bounds (`in` as for relax(),
  /// `planes` sized to the output); false where relax() gives only the output interval for the
  /// box. The planes are the entries of relax()'s maps and biases, so both give equal bounds.
  virtual bool planes(const std::vector<const Interval*>& in,
                      std::vector<Planes>& planes) const = 0;
  /// The second planes (second_relax()'s entries) for the same box, where the op has them
  /// (products of two variables); false otherwise.
  virtual bool other_planes(const std::vector<const Interval*>&, std::vector<Planes>&) const {
    return false;
  }
};

/// One output of one ONNX node. Input slots are the node's input positions; `in[slot]` is null
/// for a constant input.
class BoundOp {
 public:
  virtual ~BoundOp() = default;
  /// Bounds of the output from bounds of the variable inputs.
  virtual Interval interval(const std::vector<const Interval*>& in) const = 0;
  /// A linear relaxation valid for inputs inside `in` (and output inside `out`, this op's
  /// interval on `in`).
  virtual Relaxation relax(const std::vector<const Interval*>& in, const Interval& out) const = 0;
  /// A second valid kLinear relaxation of the same shapes as relax()'s on `in` (products of two
  /// variables: the other McCormick planes); nullopt where the op has none.
  virtual std::optional<Relaxation> second_relax(const std::vector<const Interval*>&) const {
    return std::nullopt;
  }
  /// Whether second_relax() gives a relaxation on finite bounds.
  virtual bool has_second_relax() const { return false; }
  /// True when the relaxation depends on the input bounds (nonlinear ops).
  virtual bool nonlinear() const { return true; }
  /// True for elementwise ops that are linear on each side of 0 (ReLU, LeakyReLU): a verifier may
  /// split the domain where an element of the input is >= 0 from where it is <= 0 (NeuronSplit),
  /// and on each side the relaxation of that element is exact.
  virtual bool linear_on_each_side_of_zero() const { return false; }
  /// True for elementwise ops whose output is its input rounded to an integer (Cast to an integer
  /// type, Floor): the output is constant between consecutive integers of the input, so a verifier
  /// may split an input that reaches such an op at integers (see verify.h).
  virtual bool rounds_to_integers() const { return false; }
  /// Stored coefficients a backward step multiplies by, per row (cost model).
  virtual int64_t weight_entries() const { return 0; }
  /// Those of weight_entries() that are stored densely (a dense product runs faster per entry).
  virtual int64_t dense_weight_entries() const { return 0; }
  /// A relaxation that is the same on every box (an affine op's), owned by the op and read by
  /// every pass; null when relax() depends on the bounds.
  virtual const Relaxation* fixed_relaxation() const { return nullptr; }
  /// The op's rule element by element, where it has one of these forms (null otherwise).
  virtual const ScalarRule* scalar_rule() const { return nullptr; }
  virtual const PairRule* pair_rule() const { return nullptr; }
};

/// An affine op: out = sum_k W_k in[slot_k] + bias. Interval and relaxation both follow.
class AffineOp : public BoundOp {
 public:
  AffineOp(std::vector<LinearTerm> terms, Vec bias);
  AffineOp(const AffineOp&) = delete;  // fixed_ points into the op
  AffineOp& operator=(const AffineOp&) = delete;
  Interval interval(const std::vector<const Interval*>& in) const override;
  Relaxation relax(const std::vector<const Interval*>& in, const Interval& out) const override;
  const Relaxation* fixed_relaxation() const override { return fixed_.get(); }
  bool nonlinear() const override { return false; }
  int64_t weight_entries() const override;
  int64_t dense_weight_entries() const override;
  const std::vector<LinearTerm>& terms() const { return terms_; }
  const Vec& bias() const { return bias_; }

 private:
  std::vector<LinearTerm> terms_;
  Vec bias_;
  std::unique_ptr<const Relaxation> fixed_;  // relax()'s value
};

/// Dense terms with at least this many entries are stored as float when the weight is float data
/// (exact, since the rule reads float32 values into doubles without arithmetic).
constexpr int64_t kFloatWeightEntries = int64_t{1} << 20;
/// For a dense term with weight W: a W and a W^T. Float weights are widened a block of rows at
/// a time, so no double copy of the whole matrix is made.
Mat dense_left(const Mat& a, const LinearTerm& t);
Mat dense_left_transposed(const Mat& a, const LinearTerm& t);
/// The dense weight as a double matrix (a copy for float storage).
Mat dense_matrix(const LinearTerm& t);

}  // namespace propdag
