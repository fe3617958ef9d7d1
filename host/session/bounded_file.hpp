#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace gatehouse::session {

// A file at the path may not be read. what() ends a sentence that begins
// with the file's name: "is not a regular file", "is larger than 65536
// bytes", "cannot be read: Permission denied".
class BoundedFileRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct BoundedFile {
    std::string text;
    mode_t mode = 0; // of the file that was read
};

// The whole of a small file that another program or person writes (the
// program state file, the credentials and program settings files, the grants
// file), read so that nothing placed at the path can stall or swell the
// host: the open never waits (a FIFO without a writer, a device), anything
// but a regular file is refused, and so is a file past max_bytes, by its
// size and again by what is read. The checks and the read use one
// descriptor, so a file swapped in between is never read. std::nullopt when
// nothing is at the path.
std::optional<BoundedFile> read_bounded_file(const std::filesystem::path& file, std::size_t max_bytes);

} // namespace gatehouse::session
