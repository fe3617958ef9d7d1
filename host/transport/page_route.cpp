#include "transport/page_route.hpp"

#include "crypto/bytes.hpp"
#include "plugins/call_environment.hpp"
#include "plugins/loaded_plugin.hpp"
#include "protocol/ascii_case.hpp"
#include "protocol/json_rpc.hpp"
#include "session/random_token.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace gatehouse::transport {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kPrefix = "/pages/";
constexpr std::string_view kCsrfCookie = "gh_page_csrf";
constexpr std::size_t kMaxRedirectBytes = 2048;

// What a page call reaches of the host: the log and the state functions.
// It carries no principal: the person holding the link is not a caller.
class PageEnvironment final : public plugins::CallEnvironment {
public:
    PageEnvironment(const plugins::Page& page) : context_(Json{{"family", page.family}, {"page", page.name}}.dump()) {}
    bool cancelled() const override { return false; }
    void log(int32_t, std::string_view, std::string_view) override {}
    void progress(double, double, std::string_view) override {}
    std::string_view context_json() override { return context_; }

private:
    std::string context_;
};

std::string escape_html(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

// The most buttons one page shows.
constexpr std::size_t kMostActions = 16;
// Between a form token's random part and the choices its page offered.
constexpr char kOfferedSeparator = '\n';

bool was_offered(std::string_view sealed, std::string_view action) {
    const auto separator = sealed.find(kOfferedSeparator);
    if (separator == std::string_view::npos) return false;
    std::string_view offered = sealed.substr(separator + 1);
    while (!offered.empty()) {
        const auto comma = offered.find(',');
        if (offered.substr(0, comma) == action) return true;
        if (comma == std::string_view::npos) break;
        offered.remove_prefix(comma + 1);
    }
    return false;
}

const std::string kSecurityHeaders = "Cache-Control: no-store\r\n"
                                     "Pragma: no-cache\r\n"
                                     "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; "
                                     "base-uri 'none'; frame-ancestors 'none'\r\n"
                                     "X-Frame-Options: DENY\r\n"
                                     "X-Content-Type-Options: nosniff\r\n"
                                     "Referrer-Policy: same-origin\r\n";

std::string document(const std::string& title, const std::string& main) {
    return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           "<title>" +
           escape_html(title) +
           "</title><style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}"
           "dt{font-weight:600}dd{margin:0 0 .6rem 0;white-space:pre-wrap;word-break:break-word}"
           "button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem}</style></head><body><main>" +
           main + "</main></body></html>\n";
}

PageResponse message_page(int status, const std::string& title, const std::string& message) {
    return {status, kSecurityHeaders,
            document(title, "<h1>" + escape_html(title) + "</h1><p id=\"message\">" + escape_html(message) + "</p>")};
}

// A link is its page's only credential: one short enough to try out is
// never served, whatever the family would answer.
constexpr std::size_t kMinLinkTokenChars = 32;

bool valid_token(std::string_view token) {
    return token.size() >= kMinLinkTokenChars && token.size() <= 128 &&
           std::all_of(token.begin(), token.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

bool valid_action_id(std::string_view id) {
    return !id.empty() && id.size() <= 32 &&
           std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}

// An absolute http(s) URL with a host, no user information, nothing a
// header or an HTML attribute could be broken out of.
bool safe_redirect(std::string_view url) {
    if (url.empty() || url.size() > kMaxRedirectBytes) return false;
    std::string_view rest;
    if (url.rfind("https://", 0) == 0)
        rest = url.substr(8);
    else if (url.rfind("http://", 0) == 0)
        rest = url.substr(7);
    else
        return false;
    for (unsigned char c : url)
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '`') return false;
    const auto authority = rest.substr(0, rest.find_first_of("/?#"));
    return !authority.empty() && authority.find('@') == std::string_view::npos && authority[0] != ':';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string form_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '+') {
            out += ' ';
        } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
                   hex_value(text[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

std::string form_field(std::string_view body, std::string_view name) {
    while (!body.empty()) {
        const auto end = body.find('&');
        const auto pair = body.substr(0, end);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && form_decode(pair.substr(0, eq)) == name)
            return form_decode(pair.substr(eq + 1));
        if (end == std::string_view::npos) break;
        body.remove_prefix(end + 1);
    }
    return {};
}

std::string cookie_value(std::string_view header, std::string_view name) {
    while (!header.empty()) {
        const auto end = header.find(';');
        auto pair = header.substr(0, end);
        while (!pair.empty() && pair.front() == ' ')
            pair.remove_prefix(1);
        if (pair.size() > name.size() && pair.substr(0, name.size()) == name && pair[name.size()] == '=')
            return std::string(pair.substr(name.size() + 1));
        if (end == std::string_view::npos) break;
        header.remove_prefix(end + 1);
    }
    return {};
}

// The origin (scheme://host[:port]) of an absolute URL, or nothing; a
// scheme's default port left out, as a browser leaves it out of Origin.
std::string origin_of(std::string_view url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) return {};
    std::string origin(url.substr(0, url.find('/', scheme_end + 3)));
    for (const auto& [scheme, port] : {std::pair<std::string_view, std::string_view>{"http://", ":80"},
                                       std::pair<std::string_view, std::string_view>{"https://", ":443"}})
        if (protocol::starts_with_ignoring_ascii_case(origin, scheme) && origin.ends_with(port))
            origin.resize(origin.size() - port.size());
    return origin;
}

// Whether a form's Origin (when it sends one) is this host's: the Host it
// was sent to, or, behind a proxy that names the host otherwise to its own
// upstream (http.public_url), the public origin the page was shown at.
bool sent_from_here(const plugins::HostServices* host, const PageRequest& request) {
    using protocol::equals_ignoring_ascii_case;
    if (request.origin.empty()) return true;
    for (const std::string_view scheme : {"http://", "https://"})
        if (request.origin.size() == scheme.size() + request.host.size() &&
            equals_ignoring_ascii_case(request.origin.substr(0, scheme.size()), scheme) &&
            equals_ignoring_ascii_case(request.origin.substr(scheme.size()), request.host))
            return true;
    const auto public_origin = host ? origin_of(host->pages_origin) : std::string();
    return !public_origin.empty() && equals_ignoring_ascii_case(request.origin, public_origin);
}

bool same_secret(const std::string& a, const std::string& b) {
    return !a.empty() && crypto::equal_in_constant_time(a, b);
}

// What a page's form token is sealed to: that page's link, nothing else.
mrtr::StateBinding form_binding(std::string_view path) {
    return {"page", "pages/form", std::string(path), ""};
}

// How long a page waits for its family's lock (a family that is not
// reentrant, busy with a call) before it answers 503: a person can reload,
// and a worker is not held for as long as a stuck call lasts.
constexpr auto kPageLockWait = std::chrono::seconds(5);

struct Answer {
    int32_t status;
    std::string bytes;
    bool busy = false; // never ran: its family's lock was not free in time
};

Answer call_page(const plugins::HostServices* host, const plugins::Page& page, gh_page_fn fn, std::string_view token,
                 std::string_view action) {
    PageEnvironment environment(page);
    gh_call call{&environment, page.family, {}};
    call.host = host;
    gh_sink out;
    const auto status = page.plugin->run_within(kPageLockWait, [&](void* state) {
        return fn(state, page.data, &call, gh_str{token.data(), token.size()}, gh_str{action.data(), action.size()},
                  &out);
    });
    if (!status) return {GH_STATUS_INTERNAL, {}, true};
    return {*status, std::move(out.bytes)};
}

} // namespace

PageResponse busy_page() {
    auto response =
        message_page(503, "Busy", "This service is busy right now; reload the page in a moment to try again.");
    response.headers += "Retry-After: 1\r\n";
    return response;
}

namespace {

PageResponse failed(const plugins::Page& page, const Answer& answer) {
    if (answer.busy) return busy_page();
    if (answer.status == GH_STATUS_NOT_FOUND)
        return message_page(404, "Not found", "This link is unknown or no longer valid.");
    if (answer.status == GH_STATUS_TOOL_ERROR || answer.status == GH_STATUS_INVALID_ARGS)
        return message_page(409, "Nothing to do", answer.bytes);
    spdlog::error("page '{}' of family '{}' failed (status {}): {}", page.name, page.family, answer.status,
                  answer.bytes);
    return message_page(500, "Something went wrong", "The server could not show this page; try again later.");
}

PageResponse show(const plugins::HostServices* host, const plugins::Page& page,
                  const mrtr::RequestStateSealer& form_tokens, std::string_view token, std::string_view path) {
    const Answer answer = call_page(host, page, page.show, token, {});
    if (answer.status != GH_STATUS_OK) return failed(page, answer);
    Json shown;
    try {
        shown = Json::parse(answer.bytes);
        if (!shown.is_object() || !shown.value("title", Json()).is_string()) throw std::invalid_argument("no title");
    } catch (const std::exception& e) {
        spdlog::error("page '{}' of family '{}' answered a malformed description: {}", page.name, page.family,
                      e.what());
        return message_page(500, "Something went wrong", "The server could not show this page; try again later.");
    }
    const std::string title = shown["title"].get<std::string>();
    std::string main = "<h1>" + escape_html(title) + "</h1>";
    if (auto intro = shown.find("intro"); intro != shown.end() && intro->is_string())
        main += "<p id=\"intro\">" + escape_html(intro->get<std::string>()) + "</p>";
    if (auto notice = shown.find("notice"); notice != shown.end() && notice->is_string())
        main += "<p id=\"notice\"><strong>" + escape_html(notice->get<std::string>()) + "</strong></p>";
    main += "<dl>";
    for (const auto& field : shown.value("fields", Json::array())) {
        if (!field.is_object()) continue;
        main += "<dt>" + escape_html(protocol::text_member(field, "label")) + "</dt><dd>" +
                escape_html(protocol::text_member(field, "value")) + "</dd>";
    }
    main += "</dl>";
    std::string headers = kSecurityHeaders;
    const auto actions = shown.value("actions", Json::array());
    if (actions.is_array() && !actions.empty()) {
        std::string buttons;
        std::string offered; // the ids, each followed by a comma
        std::size_t shown_actions = 0;
        for (const auto& action : actions) {
            const std::string id = action.is_object() ? protocol::text_member(action, "id") : std::string();
            if (!valid_action_id(id)) continue;
            // The ids travel in the form's cookie, which a browser keeps only
            // up to some 4 KiB.
            if (++shown_actions > kMostActions) {
                spdlog::warn("page '{}' of family '{}' offers more than {} actions; the rest are not shown", page.name,
                             page.family, kMostActions);
                break;
            }
            buttons += "<button type=\"submit\" name=\"action\" value=\"" + id + "\" id=\"action-" + id + "\">" +
                       escape_html(protocol::text_member(action, "label", id)) + "</button>";
            offered += id + ',';
        }
        // The token carries the choices this page offered, so a form posted
        // with another (one the family did not offer now) is refused before
        // act() runs.
        const std::string csrf =
            form_tokens.seal(form_binding(path), session::random_token(16) + kOfferedSeparator + offered);
        main +=
            "<form method=\"post\"><input type=\"hidden\" name=\"csrf\" value=\"" + csrf + "\">" + buttons + "</form>";
        headers += "Set-Cookie: " + std::string(kCsrfCookie) + "=" + csrf + "; Path=" + std::string(path) +
                   "; HttpOnly; SameSite=Strict\r\n";
    }
    return {200, std::move(headers), document(title, main)};
}

PageResponse act(const plugins::HostServices* host, const plugins::Page& page,
                 const mrtr::RequestStateSealer& form_tokens, std::string_view token, const PageRequest& request) {
    // A form posted from another site carries its own Origin; a browser that
    // sends none still needs the cookie only this page's own answer set.
    if (!sent_from_here(host, request)) return message_page(403, "Refused", "This form was sent from another site.");
    if (request.content_type.rfind("application/x-www-form-urlencoded", 0) != 0)
        return message_page(415, "Refused", "Send the page's own form.");
    const std::string csrf = form_field(request.body, "csrf");
    const auto sealed = same_secret(csrf, cookie_value(request.cookie, kCsrfCookie))
                            ? form_tokens.open(csrf, form_binding(request.path))
                            : std::nullopt;
    if (!sealed)
        return message_page(403, "Refused",
                            "This form has expired or was not sent from this page; open the link "
                            "again and choose once more.");
    const std::string action = form_field(request.body, "action");
    if (!valid_action_id(action)) return message_page(400, "Refused", "The form named no action.");
    if (!was_offered(*sealed, action))
        return message_page(400, "Refused",
                            "This page did not offer that choice; open the link again and choose once more.");
    const Answer answer = call_page(host, page, page.act, token, action);
    if (answer.status != GH_STATUS_OK) return failed(page, answer);
    Json done;
    try {
        done = Json::parse(answer.bytes);
        if (!done.is_object()) throw std::invalid_argument("not an object");
    } catch (const std::exception& e) {
        // act() has run: the choice may well be recorded, so the person is
        // not told it was not.
        spdlog::error("page '{}' of family '{}' answered a malformed result: {}", page.name, page.family, e.what());
        return message_page(500, "Something went wrong",
                            "Your choice was sent, but the server could not confirm it; open the link again to "
                            "see where things stand.");
    }
    const std::string message = protocol::text_member(done, "message", "Done.");
    // The cookie has served its one form.
    const std::string expire_cookie = "Set-Cookie: " + std::string(kCsrfCookie) +
                                      "=; Path=" + std::string(request.path) +
                                      "; Max-Age=0; HttpOnly; SameSite=Strict\r\n";
    if (auto redirect = done.find("redirect_url"); redirect != done.end() && redirect->is_string()) {
        const auto& url = redirect->get_ref<const std::string&>();
        if (safe_redirect(url))
            return {303, kSecurityHeaders + expire_cookie + "Location: " + url + "\r\n",
                    document(message, "<p id=\"message\">" + escape_html(message) + "</p>")};
        spdlog::warn("page '{}' of family '{}' asked to redirect to an unsafe URL; showing the result instead",
                     page.name, page.family);
    }
    auto response = message_page(200, "Done", message);
    response.headers += expire_cookie;
    return response;
}

} // namespace

bool is_page_path(std::string_view path) {
    return path.substr(0, kPrefix.size()) == kPrefix;
}

PageResponse serve_page(const plugins::HostServices* host, const plugins::ToolRegistry& registry,
                        const mrtr::RequestStateSealer& form_tokens, const PageRequest& request) {
    std::vector<std::string_view> parts;
    std::string_view rest = request.path.substr(kPrefix.size());
    while (!rest.empty()) {
        const auto slash = rest.find('/');
        parts.push_back(rest.substr(0, slash));
        if (slash == std::string_view::npos) break;
        rest.remove_prefix(slash + 1);
    }
    if (parts.size() != 3 || !valid_token(parts[2]))
        return message_page(404, "Not found", "This link is unknown or no longer valid.");
    const plugins::Page* page = registry.find_page(parts[0], parts[1]);
    if (!page) return message_page(404, "Not found", "This link is unknown or no longer valid.");
    try {
        if (request.method == "GET") return show(host, *page, form_tokens, parts[2], request.path);
        if (request.method == "POST") return act(host, *page, form_tokens, parts[2], request);
    } catch (const std::exception& e) {
        spdlog::error("page '{}' of family '{}': {}", page->name, page->family, e.what());
        return message_page(500, "Something went wrong", "The server could not show this page; try again later.");
    }
    auto response = message_page(405, "Not allowed", "Open this link in a browser.");
    response.headers += "Allow: GET, POST\r\n";
    return response;
}

} // namespace gatehouse::transport
