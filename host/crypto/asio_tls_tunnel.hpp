#pragma once

#include "crypto/openssl.hpp"

#include <memory>

namespace gatehouse::crypto {

// The connector behind OpenSsl::tls_connector: Boost.Asio over OpenSSL, one
// thread per tunnel. Built into the OpenSSL module only.
std::shared_ptr<const TlsConnector> make_asio_tls_connector(const TlsClientOptions& options);

} // namespace gatehouse::crypto
