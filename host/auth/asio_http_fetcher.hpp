#pragma once

#include "auth/http_fetcher.hpp"
#include "crypto/openssl.hpp"

#include <chrono>
#include <memory>

namespace gatehouse::auth {

// The fetcher behind crypto::OpenSsl::http_fetcher: Boost.Beast, with
// OpenSSL for https:// URLs. Built into the OpenSSL module only.
std::unique_ptr<HttpFetcher> make_asio_http_fetcher(std::chrono::milliseconds timeout,
                                                    const crypto::TlsClientOptions& tls);

} // namespace gatehouse::auth
