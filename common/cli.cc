#include "common/cli.h"

#include <charconv>
#include <chrono>
#include <climits>
#include <cstdio>
#include <iostream>

#include "common/dtype.h"
#include "common/graph.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace common {

Result<std::pair<std::string, Dims>> parse_input_shape(std::string_view text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error{"", "", "",
                 "--input-shape expects NAME=D0,D1,..., got '" + std::string(text) + "'"};
  }
  Dims dims;
  std::string_view rest = text.substr(eq + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    int64_t d = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (ec != std::errc() || p != item.data() + item.size() || d < 0) {
      return Error{"", "", "",
                   "--input-shape: bad dimension '" + std::string(item) + "' in '" +
                       std::string(text) + "'"};
    }
    dims.push_back(d);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return std::make_pair(std::string(text.substr(0, eq)), dims);
}

Result<std::map<std::string, Dims>> parse_input_shapes(const std::vector<std::string>& texts) {
  std::map<std::string, Dims> out;
  for (const std::string& t : texts) {
    ASSIGN_OR_RETURN(auto kv, parse_input_shape(t));
    if (!out.emplace(kv.first, kv.second).second) {
      return Error{"", "", "", "--input-shape given twice for '" + kv.first + "'"};
    }
  }
  return out;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int report_error(std::string_view tool, const Error& error) {
  std::cerr << tool << ": " << error.str() << std::endl;
  return 2;
}

double now_ms() {
  const auto since_epoch = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration<double, std::milli>(since_epoch).count();
}

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);  // large blocks from the heap too, so they are reused once freed
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // and freed memory is not handed back
  mallopt(M_TOP_PAD, 64 << 20);        // the heap grows 64 MiB at a time
#endif
}

void one_heap_for_all_threads() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 1);
#endif
}

std::string port_text(const Graph& graph, const std::string& name) {
  const Value* v = graph.find(name);
  std::string out = name + ": " + std::string(dtype_name(v ? v->dtype : DType::kUndefined));
  if (!v || !v->shape) return out + " (rank unknown)";
  out += " [";
  for (size_t i = 0; i < v->shape->size(); ++i) {
    const int64_t d = (*v->shape)[i];
    const std::string param = i < v->dim_params.size() ? v->dim_params[i] : "";
    out += (i ? ", " : "") + (d >= 0 ? std::to_string(d) : param.empty() ? "?" : param);
  }
  return out + "]";
}

}  // namespace common
