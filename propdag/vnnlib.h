// VNN-LIB properties: input boxes and the output constraints that describe a counterexample.
#pragma once

#include <string_view>
#include <vector>

#include "common/error.h"
#include "propdag/op.h"

namespace propdag {

/// coef . y <= rhs, y the graph outputs flattened and concatenated (Y_0, Y_1, ...).
struct OutputConstraint {
  Vec coef;
  double rhs = 0;
};

/// One disjunct of the property: inputs in `box` and all of `unsafe` holding is a counterexample.
struct SpecCase {
  Interval box;
  std::vector<OutputConstraint> unsafe;
};

/// A property: a counterexample is any input/output pair matching one of the cases.
struct Spec {
  int64_t num_inputs = 0, num_outputs = 0;
  std::vector<SpecCase> cases;
  /// Smallest box holding every case's box.
  Interval hull() const;
};

/// Parses VNN-LIB text: declare-const X_i/Y_i Real, assert with and/or/<=/>=/</> over linear
/// terms (+, -, * by a number). The assertions are brought to disjunctive normal form; in each
/// disjunct, bounds on single X variables make the box, constraints over Y the unsafe set.
common::Result<Spec> parse_vnnlib(std::string_view text, std::string_view source);
/// Reads a file (.gz too) and parses it.
common::Result<Spec> read_vnnlib(std::string_view path);

}  // namespace propdag
