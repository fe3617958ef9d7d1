#pragma once

#include <optional>
#include <string_view>

namespace gatehouse::transport {

// Whether a Content-Type names application/json: the media type itself,
// case-insensitive, with or without parameters ("; charset=utf-8"), never
// a longer name that merely starts with it (application/jsonl).
bool is_json_media_type(std::string_view content_type);

// The two kinds of answer the MCP endpoint gives, as an Accept header
// allows them (RFC 9110 §12.5.1): a media range names them exactly or by
// wildcard, and q=0 refuses. No Accept header allows both.
struct AcceptedAnswers {
    bool json = false;         // application/json
    bool event_stream = false; // text/event-stream
};
AcceptedAnswers accepted_answers(std::optional<std::string_view> accept);

} // namespace gatehouse::transport
