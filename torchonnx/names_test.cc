// Hostile ONNX names (quotes, newlines, keywords, __import__, unicode, names that sanitize
// alike) must give code that compiles, computes the right values and runs nothing else.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "common/testing.h"
#include "torchonnx/convert.h"
#include "torchonnx/test_util.h"

namespace torchonnx {
namespace {

// Renames every value and node of `graph` through `names` (keys are the original names).
void rename_all(common::Graph& graph, const std::map<std::string, std::string>& names) {
  auto re = [&](std::string& s) {
    auto it = names.find(s);
    if (it != names.end()) s = it->second;
  };
  for (common::Node& n : graph.nodes) {
    re(n.name);
    for (std::string& s : n.inputs) re(s);
    for (std::string& s : n.outputs) re(s);
  }
  for (std::string& s : graph.inputs) re(s);
  for (std::string& s : graph.outputs) re(s);
  std::map<std::string, common::Tensor> inits;
  for (auto& [k, t] : graph.initializers) {
    std::string key = k;
    re(key);
    inits[key] = t;
  }
  graph.initializers = std::move(inits);
  std::unordered_map<std::string, common::Value> values;
  for (auto& [k, v] : graph.values) {
    std::string key = k;
    re(key);
    v.name = key;
    values[key] = v;
  }
  graph.values = std::move(values);
  graph.rebuild_index();
}

common::Graph hostile_graph() {
  auto g = common::testing::parse_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3] x, float[1,3] k) => (float[1,3] out, float[1,3] ab1)
    <float[3] c = {1, 2, 3}> {
      ab1 = Add(x, c)
      ab2 = Mul(ab1, k)
      out = Relu(ab2)
    })");
  EXPECT_TRUE(g.ok()) << g.error().str();
  rename_all(*g, {{"x", "x\"y'z"},
                  {"k", "class"},
                  {"c", "__import__('os').system('echo pwned')"},
                  {"ab1", "a.b"},
                  {"ab2", "a_b"},
                  {"out", "\\\n import os; os.system(\"echo pwned\") #\xc3\xbcn\xc3\xaf"}});
  g->nodes[0].name = "n1\nimport os\nos.system('echo pwned')";
  g->nodes[1].name = "\xc3\xbcn\xc3\xaf\xe2\x80\xae\r";  // unicode, right-to-left override, CR
  g->nodes[2].name = "\"\"\"";
  return std::move(*g);
}

TEST(HostileNames, CodeIsSafeAndCorrect) {
  auto converted = convert(hostile_graph(), {});
  ASSERT_TRUE(converted.ok()) << converted.error().str();
  const std::string dir = common::testing::temp_dir("torchonnx_names");
  ASSERT_TRUE(write_converted(*converted, dir, "hostile").ok());
  // No generated line may carry a hostile name outside a comment.
  std::istringstream lines(converted->python);
  for (std::string line; std::getline(lines, line);) {
    const std::string code = line.substr(0, line.find('#'));
    EXPECT_EQ(code.find("os"), std::string::npos) << line;
    EXPECT_EQ(code.find("pwned"), std::string::npos) << line;
    EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  }
  // x = [1, -2, 3], k = [1, 1, -1], c = [1, 2, 3]:
  // a.b = x + c = [2, 0, 6]; a_b = a.b * k = [2, 0, -6]; out = relu(a_b) = [2, 0, 0].
  std::ofstream(dir + "/run.py")
      << "import sys, torch\n"
         "sys.path.insert(0, sys.argv[1])\n"
         "from hostile import Model\n"
         "m = Model()\n"
         "m.load_state_dict(torch.load(sys.argv[1] + '/hostile.pth', weights_only=True))\n"
         "out, ab = m.eval()(torch.tensor([[1.0, -2.0, 3.0]]), torch.tensor([[1.0, 1.0, -1.0]]))\n"
         "print(out.tolist(), ab.tolist())\n";
  std::string output;
  const int rc =
      testing::run_command(testing::python() + " -m py_compile " + dir + "/hostile.py && " +
                               testing::python() + " " + dir + "/run.py " + dir,
                           &output);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(output, "[[2.0, 0.0, 0.0]] [[2.0, 0.0, 6.0]]\n") << converted->python;
}

TEST(HostileNames, NamesThatSanitizeAlikeStayDistinct) {
  auto converted = convert(hostile_graph(), {});
  ASSERT_TRUE(converted.ok()) << converted.error().str();
  const Module& m = converted->module;
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_NE(m.inputs[0], m.inputs[1]);
  EXPECT_NE(m.inputs[1], "class");  // a keyword is never an identifier
  std::set<std::string> targets;
  for (const Statement& s : m.body) {
    for (const std::string& t : s.targets) EXPECT_TRUE(targets.insert(t).second) << t;
  }
}

}  // namespace
}  // namespace torchonnx
