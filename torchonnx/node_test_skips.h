// The ONNX backend node tests that torchonnx_test leaves out, with the reason: single tests, and
// ops that have no lowering on purpose.
#pragma once

#include <map>
#include <string>

namespace torchonnx {

/// Node tests (folder names) whose ops have lowerings but which are not run, with the reason.
const std::map<std::string, std::string>& node_test_skips();

/// Ops without a lowering on purpose ("Op", or "domain::Op" outside the default domain), with
/// the reason. A node test of any other op without a lowering fails.
const std::map<std::string, std::string>& ops_without_lowering();

}  // namespace torchonnx
