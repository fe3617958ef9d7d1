#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace gatehouse::crypto {
struct TlsClientOptions;
}

namespace gatehouse::auth {

// What one call to an authorization server gave: an HTTP status and body,
// or `error` (unreachable, timed out, not HTTP) with status 0.
struct FetchResult {
    int status = 0;
    std::string body;
    std::string error;

    bool ok() const { return error.empty() && status == 200; }
    std::string failure() const; // a sentence for logs: the error, or the unexpected status
};

// HTTP(S) calls to authorization servers, on a thread of their own so that a
// slow server never holds a thread that answers MCP requests. Every call ends
// within the timeout; `done` and posted work run on the fetcher's thread.
class HttpFetcher {
public:
    using Done = std::function<void(FetchResult)>;

    virtual ~HttpFetcher() = default; // stop(), then what was pending is dropped

    // Stops the thread: calls still running are abandoned, their `done` and
    // pending work never run. Objects whose work is posted here go before
    // the fetcher does.
    virtual void stop() = 0;

    virtual void get(const std::string& url, Done done) = 0;
    // POSTs an application/x-www-form-urlencoded body with HTTP Basic
    // credentials (RFC 7662 §2.1).
    virtual void post_form(const std::string& url, std::string body, std::string basic_credentials, Done done) = 0;

    // Work that belongs with the calls (reading keys, periodic refresh).
    virtual void post(std::function<void()> work) = 0;
    virtual void post_after(std::chrono::milliseconds delay, std::function<void()> work) = 0;
};

// The fetcher lives in the OpenSSL module (https:// needs TLS): this opens
// it, so only a host that calls authorization servers loads OpenSSL for it.
// Servers' certificates are checked against the system's trust store, or
// as `tls` says; throws std::invalid_argument for a file of `tls` that
// cannot be read or used.
std::unique_ptr<HttpFetcher> make_http_fetcher(std::chrono::milliseconds timeout);
std::unique_ptr<HttpFetcher> make_http_fetcher(std::chrono::milliseconds timeout, const crypto::TlsClientOptions& tls);

// application/x-www-form-urlencoded escaping of one value.
std::string form_escape(std::string_view value);

} // namespace gatehouse::auth
