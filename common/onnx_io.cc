#include "common/onnx_io.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "common/inline.h"
#include "common/proto_convert.h"
#include "common/topo.h"

namespace common {

namespace {

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Inflates gzip data (all concatenated members).
Result<std::string> gunzip(std::string_view in, std::string_view path) {
  std::string out;
  if (in.size() >= 18) {  // the trailer's ISIZE: uncompressed size mod 2^32 (of the last member)
    uint32_t isize = 0;
    std::memcpy(&isize, in.data() + in.size() - 4, 4);
    // Trusted only as far as deflate can expand (at most 1032:1): a forged trailer of a few
    // bytes' file would otherwise reserve 4 GiB.
    out.reserve(std::min<size_t>(isize, in.size() * 1032));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return file_error(path, "zlib init failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string chunk(1 << 20, '\0');
  int rc = Z_OK;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - zs.avail_out);
    if (out.size() > kMaxModelBytes) {
      inflateEnd(&zs);
      return file_error(path, "gzip data inflates past 2 GiB (the largest model protobuf reads)");
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && zs.avail_out != 0) {
      rc = Z_BUF_ERROR;
      break;
    }
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return file_error(path, "corrupt or truncated gzip data");
  return out;
}

Result<std::string> read_all(std::string_view path) {
  if (path == "-") {
    std::string data{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    return data;
  }
  std::ifstream f{std::string(path), std::ios::binary | std::ios::ate};
  if (!f) return file_error(path, std::string("cannot open: ") + std::strerror(errno));
  const std::streamoff size = f.tellg();
  if (size < 0) return file_error(path, "cannot read (not a regular file?)");
  std::string data(static_cast<size_t>(size), '\0');
  f.seekg(0);
  if (!f.read(data.data(), size)) return file_error(path, "read error");
  return data;
}

}  // namespace

Result<std::string> read_input(std::string_view path) {
  ASSIGN_OR_RETURN(std::string data, read_all(path));
  if (data.empty()) return file_error(path, "empty input");
  if (is_gzip(data)) return gunzip(data, path);
  return data;
}

Result<onnx::ModelProto> parse_model(std::string_view bytes, std::string_view source) {
  onnx::ModelProto model;
  if (bytes.size() > kMaxModelBytes) {
    return file_error(source, "model larger than 2 GiB (external data is not supported)");
  }
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return file_error(source, "not a valid ONNX model (protobuf parse failed)");
  }
  if (!model.unknown_fields().empty() || !model.has_graph() || model.ir_version() <= 0) {
    return file_error(source, "not an ONNX model (no graph or IR version)");
  }
  return model;
}

namespace {

// Serializes straight into the output stream: no copy of the serialized model in memory.
Status save_model(const onnx::ModelProto& model, std::string_view path) {
  return write_output_atomic(path,
                             [&](std::ostream& out) { return model.SerializeToOstream(&out); });
}

}  // namespace

Status save_graph(const Graph& graph, std::string_view path) {
  return save_model(to_proto(graph), path);
}

Status save_graph(Graph&& graph, std::string_view path) {
  return save_model(to_proto(std::move(graph)), path);
}

Status check_graph(const Graph& graph, bool full_check) {
  onnx::ModelProto model = to_proto(graph);
  try {
    onnx::checker::check_model(model);
    if (full_check) onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    return graph.error(std::string("ONNX checker: ") + one_line(e.what()));
  }
  return {};
}

}  // namespace common
