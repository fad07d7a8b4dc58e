#include "propdag/verify.h"

namespace propdag {

common::Result<VerifyResult> verify(const Model& model, const Spec& spec, const Options& options) {
  const Dag& dag = model.dag();
  int64_t outputs = 0;
  for (int o : dag.outputs()) outputs += model.numel(o);
  if (spec.num_inputs != model.input_size() || spec.num_outputs != outputs)
    return model.graph().error("property declares " + std::to_string(spec.num_inputs) +
                               " inputs and " + std::to_string(spec.num_outputs) +
                               " outputs, the model has " + std::to_string(model.input_size()) +
                               " and " + std::to_string(outputs));
  VerifyResult result;
  result.cases = static_cast<int>(spec.cases.size());
  for (const SpecCase& c : spec.cases) {
    Eigen::Index rows = static_cast<Eigen::Index>(c.unsafe.size());
    if (rows == 0) continue;  // no output constraint: every input is a counterexample
    std::vector<Mat> objective;
    Eigen::Index at = 0;
    for (int o : dag.outputs()) {
      Mat m(rows, model.numel(o));
      for (Eigen::Index r = 0; r < rows; ++r) m.row(r) = c.unsafe[r].coef.segment(at, m.cols());
      at += m.cols();
      objective.push_back(std::move(m));
    }
    ASSIGN_OR_RETURN(Interval b, linear_bounds(model, c.box, objective, options));
    for (Eigen::Index r = 0; r < rows; ++r)
      if (b.lo[r] > c.unsafe[r].rhs) {
        ++result.cases_proved;
        break;
      }
  }
  result.verified = result.cases_proved == result.cases;
  return result;
}

}  // namespace propdag
