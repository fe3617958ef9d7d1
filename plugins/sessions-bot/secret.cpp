#include "secret.hpp"

// Types and names only: libcrypto is opened on the first hash, not linked,
// so loading this family at start does not load (and relocate) libcrypto.
#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include <dlfcn.h>
#include <sys/random.h>

#include <cerrno>
#include <stdexcept>

namespace sessions_bot {

namespace {

#define SESSIONS_BOT_TEXT(x) #x
#define SESSIONS_BOT_SONAME(major) "libcrypto.so." SESSIONS_BOT_TEXT(major)

struct LibCrypto {
    decltype(&EVP_Digest) digest = nullptr;
    decltype(&EVP_sha256) sha256 = nullptr;
};

// The libcrypto these headers describe; a failed open is tried again on the next hash.
const LibCrypto& libcrypto() {
    static const LibCrypto lib = [] {
        const char* soname = SESSIONS_BOT_SONAME(OPENSSL_VERSION_MAJOR);
        void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!handle) throw std::runtime_error(std::string("cannot open ") + soname + " for SHA-256");
        LibCrypto found;
        found.digest = reinterpret_cast<decltype(&EVP_Digest)>(::dlsym(handle, "EVP_Digest"));
        found.sha256 = reinterpret_cast<decltype(&EVP_sha256)>(::dlsym(handle, "EVP_sha256"));
        if (!found.digest || !found.sha256) throw std::runtime_error(std::string(soname) + " has no SHA-256");
        return found;
    }();
    return lib;
}

std::string hex(const unsigned char* data, std::size_t size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(size * 2);
    for (std::size_t i = 0; i < size; ++i) {
        out += digits[data[i] >> 4];
        out += digits[data[i] & 0xf];
    }
    return out;
}

// Straight from the kernel's generator.
std::string random_bytes(std::size_t count) {
    std::string buffer(count, '\0');
    for (std::size_t done = 0; done < count;) {
        const ssize_t n = ::getrandom(buffer.data() + done, count - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error("the system's random generator failed");
        }
        done += static_cast<std::size_t>(n);
    }
    return buffer;
}

const unsigned char* bytes_of(const std::string& s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

} // namespace

std::string random_hex(std::size_t bytes) {
    const auto buffer = random_bytes(bytes);
    return hex(bytes_of(buffer), buffer.size());
}

std::string random_uuid() {
    auto b = random_bytes(16);
    b[6] = static_cast<char>((b[6] & 0x0f) | 0x40);
    b[8] = static_cast<char>((b[8] & 0x3f) | 0x80);
    const std::string h = hex(bytes_of(b), b.size());
    return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

std::string sha256_hex(std::string_view text) {
    const LibCrypto& lib = libcrypto();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (lib.digest(text.data(), text.size(), digest, &size, lib.sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed");
    return hex(digest, size);
}

} // namespace sessions_bot
