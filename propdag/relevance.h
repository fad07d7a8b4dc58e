// Which elements of each node can move a bound of an objective c * y: the elements of the
// objective's cone. Both engines refine only those rows of a nonlinear op's input; the others keep
// their interval bounds, which no backward pass from the objective multiplies by anything but 0.
// Not installed: verifiers use engine.h.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "propdag/model.h"

namespace propdag::internal {

/// Per Dag node, 1 for each element that reaches a column some objective row weighs (c: one
/// matrix per graph output, rows x elements of that output; an empty matrix weighs nothing),
/// followed backwards through the ops: an affine op's stored entries (a dense term's nonzero
/// weights, a convolution's taps, a gather's index), an elementwise rule's own element, a
/// product's two factors' elements; every element of every variable input of any other op. An
/// empty entry means every element of that node (so a model whose objective weighs everything
/// costs nothing to ask). Elements left out have zero coefficients in every backward pass that
/// starts from the objective or from an element kept, so their bounds move no bound of the
/// objective.
using Relevance = std::vector<std::vector<char>>;
Relevance relevant_elements(const Model& model, const std::vector<Mat>& c);

/// relevant_elements of `model`, remembered per pattern of weighed columns in the model's own
/// cache (a verifier asks with the same objective for every box of a property; the most recent
/// few patterns are kept). Thread-safe.
std::shared_ptr<const Relevance> cached_relevance(const Model& model, const std::vector<Mat>& c);

class RelevanceCache {
 public:
  std::shared_ptr<const Relevance> get(const Model& model, const std::vector<Mat>& c);

 private:
  struct Entry {
    std::vector<std::vector<char>> columns;  // per graph output: which columns c weighs
    std::shared_ptr<const Relevance> relevance;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;  // most recent last
};

}  // namespace propdag::internal
