// What the propdag CLI reads from and prints to text. Not installed.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "propdag/engine.h"
#include "propdag/model.h"

namespace propdag::cli {

/// --input-box LO,HI as the box [LO, HI]^size; an error naming the text otherwise.
common::Result<Interval> parse_box(const std::string& text, int64_t size);

/// Each output's bounds: per output its name and one `i: [lo, hi]` line per element, or with
/// `json` one line {"outputs": [{"name", "lower", "upper"}...], "ms"} (null for a non-finite end).
void print_bounds(const Model& model, const std::vector<Interval>& bounds, bool json, double ms);

/// The --stats line on stderr: {"crown": {"engine", "refine_budget" (null: infinite),
/// "budget_from", the report's counts, "cut_short"}}, with "per_box_ops" when given (the op
/// types the torch engine bounds one box at a time).
void print_report(const std::string& engine, const char* budget_from, const Options& o,
                  const BoundsReport& r, const std::vector<std::string>* per_box_ops);

}  // namespace propdag::cli
