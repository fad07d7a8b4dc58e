#include "common/error.h"

#include <cstdio>

namespace common {

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Error file_error(std::string_view path, std::string message) {
  return Error{std::string(path), "", "", std::move(message)};
}

std::string Error::str() const {
  std::string out;
  if (!file.empty()) out += one_line(file) + ": ";
  if (!node.empty() || !op.empty()) {
    out += "node '" + one_line(node) + "'";
    if (!op.empty()) out += " (" + one_line(op) + ")";
    out += ": ";
  }
  out += one_line(message);
  return out;
}

}  // namespace common
