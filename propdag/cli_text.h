// What the propdag CLI reads from and prints to text. Not installed.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "propdag/model.h"

namespace propdag::cli {

/// --input-box LO,HI as the box [LO, HI]^size; an error naming the text otherwise.
common::Result<Interval> parse_box(const std::string& text, int64_t size);

/// Each output's bounds: per output its name and one `i: [lo, hi]` line per element, or with
/// `json` one line {"outputs": [{"name", "lower", "upper"}...], "ms"} (null for a non-finite end).
void print_bounds(const Model& model, const std::vector<Interval>& bounds, bool json, double ms);

}  // namespace propdag::cli
