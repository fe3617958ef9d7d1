#include "auth/http_fetcher.hpp"

#include "crypto/openssl.hpp"

#include <cctype>

namespace gatehouse::auth {

std::string FetchResult::failure() const {
    if (!error.empty()) return error;
    return "HTTP " + std::to_string(status);
}

std::unique_ptr<HttpFetcher> make_http_fetcher(std::chrono::milliseconds timeout) {
    return make_http_fetcher(timeout, crypto::TlsClientOptions{});
}

std::unique_ptr<HttpFetcher> make_http_fetcher(std::chrono::milliseconds timeout, const crypto::TlsClientOptions& tls) {
    return crypto::openssl().http_fetcher(timeout, tls);
}

std::string form_escape(std::string_view value) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

} // namespace gatehouse::auth
