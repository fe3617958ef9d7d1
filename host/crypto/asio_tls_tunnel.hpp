#pragma once

#include "crypto/openssl.hpp"

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>

namespace gatehouse::crypto {

// Sets a TLS client context up as `options` say: TLS 1.2 at least, the
// servers' certificates checked against the CA file or the system's trust
// store (unless verify is false), the client certificate for mutual TLS.
// Returns where certificates are checked, for messages. Throws
// std::invalid_argument naming the file that cannot be read or used.
std::string configure_client_context(boost::asio::ssl::context& context, const TlsClientOptions& options);

// The connector behind OpenSsl::tls_connector: Boost.Asio over OpenSSL, one
// thread per tunnel. Built into the OpenSSL module only.
std::shared_ptr<const TlsConnector> make_asio_tls_connector(const TlsClientOptions& options);

} // namespace gatehouse::crypto
