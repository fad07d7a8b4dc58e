// Expansion of model-local functions (ONNX 1.12 has no inliner of its own).
#pragma once

#include "common/error.h"

namespace onnx {
class ModelProto;
}

namespace common {

/// Replaces every call of a model-local function (FunctionProto in model.functions) by the
/// function's body, with internal values renamed `<call node>/<name>` and attribute references
/// resolved from the call's attributes. Nested calls are expanded too; recursion is an error.
Status inline_functions(onnx::ModelProto& model);

}  // namespace common
