#pragma once

#include "protocol/json_rpc.hpp"
#include "schema/param_headers.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::transport {

using schema::find_param_headers;
using schema::ParamHeader;

// A request header by name (case-insensitive), or nullopt when absent.
using HeaderLookup = std::function<std::optional<std::string_view>(std::string_view name)>;

// An Mcp-Name or Mcp-Param-* value as sent: plain visible ASCII, or the
// "=?base64?...?=" form for anything else. nullopt when it holds characters a
// header value may not, or its Base64 is broken.
std::optional<std::string> decode_mcp_header_value(std::string_view raw);

// The 2026-07-28 request metadata headers against the parsed body: nullopt
// when they agree, else the sentence for a HeaderMismatch (-32020) error.
// `param_headers` are the called tool's annotations (empty for other methods).
std::optional<std::string> check_request_headers(const HeaderLookup& headers, const protocol::Json& message,
                                                 const std::vector<ParamHeader>& param_headers);

// The same against a request's decoded parts: its method, its params (an
// object) and, for a decoded tools/call, the arguments moved out of them
// (null: params.arguments, if any).
std::optional<std::string> check_request_headers(const HeaderLookup& headers, std::string_view method,
                                                 const protocol::Json& params, const protocol::Json* arguments,
                                                 const std::vector<ParamHeader>& param_headers);

} // namespace gatehouse::transport
