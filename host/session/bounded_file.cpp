#include "session/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace gatehouse::session {

std::optional<BoundedFile> read_bounded_file(const std::filesystem::path& file, std::size_t max_bytes) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer, holding
    // the worker that asked; a regular file reads the same either way.
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        const int error = errno;
        if (error == ENOENT || error == ENOTDIR) return std::nullopt;
        throw BoundedFileRefused(std::string("cannot be opened: ") + std::strerror(error));
    }
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } close_fd{fd};
    const std::string too_large = "is larger than " + std::to_string(max_bytes) + " bytes";
    struct stat info {};
    if (::fstat(fd, &info) != 0) throw BoundedFileRefused(std::string("cannot be examined: ") + std::strerror(errno));
    if (!S_ISREG(info.st_mode)) throw BoundedFileRefused("is not a regular file");
    if (static_cast<std::uint64_t>(info.st_size) > max_bytes) throw BoundedFileRefused(too_large);
    BoundedFile out;
    out.mode = info.st_mode;
    // Room for one byte more than fstat said, so the end is seen in one
    // read; a file that grows since is followed up to one byte past the bound.
    out.text.resize(static_cast<std::size_t>(info.st_size) + 1);
    std::size_t used = 0;
    for (;;) {
        if (used == out.text.size()) out.text.resize(std::min(out.text.size() * 2, max_bytes + 1));
        const ssize_t n = ::read(fd, out.text.data() + used, out.text.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw BoundedFileRefused(std::string("cannot be read: ") + std::strerror(errno));
        if (n == 0) break;
        used += static_cast<std::size_t>(n);
        if (used > max_bytes) throw BoundedFileRefused(too_large);
    }
    out.text.resize(used);
    return out;
}

} // namespace gatehouse::session
