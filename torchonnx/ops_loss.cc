// Loss ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
#include "torchonnx/context.h"

namespace torchonnx {

void register_loss(HandlerTable& t) { (void)t; }

}  // namespace torchonnx
