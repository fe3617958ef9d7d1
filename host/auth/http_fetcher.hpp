#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

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
// within the timeout; `done` runs on the fetcher's thread.
class HttpFetcher {
public:
    using Done = std::function<void(FetchResult)>;

    explicit HttpFetcher(std::chrono::milliseconds timeout);
    ~HttpFetcher(); // stop(), then what was pending is dropped

    // Stops the thread: calls still running are abandoned, their `done`
    // never runs. Objects with timers on io() go before the fetcher does.
    void stop();
    HttpFetcher(const HttpFetcher&) = delete;
    HttpFetcher& operator=(const HttpFetcher&) = delete;

    void get(const std::string& url, Done done);
    // POSTs an application/x-www-form-urlencoded body with HTTP Basic
    // credentials (RFC 7662 §2.1).
    void post_form(const std::string& url, std::string body, std::string basic_credentials, Done done);

    // For timers that belong with the calls (periodic key refresh).
    boost::asio::io_context& io() { return io_; }

private:
    void start(const std::string& method, const std::string& url, std::string body, std::string authorization,
               Done done);

    std::chrono::milliseconds timeout_;
    boost::asio::ssl::context tls_; // before io_: calls abandoned in io_ hold TLS streams
    boost::asio::io_context io_;
    std::thread thread_;
};

// application/x-www-form-urlencoded escaping of one value.
std::string form_escape(std::string_view value);

} // namespace gatehouse::auth
