// CaseSearch's ReLU splitting (--branch relu): the box stays whole and is cut into parts by the
// signs of ReLU input elements (BoundsIn::splits), depth first. Each open part is split at the
// element with the largest BoundsOut::split_scores, into the side with the smaller margin first.
// A part whose splits contradict its bounds is empty, and its bounds prove it. A part where no
// ReLU input crosses 0 (or no coefficient reaches one) has its box halved instead, along
// steepest()'s dimension.
#include <optional>
#include <tuple>
#include <utility>

#include "propdag/case_search.h"

namespace propdag::internal {

common::Result<Verdict> CaseSearch::relu_search() {
  std::vector<Part> open;
  open.push_back({case_.box, {}, *whole_});
  bool first = true;  // search() looked for points in the whole box
  while (!open.empty()) {
    if (Clock::now() >= next_attack_ && !out_of_time()) {
      ASSIGN_OR_RETURN(bool hit, attack_while_splitting(open.back().box));
      if (hit) return Verdict::kFalsified;
    }
    Part next = std::move(open.back());
    open.pop_back();
    if (proved(next.bounds)) continue;
    if (!first) {  // the centre was checked with the whole box; the corners differ per part
      ASSIGN_OR_RETURN(bool hit, find_counterexample(next.box, next.bounds, false));
      if (hit) return Verdict::kFalsified;
    }
    first = false;
    if (boxes_ + 2 > split_.max_boxes || out_of_time()) return Verdict::kOpen;
    Part sides[2];
    if (std::optional<NeuronSplit> at = best_split(next.bounds)) {
      for (int k = 0; k < 2; ++k) {
        sides[k].box = next.box;
        sides[k].splits = next.splits;
        sides[k].splits.push_back(*at);
        sides[k].splits.back().active = k == 0;
      }
    } else {
      const Eigen::Index dim = steepest(next.box, next.bounds);
      if (!splittable(next.box, dim)) return Verdict::kOpen;
      std::tie(sides[0].box, sides[1].box) = halves(next.box, dim);
      sides[0].splits = sides[1].splits = next.splits;
    }
    for (Part& side : sides) {
      ASSIGN_OR_RETURN(side.bounds, bound(side.box, &next.bounds, &side.splits));
    }
    if (margin(sides[0].bounds) < margin(sides[1].bounds)) std::swap(sides[0], sides[1]);
    open.push_back(std::move(sides[0]));
    open.push_back(std::move(sides[1]));  // the smaller margin, next
  }
  return Verdict::kProved;
}

std::optional<NeuronSplit> CaseSearch::best_split(const Bounds& b) {
  std::optional<NeuronSplit> best;
  double top = 0;
  for (size_t node = 0; node < b.scores.size(); ++node) {
    const Vec& s = b.scores[node];
    Eigen::Index j = 0;
    if (s.size() == 0 || !(s.maxCoeff(&j) > top)) continue;
    top = s[j];
    best = NeuronSplit{static_cast<int>(node), j, false};
  }
  return best;
}

}  // namespace propdag::internal
