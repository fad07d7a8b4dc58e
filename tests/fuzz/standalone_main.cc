// A main for fuzz targets built without libFuzzer (GCC, the regular build): replays seed files and
// a fixed number of mutations of each, so that ctest runs every target as a quick smoke test.
//
//   fuzz_TARGET [-runs=N] [-max_seeds=N] [-ext=.onnx] [-seed=N] PATH...
//
// PATH: files, or folders searched recursively for files whose name contains -ext. -max_seeds keeps
// that many of them, evenly spaced in sorted order. Each seed runs as is, then N mutated copies
// (LLVMFuzzerCustomMutator where the target has one, else the byte mutation below); -v names each
// input on stderr before running it; -mutation=S replays the mutation of seed S only (-runs=1);
// -dump=FILE writes each input there first (what a crash ran).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                                                size_t max_size, unsigned seed);

namespace {

std::mt19937 byte_rng(1);  // the stand-in byte mutation's state

struct Args {
  long runs = 0;
  size_t max_seeds = 0;
  std::string ext;
  unsigned seed = 1;
  bool verbose = false;
  long mutation = -1;  // -mutation=S: only the mutation of seed S (as -v printed it)
  std::string dump;
  std::vector<std::string> paths;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view s = argv[i];
    if (s.rfind("-runs=", 0) == 0) {
      a.runs = std::stol(std::string(s.substr(6)));
    } else if (s.rfind("-max_seeds=", 0) == 0) {
      a.max_seeds = std::stoul(std::string(s.substr(11)));
    } else if (s.rfind("-ext=", 0) == 0) {
      a.ext = s.substr(5);
    } else if (s.rfind("-dump=", 0) == 0) {
      a.dump = s.substr(6);
    } else if (s.rfind("-mutation=", 0) == 0) {
      a.mutation = std::stol(std::string(s.substr(10)));
    } else if (s == "-v") {
      a.verbose = true;
    } else if (s.rfind("-seed=", 0) == 0) {
      a.seed = static_cast<unsigned>(std::stoul(std::string(s.substr(6))));
    } else {
      a.paths.emplace_back(s);
    }
  }
  return a;
}

std::vector<std::string> seeds(const Args& a) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : a.paths) {
    if (!fs::is_directory(p)) {
      out.push_back(p);
      continue;
    }
    for (const auto& e : fs::recursive_directory_iterator(p)) {
      const std::string name = e.path().string();
      if (e.is_regular_file() && e.path().filename().string().find(a.ext) != std::string::npos) {
        out.push_back(name);
      }
    }
  }
  std::sort(out.begin(), out.end());
  if (a.max_seeds == 0 || out.size() <= a.max_seeds) return out;
  std::vector<std::string> kept;
  for (size_t i = 0; i < a.max_seeds; ++i) kept.push_back(out[i * out.size() / a.max_seeds]);
  return kept;
}

std::string dump_path;  // -dump: every input is written here before it runs

void run(const std::string& bytes) {
  if (!dump_path.empty()) std::ofstream(dump_path, std::ios::binary) << bytes;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

// The stand-in for libFuzzer's byte mutation: flip a bit, overwrite, insert or erase a byte.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  const uint32_t r = byte_rng();
  if (size == 0 || (r % 4 == 0 && size < max_size)) {
    const size_t at = size ? r % (size + 1) : 0;
    std::memmove(data + at + 1, data + at, size - at);
    data[at] = static_cast<uint8_t>(byte_rng());
    return size + 1;
  }
  const size_t at = byte_rng() % size;
  switch (r % 4) {
    case 1:
      data[at] ^= static_cast<uint8_t>(1u << (byte_rng() % 8));
      return size;
    case 2:
      data[at] = static_cast<uint8_t>(byte_rng());
      return size;
    default:
      std::memmove(data + at, data + at + 1, size - at - 1);
      return size - 1;
  }
}

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  byte_rng.seed(args.seed);
  dump_path = args.dump;
  long executions = 0;
  const std::vector<std::string> files = seeds(args);
  for (size_t i = 0; i < files.size(); ++i) {
    std::ifstream f(files[i], std::ios::binary);
    const std::string seed{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    if (args.verbose) std::fprintf(stderr, "%s\n", files[i].c_str());
    run(seed);
    ++executions;
    for (long k = 0; k < args.runs; ++k) {
      std::string mutated = seed;
      const size_t max_size = 2 * seed.size() + 64;
      mutated.resize(max_size);
      auto* bytes = reinterpret_cast<uint8_t*>(mutated.data());
      const unsigned s = args.mutation >= 0
                             ? static_cast<unsigned>(args.mutation)
                             : args.seed * 7919u + static_cast<unsigned>(i * 1000 + k);
      mutated.resize(LLVMFuzzerCustomMutator
                         ? LLVMFuzzerCustomMutator(bytes, seed.size(), max_size, s)
                         : LLVMFuzzerMutate(bytes, seed.size(), max_size));
      if (args.verbose) std::fprintf(stderr, "  mutation %ld (seed %u)\n", k, s);
      run(mutated);
      ++executions;
    }
  }
  std::printf("%zu seeds, %ld executions, no crash\n", files.size(), executions);
  return files.empty() ? 1 : 0;
}
