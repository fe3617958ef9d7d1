#pragma once

#include "config/config.hpp"
#include "crypto/openssl.hpp"

namespace gatehouse::crypto {

// What the YAML's tls: says (session.redis.tls, upstreams[].tls), as the
// OpenSSL module's connector takes it.
inline TlsClientOptions client_options(const config::TlsSettings& tls) {
    TlsClientOptions options;
    options.ca_file = tls.ca_file.string();
    options.cert_file = tls.cert_file.string();
    options.key_file = tls.key_file.string();
    options.verify = tls.verify;
    return options;
}

} // namespace gatehouse::crypto
