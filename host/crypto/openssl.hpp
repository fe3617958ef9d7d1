#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gatehouse::auth {
class HttpFetcher;
}

namespace gatehouse::crypto {

using Digest = std::array<unsigned char, 32>;

// A public key that checks one kind of signature, fixed when it was made.
// Immutable and safe to share between threads.
class VerifyingKey {
public:
    virtual ~VerifyingKey() = default;
    virtual bool verify(std::string_view message, std::string_view signature) const = 0;
};

// How a TLS client checks the server and shows itself.
struct TlsClientOptions {
    std::string ca_file;   // PEM certificates that vouch for servers; empty: the system's trust store
    std::string cert_file; // PEM client certificate (chain) for mutual TLS, with key_file; empty: none
    std::string key_file;  // its unencrypted PEM private key
    bool verify = true;    // false: any certificate under any name is taken (never in production)
    // With a ca_file: the system's trust store vouches for servers as well
    // (an upstream's authorization server may be a public one).
    bool system_store_too = false;
};

// A TLS session with a server, seen by its user as a plain local socket:
// one end of a socketpair, whose other end a thread of the tunnel's own
// carries through the session. The session ending (the server closed it, an
// alert, an error) closes the user's end, so its reads see the end; the user
// closing its end ends the session. Destroying the tunnel ends the session
// and joins its thread.
class TlsTunnel {
public:
    virtual ~TlsTunnel() = default;
    // The user's end, handed over once (-1 afterwards): from then on the
    // caller owns it and closes it. Blocking, like a fresh socket.
    virtual int take_fd() = 0;
    // Why the session ended when the server or an error ended it (a sentence
    // naming the server); empty while it is open or after the user ended it.
    // Set before the user's end is closed, so a user that reads the end
    // finds the reason. Thread-safe.
    virtual std::string failure() const = 0;
};

// Opens TLS tunnels with one set of options, read once when it is made.
// Thread-safe.
class TlsConnector {
public:
    virtual ~TlsConnector() = default;
    // Resolves `host`, connects and completes the handshake within
    // `timeout`, checking the certificate against `server_name` (a DNS name,
    // sent as SNI, or an IP address). Throws std::runtime_error with a
    // sentence that says which: the server's certificate is not trusted, is
    // not for that name, the handshake failed, the connection failed, or
    // time ran out.
    virtual std::unique_ptr<TlsTunnel> connect(const std::string& host, int port, const std::string& server_name,
                                               std::chrono::milliseconds timeout) const = 0;
};

// Everything the host asks of OpenSSL. It is implemented in a module of its
// own, gatehouse-openssl.so, that openssl() opens on first use: loading
// libcrypto and libssl costs a process ~150 page faults of relocation (a
// quarter of a start's), and most starts and many whole runs never need them.
// Errors that describe the input are std::invalid_argument, failures of
// OpenSSL itself std::runtime_error.
class OpenSsl {
public:
    virtual ~OpenSsl() = default;

    virtual Digest sha256(std::string_view bytes) const = 0;
    virtual Digest hmac_sha256(std::string_view key, std::string_view message) const = 0;

    // AES-256-GCM with a 12-byte nonce and a 16-byte tag; `associated` is
    // authenticated, not encrypted. seal returns ciphertext || tag; open
    // returns nullopt when anything was changed or the key is another.
    virtual std::string seal_aes256gcm(std::string_view key, std::string_view nonce, std::string_view associated,
                                       std::string_view plaintext) const = 0;
    virtual std::optional<std::string> open_aes256gcm(std::string_view key, std::string_view nonce,
                                                      std::string_view associated, std::string_view sealed) const = 0;

    // Ed25519, keys as their 32 raw bytes. The readers accept a PEM `PUBLIC
    // KEY` block or a DER SubjectPublicKeyInfo and refuse other key types
    // with a sentence naming the type.
    virtual std::string ed25519_public_key_from_pem(std::string_view pem) const = 0;
    virtual std::string ed25519_public_key_from_der(std::string_view der) const = 0;
    virtual bool ed25519_verify(std::string_view public_key, std::string_view message,
                                std::string_view signature) const = 0;
    // `private_key_pem`: unencrypted PKCS#8 PEM, as `openssl genpkey -algorithm ed25519` writes it.
    virtual std::string ed25519_sign(std::string_view private_key_pem, std::string_view message) const = 0;

    // Keys of a JWK Set (RFC 7518), from their base64url-decoded members:
    // RS256 (n, e; at least 2048 bits), ES256 on P-256 (x, y; signatures in
    // the JWS R||S form), EdDSA on Ed25519 (x).
    virtual std::shared_ptr<const VerifyingKey> rs256_key(std::string_view n, std::string_view e) const = 0;
    virtual std::shared_ptr<const VerifyingKey> es256_key(std::string_view x, std::string_view y) const = 0;
    virtual std::shared_ptr<const VerifyingKey> ed25519_key(std::string_view x) const = 0;

    // HTTP and HTTPS calls to authorization servers (auth/http_fetcher.hpp),
    // their certificates checked as `tls` says (the host name always).
    virtual std::unique_ptr<auth::HttpFetcher> http_fetcher(std::chrono::milliseconds timeout,
                                                            const TlsClientOptions& tls) const = 0;

    // TLS to servers that speak it from the first byte (rediss://). Throws
    // std::invalid_argument naming the file that cannot be read or the key
    // that does not belong to the certificate.
    virtual std::shared_ptr<const TlsConnector> tls_connector(const TlsClientOptions& options) const = 0;
};

// The module, opened on the first call (thread-safe) and kept for the life
// of the process: <prefix>/lib/gatehouse/gatehouse-openssl.so, beside the
// plugins' folder. Throws std::runtime_error naming the file and the
// loader's reason when it cannot be opened or belongs to another build; a
// later call tries again.
const OpenSsl& openssl();

inline std::string_view as_text(const Digest& digest) {
    return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

// Lower-case hex of SHA-256(bytes), through openssl().
std::string sha256_hex(std::string_view bytes);

} // namespace gatehouse::crypto

// The module's one entry point: the build it belongs to (a mismatch is
// refused before any call) and its implementation.
extern "C" {
__attribute__((visibility("default"))) const char* gatehouse_openssl_build();
__attribute__((visibility("default"))) const gatehouse::crypto::OpenSsl* gatehouse_openssl();
}
