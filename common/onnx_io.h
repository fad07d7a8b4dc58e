// Loading and saving models: .onnx, .onnx.gz and "-" (stdin/stdout), atomic writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/atomic_write.h"
#include "common/error.h"
#include "common/graph.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace common {

/// The largest model this suite reads: protobuf parses no message past 2 GiB, so gzip data that
/// inflates further is refused early (a gzip bomb) rather than parsed.
inline constexpr uint64_t kMaxModelBytes = (uint64_t{1} << 31) - 1;

/// Reads all bytes of a file or of stdin ("-"), inflating gzip/zlib data transparently.
Result<std::string> read_input(std::string_view path);

/// Parses an ONNX model from bytes. `source` names it in errors.
Result<onnx::ModelProto> parse_model(std::string_view bytes, std::string_view source);
/// Converts a model into the IR: Constant nodes become initializers, initializers listed as graph
/// inputs are taken as constants, model-local functions are inlined, nodes are topologically
/// sorted. Takes the model's tensors by move (large models are not copied).
Result<Graph> from_proto(onnx::ModelProto&& model, std::string_view source);
/// The IR as a model: value_info carries every known intermediate dtype/shape.
onnx::ModelProto to_proto(const Graph& graph);
/// The same, moving the initializers' bytes out of `graph` instead of copying them (its
/// initializers are left without content).
onnx::ModelProto to_proto(Graph&& graph);

/// A TensorProto's content (raw_data or typed fields; external data is not supported).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto);
/// Moves a tensor into a TensorProto (raw_data).
void tensor_to_proto(Tensor tensor, onnx::TensorProto* proto);

/// Reads and parses a model from a file or stdin ("-"), inflating gzip data, as one stream: the
/// file's bytes are never held in memory beside the parsed message (onnx_read.cc). The same
/// errors as read_input + parse_model.
Result<onnx::ModelProto> read_model(std::string_view path);
/// read_model + from_proto.
Result<Graph> load_graph(std::string_view path);
/// to_proto + serialize + write_output_atomic; the serialized model is streamed to the file.
Status save_graph(const Graph& graph, std::string_view path);
/// The same without a copy of the weights: `graph`'s initializers are moved out (see to_proto).
Status save_graph(Graph&& graph, std::string_view path);

/// Runs ONNX's checker on the IR (as a model); full_check adds ONNX's own shape inference.
Status check_graph(const Graph& graph, bool full_check = false);

}  // namespace common
