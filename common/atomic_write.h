// Writing outputs so that a reader, or a kill at any moment, sees either the old file or the whole
// new one: never a partial file.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace common {

/// Writes bytes to a path, or to stdout ("-"). A regular file is written to a temporary file in
/// the same folder, flushed to disk (fsync) and renamed over the path. The temporary's name is
/// hidden and ends in ".tmp" (`.NAME.PID-N.tmp`), so that a process killed while writing leaves
/// nothing that reads as an output. Devices and pipes (/dev/null, a fifo) are written in place.
Status write_output_atomic(std::string_view path, std::string_view bytes);

/// Writes several (path, bytes) files all or none: every regular file goes to a temporary first,
/// and the temporaries are renamed into place only when all are written. A failure leaves none
/// of them behind (files renamed before a failed rename are removed again). The last file is the
/// one that completes the set: its older version is removed before the first rename and it is
/// renamed last, so that after a kill between the renames it is absent; where it is present, the
/// others beside it are the ones written with it.
Status write_outputs_atomic(
    const std::vector<std::pair<std::string_view, std::string_view>>& files);

/// Writes the bytes a function puts into a stream (false: it failed), with the same guarantees;
/// the content never needs to be in memory at once.
using StreamWriter = std::function<bool(std::ostream&)>;
Status write_output_atomic(std::string_view path, const StreamWriter& write);
Status write_outputs_atomic(const std::vector<std::pair<std::string_view, StreamWriter>>& files);

}  // namespace common
