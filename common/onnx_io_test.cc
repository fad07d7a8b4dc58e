#include "common/onnx_io.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "common/testing.h"

namespace common {
namespace {

namespace fs = std::filesystem;

const char* kModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,4] x) => (float[N,4] y) {
    h = Relu(x)
    y = Neg(h)
  })";

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string gzip(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(OnnxIoTest, LoadsPlainAndGzipAndRoundTrips) {
  const std::string dir = testing::temp_dir("io");
  const std::string bytes = testing::text_to_bytes(kModel);
  write(dir + "/m.onnx", bytes);
  write(dir + "/m.onnx.gz", gzip(bytes));
  for (const char* name : {"/m.onnx", "/m.onnx.gz"}) {
    auto g = load_graph(dir + name);
    ASSERT_TRUE(g.ok()) << g.error().str();
    EXPECT_EQ(g->nodes.size(), 2u);
    EXPECT_EQ(g->find("x")->dim_params, (std::vector<std::string>{"N", ""}));
  }
  auto g = load_graph(dir + "/m.onnx");
  ASSERT_TRUE(save_graph(*g, dir + "/out.onnx").ok());
  auto again = load_graph(dir + "/out.onnx");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(to_proto(*again).SerializeAsString(), to_proto(*g).SerializeAsString());
  EXPECT_TRUE(check_graph(*again).ok());
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 3);
}

// `gz` with byte `at` (from the end when negative) changed.
std::string flipped(std::string gz, int64_t at) {
  gz[at < 0 ? gz.size() + at : at] ^= 1;
  return gz;
}

TEST(OnnxIoTest, GzipMembersAndTheirTrailersAreChecked) {
  const std::string dir = testing::temp_dir("members");
  const std::string bytes = testing::text_to_bytes(kModel);
  const size_t half = bytes.size() / 2;
  write(dir + "/two.onnx.gz", gzip(bytes.substr(0, half)) + gzip(bytes.substr(half)));
  auto g = load_graph(dir + "/two.onnx.gz");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(g->nodes.size(), 2u);
  // The trailer holds the member's CRC-32 (8 bytes from the end) and length (the last 4).
  for (int64_t at : {-8, -5, -4, -1}) {
    write(dir + "/bad.onnx.gz", flipped(gzip(bytes), at));
    auto bad = load_graph(dir + "/bad.onnx.gz");
    ASSERT_FALSE(bad.ok()) << at;
    EXPECT_EQ(bad.error().str(), dir + "/bad.onnx.gz: corrupt or truncated gzip data");
  }
}

struct BadInput {
  const char* name;
  std::string bytes;
  const char* message;
};

// A model read field by field (initializers one by one, their raw_data exactly sized) equals
// the one protobuf parses from the same bytes, also where the bytes are two models concatenated
// (protobuf merges them: the graph twice, its nodes and initializers appended).
TEST(OnnxIoTest, ReadsTheSameMessageAsProtobufWithExactRawData) {
  onnx::ModelProto a;
  a.set_ir_version(8);
  a.add_opset_import()->set_version(13);
  onnx::GraphProto* g = a.mutable_graph();
  g->set_name("g");
  g->add_input()->set_name("x");
  g->add_output()->set_name("y");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("MatMul");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1024);
  w->add_dims(768);  // 3 MiB: past the 1 MiB read buffer
  std::string raw(size_t{1024} * 768 * 4, '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(i * 7 + i / 4096);
  w->set_raw_data(raw);
  w->set_doc_string("after raw_data");
  onnx::TensorProto* c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_float_data(1.5f);
  onnx::ModelProto b;
  b.mutable_graph()->add_node()->set_op_type("Relu");
  b.mutable_graph()->add_initializer()->set_name("d");
  b.set_producer_name("second");
  const std::string bytes = a.SerializeAsString() + b.SerializeAsString();
  onnx::ModelProto expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  const std::string dir = testing::temp_dir("split");
  write(dir + "/m.onnx", bytes);
  write(dir + "/m.onnx.gz", gzip(bytes));
  for (const char* name : {"/m.onnx", "/m.onnx.gz"}) {
    auto m = read_model(dir + name);
    ASSERT_TRUE(m.ok()) << m.error().str();
    EXPECT_EQ(m->SerializeAsString(), expected.SerializeAsString()) << name;
    ASSERT_EQ(m->graph().initializer_size(), 3);
    EXPECT_EQ(m->graph().initializer(0).raw_data().capacity(), raw.size()) << name;
  }
}

TEST(OnnxIoTest, BadInputsAreOneLineErrors) {
  const std::string dir = testing::temp_dir("bad");
  const std::string good = testing::text_to_bytes(kModel);
  const std::vector<BadInput> cases = {
      {"empty.onnx", "", "empty input"},
      {"truncated.onnx", good.substr(0, good.size() / 2), "not a valid ONNX model"},
      {"text.onnx", "this is not a protobuf at all\n", "not a"},
      {"notonnx.onnx.gz", gzip("hello world, plain text inside gzip"), "not a"},
      {"truncgz.onnx.gz", gzip(good).substr(0, 20), "corrupt or truncated gzip data"},
  };
  for (const BadInput& c : cases) {
    write(dir + "/" + c.name, c.bytes);
    auto g = load_graph(dir + "/" + c.name);
    ASSERT_FALSE(g.ok()) << c.name;
    EXPECT_NE(g.error().str().find(c.message), std::string::npos) << g.error().str();
    EXPECT_EQ(g.error().str().find('\n'), std::string::npos);
    EXPECT_EQ(g.error().file, dir + "/" + c.name);
  }
  auto missing = load_graph(dir + "/missing.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().str(), dir + "/missing.onnx: cannot open: No such file or directory");
}

TEST(OnnxIoTest, AtomicWriteLeavesNothingOnFailure) {
  const std::string dir = testing::temp_dir("atomic");
  Status s = write_output_atomic(dir + "/no/such/dir/out.onnx", "x");
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(dir + "/no"));
}

TEST(OnnxIoTest, TypedTensorFieldsAreConverted) {
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(onnx::TensorProto::INT32);
  p.add_dims(3);
  for (int v : {5, -6, 7}) p.add_int32_data(v);
  auto t = tensor_from_proto(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->to_int64(), (std::vector<int64_t>{5, -6, 7}));
  p.add_dims(2);  // now claims 6 elements but holds 3
  EXPECT_FALSE(tensor_from_proto(p).ok());
}

// Every VNN-COMP model loads, saves and reloads to the same protobuf.
TEST(OnnxIoTest, VnncompModelsRoundTrip) {
  const auto models = testing::vnncomp_models();
  if (models.empty()) GTEST_SKIP() << "VNN-COMP benchmarks not found";
  int loaded = 0;
  for (const std::string& path : models) {
    if (fs::file_size(path) > (1u << 20)) continue;  // large ones: covered by shapeonnx tests
    auto g = load_graph(path);
    ASSERT_TRUE(g.ok()) << g.error().str();
    std::string once = to_proto(*g).SerializeAsString();
    auto model = parse_model(once, path);
    ASSERT_TRUE(model.ok());
    auto again = from_proto(std::move(*model), path);
    ASSERT_TRUE(again.ok()) << again.error().str();
    EXPECT_EQ(to_proto(*again).SerializeAsString(), once) << path;
    ++loaded;
  }
  std::printf("round-tripped %d VNN-COMP models\n", loaded);
  // Most are under 1 MiB (over 50 of the 146; a third of a sample, $SUITE_TEST_SAMPLE).
  EXPECT_GT(loaded, static_cast<int>(models.size()) / 3);
}

}  // namespace
}  // namespace common
