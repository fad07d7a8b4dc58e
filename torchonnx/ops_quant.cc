// Quantization ops (QuantizeLinear, DequantizeLinear, integer and QLinear forms).
#include "torchonnx/context.h"

namespace torchonnx {

void register_quant(HandlerTable& t) { (void)t; }

}  // namespace torchonnx
