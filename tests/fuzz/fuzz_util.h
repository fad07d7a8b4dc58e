// What every ONNX fuzz target does first: bytes (gzip or plain) -> ModelProto -> IR, through the
// same read_input the tools use (the bytes are handed over as an in-memory file, /proc/self/fd).
#pragma once

#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "common/graph.h"
#include "common/onnx_io.h"

namespace fuzz {

/// The path of an in-memory file holding `size` bytes (one file, rewritten per input).
inline std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("fuzz_input", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::abort();
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

/// The IR of the bytes, or nullopt where the tools would report an error (exit 2).
inline std::optional<common::Graph> load(const uint8_t* data, size_t size) {
  auto bytes = common::read_input(as_file(data, size));
  if (!bytes.ok()) return std::nullopt;
  auto proto = common::parse_model(*bytes, "fuzz");
  if (!proto.ok()) return std::nullopt;
  auto graph = common::from_proto(std::move(*proto), "fuzz");
  if (!graph.ok()) return std::nullopt;
  return std::move(*graph);
}

/// Runs `body` as the tools' common::run_guarded does, except that only std::bad_alloc (reported
/// as "out of memory") is expected: any other exception escapes, so the fuzzer reports it (the
/// tools would print it as an "internal error").
template <class Body>
int guarded(Body&& body) {
  try {
    body();
  } catch (const std::bad_alloc&) {
  }
  return 0;
}

}  // namespace fuzz
