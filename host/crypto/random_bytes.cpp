#include "crypto/random_bytes.hpp"

#include <cerrno>
#include <stdexcept>
#include <sys/random.h>

namespace gatehouse::crypto {

std::string random_bytes(std::size_t count) {
    std::string out(count, '\0');
    char* at = out.data();
    while (count > 0) {
        const ssize_t n = ::getrandom(at, count, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error("the kernel's random generator failed");
        }
        at += n;
        count -= static_cast<std::size_t>(n);
    }
    return out;
}

} // namespace gatehouse::crypto
