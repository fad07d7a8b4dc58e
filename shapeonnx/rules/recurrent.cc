// Recurrent layers: RNN, GRU, LSTM.
#include <string>

#include "shapeonnx/rules/rules.h"
#include "shapeonnx/rules/util.h"

namespace shapeonnx {
namespace {

using common::Dims;
using common::Status;

// X is [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1). Outputs:
// Y [seq, dirs, batch, hidden] / [batch, seq, dirs, hidden]; Y_h (and LSTM's Y_c)
// [dirs, batch, hidden] / [batch, dirs, hidden]; dirs is 2 for "bidirectional", else 1.
Status recurrent_rule(InferContext& ctx) {
  if (ctx.rank(0) != 3) return ctx.error("recurrent input must be 3-D");
  const common::Node& node = ctx.node();
  const int64_t hidden = node.attr_int("hidden_size", -1);
  if (hidden < 1) return ctx.error("needs a positive 'hidden_size'");
  const std::string direction = node.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("unknown direction '" + direction + "'");
  }
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = node.attr_int("layout", 0) != 0;
  const Dims& x = ctx.shape(0);
  const int64_t seq = batch_first ? x[1] : x[0];
  const int64_t batch = batch_first ? x[0] : x[1];
  ctx.set_output(0, ctx.dtype(0),
                 batch_first ? Dims{batch, seq, dirs, hidden} : Dims{seq, dirs, batch, hidden});
  const Dims state = batch_first ? Dims{batch, dirs, hidden} : Dims{dirs, batch, hidden};
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.dtype(0), state);
  return {};
}

}  // namespace

void register_recurrent_rules(ShapeRegistry& table) {
  table.add("RNN", &recurrent_rule);
  table.add("GRU", &recurrent_rule);
  table.add("LSTM", &recurrent_rule);
}

}  // namespace shapeonnx
