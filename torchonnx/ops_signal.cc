// Signal and sampling ops (DFT, STFT, window functions, GridSample, ...).
#include "torchonnx/context.h"

namespace torchonnx {

void register_signal(HandlerTable& t) { (void)t; }

}  // namespace torchonnx
