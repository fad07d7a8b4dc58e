// What the propdag CLI reads from and prints to text: --input-box, the bounds listing and the
// --stats line on what CROWN cut short.
#include "propdag/cli_text.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/cli.h"

namespace propdag::cli {

common::Result<Interval> parse_box(const std::string& text, int64_t size) {
  size_t comma = text.find(',');
  try {
    if (comma == std::string::npos) throw std::invalid_argument("");
    size_t used_lo = 0, used_hi = 0;
    double lo = std::stod(text.substr(0, comma), &used_lo);
    double hi = std::stod(text.substr(comma + 1), &used_hi);
    if (used_lo != comma || used_hi != text.size() - comma - 1 || lo > hi)
      throw std::invalid_argument("");
    return Interval{Vec::Constant(size, lo), Vec::Constant(size, hi)};
  } catch (const std::exception&) {
    return common::Error{"", "", "", "--input-box expects LO,HI with LO <= HI, got '" + text + "'"};
  }
}

namespace {

// The entries of v, comma-separated, for JSON.
std::string numbers(const Vec& v) {
  std::string out;
  char buf[32];
  for (Eigen::Index i = 0; i < v.size(); ++i) {
    // JSON has no inf/NaN: a non-finite bound is printed as null.
    if (std::isfinite(v[i]))
      std::snprintf(buf, sizeof buf, "%s%.17g", i ? ", " : "", v[i]);
    else
      std::snprintf(buf, sizeof buf, "%snull", i ? ", " : "");
    out += buf;
  }
  return out;
}

}  // namespace

void print_bounds(const Model& model, const std::vector<Interval>& bounds, bool json, double ms) {
  const Dag& dag = model.dag();
  if (json) std::printf("{\"outputs\": [");
  for (size_t o = 0; o < bounds.size(); ++o) {
    const std::string& name = dag.node(dag.outputs()[o]).name;
    if (json) {
      std::printf("%s{\"name\": %s, \"lower\": [%s], \"upper\": [%s]}", o ? ", " : "",
                  common::json_string(name).c_str(), numbers(bounds[o].lo).c_str(),
                  numbers(bounds[o].hi).c_str());
      continue;
    }
    std::printf("%s\n", common::json_string(name).c_str());
    for (Eigen::Index i = 0; i < bounds[o].size(); ++i)
      std::printf("  %lld: [%.9g, %.9g]\n", static_cast<long long>(i), bounds[o].lo[i],
                  bounds[o].hi[i]);
  }
  if (json) std::printf("], \"ms\": %.3f}\n", ms);
}

void print_report(const std::string& engine, const char* budget_from, const Options& o,
                  const BoundsReport& r, const std::vector<std::string>* per_box_ops) {
  std::string per_box;
  if (per_box_ops != nullptr) {
    per_box = ", \"per_box_ops\": [";
    for (size_t i = 0; i < per_box_ops->size(); ++i)
      per_box += (i ? ", " : "") + common::json_string((*per_box_ops)[i]);
    per_box += "]";
  }
  char budget[32] = "null";  // infinity: full CROWN
  if (std::isfinite(o.refine_budget)) std::snprintf(budget, sizeof budget, "%g", o.refine_budget);
  std::fprintf(stderr,
               "{\"crown\": {\"engine\": \"%s\", \"refine_budget\": %s, \"budget_from\": \"%s\", "
               "\"boxes\": %lld, \"refined\": %lld, \"ibp_budget\": %lld, \"ibp_deadline\": %lld, "
               "\"ibp_option\": %lld, \"elements_ibp\": %lld, \"outputs_forward\": %lld, "
               "\"largest_skipped\": %g, \"cost\": %g, \"cut_short\": %s%s}}\n",
               engine.c_str(), budget, budget_from, static_cast<long long>(r.boxes),
               static_cast<long long>(r.refined), static_cast<long long>(r.ibp_budget),
               static_cast<long long>(r.ibp_deadline), static_cast<long long>(r.ibp_option),
               static_cast<long long>(r.elements_ibp), static_cast<long long>(r.outputs_forward),
               r.largest_skipped, r.cost, r.cut_short() ? "true" : "false", per_box.c_str());
}

}  // namespace propdag::cli
