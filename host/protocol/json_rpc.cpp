#include "protocol/json_rpc.hpp"

namespace gatehouse::protocol {

// DepthBoundedDom extends nlohmann's DOM builder, a detail of the library
// whose template changed in 3.12: a newer nlohmann must be checked against
// it first, rather than compile into something else.
static_assert(NLOHMANN_JSON_VERSION_MAJOR == 3 && NLOHMANN_JSON_VERSION_MINOR >= 10 &&
                  NLOHMANN_JSON_VERSION_MINOR <= 11,
              "parse_bounded builds on nlohmann::detail::json_sax_dom_parser as 3.10 and 3.11 have it");

namespace {

// nlohmann's own DOM builder, with the depth counted as it goes: refusing a
// deep message costs no second scan of every message, and stops the parse at
// the first level too many instead of after the whole text.
class DepthBoundedDom : public nlohmann::detail::json_sax_dom_parser<Json> {
    using Dom = nlohmann::detail::json_sax_dom_parser<Json>;

public:
    DepthBoundedDom(Json& out, std::size_t max_depth) : Dom(out, false), max_depth_(max_depth) {}

    bool start_object(std::size_t members) { return deeper() && Dom::start_object(members); }
    bool start_array(std::size_t items) { return deeper() && Dom::start_array(items); }
    bool end_object() {
        --depth_;
        return Dom::end_object();
    }
    bool end_array() {
        --depth_;
        return Dom::end_array();
    }
    template <class Exception> bool parse_error(std::size_t at, const std::string& token, const Exception& problem) {
        error_ = problem.what();
        return Dom::parse_error(at, token, problem);
    }

    bool too_deep() const { return too_deep_; }
    std::string& error() { return error_; }

private:
    bool deeper() {
        if (++depth_ <= max_depth_) return true;
        too_deep_ = true;
        return false;
    }

    const std::size_t max_depth_;
    std::size_t depth_ = 0;
    bool too_deep_ = false;
    std::string error_;
};

} // namespace

BoundedParse parse_bounded(std::string_view text, std::size_t max_depth) {
    BoundedParse out;
    DepthBoundedDom dom(out.value, max_depth);
    if (Json::sax_parse(text.begin(), text.end(), &dom)) return out;
    out.value = nullptr; // what was built before the stop is no message
    if (dom.too_deep()) {
        out.outcome = BoundedParse::Outcome::too_deep;
    } else {
        out.outcome = BoundedParse::Outcome::not_json;
        out.error = std::move(dom.error());
    }
    return out;
}

Json make_result(const Json& id, Json result) {
    Json out = Json::object();
    out["jsonrpc"] = "2.0";
    out["id"] = id;
    out["result"] = std::move(result);
    return out;
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
    return message.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string text_member(const Json& message, const char* key, std::string fallback) {
    if (!message.is_object()) return fallback;
    const auto found = message.find(key);
    return found != message.end() && found->is_string() ? found->get<std::string>() : fallback;
}

} // namespace gatehouse::protocol
