#include "torchonnx/convert.h"

#include <optional>
#include <utility>

#include "common/onnx_io.h"
#include "shapeonnx/control_flow.h"
#include "shapeonnx/infer.h"
#include "torchonnx/batch_probe.h"
#include "torchonnx/emit.h"
#include "torchonnx/lower.h"
#include "torchonnx/weights.h"
#if TORCHONNX_HAVE_SLIM
#include "slimonnx/slim.h"
#endif

namespace torchonnx {

namespace {

common::Status slim(common::Graph& graph, const shapeonnx::Options& shape_options) {
#if TORCHONNX_HAVE_SLIM
  RETURN_IF_ERROR(slimonnx::run(graph).status());
  // Values slimonnx rewrote (even when it reports no rewrite, it may drop propagated shapes)
  // get their shapes again from the same inference.
  RETURN_IF_ERROR(shapeonnx::infer(graph, shape_options));
#else
  (void)graph;
  (void)shape_options;
#endif
  return {};
}

}  // namespace

bool slim_available() { return TORCHONNX_HAVE_SLIM != 0; }

common::Result<Converted> convert(common::Graph graph, const ConvertOptions& options) {
  Converted out;
  out.nodes = static_cast<int64_t>(graph.nodes.size());
  shapeonnx::Options shape_options;
  shape_options.batch_size = options.batch_size;
  shape_options.input_shapes = options.input_shapes;
  shape_options.unpack_ports = true;  // forward packs them again (lists, None)
  shape_options.sequence_lengths = options.sequence_lengths;
  shape_options.sequence_inputs = options.sequence_inputs;
  shape_options.absent_inputs = options.absent_inputs;
  // The probe infers a copy of the graph as loaded at twice the batch size.
  std::optional<common::Graph> original;
  if (may_have_batch(graph)) original = graph;
  // Lowering needs static structure: control flow is always unrolled.
  RETURN_IF_ERROR(shapeonnx::infer_with_control_flow(graph, shape_options, /*unroll=*/true));
  const BatchAxes batch_axes =
      original ? probe_batch_axes(std::move(*original), graph, shape_options) : BatchAxes{};
  if (options.slim) RETURN_IF_ERROR(slim(graph, shape_options));
  out.nodes_after = static_cast<int64_t>(graph.nodes.size());
  LowerOptions lower_options;
  lower_options.class_name = options.class_name;
  lower_options.rnn_modules = options.rnn_modules;
  lower_options.batch_axes = &batch_axes;
  ASSIGN_OR_RETURN(out.module, lower(graph, lower_options));
  ASSIGN_OR_RETURN(out.python, emit_python(out.module));
  return out;
}

common::Result<Converted> convert_file(std::string_view path, const ConvertOptions& options) {
  ASSIGN_OR_RETURN(common::Graph graph, common::load_graph(path));
  return convert(std::move(graph), options);
}

common::Status write_converted(const Converted& converted, std::string_view dir,
                               std::string_view stem) {
  const std::string base = std::string(dir) + "/" + std::string(stem);
  ASSIGN_OR_RETURN(std::string weights, torch_save_bytes(state_dict(converted.module)));
  // Both or neither: a .pth without its .py (or beside an older one) would not load as a pair.
  const std::string pth = base + ".pth", py = base + ".py";
  return common::write_outputs_atomic({{pth, weights}, {py, converted.python}});
}

}  // namespace torchonnx
