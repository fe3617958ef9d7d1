#pragma once

#include "mrtr/request_state_sealer.hpp"
#include "plugins/host_services.hpp"
#include "plugins/tool_registry.hpp"

#include <string>
#include <string_view>

namespace gatehouse::transport {

// One HTTP request for a family's page (ABI 1.3), as the connection read it.
struct PageRequest {
    std::string_view method; // "GET" or "POST"
    std::string_view path;   // /pages/<family>/<name>/<token>
    std::string_view host;   // the Host header
    std::string_view origin; // the Origin header, empty when absent
    std::string_view cookie; // the Cookie header, empty when absent
    std::string_view content_type;
    std::string_view body;
};

// A whole response: status, header lines (each ending in CRLF, without
// Content-Length) and an HTML body.
struct PageResponse {
    int status = 200;
    std::string headers;
    std::string body;
};

// Serves /pages/...: GET renders what the family's show() answers; POST
// checks the form's cross-site token and runs act(). The token is one the
// host issued: sealed by `form_tokens` for this page's path (so it expires,
// and no other page's, nor any a client makes up, fits), in the form and in
// a cookie scoped to that path that must match it, plus a same-origin Origin
// when one is sent. No bearer token is asked for: a browser has none, and
// the link, unguessable, is the credential. Every value is HTML-escaped,
// nothing is cached, the page cannot be framed, and a redirect is followed
// only to an absolute http(s) URL.
PageResponse serve_page(const plugins::HostServices* host, const plugins::ToolRegistry& registry,
                        const mrtr::RequestStateSealer& form_tokens, const PageRequest& request);

bool is_page_path(std::string_view path);

// 503, Retry-After: a page that could not run now (its family's lock not
// free in time, or too many pages waiting for a worker).
PageResponse busy_page();

} // namespace gatehouse::transport
