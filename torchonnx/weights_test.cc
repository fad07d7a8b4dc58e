// The .pth writer: torch.load(weights_only=True) reads back every dtype and shape exactly; the
// archive is deterministic and its tensor data is 64-byte aligned.
#include "torchonnx/weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "common/onnx_io.h"
#include "common/testing.h"
#include "torchonnx/test_util.h"

namespace torchonnx {
namespace {

using common::DType;
using common::Tensor;

Module sample_module() {
  Module m;
  m.layers.push_back(Layer{"fc1",
                           py::call(py::nn("Linear"), py::ints({2, 3})),
                           {{"weight", Tensor::from_floats({1, 2, 3, 4, 5, 6.5f}, {3, 2})},
                            {"bias", Tensor::from_floats({-1, 0, 1e-30f}, {3})}}});
  m.buffers.push_back(Buffer{"idx", Tensor::from_int64({-3, 0, 1LL << 40}, {3})});
  m.buffers.push_back(Buffer{"mask", Tensor::from_int64({1, 0, 1, 1}, {2, 2}, DType::kBool)});
  m.buffers.push_back(Buffer{"d", Tensor::from_double({0.1}, {}, DType::kDouble)});
  m.buffers.push_back(Buffer{"i32", Tensor::from_int64({7, -7}, {1, 2}, DType::kInt32)});
  m.buffers.push_back(Buffer{"u8", Tensor::from_int64({255}, {1, 1, 1}, DType::kUInt8)});
  m.buffers.push_back(Buffer{"empty", Tensor::zeros(DType::kFloat, {0, 4})});
  return m;
}

uint32_t le32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

uint16_t le16(const std::string& s, size_t at) {
  uint16_t v;
  std::memcpy(&v, s.data() + at, 2);
  return v;
}

TEST(Weights, DeterministicAndAligned) {
  const Module m = sample_module();
  auto a = torch_save_bytes(state_dict(m));
  auto b = torch_save_bytes(state_dict(m));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  // Walk the local file headers: every record's data starts at a multiple of 64.
  int records = 0;
  for (size_t at = 0; le32(*a, at) == 0x04034b50; ++records) {
    const size_t data = at + 30 + le16(*a, at + 26) + le16(*a, at + 28);
    EXPECT_EQ(data % 64, 0u) << a->substr(at + 30, le16(*a, at + 26));
    at = data + le32(*a, at + 18);
  }
  EXPECT_EQ(records, 2 + 8 + 1);  // data.pkl, byteorder, 8 tensors, version
}

TEST(Weights, LoadsWithTorchWeightsOnly) {
  const std::string dir = common::testing::temp_dir("torchonnx_weights");
  ASSERT_TRUE(write_weights(sample_module(), dir + "/w.pth").ok());
  std::ofstream(dir + "/read.py") << "import sys, torch\n"
                                     "sd = torch.load(sys.argv[1], weights_only=True)\n"
                                     "for k, v in sd.items():\n"
                                     "    print(k, str(v.dtype), list(v.shape), v.tolist())\n";
  std::string out;
  ASSERT_EQ(
      testing::run_command(testing::python() + " " + dir + "/read.py " + dir + "/w.pth", &out), 0)
      << out;
  EXPECT_EQ(out,
            "fc1.weight torch.float32 [3, 2] [[1.0, 2.0], [3.0, 4.0], [5.0, 6.5]]\n"
            "fc1.bias torch.float32 [3] [-1.0, 0.0, 1.0000000031710769e-30]\n"
            "idx torch.int64 [3] [-3, 0, 1099511627776]\n"
            "mask torch.bool [2, 2] [[True, False], [True, True]]\n"
            "d torch.float64 [] 0.1\n"
            "i32 torch.int32 [1, 2] [[7, -7]]\n"
            "u8 torch.uint8 [1, 1, 1] [[[255]]]\n"
            "empty torch.float32 [0, 4] []\n");
}

// torch 2.6+ loads with weights_only=True by default, through a restricted unpickler. Its
// accepted opcodes and globals (torch/_weights_only_unpickler.py in torch 2.x) are listed below;
// torch 2.x is not installed here, so the archive's data.pkl is checked against that list, and
// against what this machine's torch.save writes for the same state dict.
TEST(Weights, PickleUsesOnlyWhatTorch2WeightsOnlyLoaderAccepts) {
  const std::string dir = common::testing::temp_dir("torchonnx_weights_pickle");
  ASSERT_TRUE(write_weights(sample_module(), dir + "/w.pth").ok());
  std::ofstream(dir + "/scan.py")
      << "import io, pickletools, sys, zipfile, torch\n"
         "OPS = {'PROTO', 'STOP', 'GLOBAL', 'REDUCE', 'BUILD', 'NEWOBJ', 'APPEND', 'APPENDS',\n"
         "       'SETITEM', 'SETITEMS', 'MARK', 'TUPLE', 'TUPLE1', 'TUPLE2', 'TUPLE3', 'NONE',\n"
         "       'NEWFALSE', 'NEWTRUE', 'EMPTY_TUPLE', 'EMPTY_LIST', 'EMPTY_DICT', 'EMPTY_SET',\n"
         "       'BININT', 'BININT1', 'BININT2', 'BINFLOAT', 'BINUNICODE', 'SHORT_BINSTRING',\n"
         "       'BINPERSID', 'BINGET', 'LONG_BINGET', 'BINPUT', 'LONG_BINPUT', 'LONG1'}\n"
         "STORAGES = {'Float', 'Double', 'Half', 'Long', 'Int', 'Short', 'Char', 'Byte', 'Bool'}\n"
         "GLOBALS = {'collections OrderedDict', 'torch._utils _rebuild_tensor_v2'} | \\\n"
         "          {'torch ' + s + 'Storage' for s in STORAGES}\n"
         "def scan(blob):\n"
         "    z = zipfile.ZipFile(io.BytesIO(blob))\n"
         "    pkl = [n for n in z.namelist() if n.endswith('/data.pkl')]\n"
         "    assert len(pkl) == 1, z.namelist()\n"
         "    ops, globs, protos, pids = set(), set(), set(), set()\n"
         "    for op, arg, _ in pickletools.genops(z.read(pkl[0])):\n"
         "        ops.add(op.name)\n"
         "        if op.name == 'GLOBAL': globs.add(arg)\n"
         "        if op.name == 'PROTO': protos.add(arg)\n"
         "        if op.name == 'BINUNICODE' and arg == 'storage': pids.add(arg)\n"
         "    return ops, globs, protos, pids\n"
         "ops, globs, protos, pids = scan(open(sys.argv[1], 'rb').read())\n"
         "assert ops <= OPS, sorted(ops - OPS)\n"
         "assert globs <= GLOBALS, sorted(globs - GLOBALS)\n"
         "assert protos == {2}, protos\n"
         "assert pids == {'storage'}, pids\n"
         "buf = io.BytesIO()\n"
         "torch.save(torch.load(sys.argv[1], weights_only=True), buf)\n"
         "ref_ops, ref_globs, _, _ = scan(buf.getvalue())\n"
         "assert globs == ref_globs, (sorted(globs), sorted(ref_globs))\n"
         "print('ok', len(ops), 'opcodes', len(globs), 'globals')\n";
  std::string out;
  ASSERT_EQ(
      testing::run_command(testing::python() + " " + dir + "/scan.py " + dir + "/w.pth", &out), 0)
      << out;
  EXPECT_EQ(out.substr(0, 3), "ok ") << out;
}

TEST(Weights, UnsupportedTypeIsAnError) {
  Module m;
  m.buffers.push_back(Buffer{"u", Tensor::zeros(DType::kUInt32, {2})});
  auto bytes = torch_save_bytes(state_dict(m));
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().message.find("uint32"), std::string::npos) << bytes.error().message;
}

}  // namespace
}  // namespace torchonnx
