// Small pieces every command line shares (CLI11 itself stays in each tool's main.cc).
#pragma once

#include <exception>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/tensor.h"

namespace common {

class Graph;

/// "name: float [1, 3]" for a value of the graph (a symbolic dim as its name or "?"; "(rank
/// unknown)" without a shape), as --report files list inputs and outputs.
std::string port_text(const Graph& graph, const std::string& name);
/// Parses `NAME=D0,D1,...` (as given to --input-shape); the name may itself contain '='.
Result<std::pair<std::string, Dims>> parse_input_shape(std::string_view text);
/// Parses every --input-shape argument; a name given twice is an error.
Result<std::map<std::string, Dims>> parse_input_shapes(const std::vector<std::string>& texts);
/// `text` as a JSON string literal.
std::string json_string(std::string_view text);
/// Prints `tool: <error>` as one line on stderr; returns the exit code for bad input (2).
int report_error(std::string_view tool, const Error& error);
/// Runs a tool's `body` (returning its exit code) and turns an exception that would otherwise end
/// the process with std::terminate (memory for a model's declared sizes, a library's throw) into
/// one line on stderr and exit code 2. Outputs are written atomically, so none is left behind.
template <class Body>
int run_guarded(std::string_view tool, std::string_view input, Body&& body) noexcept {
  try {
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return report_error(tool, {std::string(input), "", "", "out of memory"});
    } catch (const std::exception& e) {
      return report_error(tool,
                          {std::string(input), "", "", std::string("internal error: ") + e.what()});
    }
  } catch (...) {  // reporting itself failed
    return 2;
  }
}
/// Milliseconds since an arbitrary epoch (steady clock).
double now_ms();
/// Makes the allocator keep memory the process frees for its next allocations, instead of
/// handing large blocks back to the system and faulting fresh pages in for the next ones: a
/// model of 270 MB (tllverifybench N=64) is read, copied and written in buffers of that size,
/// and on a virtual machine where page faults are dear that doubled the time to convert it.
/// The tools call it first; the memory stays with the process until it exits. glibc only.
void keep_freed_memory();
/// Makes threads allocate from the one heap keep_freed_memory configures. glibc otherwise gives
/// each thread a heap of its own, where those settings do not hold, so memory a thread frees is
/// faulted in again: torchonnx -j 2 over the 146 VNN-COMP models took 11.3 s and 805 MB with a
/// heap per thread, 10.0 s and 617 MB with one. Call it before starting threads. glibc only.
void one_heap_for_all_threads();

}  // namespace common
