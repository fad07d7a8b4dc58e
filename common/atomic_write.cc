#include "common/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace common {

namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// A device or pipe (/dev/null, /dev/stdout, a fifo) is written in place, never renamed over.
bool is_special_file(const std::string& target) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return false;
  return S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

bool written_in_place(std::string_view path) {
  return path == "-" || is_special_file(std::string(path));
}

Status write_in_place(std::string_view path, const StreamWriter& write) {
  if (path == "-") {
    const bool written = write(std::cout);
    std::cout.flush();
    if (!written || !std::cout) return file_error(path, "cannot write to stdout");
    return {};
  }
  std::ofstream f(std::string(path), std::ios::binary);
  if (!f) return file_error(path, "cannot write: " + errno_text());
  if (!write(f) || !f.flush()) return file_error(path, "cannot write");
  return {};
}

StreamWriter bytes_writer(std::string_view bytes) {
  return [bytes](std::ostream& out) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
  };
}

// `.NAME.PID-N.tmp` beside `target`.
std::string temporary_name(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(target);
  const std::string name = "." + p.filename().string() + "." + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++) + ".tmp";
  return (p.parent_path() / name).string();
}

// Creates a new temporary beside `target` (mode 0666 less the umask, as the output would get).
Result<std::pair<int, std::string>> create_temporary(const std::string& target) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string tmp = temporary_name(target);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return std::pair<int, std::string>{fd, std::move(tmp)};
    if (errno != EEXIST) break;  // a leftover of a killed process with this pid: try the next
  }
  return file_error(target, "cannot write: " + errno_text());
}

// Writes what `write` produces to a new temporary beside `target`, flushed to disk (fsync on
// the descriptor that created it); returns its name.
Result<std::string> write_temporary(const std::string& target, const StreamWriter& write) {
  Result<std::pair<int, std::string>> created = create_temporary(target);
  if (!created.ok()) return created.error();
  auto [fd, tmp] = std::move(*created);
  bool ok = false;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    ok = f && write(f) && f.flush();
  }
  ok = ok && ::fsync(fd) == 0;
  const std::string why = errno_text();
  if (::close(fd) != 0 || !ok) {
    std::remove(tmp.c_str());
    return file_error(target, "write failed: " + why);
  }
  return tmp;
}

// Makes the renames in `target`'s folder durable; best effort (not every file system syncs one).
void sync_folder(const std::string& target) {
  const fs::path folder = fs::path(target).parent_path();
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

using Staged = std::vector<std::pair<std::string, std::string>>;  // (temporary, target)

// Renames every temporary over its target, the last one last; on failure removes them all.
Status commit(const Staged& staged) {
  if (staged.size() > 1) std::remove(staged.back().second.c_str());
  for (size_t i = 0; i < staged.size(); ++i) {
    if (std::rename(staged[i].first.c_str(), staged[i].second.c_str()) == 0) continue;
    const std::string why = errno_text();
    for (size_t j = i; j < staged.size(); ++j) std::remove(staged[j].first.c_str());
    // The files already renamed would pair with the missing one's older version: remove them.
    for (size_t j = 0; j < i; ++j) std::remove(staged[j].second.c_str());
    return file_error(staged[i].second, "cannot rename into place: " + why);
  }
  if (!staged.empty()) sync_folder(staged.back().second);
  return {};
}

}  // namespace

Status write_output_atomic(std::string_view path, std::string_view bytes) {
  return write_outputs_atomic({{path, bytes}});
}

Status write_output_atomic(std::string_view path, const StreamWriter& write) {
  return write_outputs_atomic(
      std::vector<std::pair<std::string_view, StreamWriter>>{{path, write}});
}

Status write_outputs_atomic(
    const std::vector<std::pair<std::string_view, std::string_view>>& files) {
  std::vector<std::pair<std::string_view, StreamWriter>> writers;
  writers.reserve(files.size());
  for (const auto& [path, bytes] : files) writers.emplace_back(path, bytes_writer(bytes));
  return write_outputs_atomic(writers);
}

Status write_outputs_atomic(const std::vector<std::pair<std::string_view, StreamWriter>>& files) {
  Staged staged;
  auto discard = [&] {
    for (const auto& s : staged) std::remove(s.first.c_str());
  };
  for (const auto& [path, write] : files) {
    if (written_in_place(path)) continue;
    Result<std::string> tmp = write_temporary(std::string(path), write);
    if (!tmp.ok()) {
      discard();
      return tmp.error();
    }
    staged.emplace_back(std::move(*tmp), std::string(path));
  }
  for (const auto& [path, write] : files) {
    if (!written_in_place(path)) continue;
    if (Status s = write_in_place(path, write); !s.ok()) {
      discard();
      return s;
    }
  }
  return commit(staged);
}

}  // namespace common
