// Recurrent ops (RNN, GRU, LSTM), unrolled over the static sequence length.
#include "torchonnx/context.h"

namespace torchonnx {

void register_recurrent(HandlerTable& t) { (void)t; }

}  // namespace torchonnx
