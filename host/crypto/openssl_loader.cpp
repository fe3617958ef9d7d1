#include "crypto/openssl.hpp"

#include "config/install_root.hpp"
#include "crypto/bytes.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

namespace gatehouse::crypto {

namespace {

const OpenSsl* open_module() {
    const std::string path = (config::install_root() / "lib" / "gatehouse" / "gatehouse-openssl.so").string();
    // Never closed: keys, fetchers and their threads live as long as the process.
    void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        const char* why = ::dlerror();
        throw std::runtime_error("cannot open the OpenSSL module " + path + ": " + (why ? why : "unknown reason"));
    }
    const auto build = reinterpret_cast<const char* (*)()>(::dlsym(module, "gatehouse_openssl_build"));
    const auto entry = reinterpret_cast<const OpenSsl* (*)()>(::dlsym(module, "gatehouse_openssl"));
    if (!build || !entry) throw std::runtime_error(path + " is not a Gatehouse OpenSSL module");
    // Its interface is C++: only the module built with this host may serve it.
    if (std::string(build()) != GATEHOUSE_OPENSSL_BUILD)
        throw std::runtime_error(path + " belongs to another build (" + build() + ", this host is " +
                                 GATEHOUSE_OPENSSL_BUILD + "): reinstall the host and the module together");
    return entry();
}

} // namespace

const OpenSsl& openssl() {
    // Asked on every gated call of a tool with rules (the rule code's HMAC):
    // one atomic load once open.
    static std::atomic<const OpenSsl*> module{nullptr};
    static std::mutex opening;
    if (const OpenSsl* open = module.load(std::memory_order_acquire)) return *open;
    std::lock_guard lock(opening);
    if (!module.load(std::memory_order_relaxed)) module.store(open_module(), std::memory_order_release);
    return *module.load(std::memory_order_relaxed);
}

std::string sha256_hex(std::string_view bytes) {
    return hex(as_text(openssl().sha256(bytes)));
}

} // namespace gatehouse::crypto
