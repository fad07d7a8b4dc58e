// Helpers shared by passes: an editor that keeps the value index valid while a pass rewrites.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "common/tensor.h"

namespace slimonnx {

/// Edits a graph during one sweep of a pass. Node indices stay stable until `finish()`:
/// removed nodes are only marked, added nodes are appended, and every edit updates the value
/// index (producer / consumers) so later matches in the same sweep see the current graph.
class Editor {
 public:
  explicit Editor(common::Graph& graph);

  common::Graph& graph() { return graph_; }
  const common::Graph& graph() const { return graph_; }
  size_t size() const { return graph_.nodes.size(); }
  common::Node& node(int i) { return graph_.nodes[i]; }
  const common::Node& node(int i) const { return graph_.nodes[i]; }
  bool live(int i) const { return !removed_[i]; }

  /// The live node producing `value`, or -1 (graph input, initializer, removed).
  int producer(std::string_view value) const;
  /// Live consumers of `value` (one entry per use).
  std::vector<int> consumers(std::string_view value) const;
  bool is_graph_output(std::string_view value) const;
  bool is_graph_input(std::string_view value) const;
  /// Exactly one use, by a node, and not a graph output.
  bool single_use(std::string_view value) const;
  /// No use at all (no consumer, not a graph output).
  bool unused(std::string_view value) const;
  /// Initializer content, or null.
  const common::Tensor* initializer(std::string_view value) const;
  /// The value's static shape, or null (also when the shape may depend on runtime data, see
  /// `untrusted`).
  const common::Dims* shape(std::string_view value) const;
  /// The shape (and any known content) of this value may have been inferred from guessed runtime
  /// data: an op whose output shape depends on an input's content (Slice starts, Reshape target,
  /// ...) read a value that is not constant, or something upstream did.
  bool untrusted(std::string_view value) const { return untrusted_.count(std::string(value)) != 0; }
  common::DType dtype(std::string_view value) const;

  /// Marks node i removed and drops it from the index.
  void remove_node(int i);
  /// Appends a node (indexed immediately); returns its index.
  int add_node(common::Node node);
  /// Points input `slot` of node i at another value.
  void set_input(int i, size_t slot, const std::string& value);
  /// Makes every use of `old_value` read `replacement` instead. When `old_value` is a graph output
  /// its name must survive, so `replacement` is renamed to it instead (only possible when
  /// `replacement` is produced by a live node and is no graph input/output). Returns false (and
  /// changes nothing) when neither is possible. Call after removing old_value's producer.
  bool replace_all_uses(const std::string& old_value, const std::string& replacement);
  /// True when replace_all_uses(old_value, replacement) would succeed.
  bool can_replace(std::string_view old_value, std::string_view replacement) const;

  /// Adds an initializer under a fresh name derived from `hint`; returns the name.
  std::string add_initializer(std::string_view hint, common::Tensor tensor);
  /// Frees the content of initializer `value` once nothing reads it (no live consumer, not a
  /// graph output): a rewrite that replaced a layer's weights calls it, so that large weights are
  /// not held twice until the dead-code pass. The value itself stays (fresh names do not change).
  void release_if_unused(const std::string& value);
  /// A fresh value (dtype and shape set) for a new node's output.
  std::string add_value(std::string_view hint, common::DType dtype, const common::Dims& dims);

  /// Counts one rewrite.
  void count() { ++rewrites_; }
  int64_t rewrites() const { return rewrites_; }

  /// Drops removed nodes and re-sorts; returns the number of rewrites.
  common::Result<int64_t> finish();

 private:
  void drop_consumer(const std::string& value, int i);
  void rename_output(int producer, std::string from, std::string to);

  common::Graph& graph_;
  std::vector<bool> removed_;
  std::unordered_set<std::string> untrusted_;
  int64_t rewrites_ = 0;
};

/// The node is in the default ONNX domain.
inline bool is_onnx(const common::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

/// Values whose shape may come from guessed runtime data (see Editor::untrusted).
std::unordered_set<std::string> untrusted_values(const common::Graph& graph);

/// Every input after the first is omitted or an initializer: the node's output shape does not
/// depend on runtime data (shapes inferred from guessed data, e.g. Slice starts read from a graph
/// input, are not trusted).
bool params_constant(const Editor& ed, const common::Node& n);

/// Integer parameters of a node: constant input `slot` when the node has it, else attribute
/// `attr` (older opsets; common::ints_input_or_attr); empty when neither is given, nullopt when
/// the input is not a constant.
std::optional<std::vector<int64_t>> int_param(const Editor& ed, const common::Node& n, size_t slot,
                                              std::string_view attr);

/// Float data as doubles if the tensor is float32/float64 (what fusions handle), else nullopt.
std::optional<std::vector<double>> float_data(const common::Tensor* t);
/// A tensor of dtype `like` (float32 or float64) from doubles.
common::Tensor float_tensor(const std::vector<double>& values, common::Dims dims,
                            common::DType like);
/// True when every element of a float or integer tensor equals `v`.
bool all_equal(const common::Tensor& t, double v);

}  // namespace slimonnx
