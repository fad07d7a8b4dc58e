// A model ready for bound propagation: the DAG, each node's static shape and BoundOp.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/graph.h"
#include "propdag/dag.h"
#include "propdag/op.h"

namespace propdag {

struct OpContext;
namespace internal {
class RelevanceCache;
struct CrownPlan;
}  // namespace internal

class Model {
 public:
  /// Builds the bound model of a graph: shapeonnx::infer gives every value a static shape (a
  /// symbolic batch becomes 1); constant sub-expressions are folded; every variable node gets its
  /// op's rule, whose output shape must agree with inference. Fails with node and op when an op
  /// has no rule or its inputs do not fit it. Initializers that only Gemm, MatMul, Add and Sub
  /// read are freed from graph() once their ops hold them (their values stay, with dtype and
  /// shape): the weights are not held twice; except in a model with value-dependent shapes,
  /// whose graph() keeps them for evaluation at points.
  static common::Result<Model> build(common::Graph graph);
  /// load_graph + build.
  static common::Result<Model> load(std::string_view path);

  const common::Graph& graph() const { return graph_; }
  const Dag& dag() const { return dag_; }
  /// Null for graph inputs.
  const BoundOp* op(int node) const { return ops_[node].get(); }
  const common::Dims& shape(int node) const { return shapes_[node]; }
  int64_t numel(int node) const { return numel_[node]; }
  /// Total number of input elements (graph inputs concatenated in order).
  int64_t input_size() const;
  /// The first node whose output shape may depend on input values (a Slice with variable starts or
  /// ends), as "node 'NAME' (Slice)"; empty when every shape is static. Bounds of such a model
  /// hold for the runs in which every tensor has its static shape only, so verify() never proves
  /// a property of it (it may still falsify one, at an evaluated point).
  const std::string& value_dependent_shape() const { return value_dependent_shape_; }
  /// The engines' memo of which elements reach an objective (internal/relevance.h); shared by
  /// copies of the model.
  internal::RelevanceCache& relevance_cache() const { return *relevance_cache_; }
  /// What every CROWN pass of the model shares (internal/crown.h): computed once by build().
  const internal::CrownPlan& crown_plan() const { return *crown_plan_; }

 private:
  common::Result<OpContext> context(size_t n) const;
  common::Status add_node(size_t n, const std::vector<int>& dag_nodes);
  common::Status check_shape(const common::Node& node, const std::string& name,
                             const common::Dims& shape) const;
  common::Status fold(const OpContext& ctx);

  common::Graph graph_;
  Dag dag_;
  std::vector<std::unique_ptr<BoundOp>> ops_;
  std::vector<common::Dims> shapes_;
  std::vector<int64_t> numel_;  // per Dag node: elements of shapes_
  std::string value_dependent_shape_;
  std::map<std::string, common::Tensor> folded_;  // constants computed from other constants
  std::shared_ptr<internal::RelevanceCache> relevance_cache_;
  std::shared_ptr<const internal::CrownPlan> crown_plan_;
};

}  // namespace propdag
