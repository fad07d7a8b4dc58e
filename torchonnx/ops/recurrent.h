// The shared parts of the two lowerings of RNN, GRU and LSTM: nn.RNN / nn.GRU / nn.LSTM layers
// (recurrent.cc) and the general loop over the time steps in a helper method
// (recurrent_steps.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "torchonnx/context.h"

namespace torchonnx::recurrent {

/// Input indices.
enum Input : size_t { kX, kW, kR, kB, kLens, kH0, kC0, kP };

/// An activation function of the `activations` attribute.
struct ActivationInfo {
  std::string_view name;     ///< lower case
  int params;                ///< 0, 1 (alpha) or 2 (alpha, beta)
  float alpha, beta;         ///< ONNX defaults
  std::string_view pattern;  ///< $: argument, A: alpha, B: beta
  py::Namespaces uses;       ///< the modules the pattern calls
};

/// One activation as configured (alpha and beta consumed in order, else the defaults).
struct Activation {
  const ActivationInfo* info;
  float alpha, beta;
  bool operator==(const Activation& o) const {
    return info == o.info && alpha == o.alpha && beta == o.beta;
  }
};

/// A recurrent node's attributes and constant inputs.
struct Spec {
  std::string op;
  int gates = 1;  ///< 1 (RNN), 3 (GRU), 4 (LSTM)
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batch_first = false, reverse_only = false, dynamic_batch = false;
  bool linear_before_reset = false, input_forget = false, peepholes = false;
  std::vector<Activation> acts;  ///< one direction's (the directions must agree)
  std::optional<float> clip;
  std::vector<int64_t> lens;  ///< empty when every sequence has all steps
  const common::Tensor *w = nullptr, *r = nullptr, *b = nullptr;
  common::DType dtype = common::DType::kFloat;
};

/// Gate blocks `order` of direction d of W or R ([dirs, gates * hidden, cols]) or of a half of B
/// (`offset` 0 or gates * hidden, cols 1), concatenated.
std::vector<double> blocks(const common::Tensor& t, const Spec& s, int64_t d, int64_t offset,
                           int64_t cols, const std::vector<int>& order);
/// The batch dim of each output (Y, Y_h, Y_c): dim 0 with layout 1, dims 2, 1, 1 with layout 0;
/// all -1 without a dynamic batch.
std::vector<int> output_axes(const Spec& s);
/// Emits `expr` for the node's outputs (one value, or a tuple when there are several); `uses`:
/// the modules `expr` names.
common::Status emit_outputs(Context& ctx, const Spec& s, std::string expr, py::Namespaces uses);
/// Whether input i is a constant of zeros whose dim 1 scales with the batch (probe_batch_axes).
bool batch_sized_zeros(const Context& ctx, size_t i);
/// The initial state input i as [dirs, batch, hidden] (PyTorch's layout), or "" when absent or
/// batch-sized zeros under a dynamic batch.
std::string initial_state(Context& ctx, const Spec& s, size_t i);
/// Emits the node as a call of a helper method that loops over the time steps.
common::Status lower_steps(Context& ctx, const Spec& s);

}  // namespace torchonnx::recurrent
