#include "common/error.h"
#include "propdag/crown.h"
#include "propdag/engine.h"
#include "propdag/traverse.h"

namespace propdag {

common::Result<Method> parse_method(std::string_view name) {
  if (name == "ibp") return Method::kIbp;
  if (name == "crown") return Method::kCrown;
  if (name == "alpha") return Method::kAlpha;
  return common::Error{"", "", "",
                       "unknown method '" + std::string(name) + "' (ibp, crown, alpha)"};
}

common::Result<std::vector<std::optional<Interval>>> ibp_run(const Model& model,
                                                             const Interval& input, bool keep_all) {
  if (input.size() != model.input_size())
    return model.graph().error("input box has " + std::to_string(input.size()) +
                               " elements, the model takes " + std::to_string(model.input_size()));
  const Dag& dag = model.dag();
  std::vector<Eigen::Index> offset(dag.size(), 0);
  Eigen::Index at = 0;
  for (int i : dag.inputs()) offset[i] = at, at += model.numel(i);
  auto hook = [&](int n, const std::vector<const Interval*>& in) -> common::Result<Interval> {
    if (model.op(n) == nullptr)
      return Interval{input.lo.segment(offset[n], model.numel(n)),
                      input.hi.segment(offset[n], model.numel(n))};
    Interval y = model.op(n)->interval(in);
    internal::nan_as_unbounded(y);
    return y;
  };
  ASSIGN_OR_RETURN(ForwardResult<Interval> r,
                   run_forward<Interval>(dag, dag.bfs(), dag.bfs_release(), hook, keep_all));
  return std::move(r.values);
}

common::Result<std::vector<Interval>> ibp_all(const Model& model, const Interval& input) {
  ASSIGN_OR_RETURN(auto values, ibp_run(model, input, true));
  std::vector<Interval> out;
  out.reserve(values.size());
  for (auto& v : values) out.push_back(std::move(*v));
  return out;
}

}  // namespace propdag
