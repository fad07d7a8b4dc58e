#include "torchonnx/convert.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "common/onnx_io.h"
#include "shapeonnx/control_flow/control_flow.h"
#include "shapeonnx/infer.h"
#include "torchonnx/add_batch.h"
#include "torchonnx/batch_probe.h"
#include "torchonnx/emit.h"
#include "torchonnx/lower.h"
#include "torchonnx/weights.h"
#if TORCHONNX_HAVE_SLIM
#include "slimonnx/slim.h"
#endif

namespace torchonnx {

namespace {

// An activation feeding a Reshape to a higher rank: the reshape first. slimonnx moves activations
// above reshapes so that reshape pairs meet and vanish; where one stays (a ConvTranspose on a 1x1
// input folded into a Gemm, then `reshape(-1, 128, 6, 6)`), verifiers that follow convolution
// shapes (auto_LiRPA's patches mode) need the activation on the image, as the model had it.
// Exact either way: the activation is elementwise.
void activation_after_unflatten(common::Graph& g) {
  static const std::set<std::string, std::less<>> kActivations = {"Relu", "LeakyRelu", "Sigmoid",
                                                                  "Tanh"};
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    common::Node& r = g.nodes[i];
    if (r.op_type != "Reshape" || !r.domain.empty() || r.inputs.size() != 2 ||
        !g.is_initializer(r.inputs[1])) {
      continue;
    }
    const common::Value* mid = g.find(r.inputs[0]);
    const common::Value* out = g.find(r.outputs[0]);
    if (!mid || mid->producer < 0 || mid->consumers.size() != 1 || !mid->shape || !out ||
        !out->shape || out->shape->size() <= mid->shape->size()) {
      continue;
    }
    common::Node& u = g.nodes[mid->producer];
    const auto& outs = g.outputs;
    if (!u.domain.empty() || !kActivations.count(u.op_type) || u.inputs.size() != 1 ||
        std::find(outs.begin(), outs.end(), u.outputs[0]) != outs.end()) {
      continue;
    }
    // X -> u -> mid -> r -> y  becomes  X -> r -> mid -> u -> y (node slots swapped: in order).
    const std::string x = u.inputs[0], m = u.outputs[0], y = r.outputs[0];
    g.value(m).shape = out->shape;
    g.value(m).dim_params.clear();
    r.inputs[0] = x;
    r.outputs[0] = m;
    u.inputs[0] = m;
    u.outputs[0] = y;
    std::swap(u, r);
    changed = true;
  }
  if (changed) g.rebuild_index();
}

// slimonnx keeps the shapes of the values it leaves and gives the ones it makes their own, so
// the slimmed graph is lowered without inferring again.
common::Status slim(common::Graph& graph, ConvertReport& report) {
#if TORCHONNX_HAVE_SLIM
  ASSIGN_OR_RETURN(slimonnx::Report slimmed, slimonnx::run(graph));
  report.slim_rewrites = slimmed.rewrites;
  activation_after_unflatten(graph);
#else
  (void)graph;
  (void)report;
#endif
  return {};
}

shapeonnx::Options shape_options_of(const ConvertOptions& options) {
  shapeonnx::Options shape_options;
  shape_options.batch_size = options.batch_size;
  shape_options.input_shapes = options.input_shapes;
  shape_options.unpack_ports = true;  // forward packs them again (lists, None)
  shape_options.sequence_lengths = options.sequence_lengths;
  shape_options.sequence_inputs = options.sequence_inputs;
  shape_options.absent_inputs = options.absent_inputs;
  for (const auto& [op, target] : options.custom_ops) shape_options.custom_ops.ops.insert(op);
  shape_options.custom_ops.types = options.custom_types;
  return shape_options;
}

// The pipeline; every problem goes to report.problems (nodes without a lowering are listed and
// dropped first, with what reads them, so that the rest is still inferred and lowered).
common::Result<Converted> run(common::Graph graph, const ConvertOptions& options,
                              ConvertReport& report) {
  Converted out;
  out.nodes = static_cast<int64_t>(graph.nodes.size());
  describe_loaded(graph, report);
  report.custom_ops = options.custom_ops;
  if (options.add_batch_dim) RETURN_IF_ERROR(add_batch_dim(graph));
  report.problems = unsupported_nodes(graph, options.custom_ops);
  if (!report.problems.empty()) {
    drop_failed(graph, report.problems);
    report.nodes_dropped = report.nodes_loaded - static_cast<int64_t>(graph.nodes.size());
  }
  const shapeonnx::Options shape_options = shape_options_of(options);
  // The probe infers a copy of the graph as loaded at twice the batch size (its weights are
  // lent from `graph` while it runs).
  std::optional<common::Graph> original;
  if (may_have_batch(graph)) original = copy_without_weights(graph);
  // Lowering needs static structure: control flow is always unrolled.
  RETURN_IF_ERROR(shapeonnx::infer_with_control_flow(graph, shape_options, /*unroll=*/true));
  report.nodes_inferred = static_cast<int64_t>(graph.nodes.size());
  describe_interface(graph, report);
  const BatchAxes batch_axes =
      original ? probe_batch_axes(std::move(*original), graph, shape_options) : BatchAxes{};
  if (options.slim) RETURN_IF_ERROR(slim(graph, report));
  out.nodes_after = report.nodes_after = static_cast<int64_t>(graph.nodes.size());
  LowerOptions lower_options;
  lower_options.class_name = options.class_name;
  lower_options.rnn_modules = options.rnn_modules;
  lower_options.batch_axes = &batch_axes;
  lower_options.problems = &report.problems;
  lower_options.custom_ops = &options.custom_ops;
  ASSIGN_OR_RETURN(out.module, lower(std::move(graph), lower_options));
  if (!report.problems.empty()) return report.problems.front();
  ASSIGN_OR_RETURN(out.python, emit_python(out.module));
  return out;
}

}  // namespace

bool slim_available() { return TORCHONNX_HAVE_SLIM != 0; }

common::Result<Converted> convert(common::Graph graph, const ConvertOptions& options,
                                  ConvertReport* report) {
  ConvertReport local;
  ConvertReport& r = report ? *report : local;
  common::Result<Converted> out = run(std::move(graph), options, r);
  // A problem outside the lowering (shape inference, slimming) joins the list once.
  if (!out.ok()) {
    const common::Error& e = out.error();
    const bool listed = std::any_of(r.problems.begin(), r.problems.end(), [&](const auto& p) {
      return p.node == e.node && p.message == e.message;
    });
    if (!listed) r.problems.push_back(e);
    return r.problems.front();
  }
  r.converted = true;
  return out;
}

common::Result<Converted> convert_file(std::string_view path, const ConvertOptions& options,
                                       ConvertReport* report) {
  common::Result<common::Graph> graph = common::load_graph(path);
  if (!graph.ok() && report) {
    report->source = std::string(path);
    report->problems.push_back(graph.error());
  }
  if (!graph.ok()) return graph.error();
  return convert(std::move(*graph), options, report);
}

common::Status write_converted(const Converted& converted, std::string_view dir,
                               std::string_view stem) {
  const std::string base = std::string(dir) + "/" + std::string(stem);
  ASSIGN_OR_RETURN(TorchArchive archive, torch_archive(state_dict(converted.module)));
  // Both or neither: a .pth without its .py (or beside an older one) would not load as a pair.
  // The archive streams into its file: the weights are not copied into one more buffer.
  const std::string pth = base + ".pth", py = base + ".py";
  const std::vector<std::pair<std::string_view, common::StreamWriter>> files{
      {pth, [&](std::ostream& out) { return write_torch_archive(archive, out); }},
      {py, [&](std::ostream& out) {
         out.write(converted.python.data(), static_cast<std::streamsize>(converted.python.size()));
         return static_cast<bool>(out);
       }}};
  return common::write_outputs_atomic(files);
}

}  // namespace torchonnx
