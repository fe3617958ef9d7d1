#include "transport/http_access.hpp"

#include "protocol/ascii_case.hpp"

#include <algorithm>

namespace gatehouse::transport {

namespace {

const std::vector<std::string> kLoopbackNames{"localhost", "127.0.0.1", "[::1]"};

} // namespace

std::string host_without_port(std::string_view host) {
    if (!host.empty() && host.front() == '[') {
        const auto close = host.find(']');
        return protocol::ascii_lowercase(close == std::string_view::npos ? host : host.substr(0, close + 1));
    }
    const auto colon = host.find(':');
    return protocol::ascii_lowercase(colon == std::string_view::npos ? host : host.substr(0, colon));
}

bool is_loopback_address(std::string_view address) {
    return address == "127.0.0.1" || address == "::1" || address == "localhost" || address.rfind("127.", 0) == 0;
}

HttpAccess::HttpAccess(const config::HttpSettings& settings) : loopback_(is_loopback_address(settings.listen_host)) {
    for (const auto& h : settings.allowed_hosts)
        hosts_.push_back(host_without_port(h));
    if (hosts_.empty()) {
        if (loopback_) hosts_ = kLoopbackNames;
        const std::string listen = settings.listen_host.find(':') != std::string::npos
                                       ? "[" + settings.listen_host + "]"
                                       : settings.listen_host;
        // Listening on every interface names no host; the operator must list them.
        if (listen != "0.0.0.0" && listen != "[::]") hosts_.push_back(protocol::ascii_lowercase(listen));
    }
    for (const auto& o : settings.allowed_origins) {
        std::string origin = protocol::ascii_lowercase(o);
        while (!origin.empty() && origin.back() == '/')
            origin.pop_back();
        origins_.push_back(origin);
    }
}

bool HttpAccess::host_allowed(std::string_view host_header) const {
    if (host_header.empty()) return false;
    const std::string name = host_without_port(host_header);
    return std::find(hosts_.begin(), hosts_.end(), name) != hosts_.end();
}

bool HttpAccess::origin_allowed(std::string_view origin) const {
    const std::string o = protocol::ascii_lowercase(origin);
    if (std::find(origins_.begin(), origins_.end(), o) != origins_.end()) return true;
    if (!loopback_) return false;
    // A page served from this machine may call a loopback host.
    for (const char* scheme : {"http://", "https://"}) {
        const std::string_view prefix(scheme);
        if (o.rfind(prefix, 0) != 0) continue;
        const std::string host = host_without_port(std::string_view(o).substr(prefix.size()));
        return std::find(kLoopbackNames.begin(), kLoopbackNames.end(), host) != kLoopbackNames.end();
    }
    return false;
}

} // namespace gatehouse::transport
