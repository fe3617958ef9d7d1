#include "mrtr/request_state_sealer.hpp"

#include "license/base64.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <memory>
#include <stdexcept>
#include <sys/random.h>

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
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
    return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

std::string hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

using CipherContext = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

CipherContext new_context() {
    CipherContext ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
    if (!ctx) throw std::runtime_error("OpenSSL could not allocate a cipher context");
    return ctx;
}

// Straight from the kernel: OpenSSL's generator would be seeded first, which
// costs a host's start-up a millisecond even when it never seals anything.
void random_bytes(void* into, std::size_t count, const char* what) {
    auto* at = static_cast<unsigned char*>(into);
    while (count > 0) {
        const ssize_t n = ::getrandom(at, count, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(std::string("the kernel could not make ") + what);
        }
        at += n;
        count -= static_cast<std::size_t>(n);
    }
}

const unsigned char* bytes_of(std::string_view s) {
    return reinterpret_cast<const unsigned char*>(s.data());
}

std::int64_t unix_ms(RequestStateSealer::Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

} // namespace

RequestStateSealer::RequestStateSealer(std::vector<std::string> keys, std::string server_name,
                                       std::chrono::milliseconds ttl)
    : server_name_(std::move(server_name)), ttl_(ttl) {
    if (keys.empty()) {
        std::string key(kKeyBytes, '\0');
        random_bytes(key.data(), key.size(), "a random requestState key");
        keys.push_back(std::move(key));
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
    return hex(sha256(arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
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

    std::string sealed(kHeaderBytes + plain.size() + kTagBytes, '\0');
    auto* out = reinterpret_cast<unsigned char*>(sealed.data());
    out[0] = kFormat;
    std::copy(key.id.begin(), key.id.end(), sealed.begin() + 1);
    unsigned char* nonce = out + 1 + kIdBytes;
    random_bytes(nonce, kNonceBytes, "a nonce");

    auto ctx = new_context();
    int len = 0;
    int total = 0;
    // The header (format and key id) is authenticated too: a token moved to another key fails.
    if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
        EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, bytes_of(key.bytes), nonce) != 1 ||
        EVP_EncryptUpdate(ctx.get(), nullptr, &len, out, 1 + kIdBytes) != 1 ||
        EVP_EncryptUpdate(ctx.get(), out + kHeaderBytes, &len, bytes_of(plain), static_cast<int>(plain.size())) != 1)
        throw std::runtime_error("OpenSSL could not seal a requestState");
    total = len;
    if (EVP_EncryptFinal_ex(ctx.get(), out + kHeaderBytes + total, &len) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, out + kHeaderBytes + plain.size()) != 1)
        throw std::runtime_error("OpenSSL could not seal a requestState");
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
    const std::string_view id(sealed->data() + 1, kIdBytes);
    const auto* in = bytes_of(*sealed);
    const std::size_t cipher_len = sealed->size() - kHeaderBytes - kTagBytes;

    std::optional<std::string> plain;
    for (const Key& key : keys()) {
        if (key.id != id) continue;
        std::string out(cipher_len, '\0');
        auto ctx = new_context();
        int len = 0;
        std::string tag(sealed->data() + kHeaderBytes + cipher_len, kTagBytes);
        if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
            EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, bytes_of(key.bytes), in + 1 + kIdBytes) != 1 ||
            EVP_DecryptUpdate(ctx.get(), nullptr, &len, in, 1 + kIdBytes) != 1 ||
            EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len, in + kHeaderBytes,
                              static_cast<int>(cipher_len)) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) != 1)
            continue;
        int final_len = 0;
        if (EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + len, &final_len) != 1)
            continue;
        plain = std::move(out);
        break;
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
