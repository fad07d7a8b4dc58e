// A structure-aware mutator for ONNX models: parses the bytes as a ModelProto, changes one thing a
// hostile or broken exporter could get wrong (a dim, an attribute, an edge, a dtype, an op type, a
// node, the opset), and serializes it again. onnx_mutator.cc also defines libFuzzer's
// LLVMFuzzerCustomMutator with it: bytes that do not parse are mutated as bytes (LLVMFuzzerMutate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

/// Mutates `model` (serialized ModelProto bytes) in place with the choices of `seed`; false when
/// the bytes do not parse as a model or the chosen mutation found nothing to change.
bool mutate_model(std::string& model, uint32_t seed);

}  // namespace fuzz
