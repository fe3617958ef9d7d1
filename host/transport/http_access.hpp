#pragma once

#include "config/config.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::transport {

// Which Host and Origin headers the HTTP transport accepts. A page on another
// site must not reach a host on this machine through the browser (Origin),
// nor through a DNS name re-pointed at loopback (Host).
class HttpAccess {
public:
    explicit HttpAccess(const config::HttpSettings& settings);

    // Host header (with or without port). Missing is refused: HTTP/1.1 requires it.
    bool host_allowed(std::string_view host_header) const;

    // Origin header when present; absent is fine (not a browser).
    bool origin_allowed(std::string_view origin) const;

    bool loopback() const { return loopback_; }

private:
    bool loopback_;
    std::vector<std::string> hosts_;   // lower-case names, no port
    std::vector<std::string> origins_; // lower-case scheme://host[:port]
};

// "example.com:8080" -> "example.com"; "[::1]:80" -> "[::1]"; lower-cased.
std::string host_without_port(std::string_view host);

bool is_loopback_address(std::string_view address);

} // namespace gatehouse::transport
