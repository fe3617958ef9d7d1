#include "mrtr/request_state_sealer.hpp"

#include "crypto/bytes.hpp"
#include "crypto/openssl.hpp"
#include "crypto/random_bytes.hpp"
#include "license/base64.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace gatehouse::mrtr {

namespace {

constexpr unsigned char kFormat = 1;
constexpr std::size_t kIdBytes = 4;
constexpr std::size_t kNonceBytes = 12;
constexpr std::size_t kTagBytes = 16;
constexpr std::size_t kHeaderBytes = 1 + kIdBytes + kNonceBytes;
// Base64 of the largest state with its bindings; anything longer is refused unread.
constexpr std::size_t kMaxTokenChars = 4 * (RequestStateSealer::kMaxStateBytes * 2 + 4096) / 3;

std::string sha256(std::string_view bytes) {
    return std::string(crypto::as_text(crypto::openssl().sha256(bytes)));
}

std::int64_t unix_ms(RequestStateSealer::Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

} // namespace

RequestStateSealer::RequestStateSealer(std::vector<std::string> keys, std::string server_name,
                                       std::chrono::milliseconds ttl)
    : server_name_(std::move(server_name)), ttl_(ttl) {
    if (keys.empty()) {
        keys.push_back(crypto::random_bytes(kKeyBytes));
        ephemeral_ = true;
    }
    for (auto& k : keys) {
        if (k.size() != kKeyBytes) throw std::invalid_argument("a requestState key must be 32 bytes");
        keys_.push_back({std::move(k), {}});
    }
}

const std::vector<RequestStateSealer::Key>& RequestStateSealer::keys() const {
    std::call_once(ids_made_, [this] {
        for (Key& key : keys_)
            key.id = sha256(key.bytes).substr(0, kIdBytes);
    });
    return keys_;
}

std::string RequestStateSealer::fingerprint(const nlohmann::json& arguments) {
    return crypto::hex(sha256(arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

std::optional<std::string> RequestStateSealer::parse_key(std::string_view base64_text) {
    auto bytes = license::base64_decode(base64_text);
    if (!bytes || bytes->size() != kKeyBytes) return std::nullopt;
    return bytes;
}

std::string RequestStateSealer::seal(const StateBinding& binding, std::string_view plugin_state,
                                     Clock::time_point now) const {
    if (plugin_state.size() > kMaxStateBytes) throw std::length_error("requestState of a plugin over 8 KiB");
    // The state travels as a JSON string inside the payload: text only, or
    // it would not come back byte for byte (a plugin's state arrives as a
    // JSON string, so it always is text).
    try {
        (void)nlohmann::json(plugin_state).dump();
    } catch (const nlohmann::json::type_error&) {
        throw std::invalid_argument("requestState of a plugin that is not UTF-8 text");
    }
    const nlohmann::json payload = {
        {"e", unix_ms(now + ttl_)},           {"p", binding.principal}, {"m", binding.method}, {"t", binding.target},
        {"a", binding.arguments_fingerprint}, {"s", server_name_},      {"st", plugin_state}};
    const std::string plain = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const Key& key = keys().front();

    // The header (format, key id, nonce) goes in front; format and key id are
    // authenticated too, so a token moved to another key fails.
    std::string sealed(1, static_cast<char>(kFormat));
    sealed += key.id;
    const std::string nonce = crypto::random_bytes(kNonceBytes);
    sealed += nonce;
    sealed +=
        crypto::openssl().seal_aes256gcm(key.bytes, nonce, std::string_view(sealed).substr(0, 1 + kIdBytes), plain);
    return license::base64_encode(sealed);
}

std::optional<std::string> RequestStateSealer::open(std::string_view token, const StateBinding& binding,
                                                    Clock::time_point now) const {
    const auto refuse = [](const char* why) -> std::optional<std::string> {
        spdlog::debug("requestState refused: {}", why);
        return std::nullopt;
    };
    if (token.size() > kMaxTokenChars) return refuse("longer than any this host seals");
    const auto sealed = license::base64_decode(token);
    if (!sealed) return refuse("not base64");
    if (sealed->size() < kHeaderBytes + kTagBytes || static_cast<unsigned char>((*sealed)[0]) != kFormat)
        return refuse("not a sealed state of this format");
    const std::string_view header(sealed->data(), 1 + kIdBytes);
    const std::string_view id = header.substr(1);
    const std::string_view nonce(sealed->data() + header.size(), kNonceBytes);
    const std::string_view cipher = std::string_view(*sealed).substr(kHeaderBytes);

    std::optional<std::string> plain;
    for (const Key& key : keys()) {
        if (key.id != id) continue;
        plain = crypto::openssl().open_aes256gcm(key.bytes, nonce, header, cipher);
        if (plain) break;
    }
    if (!plain) return refuse("not sealed by a key held here, or changed since");

    nlohmann::json payload = nlohmann::json::parse(*plain, nullptr, false);
    if (!payload.is_object()) return refuse("sealed payload is not a JSON object");
    const auto text = [&](const char* field) {
        auto it = payload.find(field);
        return it != payload.end() && it->is_string() ? it->get<std::string>() : std::string("\x01");
    };
    auto expiry = payload.find("e");
    if (expiry == payload.end() || !expiry->is_number_integer() || expiry->get<std::int64_t>() < unix_ms(now))
        return refuse("expired");
    if (text("s") != server_name_) return refuse("sealed by a server of another name");
    if (text("p") != binding.principal) return refuse("sealed for another principal");
    if (text("m") != binding.method) return refuse("sealed for another method");
    if (text("t") != binding.target) return refuse("sealed for another tool, prompt or resource");
    if (text("a") != binding.arguments_fingerprint) return refuse("sealed for other arguments");
    auto state = payload.find("st");
    if (state == payload.end() || !state->is_string()) return refuse("no plugin state inside");
    return state->get<std::string>();
}

} // namespace gatehouse::mrtr
