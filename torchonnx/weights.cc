#include "torchonnx/weights.h"

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string_view>

#include "common/crc32.h"
#include "common/onnx_io.h"

namespace torchonnx {

using common::DType;
using common::Tensor;

namespace {

// Pickle opcodes (protocol 2) that torch's weights-only unpickler accepts.
constexpr char kProto = '\x80', kGlobal = 'c', kEmptyTuple = ')', kReduce = 'R', kMark = '(',
               kTuple = 't', kSetItems = 'u', kBinPersId = 'Q', kNewFalse = '\x89', kStop = '.',
               kBinUnicode = 'X', kBinInt1 = 'K', kBinInt2 = 'M', kBinInt = 'J', kLong1 = '\x8a';

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

class Pickler {
 public:
  void proto() { out_ += kProto, out_ += '\x02'; }
  void global(std::string_view module, std::string_view name) {
    out_ += kGlobal;
    out_.append(module).append("\n").append(name).append("\n");
  }
  void str(std::string_view s) {
    out_ += kBinUnicode;
    put_le(out_, s.size(), 4);
    out_.append(s);
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) return out_ += kBinInt1, put_le(out_, v, 1);
    if (v >= 0 && v < 65536) return out_ += kBinInt2, put_le(out_, v, 2);
    if (v >= INT32_MIN && v <= INT32_MAX) return out_ += kBinInt, put_le(out_, v, 4);
    out_ += kLong1, out_ += '\x08';  // 8-byte two's complement little-endian
    put_le(out_, static_cast<uint64_t>(v), 8);
  }
  void tuple(const common::Dims& values) {
    if (values.empty()) return void(out_ += kEmptyTuple);
    out_ += kMark;
    for (int64_t v : values) integer(v);
    out_ += kTuple;
  }
  void op(char c) { out_ += c; }
  void ordered_dict() {
    global("collections", "OrderedDict");
    op(kEmptyTuple);
    op(kReduce);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

common::Result<std::string_view> storage_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return std::string_view("FloatStorage");
    case DType::kDouble:
      return std::string_view("DoubleStorage");
    case DType::kFloat16:
      return std::string_view("HalfStorage");
    case DType::kBFloat16:
      return std::string_view("BFloat16Storage");
    case DType::kInt64:
      return std::string_view("LongStorage");
    case DType::kInt32:
      return std::string_view("IntStorage");
    case DType::kInt16:
      return std::string_view("ShortStorage");
    case DType::kInt8:
      return std::string_view("CharStorage");
    case DType::kUInt8:
      return std::string_view("ByteStorage");
    case DType::kBool:
      return std::string_view("BoolStorage");
    default:
      break;
  }
  return common::Error{
      "", "", "",
      "cannot store element type " + std::string(common::dtype_name(dtype)) + " in a .pth"};
}

common::Dims contiguous_strides(const common::Dims& dims) {
  common::Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return strides;
}

// torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())
common::Status pickle_tensor(Pickler& p, const Tensor& t, const std::string& key) {
  ASSIGN_OR_RETURN(std::string_view storage, storage_type(t.dtype));
  p.global("torch._utils", "_rebuild_tensor_v2");
  p.op(kMark);
  p.op(kMark);
  p.str("storage");
  p.global("torch", storage);
  p.str(key);
  p.str("cpu");
  p.integer(t.numel());
  p.op(kTuple);
  p.op(kBinPersId);
  p.integer(0);
  p.tuple(t.dims);
  p.tuple(contiguous_strides(t.dims));
  p.op(kNewFalse);
  p.ordered_dict();
  p.op(kTuple);
  p.op(kReduce);
  return {};
}

// A zip archive of STORED entries (no compression), data aligned to 64 bytes.
class ZipWriter {
 public:
  explicit ZipWriter(std::ostream& out) : out_(out) {}

  void add(const std::string& name, std::string_view data) {
    const uint64_t offset = size_;
    const uint32_t crc = common::crc32(data);
    const size_t unpadded = offset + 30 + name.size() + 4;
    const size_t pad = (64 - unpadded % 64) % 64;
    std::string h;
    put_le(h, 0x04034b50, 4);
    put_le(h, 20, 2);    // version needed
    put_le(h, 0, 2);     // flags
    put_le(h, 0, 2);     // stored
    put_le(h, 0, 2);     // time
    put_le(h, 0x21, 2);  // date: 1980-01-01, fixed for byte-identical output
    put_le(h, crc, 4);
    put_le(h, data.size(), 4);
    put_le(h, data.size(), 4);
    put_le(h, name.size(), 2);
    put_le(h, 4 + pad, 2);
    h += name;
    put_le(h, 0x4246, 2);  // extra field "FB": padding, as torch writes it
    put_le(h, pad, 2);
    h.append(pad, 'Z');
    write(h);
    write(data);
    entries_.push_back({name, crc, data.size(), offset});
  }

  // Writes the central directory; false when the stream failed.
  bool finish() {
    const uint64_t cd_offset = size_;
    std::string cd;
    for (const Entry& e : entries_) {
      put_le(cd, 0x02014b50, 4);
      put_le(cd, 20, 2);  // made by
      put_le(cd, 20, 2);  // needed
      put_le(cd, 0, 2);
      put_le(cd, 0, 2);
      put_le(cd, 0, 2);
      put_le(cd, 0x21, 2);
      put_le(cd, e.crc, 4);
      put_le(cd, e.size, 4);
      put_le(cd, e.size, 4);
      put_le(cd, e.name.size(), 2);
      put_le(cd, 0, 2);  // extra
      put_le(cd, 0, 2);  // comment
      put_le(cd, 0, 2);  // disk
      put_le(cd, 0, 2);  // internal attributes
      put_le(cd, 0, 4);  // external attributes
      put_le(cd, e.offset, 4);
      cd += e.name;
    }
    const uint64_t cd_size = cd.size();
    put_le(cd, 0x06054b50, 4);
    put_le(cd, 0, 2);
    put_le(cd, 0, 2);
    put_le(cd, entries_.size(), 2);
    put_le(cd, entries_.size(), 2);
    put_le(cd, cd_size, 4);
    put_le(cd, cd_offset, 4);
    put_le(cd, 0, 2);
    write(cd);
    return static_cast<bool>(out_);
  }

 private:
  struct Entry {
    std::string name;
    uint32_t crc;
    uint64_t size;
    uint64_t offset;
  };
  void write(std::string_view bytes) {
    out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    size_ += bytes.size();
  }
  std::ostream& out_;
  uint64_t size_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace

std::vector<std::pair<std::string, const Tensor*>> state_dict(const Module& module) {
  std::vector<std::pair<std::string, const Tensor*>> out;
  for (const Layer& l : module.layers) {
    for (const Param& p : l.params) out.emplace_back(l.attr + "." + p.name, &p.tensor);
  }
  for (const Buffer& b : module.buffers) out.emplace_back(b.attr, &b.tensor);
  return out;
}

common::Result<TorchArchive> torch_archive(
    const std::vector<std::pair<std::string, const Tensor*>>& entries) {
  uint64_t total = 0;
  for (const auto& [key, t] : entries) total += t->raw.size();
  if (total >= 0xffff0000ull || entries.size() > 65000) {
    return common::Error{"", "", "", "weights exceed 4 GiB or 65000 tensors (zip64 unsupported)"};
  }
  Pickler p;
  p.proto();
  p.ordered_dict();
  p.op(kMark);
  TorchArchive archive;
  for (size_t i = 0; i < entries.size(); ++i) {
    p.str(entries[i].first);
    RETURN_IF_ERROR(pickle_tensor(p, *entries[i].second, std::to_string(i)));
    archive.tensors.push_back(entries[i].second);
  }
  p.op(kSetItems);
  p.op(kStop);
  archive.pickle = p.bytes();
  return archive;
}

bool write_torch_archive(const TorchArchive& archive, std::ostream& out) {
  ZipWriter zip(out);
  zip.add("archive/data.pkl", archive.pickle);
  zip.add("archive/byteorder", "little");
  for (size_t i = 0; i < archive.tensors.size(); ++i) {
    zip.add("archive/data/" + std::to_string(i), archive.tensors[i]->raw);
  }
  zip.add("archive/version", "3\n");
  return zip.finish();
}

common::Result<std::string> torch_save_bytes(
    const std::vector<std::pair<std::string, const Tensor*>>& entries) {
  ASSIGN_OR_RETURN(TorchArchive archive, torch_archive(entries));
  std::ostringstream out;
  if (!write_torch_archive(archive, out)) return common::Error{"", "", "", "cannot write weights"};
  return std::move(out).str();
}

common::Status write_weights(const Module& module, std::string_view path) {
  ASSIGN_OR_RETURN(TorchArchive archive, torch_archive(state_dict(module)));
  return common::write_output_atomic(
      path, [&](std::ostream& out) { return write_torch_archive(archive, out); });
}

}  // namespace torchonnx
