// What an op handler sees while lowering one node, and the op registry.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "common/names.h"
#include "common/node_view.h"
#include "common/registry.h"
#include "torchonnx/batch_probe.h"
#include "torchonnx/module.h"

namespace torchonnx {

/// How generated code refers to a value.
struct Operand {
  std::string expr;      ///< identifier, `self.<buffer>` or a literal
  bool batched = false;  ///< dim 0 is the (variable) batch dimension, alone or merged with others
  int moved = -1;        ///< the dim that carries the batch when it is not dim 0 (batched false)
};

/// A value that is a basic-indexing view of another tensor (made by Slice with positive steps,
/// Gather at one index or a contiguous range, Split): for each dim of `base`, the elements it
/// keeps. Indexing a view indexes its base, so a chain of such nodes is one subscript.
struct View {
  struct Range {
    int64_t start = 0, step = 1, len = 0;
    bool selected = false;  ///< one element, the dim dropped (`start` is its index)
  };
  std::string base;           ///< the indexed expression (an input, a local or a buffer)
  common::Dims dims;          ///< the base's shape
  std::vector<Range> ranges;  ///< one per dim of the base
};

/// Module-wide lowering state shared by all handlers.
struct LowerState {
  const common::Graph* graph = nullptr;
  Module module;
  common::NameScope attrs;                               ///< self.<name>: layers and buffers
  common::NameScope locals;                              ///< forward's variables
  std::map<std::string, Operand, std::less<>> operands;  ///< ONNX value -> code
  std::vector<bool> done;                   ///< node absorbed into an earlier statement
  std::set<std::string, std::less<>> live;  ///< values the graph outputs depend on
  int64_t batch = -1;                       ///< static size of the batch dim (-1: model has none)
  /// The first node with a batched input whose output does not have the batch in dim 0 (generated
  /// code for other batch sizes would then be wrong), or empty.
  std::string batch_lost;
  bool rnn_modules = false;               ///< LowerOptions::rnn_modules
  const BatchAxes* batch_axes = nullptr;  ///< LowerOptions::batch_axes (null without a batch)
  std::map<std::string, View, std::less<>> views;  ///< ONNX value -> the view it is, if any
  std::vector<common::Error>* problems = nullptr;  ///< LowerOptions::problems
  std::set<std::string, std::less<>> failed;       ///< values of nodes that could not be lowered
  /// LowerOptions::custom_ops (null: none).
  const std::map<std::string, std::string, std::less<>>* custom_ops = nullptr;
  /// A run that only finds batch_lost: layers and buffers keep their dims, not their bytes.
  bool dry_run = false;
  /// When set (the graph itself, lowered by move): release_after[i] lists the initializers whose
  /// last reader is node i, freed once the loop is past it.
  common::Graph* releasing = nullptr;
  std::vector<std::vector<std::string>> release_after;

  /// Frees release_after[i] from `releasing` (when set).
  void release_weights_read_last_by(size_t i);
};

/// Per node, the weights it is the last reader of: initializers that only Gemm, MatMul, Conv and
/// ConvTranspose read (graph outputs excepted).
std::vector<std::vector<std::string>> weights_by_last_reader(const common::Graph& graph);

/// The lowering of one node: the node as common::NodeView sees it (inputs' and outputs' dtypes and
/// shapes) and what its statements need of the module being built.
class Context : public common::NodeView {
 public:
  Context(LowerState& state, int node_index);

  bool rnn_modules() const { return state_.rnn_modules; }
  int64_t opset() const { return graph().opset(""); }

  /// Compile-time content of input i (initializer or propagated), or null. Unlike
  /// NodeView::constant, a value an emitted statement computes is not one even if propagated.
  const common::Tensor* constant(size_t i) const;
  /// `constant` for any value of the graph by name.
  const common::Tensor* constant_value(const std::string& name) const;
  /// Whether `index` is a node no statement has computed or absorbed yet.
  bool pending(int index) const { return !state_.done[index]; }
  /// Whether an ONNX value is used by a later node or the graph's outputs.
  bool live(const std::string& value) const {
    return !value.empty() && state_.live.count(value) != 0;
  }
  /// Whether output i is used by a later node or the graph's outputs.
  bool output_used(size_t i) const;

  /// Tensor expression for input i (constants become buffers). A missing input yields "None"
  /// and is recorded: the driver then fails the node (see missing_input).
  std::string in(size_t i);
  /// The first input a handler read with `in` that the node does not have, if any.
  std::optional<size_t> missing_input() const { return missing_input_; }
  /// Like `in`, but a constant with one element that does not widen the result's rank is inlined
  /// as a Python number (for arithmetic with broadcasting).
  std::string scalar_or_in(size_t i);
  /// Whether scalar_or_in(i) inlines a number.
  bool inlinable(size_t i) const;
  bool batched(size_t i) const;
  bool any_batched() const;
  /// Input i as it stands: `in(i)` with its batch dim (for outputs that are the input itself).
  Operand operand(size_t i);
  /// Input i as a view: the view it was made as by earlier indexing, else all of `in(i)`.
  View input_view(size_t i);
  /// Whether input i was made as a view by earlier indexing.
  bool has_view(size_t i) const {
    return has_input(i) && state_.views.count(node().inputs[i]) != 0;
  }
  /// Records output i as `view` (see View).
  void set_view(size_t i, View view);
  /// The dim of input i that carries the batch (0 when batched), or -1.
  int batch_axis(size_t i) const;
  /// The dim of output i that carries the batch by the model's shapes at two batch sizes: -1 none,
  /// -2 not known (no probe, a value slimonnx made, or no single dim that scales).
  int probed_axis(size_t i = 0) const;
  /// `probed_axis` for input i (a constant folded from the batch's shape keeps its probe).
  int probed_input_axis(size_t i) const;
  /// Model-wide static batch size (-1: no batch dim).
  int64_t batch() const { return state_.batch; }

  /// Registers a constant buffer (a weight: an nn.Parameter) and returns `self.<name>`.
  std::string buffer(common::Tensor tensor, std::string_view hint, bool parameter = false);
  /// Registers `self.<kind>N = ctor` and returns the attribute name.
  std::string layer(std::string_view kind, py::Expr ctor, std::vector<Param> params);

  /// Registers a helper method (see Method) and returns `self.<name>` for the forward statement.
  std::string method(std::string_view hint, std::vector<std::string> params, std::string doc,
                     std::vector<std::string> lines, py::Namespaces uses);

  /// Adds `import <module>` to the generated file (once).
  void add_import(const std::string& module);

  /// The one consumer of output i when it has exactly one use and is not a graph output.
  const common::Node* sole_consumer(size_t i = 0) const;
  /// Absorbs `consumer` into this node's statement: the statement's outputs become its outputs.
  void fuse(const common::Node& consumer);
  /// Absorbs another node (with its fused consumer, if any) whose result the statement computes
  /// alongside this node's, e.g. a sibling product of the same input; see emit_values.
  void absorb(const common::Node& node, const common::Node* consumer = nullptr);

  /// Emits `<output 0> = expr`; `hint` names the variable. Other outputs must be unused.
  common::Status emit(py::Expr expr, std::string_view hint, bool batched);
  /// Emits `<out0>, <out1>, ... = expr` for an expression yielding one value per output
  /// ("_" for unused ones).
  void emit_tuple(py::Expr expr, std::string_view hint, bool batched);
  /// `emit` and `emit_tuple` for handlers that follow a batch in any dim: `axis` is the output's
  /// batch dim (-1: none). Plain `emit` of a node with an input batched outside dim 0 gives the
  /// batch up (batch_lost).
  common::Status emit_at(py::Expr expr, std::string_view hint, int axis);
  void emit_tuple_at(py::Expr expr, std::string_view hint, int axis);
  /// `emit_tuple_at` with each output's own batch dim.
  void emit_tuple_axes(py::Expr expr, std::string_view hint, std::vector<int> axes);
  /// Emits `<v0>, <v1>, ... = expr` for an expression yielding one tensor per ONNX value in
  /// `values` (outputs of this node, its fused consumer or absorbed nodes), each with batch dim
  /// `axis`; "_" for values nothing reads.
  void emit_values(py::Expr expr, std::string_view hint, const std::vector<std::string>& values,
                   int axis);
  /// Emits `<name> = expr` for an intermediate value of this node's lowering (an index computed
  /// once and read several times) and returns the new local's name.
  std::string local(py::Expr expr, std::string_view hint);
  /// Output i is the same value as an existing expression (no statement).
  void alias(size_t i, Operand operand);

  /// NodeView::error with the opset the node is lowered at: `... (opset 13)`.
  common::Error error(const std::string& message) const;

 private:
  /// The statement comment: the node's name, and the fused consumer's.
  std::string comment() const;
  /// `<output 0> = expr` (the other outputs must be unused) with batch dim `axis`.
  common::Status emit_one(py::Expr expr, std::string_view hint, int axis, bool aware);
  /// The first `count` outputs of this node (of the fused consumer when there is one).
  std::vector<std::string> outputs(size_t count = SIZE_MAX) const;
  /// `<targets> = expr`, one target per ONNX value in `values` ("_" for values nothing reads);
  /// `axes`: one batch dim for every value, or one per value.
  void add_statement(py::Expr expr, std::string_view hint, std::vector<int> axes,
                     const std::vector<std::string>& values, bool aware);
  /// Records the node in batch_lost when an input carries the batch and output `out` (batch dim
  /// `axis`) does not, or when a handler that only follows dim 0 (`aware` false) gets an input
  /// batched elsewhere.
  void check_batch(int axis, bool aware, const std::string& out);
  int probed(const std::string& value) const;

  LowerState& state_;
  const common::Node* fused_ = nullptr;
  std::vector<std::string> absorbed_;  ///< comment text of absorbed nodes
  std::optional<size_t> missing_input_;
};

using Handler = common::Status (*)(Context&);

/// The handler for an op of the default domain, or null.
Handler find_handler(std::string_view op_type);
std::vector<std::string> handler_ops();

/// Handler families (ops/<family>.cc, with parts in ops/<family>_<part>.cc; the families of
/// common/ADDING_AN_OP.md) add their entries here.
using HandlerRegistry = common::Registry<Handler>;
void register_elementwise(HandlerRegistry& t);  // unary, binary, variadic, Clip, Cast, PRelu
void register_activation(HandlerRegistry& t);   // Relu, Sigmoid, LeakyRelu, ..., Softmax
void register_conv(HandlerRegistry& t);         // Conv, ConvTranspose
void register_pool(HandlerRegistry& t);         // MaxPool, AveragePool, Global*Pool, MaxUnpool
void register_norm(HandlerRegistry& t);         // BatchNormalization, LayerNorm, LRN, MVN, ...
void register_linalg(HandlerRegistry& t);       // Gemm, MatMul, Einsum, Det
void register_shape(HandlerRegistry& t);        // Reshape, Transpose, Concat, Split, Identity, ...
void register_index(HandlerRegistry& t);        // Slice, Gather, ScatterND, Pad, OneHot, ...
void register_reduce(HandlerRegistry& t);       // Reduce*, CumSum, ArgMax, ArgMin, TopK
void register_generator(HandlerRegistry& t);    // Shape, ConstantOfShape, Range, EyeLike
void register_resize(HandlerRegistry& t);       // Resize, Upsample, GridSample, AffineGrid, ...
void register_training(HandlerRegistry& t);     // Adagrad, Momentum, Adam, the losses
void register_quant(HandlerRegistry& t);  // QuantizeLinear, DequantizeLinear, *Integer, QLinear*
void register_recurrent(HandlerRegistry& t);  // RNN, GRU, LSTM
void register_signal(HandlerRegistry& t);     // DFT, STFT, windows, MelWeightMatrix
void register_text(HandlerRegistry& t);       // TfIdfVectorizer

/// A declared custom op: `<outputs> = module.function(inputs..., attr=value, ...)`, the module
/// added to Module::imports; `target` is "module:function".
common::Status lower_custom(Context& ctx, const std::string& target);

}  // namespace torchonnx
