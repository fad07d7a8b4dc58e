// Loading a model from a file or stdin as a stream: the file's bytes (inflated when gzip) go
// straight into the protobuf parser, so a model is never in memory twice (bytes and message).
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/crc32.h"
#include "common/onnx_io.h"

namespace common {

namespace {

// The bytes of a file descriptor, inflated when they start as gzip (all concatenated members).
// A failure ends the stream (Read returns -1) and is kept in `error`.
class SourceStream : public google::protobuf::io::CopyingInputStream {
 public:
  SourceStream(int fd, std::string_view path) : fd_(fd), path_(path), in_(1 << 16) {}
  ~SourceStream() override {
    if (gzip_) inflateEnd(&zs_);
  }
  SourceStream(const SourceStream&) = delete;
  SourceStream& operator=(const SourceStream&) = delete;

  // Reads the first bytes and decides plain or gzip; false (with `error`) when there are none.
  bool start() {
    if (!fill()) return false;
    if (avail_ == 0) return fail("empty input");
    gzip_ = avail_ >= 2 && static_cast<unsigned char>(in_[0]) == 0x1f &&
            static_cast<unsigned char>(in_[1]) == 0x8b;
    if (gzip_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
      gzip_ = false;
      return fail("zlib init failed");
    }
    // Each member's trailer is checked here (check_member), its CRC with common::crc32, several
    // times faster than zlib's own (which inflateValidate turns off; zlib still reads the trailer).
    if (gzip_) inflateValidate(&zs_, 0);
    return true;
  }

  int Read(void* buffer, int size) override {
    if (error) return -1;
    return gzip_ ? inflate_into(static_cast<unsigned char*>(buffer), size)
                 : copy_into(static_cast<char*>(buffer), size);
  }

  std::optional<Error> error;

 private:
  bool fail(std::string message) {
    error = file_error(path_, std::move(message));
    return false;
  }
  int fail_read(std::string message) {
    fail(std::move(message));
    return -1;
  }

  // Refills `in_` when it is used up; false on a read error. At the end, avail_ stays 0.
  bool fill() {
    if (avail_ > 0 || eof_) return true;
    ssize_t n = 0;
    do {
      n = ::read(fd_, in_.data(), in_.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno == EISDIR) return fail("cannot read (not a regular file?)");
      return fail(std::string("read error: ") + std::strerror(errno));
    }
    eof_ = n == 0;
    next_ = in_.data();
    avail_ = static_cast<size_t>(n);
    return true;
  }

  int copy_into(char* out, int size) {
    if (!fill()) return -1;
    const size_t n = std::min(avail_, static_cast<size_t>(size));
    std::memcpy(out, next_, n);
    next_ += n;
    avail_ -= n;
    return static_cast<int>(n);
  }

  int inflate_into(unsigned char* out, int size) {
    while (true) {
      if (!fill()) return -1;
      if (avail_ == 0 && member_done_) return 0;  // the end, after a complete member
      if (avail_ == 0) return fail_read("corrupt or truncated gzip data");
      if (member_done_) {  // another member follows
        inflateReset(&zs_);
        member_done_ = false;
      }
      zs_.next_in = reinterpret_cast<Bytef*>(next_);
      zs_.avail_in = static_cast<uInt>(avail_);
      zs_.next_out = out;
      zs_.avail_out = static_cast<uInt>(size);
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      const bool consumed = zs_.avail_in < avail_;
      remember_consumed(next_, avail_ - zs_.avail_in);
      next_ = reinterpret_cast<char*>(zs_.next_in);
      avail_ = zs_.avail_in;
      const int produced = size - static_cast<int>(zs_.avail_out);
      member_crc_ =
          crc32({reinterpret_cast<const char*>(out), static_cast<size_t>(produced)}, member_crc_);
      member_size_ += static_cast<uint32_t>(produced);
      inflated_ += static_cast<uint64_t>(produced);
      if (inflated_ > kMaxModelBytes) {
        return fail_read("gzip data inflates past 2 GiB (the largest model protobuf reads)");
      }
      if (rc == Z_STREAM_END) {
        if (!check_member()) return fail_read("corrupt or truncated gzip data");
        member_done_ = true;
      } else if ((rc != Z_OK && rc != Z_BUF_ERROR) || (produced == 0 && !consumed)) {
        return fail_read("corrupt or truncated gzip data");
      }
      if (produced > 0) return produced;
    }
  }

  // Keeps the last 8 input bytes inflate consumed: at a member's end, its trailer.
  void remember_consumed(const char* from, size_t n) {
    if (n >= sizeof(tail_)) {
      std::memcpy(tail_, from + n - sizeof(tail_), sizeof(tail_));
      return;
    }
    std::memmove(tail_, tail_ + n, sizeof(tail_) - n);
    std::memcpy(tail_ + sizeof(tail_) - n, from, n);
  }

  // The finished member against its trailer: little-endian CRC-32, then the length modulo 2^32.
  // The next member starts both anew.
  bool check_member() {
    auto le32 = [&](int at) {
      uint32_t v = 0;
      for (int i = at + 3; i >= at; --i) v = (v << 8) | static_cast<unsigned char>(tail_[i]);
      return v;
    };
    const bool ok = le32(0) == member_crc_ && le32(4) == member_size_;
    member_crc_ = member_size_ = 0;
    return ok;
  }

  int fd_;
  std::string path_;
  std::vector<char> in_;
  char* next_ = nullptr;
  size_t avail_ = 0;
  bool eof_ = false;
  bool gzip_ = false;
  bool member_done_ = false;
  uint64_t inflated_ = 0;
  uint32_t member_crc_ = 0, member_size_ = 0;  // of the member being inflated
  char tail_[8] = {};
  z_stream zs_{};
};

// Closes a file descriptor it opened (not stdin).
struct FdCloser {
  int fd;
  bool owned;
  ~FdCloser() {
    if (owned) ::close(fd);
  }
};

// Messages are read field by field so that each tensor's raw_data gets a string of exactly its
// size: protobuf's stream parser reserves at most 50 MB for a bytes field and grows the string by
// doubling past that, which held a 128 MiB tensor in 200 MB (and 300 MB while it grew). Every
// other field is copied as it came and parsed by protobuf itself.
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

constexpr int kModelGraph = 7, kGraphNode = 1, kGraphInitializer = 5, kTensorRawData = 9;

// Reads fields up to the current limit (or the end): `on_field` takes the fields it wants (true
// when read, false on an error) and returns nullopt for the others, which are copied to `rest`.
template <class OnField>
bool split_fields(CodedInputStream& in, std::string& rest, OnField on_field) {
  google::protobuf::io::StringOutputStream sink(&rest);
  CodedOutputStream out(&sink);
  while (const uint32_t tag = in.ReadTag()) {
    const bool delimited =
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    std::optional<bool> taken =
        delimited ? on_field(WireFormatLite::GetTagFieldNumber(tag)) : std::optional<bool>();
    if (taken && !*taken) return false;
    if (!taken && !WireFormatLite::SkipField(&in, tag, &out)) return false;
  }
  return in.ConsumedEntireMessage() && !out.HadError();
}

// Runs `read` within the length-delimited field that starts at the stream's position.
template <class Read>
bool within_field(CodedInputStream& in, Read read) {
  uint32_t length = 0;
  if (!in.ReadVarint32(&length) || length > static_cast<uint32_t>(INT32_MAX)) return false;
  const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
  const bool ok = read();
  in.PopLimit(limit);
  return ok;
}

bool read_tensor(CodedInputStream& in, onnx::TensorProto& tensor) {
  std::string rest, raw;
  bool has_raw = false;
  const bool ok = split_fields(in, rest, [&](int field) -> std::optional<bool> {
    if (field != kTensorRawData) return std::nullopt;
    has_raw = true;
    uint32_t length = 0;
    return in.ReadVarint32(&length) && length <= static_cast<uint32_t>(INT32_MAX) &&
           in.ReadString(&raw, static_cast<int>(length));  // reserved to the limit: exact
  });
  if (!ok || !tensor.ParseFromString(rest)) return false;
  if (has_raw) tensor.mutable_raw_data()->swap(raw);
  return true;
}

// Initializers field by field; nodes one by one (so that a model whose weights are Constant
// nodes is not copied into `rest`).
bool read_graph(CodedInputStream& in, onnx::GraphProto& graph) {
  std::string rest;
  std::vector<onnx::TensorProto> initializers;
  std::vector<onnx::NodeProto> nodes;
  const bool ok = split_fields(in, rest, [&](int field) -> std::optional<bool> {
    if (field == kGraphNode) {
      return within_field(in, [&] { return nodes.emplace_back().ParseFromCodedStream(&in); });
    }
    if (field != kGraphInitializer) return std::nullopt;
    return within_field(in, [&] { return read_tensor(in, initializers.emplace_back()); });
  });
  if (!ok || !graph.ParseFromString(rest)) return false;
  for (onnx::NodeProto& n : nodes) graph.add_node()->Swap(&n);
  for (onnx::TensorProto& t : initializers) graph.add_initializer()->Swap(&t);
  return true;
}

// The model, its graph's initializers read one by one (a graph given twice is merged, as
// protobuf does).
bool read_model_fields(CodedInputStream& in, onnx::ModelProto& model) {
  std::string rest;
  std::optional<onnx::GraphProto> graph;
  const bool ok = split_fields(in, rest, [&](int field) -> std::optional<bool> {
    if (field != kModelGraph) return std::nullopt;
    onnx::GraphProto g;
    if (!within_field(in, [&] { return read_graph(in, g); })) return false;
    if (graph) {
      graph->MergeFrom(g);
    } else {
      graph = std::move(g);
    }
    return true;
  });
  if (!ok || !model.ParseFromString(rest)) return false;
  if (graph) model.mutable_graph()->Swap(&*graph);
  return true;
}

// Parses the model `stream` carries; a stream error wins over the parser's complaint. After a
// parse failure the rest of the stream is read, so that corrupt gzip data further on (or data
// inflating past 2 GiB) is reported as such.
Result<onnx::ModelProto> parse_stream(SourceStream& source, std::string_view path) {
  onnx::ModelProto model;
  bool parsed = false;
  {
    google::protobuf::io::CopyingInputStreamAdaptor stream(&source, 1 << 20);
    CodedInputStream in(&stream);
    in.SetTotalBytesLimit(INT32_MAX);
    parsed = read_model_fields(in, model);
  }
  if (!parsed && !source.error) {
    std::vector<char> scratch(1 << 20);
    while (source.Read(scratch.data(), static_cast<int>(scratch.size())) > 0) {
    }
  }
  if (source.error) return *source.error;
  if (!parsed) return file_error(path, "not a valid ONNX model (protobuf parse failed)");
  if (!model.unknown_fields().empty() || !model.has_graph() || model.ir_version() <= 0) {
    return file_error(path, "not an ONNX model (no graph or IR version)");
  }
  return model;
}

}  // namespace

Result<onnx::ModelProto> read_model(std::string_view path) {
  int fd = 0;
  if (path != "-") {
    fd = ::open(std::string(path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return file_error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  FdCloser closer{fd, path != "-"};
  SourceStream source(fd, path);
  if (!source.start()) return *source.error;
  return parse_stream(source, path);
}

Result<Graph> load_graph(std::string_view path) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, read_model(path));
  return from_proto(std::move(model), path);
}

}  // namespace common
