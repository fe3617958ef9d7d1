#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace gatehouse::transport {

// The header section of a request may be at most this large; chunk
// extensions and trailer fields count against the same bound (a chunked
// body would otherwise carry unbounded framing past it).
inline constexpr std::size_t kMaxHeaderBytes = 16 * 1024;

// What the transport refuses in a request's header section, checked once it
// is read and before its body is: the status and the sentence for the client.
struct HeaderRefusal {
    int status;
    std::string message;
};

// Message framing the body cannot be read reliably with (RFC 9112 §6): a
// Transfer-Encoding other than "chunked" alone (400 when chunked is not
// last, 501 for a coding this server does not decode), or any
// Transfer-Encoding on HTTP/1.0. The connection must close after it.
std::optional<HeaderRefusal>
refuse_transfer_encoding(const boost::beast::http::request_header<boost::beast::http::fields>& request);

// A header the host reads one copy of (Host, Origin, Authorization,
// Content-Type, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id,
// each Mcp-Param-*) sent more than once: an intermediary reading another
// copy would see another request than the one served.
std::optional<HeaderRefusal>
refuse_repeated_header(const boost::beast::http::request_header<boost::beast::http::fields>& request);

// The bytes a header section takes on the wire, near enough to hold it to
// kMaxHeaderBytes (each field's name, value, ": " and CRLF).
std::size_t field_bytes(const boost::beast::http::fields::value_type& field);

} // namespace gatehouse::transport
