#include "protocol/json_rpc.hpp"

#include "protocol/json_writer.hpp"

namespace gatehouse::protocol {

Json make_result(const Json& id, Json result) {
    Json out = Json::object();
    out["jsonrpc"] = "2.0";
    out["id"] = id;
    out["result"] = std::move(result);
    return out;
}

Json written_result(const Json& id, std::string_view result, std::string_view first_members) {
    std::string out;
    out.reserve(result.size() + first_members.size() + 48);
    // Members in the order make_result's object keeps them: "id" < "jsonrpc" < "result".
    out += "{\"id\":";
    append_json(out, id);
    out += ",\"jsonrpc\":\"2.0\",\"result\":";
    const std::size_t open = result.find('{');
    if (first_members.empty() || open == std::string_view::npos) {
        out += result;
    } else {
        out += result.substr(0, open + 1);
        out += first_members;
        const std::string_view rest = result.substr(open + 1);
        const std::size_t next = rest.find_first_not_of(" \t");
        if (next != std::string_view::npos && rest[next] != '}') out += ',';
        out += rest;
    }
    out += '}';
    return written_json(out);
}

Json make_error(const Json& id, int code, const std::string& message, const Json& data) {
    Json error = {{"code", code}, {"message", message}};
    if (!data.is_null()) error["data"] = data;
    Json out = Json::object();
    out["jsonrpc"] = "2.0";
    if (!id.is_null()) out["id"] = id;
    out["error"] = std::move(error);
    return out;
}

Json make_notification(const char* method, Json params) {
    Json out = Json::object();
    out["jsonrpc"] = "2.0";
    out["method"] = method;
    out["params"] = std::move(params);
    return out;
}

std::string encode(const Json& message) {
    std::string line;
    line.reserve(256); // a usual answer's size: no growing on the way
    append_json(line, message);
    return line;
}

std::string text_member(const Json& message, const char* key, std::string fallback) {
    if (!message.is_object()) return fallback;
    const auto found = message.find(key);
    return found != message.end() && found->is_string() ? found->get<std::string>() : fallback;
}

} // namespace gatehouse::protocol
