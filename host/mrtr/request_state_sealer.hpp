#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::mrtr {

// The one request a requestState may be echoed on: who asked, what they
// called, with which arguments. A state presented on anything else is refused.
struct StateBinding {
    std::string principal;             // the caller: auth::Principal::owner_key()
    std::string method;                // tools/call, prompts/get or resources/read
    std::string target;                // the tool, the prompt, or the resource URI
    std::string arguments_fingerprint; // RequestStateSealer::fingerprint of the arguments
};

// Seals a plugin's state between the rounds of a multi round-trip request
// (AES-256-GCM): the client holds it, cannot read or change it, and can echo
// it only on the request it was made for, before it expires, on a server of
// the same name holding one of the keys. Several keys rotate: the first
// seals, any opens. Thread-safe. Building one touches no OpenSSL state (whose
// first use costs milliseconds): a host that never seals never pays for it.
class RequestStateSealer {
public:
    using Clock = std::chrono::system_clock;
    static constexpr std::size_t kKeyBytes = 32;
    static constexpr std::size_t kMaxStateBytes = 8 * 1024;

    // keys: raw 32-byte keys, the sealing one first; none makes one at
    // random for this process only.
    RequestStateSealer(std::vector<std::string> keys, std::string server_name, std::chrono::milliseconds ttl);

    // The opaque token for the client. plugin_state: UTF-8 text of at most
    // kMaxStateBytes (std::length_error, std::invalid_argument otherwise).
    std::string seal(const StateBinding& binding, std::string_view plugin_state,
                     Clock::time_point now = Clock::now()) const;

    // The plugin's state, or nullopt when the token is malformed, tampered
    // with, sealed under a key not held here, expired, or bound to another
    // principal, method, target, arguments or server name. Why goes to the
    // debug log only.
    std::optional<std::string> open(std::string_view token, const StateBinding& binding,
                                    Clock::time_point now = Clock::now()) const;

    // True when no key was configured and this process made its own.
    bool ephemeral() const { return ephemeral_; }

    // SHA-256 (hex) of the arguments' canonical JSON (keys sorted).
    static std::string fingerprint(const nlohmann::json& arguments);

    // A configured key: base64 of exactly 32 bytes. nullopt otherwise.
    static std::optional<std::string> parse_key(std::string_view base64_text);

private:
    struct Key {
        std::string bytes;
        std::string id; // 4 bytes of its SHA-256: which key sealed a token
    };
    // The keys with their ids, worked out on first use.
    const std::vector<Key>& keys() const;

    mutable std::once_flag ids_made_;
    mutable std::vector<Key> keys_;
    std::string server_name_;
    std::chrono::milliseconds ttl_;
    bool ephemeral_ = false;
};

} // namespace gatehouse::mrtr
