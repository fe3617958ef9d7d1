#include "config/config_loader.hpp"

#include "config/family_name.hpp"
#include "config/yaml_document.hpp"
#include "license/license_document.hpp"
#include "metrics/address_allow_list.hpp"
#include "mrtr/request_state_sealer.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace gatehouse::config {

std::string SourceLocation::str() const {
    std::string s = file.empty() ? "<config>" : file;
    if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(column);
    return s;
}

namespace {

// How far a family's settings may nest, and how many values they may hold
// once aliases are followed: far past what a family reads, short of what a
// self-holding or multiplying alias would make.
constexpr std::size_t kMaxSettingDepth = 64;
constexpr std::size_t kMaxSettingValues = 100000;

class YamlReader {
public:
    YamlReader(std::string source, std::filesystem::path base_dir)
        : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

    SourceLocation at(const YamlNode& node) const {
        const YamlMark mark = node.mark();
        return {source_, mark.line, mark.column};
    }

    [[noreturn]] void fail(const YamlNode& node, const std::string& message) const {
        throw ConfigError(at(node), message);
    }

    // A mistake that leaves the rest readable: noted, and reading goes on.
    void note(const YamlNode& node, const std::string& message) const { problems_.push_back({at(node), message}); }

    // Runs one reading that does not depend on the others. A mistake in it is
    // noted and the next reading goes on, so one run names every mistake.
    // False when it failed.
    template <class Read> bool attempt(Read&& read) const {
        try {
            read();
            return true;
        } catch (const ConfigError& e) {
            problems_.insert(problems_.end(), e.problems().begin(), e.problems().end());
        }
        return false;
    }

    std::size_t problem_count() const { return problems_.size(); }
    std::vector<ConfigProblem> take_problems() const { return std::move(problems_); }

    // A key is a plain name; YAML also allows lists and maps as keys.
    std::string key(const YamlNode& node, const std::string& what) const {
        if (!node.is_scalar()) fail(node, "a key in " + what + " must be a plain name");
        return node.text();
    }

    // yaml-cpp keeps both pairs of a repeated key and lookups see only the
    // first, so the second would be silently ignored: refuse it instead.
    void expect_map(const YamlNode& node, const std::string& what) const {
        if (!node.is_map()) fail(node, what + " must be a mapping");
        std::map<std::string, SourceLocation> seen;
        for (const auto& kv : node.entries()) {
            const auto name = key(kv.key, what);
            auto [first, inserted] = seen.emplace(name, at(kv.key));
            if (!inserted)
                note(kv.key, "'" + name + "' is set twice in " + what + " (first at line " +
                                 std::to_string(first->second.line) + ", column " +
                                 std::to_string(first->second.column) + ")");
        }
    }

    // Unknown keys are mistakes (a typo would otherwise silently do nothing).
    void only_keys(const YamlNode& map, const std::set<std::string>& allowed, const std::string& what) const {
        for (const auto& kv : map.entries()) {
            const auto name = key(kv.key, what);
            if (!allowed.count(name)) {
                std::string list;
                for (const auto& a : allowed)
                    list += (list.empty() ? "" : ", ") + a;
                note(kv.key, "unknown key '" + name + "' in " + what + " (allowed: " + list + ")");
            }
        }
    }

    std::string string(const YamlNode& node, const std::string& what) const {
        if (!node.is_scalar()) fail(node, what + " must be a string");
        return node.text();
    }

    bool boolean(const YamlNode& node, const std::string& what) const {
        bool value = false;
        if (!node.is_scalar() || !yaml_bool(node, value)) fail(node, what + " must be true or false");
        return value;
    }

    std::uint64_t count(const YamlNode& node, const std::string& what, std::uint64_t min, std::uint64_t max) const {
        if (!node.is_scalar()) fail(node, what + " must be a whole number");
        const std::string text = node.text();
        std::uint64_t value = 0;
        std::size_t used = 0;
        try {
            if (!text.empty() && text[0] == '-') throw std::invalid_argument("negative");
            value = std::stoull(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != text.size() || text.empty()) fail(node, what + " must be a whole number, not '" + text + "'");
        if (value < min || value > max)
            fail(node, what + " must be between " + std::to_string(min) + " and " + std::to_string(max));
        return value;
    }

    std::filesystem::path path(const YamlNode& node, const std::string& what) const {
        std::filesystem::path p = string(node, what);
        if (p.empty()) fail(node, what + " must not be empty");
        return p.is_absolute() ? p : (base_dir_ / p).lexically_normal();
    }

    // A family's settings as JSON. Aliases are followed, so a map that holds
    // itself (`&s {me: *s}`) or aliases that multiply each other (a "billion
    // laughs") would never end: the depth and the values written are
    // bounded, and past either the settings are refused where they go wrong.
    nlohmann::json to_json(const YamlNode& node, const std::string& what) const {
        std::size_t budget = kMaxSettingValues;
        return to_json(node, what, 0, budget);
    }

    nlohmann::json to_json(const YamlNode& node, const std::string& what, std::size_t depth,
                           std::size_t& budget) const {
        if (depth > kMaxSettingDepth)
            fail(node, what + " nests deeper than " + std::to_string(kMaxSettingDepth) +
                           " levels (does an alias name a map or list it is inside of?)");
        if (budget == 0)
            fail(node, what + " holds more than " + std::to_string(kMaxSettingValues) +
                           " values once its aliases are followed");
        --budget;
        switch (node.kind()) {
        case YamlNode::Kind::map: {
            nlohmann::json out = nlohmann::json::object();
            for (const auto& kv : node.entries())
                out[key(kv.key, "settings")] = to_json(kv.value, what, depth + 1, budget);
            return out;
        }
        case YamlNode::Kind::sequence: {
            nlohmann::json out = nlohmann::json::array();
            for (const auto& item : node.items())
                out.push_back(to_json(item, what, depth + 1, budget));
            return out;
        }
        case YamlNode::Kind::scalar: {
            // Quoted scalars stay strings; plain ones become the type they read as.
            if (node.quoted()) return node.text();
            bool b;
            if (yaml_bool(node, b)) return b;
            long long i;
            if (yaml_integer(node, i)) return i;
            double d;
            if (yaml_real(node, d)) return d;
            return node.text();
        }
        default: return nullptr;
        }
    }

    const std::string& source() const { return source_; }
    const std::filesystem::path& base_dir() const { return base_dir_; }

private:
    std::string source_;
    std::filesystem::path base_dir_;
    mutable std::vector<ConfigProblem> problems_;
};

std::string fmt_number(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

const std::set<std::string, std::less<>> kLogLevels{"trace", "debug", "info", "warn", "error", "critical", "off"};

void read_server(const YamlReader& r, const YamlNode& node, ServerIdentity& out) {
    r.expect_map(node, "server");
    r.only_keys(node, {"name", "title", "instructions"}, "server");
    if (node["name"])
        r.attempt([&] {
            out.name = r.string(node["name"], "server.name");
            if (out.name.empty()) r.fail(node["name"], "server.name must not be empty");
        });
    if (node["title"]) r.attempt([&] { out.title = r.string(node["title"], "server.title"); });
    if (node["instructions"])
        r.attempt([&] { out.instructions = r.string(node["instructions"], "server.instructions"); });
}

void read_limits(const YamlReader& r, const YamlNode& node, Limits& out) {
    r.expect_map(node, "limits");
    r.only_keys(node,
                {"max_message_bytes", "max_json_depth", "workers", "max_in_flight", "page_size", "tools_list_ttl_ms",
                 "max_string_bytes", "max_array_items", "max_in_flight_per_principal", "max_in_flight_per_plugin",
                 "tool_timeout_ms"},
                "limits");
    const auto number = [&](const char* key, auto& field, std::uint64_t min, std::uint64_t max) {
        if (node[key])
            r.attempt([&] {
                field = static_cast<std::decay_t<decltype(field)>>(
                    r.count(node[key], std::string("limits.") + key, min, max));
            });
    };
    number("max_message_bytes", out.max_message_bytes, 1024, std::uint64_t{1} << 32);
    number("max_json_depth", out.max_json_depth, 4, 10000);
    number("workers", out.workers, 1, 1024);
    number("max_in_flight", out.max_in_flight, 1, 1u << 20);
    number("page_size", out.page_size, 1, 10000);
    number("tools_list_ttl_ms", out.tools_list_ttl_ms, 0, 86400000ull * 365);
    number("max_string_bytes", out.max_string_bytes, 16, 1u << 20);
    number("max_array_items", out.max_array_items, 1, 1u << 20);
    number("max_in_flight_per_principal", out.max_in_flight_per_principal, 1, 1u << 20);
    number("max_in_flight_per_plugin", out.max_in_flight_per_plugin, 1, 1024);
    number("tool_timeout_ms", out.tool_timeout_ms, 1, 86400000);
}

void read_input_requests(const YamlReader& r, const YamlNode& node, InputRequestSettings& out) {
    r.expect_map(node, "input_requests");
    r.only_keys(node, {"state_keys", "state_ttl_ms", "client_timeout_ms"}, "input_requests");
    out.where = r.at(node);
    if (const auto& keys = node["state_keys"]) {
        if (!keys.is_sequence()) {
            r.note(keys, "input_requests.state_keys must be a list of base64 keys");
        } else {
            for (const auto& item : keys.items())
                r.attempt([&] {
                    auto key =
                        mrtr::RequestStateSealer::parse_key(r.string(item, "a key in input_requests.state_keys"));
                    if (!key)
                        r.fail(item, "a key in input_requests.state_keys must be base64 of exactly 32 random bytes "
                                     "(openssl rand -base64 32)");
                    out.state_keys.push_back(std::move(*key));
                });
        }
    }
    if (node["state_ttl_ms"])
        r.attempt(
            [&] { out.state_ttl_ms = r.count(node["state_ttl_ms"], "input_requests.state_ttl_ms", 1000, 86400000); });
    if (node["client_timeout_ms"])
        r.attempt([&] {
            out.client_timeout_ms = r.count(node["client_timeout_ms"], "input_requests.client_timeout_ms", 1, 86400000);
        });
}

void read_tasks(const YamlReader& r, const YamlNode& node, TaskSettings& out) {
    r.expect_map(node, "tasks");
    r.only_keys(node,
                {"enabled", "ttl_ms", "poll_interval_ms", "poll_burst", "max_per_principal", "max_kept_per_principal",
                 "max_result_bytes", "workers", "max_run_ms", "lease_ms"},
                "tasks");
    out.where = r.at(node);
    if (node["enabled"]) r.attempt([&] { out.enabled = r.boolean(node["enabled"], "tasks.enabled"); });
    const auto number = [&](const char* key, auto& field, std::uint64_t min, std::uint64_t max) {
        if (node[key])
            r.attempt([&] {
                field = static_cast<std::decay_t<decltype(field)>>(
                    r.count(node[key], std::string("tasks.") + key, min, max));
            });
    };
    number("ttl_ms", out.ttl_ms, 1000, 86400000ull * 30);
    number("poll_interval_ms", out.poll_interval_ms, 10, 3600000);
    number("poll_burst", out.poll_burst, 1, 1000);
    number("max_per_principal", out.max_per_principal, 1, 100000);
    number("max_kept_per_principal", out.max_kept_per_principal, 1, 100000);
    number("max_result_bytes", out.max_result_bytes, 1024, 64ull << 20);
    number("workers", out.workers, 1, 1024);
    number("max_run_ms", out.max_run_ms, 1000, 86400000ull * 30);
    number("lease_ms", out.lease_ms, 1000, 86400000);
}

// A listener of the metrics' own off loopback needs its allow-list: it has
// no token check of its own.
void check_metrics_listener(const YamlReader& r, const YamlNode& node, const MetricsSettings& metrics) {
    if (!metrics.own_listener() || !metrics.allow.empty()) return;
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(metrics.listen_host, ec);
    if (!ec && address.is_loopback()) return;
    r.fail(node["listen"], "metrics.listen on " + metrics.listen_host +
                               " (not loopback) needs metrics.allow: the addresses that may scrape it");
}

void read_metrics(const YamlReader& r, const YamlNode& node, MetricsSettings& out) {
    r.expect_map(node, "metrics");
    r.only_keys(node, {"enabled", "path", "listen", "allow"}, "metrics");
    out.where = r.at(node);
    if (node["enabled"]) r.attempt([&] { out.enabled = r.boolean(node["enabled"], "metrics.enabled"); });
    if (node["path"])
        r.attempt([&] {
            out.path = r.string(node["path"], "metrics.path");
            if (out.path.size() < 2 || out.path[0] != '/' || out.path.find_first_of("?# ") != std::string::npos)
                r.fail(node["path"], "metrics.path must be a path such as /metrics (a '/' first, no query)");
            for (const char* probe : {"/health", "/ready", "/status"})
                if (out.path == probe)
                    r.fail(node["path"], "metrics.path cannot be " + out.path + ", which the host serves itself");
        });
    if (node["listen"])
        r.attempt([&] {
            HttpSettings listen;
            try {
                apply_listen(listen, r.string(node["listen"], "metrics.listen"));
            } catch (const std::invalid_argument& e) {
                r.fail(node["listen"], std::string("metrics.listen: ") + e.what());
            }
            out.listen_host = listen.listen_host;
            out.listen_port = listen.listen_port;
        });
    if (node["allow"])
        r.attempt([&] {
            if (!node["allow"].is_sequence()) r.fail(node["allow"], "metrics.allow must be a list of addresses");
            for (const auto& item : node["allow"].items())
                r.attempt([&] {
                    auto block = r.string(item, "an item of metrics.allow");
                    // The same reading the listeners use (metrics::AddressAllowList).
                    bool valid = true;
                    try {
                        metrics::AddressAllowList({block});
                    } catch (const std::invalid_argument&) {
                        valid = false;
                    }
                    if (!valid)
                        r.fail(item, "metrics.allow: '" + block +
                                         "' is not an IP address or a CIDR block such as 10.0.0.0/8 or ::1");
                    out.allow.push_back(std::move(block));
                });
        });
    if (node["listen"]) r.attempt([&] { check_metrics_listener(r, node, out); });
}

void read_audit(const YamlReader& r, const YamlNode& node, AuditSettings& out) {
    r.expect_map(node, "audit");
    r.only_keys(node, {"file", "include_arguments", "max_queue"}, "audit");
    out.where = r.at(node);
    if (!node["file"]) r.fail(node, "audit needs file: the path audit lines are appended to");
    r.attempt([&] { out.file = r.path(node["file"], "audit.file"); });
    if (node["include_arguments"])
        r.attempt([&] { out.include_arguments = r.boolean(node["include_arguments"], "audit.include_arguments"); });
    if (node["max_queue"])
        r.attempt([&] { out.max_queue = r.count(node["max_queue"], "audit.max_queue", 16, 10000000); });
}

void read_tracing(const YamlReader& r, const YamlNode& node, TracingSettings& out) {
    r.expect_map(node, "tracing");
    r.only_keys(node, {"otlp_endpoint", "service_name", "export_timeout_ms", "max_queue"}, "tracing");
    out.where = r.at(node);
    if (node["otlp_endpoint"])
        r.attempt([&] {
            out.otlp_endpoint = r.string(node["otlp_endpoint"], "tracing.otlp_endpoint");
            if (out.otlp_endpoint.rfind("http://", 0) != 0 || out.otlp_endpoint.size() <= 7)
                r.fail(node["otlp_endpoint"], "tracing.otlp_endpoint must be an http:// URL such as "
                                              "http://127.0.0.1:4318/v1/traces, not '" +
                                                  out.otlp_endpoint + "'");
        });
    if (node["service_name"])
        r.attempt([&] {
            out.service_name = r.string(node["service_name"], "tracing.service_name");
            if (out.service_name.empty()) r.fail(node["service_name"], "tracing.service_name must not be empty");
        });
    if (node["export_timeout_ms"])
        r.attempt([&] {
            out.export_timeout_ms = r.count(node["export_timeout_ms"], "tracing.export_timeout_ms", 100, 60000);
        });
    if (node["max_queue"])
        r.attempt([&] { out.max_queue = r.count(node["max_queue"], "tracing.max_queue", 16, 1000000); });
}

double rate(const YamlReader& r, const YamlNode& node, const std::string& what, double min, double max) {
    double value = 0;
    if (!node.is_scalar() || !yaml_real(node, value) || !(value >= min && value <= max))
        r.fail(node, what + " must be a number from " + fmt_number(min) + " to " + fmt_number(max));
    return value;
}

// calls_per_second and burst from a mapping whose keys the caller checked.
RateLimit read_bucket(const YamlReader& r, const YamlNode& node, const std::string& what) {
    if (!node["calls_per_second"]) r.fail(node, what + " needs calls_per_second");
    RateLimit limit;
    limit.where = r.at(node["calls_per_second"]);
    limit.calls_per_second = rate(r, node["calls_per_second"], what + ".calls_per_second", 0.001, 1e6);
    // Without a burst, one second's worth of calls (at least one) may come at once.
    limit.burst =
        node["burst"] ? rate(r, node["burst"], what + ".burst", 1, 1e6) : std::max(1.0, limit.calls_per_second);
    return limit;
}

void read_rate_limits(const YamlReader& r, const YamlNode& node, RateLimits& out) {
    r.expect_map(node, "rate_limits");
    r.only_keys(node, {"calls_per_second", "burst", "per_tool"}, "rate_limits");
    if (node["calls_per_second"] || node["burst"])
        r.attempt([&] { out.per_principal = read_bucket(r, node, "rate_limits"); });
    if (node["per_tool"])
        r.attempt([&] {
            const auto& tools = node["per_tool"];
            r.expect_map(tools, "rate_limits.per_tool");
            for (const auto& kv : tools.entries())
                r.attempt([&] {
                    const auto name = r.key(kv.key, "rate_limits.per_tool");
                    const auto what = "rate_limits.per_tool." + name;
                    r.expect_map(kv.value, what);
                    r.only_keys(kv.value, {"calls_per_second", "burst"}, what);
                    out.per_tool[name] = read_bucket(r, kv.value, what);
                });
        });
}

PluginEntry read_plugin_entry(const YamlReader& r, const YamlNode& item);

void read_plugins(const YamlReader& r, const YamlNode& node, std::vector<PluginEntry>& out) {
    if (!node.is_sequence()) r.fail(node, "plugins must be a list of plugin files");
    for (const auto& item : node.items())
        r.attempt([&] { out.push_back(read_plugin_entry(r, item)); });
}

// isolation: in_process (the default) or process, and the child's bounds,
// which only a family in a process of its own can have.
void read_isolation(const YamlReader& r, const YamlNode& item, PluginEntry& entry) {
    if (item["isolation"])
        r.attempt([&] {
            const auto mode = r.string(item["isolation"], "a plugins entry's isolation");
            if (mode != "in_process" && mode != "process")
                r.fail(item["isolation"],
                       "a plugins entry's isolation must be in_process or process, not '" + mode + "'");
            entry.own_process = mode == "process";
        });
    const struct {
        const char* key;
        std::optional<std::uint64_t>& value;
        std::uint64_t min, max;
    } bounds[] = {{"memory_mb", entry.memory_mb, 16, 1u << 20},
                  {"cpu_seconds", entry.cpu_seconds, 1, 1u << 30},
                  {"open_files", entry.open_files, 16, 1u << 20}};
    for (const auto& bound : bounds) {
        if (!item[bound.key]) continue;
        r.attempt([&] {
            if (!entry.own_process)
                r.fail(item[bound.key], std::string("a plugins entry's ") + bound.key +
                                            " bounds a family's own process: it needs isolation: process");
            bound.value = r.count(item[bound.key], std::string("a plugins entry's ") + bound.key, bound.min, bound.max);
        });
    }
    if (item["environment"])
        r.attempt([&] {
            const auto& node = item["environment"];
            if (!entry.own_process)
                r.fail(node, "a plugins entry's environment is what its own process sees: it needs isolation: process");
            if (node.is_scalar() && node.text() == "inherit") return;
            if (!node.is_sequence())
                r.fail(node, "a plugins entry's environment is inherit or a list of the host's environment variables "
                             "its process may see");
            entry.environment.emplace();
            for (const auto& name_node : node.items()) {
                const auto name = r.string(name_node, "a plugins entry's environment");
                const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                                   std::all_of(name.begin(), name.end(), [](char c) {
                                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                                   });
                if (!valid)
                    r.fail(name_node, "a plugins entry's environment lists '" + name.substr(0, 100) +
                                          "', which is no variable name (letters, digits and '_', not first a digit)");
                entry.environment->push_back(name);
            }
        });
}

PluginEntry read_plugin_entry(const YamlReader& r, const YamlNode& item) {
    PluginEntry entry;
    if (item.is_map()) {
        r.expect_map(item, "a plugins entry");
        r.only_keys(item,
                    {"path", "max_in_flight", "tool_timeout_ms", "store_credentials", "isolation", "memory_mb",
                     "cpu_seconds", "open_files", "environment"},
                    "a plugins entry");
        if (!item["path"]) r.fail(item, "a plugins entry needs a path");
        if (item["max_in_flight"])
            r.attempt([&] {
                entry.max_in_flight = r.count(item["max_in_flight"], "a plugins entry's max_in_flight", 1, 1024);
            });
        if (item["tool_timeout_ms"])
            r.attempt([&] {
                entry.tool_timeout_ms =
                    r.count(item["tool_timeout_ms"], "a plugins entry's tool_timeout_ms", 1, 86400000);
            });
        if (item["store_credentials"])
            r.attempt([&] {
                entry.store_credentials = r.boolean(item["store_credentials"], "a plugins entry's store_credentials");
            });
        read_isolation(r, item, entry);
    }
    // Not `path_node = item["path"]` on a copy: assigning to a yaml-cpp
    // node overwrites the node it refers to, here the entry itself.
    const YamlNode path_node = item.is_map() ? item["path"] : item;
    entry.as_written = r.string(path_node, "a plugin path");
    entry.where = r.at(path_node);
    if (entry.as_written.empty()) r.fail(path_node, "a plugin path must not be empty");
    // A bare file name is looked up in plugin_dir; anything with a slash is a
    // path relative to the config file (or absolute).
    if (entry.as_written.find('/') == std::string::npos)
        entry.path = entry.as_written;
    else
        entry.path = r.path(path_node, "a plugin path");
    return entry;
}

// The name hook of an upstream: {name} once, {upstream} at most once, and
// around them only what a tool name may hold; "none" keeps the upstream's names.
std::string read_name_hook(const YamlReader& r, const YamlNode& node, const std::string& what) {
    std::string hook = r.string(node, what);
    if (hook == "none") return "{name}";
    std::string rest = hook;
    const auto take = [&](const std::string& part) {
        const auto at = rest.find(part);
        if (at == std::string::npos) return 0;
        rest.erase(at, part.size());
        return rest.find(part) == std::string::npos ? 1 : 2;
    };
    if (take("{name}") != 1) r.fail(node, what + " must hold {name} exactly once (or be none), not '" + hook + "'");
    if (take("{upstream}") == 2) r.fail(node, what + " may hold {upstream} at most once");
    for (char c : rest)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
            r.fail(node, what + " may hold, besides {name} and {upstream}, only letters, digits, '_', '-' and '.'");
    return hook;
}

std::vector<std::string> string_list(const YamlReader& r, const YamlNode& node, const std::string& what);

// user@ or user:password@ before the host of a URL.
bool has_user_information(std::string_view url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) return false;
    const auto rest = url.substr(scheme_end + 3);
    return rest.substr(0, rest.find_first_of("/?#")).find('@') != std::string_view::npos;
}

// A TLS client's settings, under `where` (session.redis.tls, upstream 'x'.tls).
void read_tls(const YamlReader& r, const YamlNode& node, TlsSettings& out, const std::string& where) {
    r.expect_map(node, where);
    r.only_keys(node, {"ca_file", "cert_file", "key_file", "server_name", "verify"}, where);
    if (node["ca_file"]) r.attempt([&] { out.ca_file = r.path(node["ca_file"], where + ".ca_file"); });
    if (node["cert_file"]) r.attempt([&] { out.cert_file = r.path(node["cert_file"], where + ".cert_file"); });
    if (node["key_file"]) r.attempt([&] { out.key_file = r.path(node["key_file"], where + ".key_file"); });
    if (node["server_name"])
        r.attempt([&] {
            out.server_name = r.string(node["server_name"], where + ".server_name");
            if (out.server_name.empty()) r.fail(node["server_name"], where + ".server_name must not be empty");
        });
    if (node["verify"]) r.attempt([&] { out.verify = r.boolean(node["verify"], where + ".verify"); });
    if (bool(node["cert_file"]) != bool(node["key_file"]))
        r.note(node, where + " needs cert_file and key_file together (a client certificate and its key)");
}

// upstreams[].oauth: the host's own client at the upstream's authorization server.
UpstreamOAuth read_upstream_oauth(const YamlReader& r, const YamlNode& item, const std::string& what) {
    const YamlNode node = item["oauth"];
    const std::string where = what + ".oauth";
    UpstreamOAuth o;
    r.expect_map(node, where);
    r.only_keys(node,
                {"client_id", "client_secret_file", "client_secret_env", "scope", "token_url", "resource",
                 "authorization_servers"},
                where);
    if (!item["url"]) r.fail(node, where + " is the host's client at a url's authorization server: it needs url");
    if (item["token_file"] || item["token_env"])
        r.fail(node, what + " sets both oauth and a token of its own (token_file or token_env); keep one");
    if (!node["client_id"]) r.fail(node, where + " needs client_id");
    o.client_id = r.string(node["client_id"], where + ".client_id");
    if (o.client_id.empty()) r.fail(node["client_id"], where + ".client_id must not be empty");
    if (!node["client_secret_file"] == !node["client_secret_env"])
        r.fail(node, where + " needs exactly one of client_secret_file and client_secret_env");
    if (node["client_secret_file"])
        o.client_secret_file = r.path(node["client_secret_file"], where + ".client_secret_file");
    if (node["client_secret_env"])
        o.client_secret_env = r.string(node["client_secret_env"], where + ".client_secret_env");
    if (node["scope"]) o.scope = r.string(node["scope"], where + ".scope");
    for (const char* key : {"token_url", "resource"}) {
        if (!node[key]) continue;
        std::string url = r.string(node[key], where + "." + key);
        if ((url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) || has_user_information(url))
            r.fail(node[key], where + "." + key +
                                  " must be an http:// or https:// URL with no user information, not '" + url + "'");
        (std::string(key) == "token_url" ? o.token_url : o.resource) = std::move(url);
    }
    if (node["authorization_servers"]) {
        const std::string list = where + ".authorization_servers";
        o.authorization_servers = string_list(r, node["authorization_servers"], list);
        // Empty would read as no list, so the upstream's own origin trusted:
        // not what an operator writing [] means.
        if (o.authorization_servers.empty())
            r.fail(node["authorization_servers"],
                   list + " is empty; list the issuers to trust, or leave it out to trust one on the upstream's "
                          "own origin (set token_url to name the token endpoint yourself)");
        for (const auto& url : o.authorization_servers)
            if ((url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) || has_user_information(url))
                r.fail(node["authorization_servers"],
                       list + " holds issuer URLs (http:// or https://, no user information), not '" + url + "'");
    }
    return o;
}

UpstreamEntry read_upstream(const YamlReader& r, const YamlNode& item) {
    UpstreamEntry u;
    r.expect_map(item, "an upstreams entry");
    u.where = r.at(item);
    if (!item["name"]) r.fail(item, "an upstreams entry needs a name (the family it serves as)");
    u.name = r.string(item["name"], "an upstreams entry's name");
    if (!valid_family_name(u.name))
        r.fail(item["name"],
               "an upstreams entry's name must be 1-64 of lowercase letters, digits, '_', '-', not '" + u.name + "'");
    const std::string what = "upstream '" + u.name + "'";
    r.only_keys(item,
                {"name",
                 "command",
                 "url",
                 "tls",
                 "env",
                 "cwd",
                 "names",
                 "allow",
                 "deny",
                 "resources",
                 "scope",
                 "required_scopes",
                 "risk",
                 "rules",
                 "gated",
                 "max_in_flight",
                 "tool_timeout_ms",
                 "connect_timeout_ms",
                 "token_file",
                 "token_env",
                 "oauth"},
                what);
    if (!item["command"] == !item["url"])
        r.fail(item, what + " needs exactly one of command (a program over stdio) and url (Streamable HTTP)");
    if (item["command"])
        r.attempt([&] {
            const auto& list = item["command"];
            if (!list.is_sequence() || list.size() == 0)
                r.fail(list, what + ".command must be a list: the program, then its arguments");
            u.command = string_list(r, list, what + ".command");
            if (u.command.front().empty()) r.fail(list, what + ".command names no program");
        });
    if (item["url"])
        r.attempt([&] {
            u.url = r.string(item["url"], what + ".url");
            if (u.url.rfind("http://", 0) != 0 && u.url.rfind("https://", 0) != 0)
                r.fail(item["url"], what + ".url must be an http:// or https:// URL, not '" + u.url + "'");
            // The URL is shown in the log and by `gatehouse plugins`; a
            // password in it would be too.
            if (has_user_information(u.url))
                r.fail(item["url"], what + ".url holds user information (user@ or user:password@), which the host "
                                           "would show in its log; give the host its credentials with token_file "
                                           "or token_env");
        });
    if (item["tls"])
        r.attempt([&] {
            read_tls(r, item["tls"], u.tls, what + ".tls");
            // Settings that would do nothing are a mistake, not a silent plain connection.
            if (u.url.rfind("https://", 0) != 0) r.fail(item["tls"], what + ".tls applies to an https:// url only");
        });
    if (item["env"])
        r.attempt([&] {
            if (!item["command"]) r.fail(item["env"], what + ".env is a command's environment: it needs command");
            r.expect_map(item["env"], what + ".env");
            for (const auto& kv : item["env"].entries()) {
                const auto key = r.key(kv.key, what + ".env");
                if (key.empty() || key.find('=') != std::string::npos)
                    r.fail(kv.key, what + ".env names a variable that is empty or holds '='");
                u.env[key] = r.string(kv.value, what + ".env." + key);
            }
        });
    if (item["cwd"])
        r.attempt([&] {
            if (!item["command"]) r.fail(item["cwd"], what + ".cwd is a command's working folder: it needs command");
            u.cwd = r.path(item["cwd"], what + ".cwd");
        });
    if (item["names"]) r.attempt([&] { u.names = read_name_hook(r, item["names"], what + ".names"); });
    if (item["allow"]) r.attempt([&] { u.allow = string_list(r, item["allow"], what + ".allow"); });
    if (item["deny"]) r.attempt([&] { u.deny = string_list(r, item["deny"], what + ".deny"); });
    if (item["allow"] && item["deny"])
        r.note(item["deny"], what + " sets both allow and deny; keep the one list that says what you mean");
    if (item["resources"]) r.attempt([&] { u.resources = r.boolean(item["resources"], what + ".resources"); });
    if (item["scope"]) r.attempt([&] { u.scope = r.string(item["scope"], what + ".scope"); });
    if (item["required_scopes"])
        r.attempt([&] { u.required_scopes = string_list(r, item["required_scopes"], what + ".required_scopes"); });
    if (item["risk"])
        r.attempt([&] {
            u.risk = r.string(item["risk"], what + ".risk");
            if (*u.risk != "read" && *u.risk != "write" && *u.risk != "money" && *u.risk != "destructive")
                r.fail(item["risk"],
                       what + ".risk must be one of read, write, money, destructive, not '" + *u.risk + "'");
        });
    if (item["rules"]) r.attempt([&] { u.rules = r.string(item["rules"], what + ".rules"); });
    if (item["gated"]) r.attempt([&] { u.gated = r.boolean(item["gated"], what + ".gated"); });
    if (item["max_in_flight"])
        r.attempt([&] { u.max_in_flight = r.count(item["max_in_flight"], what + ".max_in_flight", 1, 1024); });
    if (item["tool_timeout_ms"])
        r.attempt(
            [&] { u.tool_timeout_ms = r.count(item["tool_timeout_ms"], what + ".tool_timeout_ms", 1, 86400000); });
    if (item["connect_timeout_ms"])
        r.attempt([&] {
            u.connect_timeout_ms = r.count(item["connect_timeout_ms"], what + ".connect_timeout_ms", 100, 600000);
        });
    if (item["token_file"] && item["token_env"])
        r.note(item["token_env"], what + " sets both token_file and token_env; the token comes from one place");
    if (item["token_file"] || item["token_env"])
        if (!item["url"])
            r.note(item["token_file"] ? item["token_file"] : item["token_env"],
                   what + "'s bearer token is for a url; a command gets what it needs through env");
    if (item["token_file"]) r.attempt([&] { u.token_file = r.path(item["token_file"], what + ".token_file"); });
    if (item["token_env"]) r.attempt([&] { u.token_env = r.string(item["token_env"], what + ".token_env"); });
    if (item["oauth"]) r.attempt([&] { u.oauth = read_upstream_oauth(r, item, what); });
    return u;
}

void read_upstreams(const YamlReader& r, const YamlNode& node, std::vector<UpstreamEntry>& out) {
    if (!node.is_sequence()) r.fail(node, "upstreams must be a list of MCP servers, each with a name");
    std::map<std::string, SourceLocation> seen;
    for (const auto& item : node.items())
        r.attempt([&] {
            UpstreamEntry u = read_upstream(r, item);
            if (auto [first, fresh] = seen.emplace(u.name, u.where); !fresh)
                r.fail(item["name"], "upstream '" + u.name + "' is listed twice (first at line " +
                                         std::to_string(first->second.line) + ")");
            out.push_back(std::move(u));
        });
}

// `exposure` of a domain or of one tool: true for on_demand.
bool on_demand_exposure(const YamlReader& r, const YamlNode& node, const std::string& what) {
    const std::string exposure = r.string(node, what + ".exposure");
    if (exposure != "listed" && exposure != "on_demand") r.fail(node, what + ".exposure must be listed or on_demand");
    return exposure == "on_demand";
}

// domains.<family>.tools.<tool>: what the operator says of one tool. Whether
// the family declares such a tool is known only once its plugin is loaded
// (plugins/tool_overrides.cpp checks it there).
ToolOverride read_tool_override(const YamlReader& r, const YamlNode& node, const std::string& what) {
    ToolOverride t;
    r.expect_map(node, what);
    r.only_keys(node, {"rules", "risk", "scope", "required_scopes", "gated", "exposure"}, what);
    if (node["scope"])
        r.attempt([&] {
            t.scope = r.string(node["scope"], what + ".scope");
            if (t.scope->find_first_of(" \t\r\n\"\\") != std::string::npos)
                r.fail(node["scope"], what + ".scope is one scope, without spaces or quotes");
        });
    if (node["rules"])
        r.attempt([&] {
            t.rules = r.string(node["rules"], what + ".rules");
            if (t.rules->empty()) r.fail(node["rules"], what + ".rules must not be empty (leave it out instead)");
        });
    if (node["risk"])
        r.attempt([&] {
            t.risk = r.string(node["risk"], what + ".risk");
            if (*t.risk != "read" && *t.risk != "write" && *t.risk != "money" && *t.risk != "destructive")
                r.fail(node["risk"],
                       what + ".risk must be one of read, write, money, destructive, not '" + *t.risk + "'");
        });
    if (node["required_scopes"])
        r.attempt([&] {
            const auto& list = node["required_scopes"];
            if (!list.is_sequence()) r.fail(list, what + ".required_scopes must be a list of scopes ([] for none)");
            std::vector<std::string> scopes;
            for (const auto& item : list.items()) {
                auto scope = r.string(item, "a scope in " + what + ".required_scopes");
                if (scope.empty()) r.fail(item, "a scope in " + what + ".required_scopes must not be empty");
                scopes.push_back(std::move(scope));
            }
            t.required_scopes = std::move(scopes);
        });
    if (node["gated"]) r.attempt([&] { t.gated = r.boolean(node["gated"], what + ".gated"); });
    if (node["exposure"]) r.attempt([&] { t.on_demand = on_demand_exposure(r, node["exposure"], what); });
    return t;
}

DomainSettings read_domain(const YamlReader& r, const std::string& family, const YamlNode& v) {
    DomainSettings d;
    if (v.is_scalar()) {
        d.enabled = r.boolean(v, "domains." + family);
        return d;
    }
    if (v.is_null()) return d;
    const std::string what = "domains." + family;
    r.expect_map(v, what);
    r.only_keys(v, {"enabled", "prefix", "exposure", "settings", "tools"}, what);
    if (v["enabled"]) r.attempt([&] { d.enabled = r.boolean(v["enabled"], what + ".enabled"); });
    if (v["prefix"])
        r.attempt([&] {
            d.prefix = r.string(v["prefix"], what + ".prefix");
            for (char c : d.prefix)
                if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
                    r.fail(v["prefix"], what + ".prefix may hold only letters, digits, '_', '-' and '.'");
        });
    if (v["exposure"]) r.attempt([&] { d.on_demand = on_demand_exposure(r, v["exposure"], what); });
    if (v["settings"])
        r.attempt([&] {
            r.expect_map(v["settings"], what + ".settings");
            d.settings = r.to_json(v["settings"], what + ".settings");
        });
    if (v["tools"])
        r.attempt([&] {
            const auto& tools = v["tools"];
            r.expect_map(tools, what + ".tools");
            for (const auto& kv : tools.entries())
                r.attempt([&] {
                    const auto name = r.key(kv.key, what + ".tools");
                    ToolOverride t = read_tool_override(r, kv.value, what + ".tools." + name);
                    t.where = r.at(kv.key);
                    d.tools[name] = std::move(t);
                });
        });
    return d;
}

void read_domains(const YamlReader& r, const YamlNode& node, std::map<std::string, DomainSettings>& out) {
    r.expect_map(node, "domains");
    for (const auto& kv : node.entries())
        r.attempt([&] {
            const std::string family = r.key(kv.key, "domains");
            DomainSettings d = read_domain(r, family, kv.value);
            d.where = r.at(kv.key);
            out[family] = std::move(d);
        });
}

// grants: {<store>: {<user>: [scope, ...]}}
nlohmann::json read_grants(const YamlReader& r, const YamlNode& node, const std::string& what) {
    r.expect_map(node, what);
    nlohmann::json out = nlohmann::json::object();
    for (const auto& store : node.entries()) {
        const auto store_name = store.key.text();
        r.expect_map(store.value, what + "." + store_name);
        for (const auto& user : store.value.entries()) {
            const auto user_name = user.key.text();
            const auto where = what + "." + store_name + "." + user_name;
            if (!user.value.is_sequence()) r.fail(user.value, where + " must be a list of scopes");
            auto& scopes = out[store_name][user_name] = nlohmann::json::array();
            for (const auto& scope : user.value.items())
                scopes.push_back(r.string(scope, "a scope in " + where));
        }
    }
    return out;
}

void read_redis(const YamlReader& r, const YamlNode& node, RedisSettings& out) {
    r.expect_map(node, "session.redis");
    r.only_keys(node,
                {"url", "tls", "key_prefix", "password_file", "password_env", "connect_timeout_ms",
                 "command_timeout_ms", "pool_size"},
                "session.redis");
    out.where = r.at(node);
    if (node["url"])
        r.attempt([&] {
            out.url = r.string(node["url"], "session.redis.url");
            if (out.url.rfind("redis://", 0) != 0 && out.url.rfind("rediss://", 0) != 0 &&
                out.url.rfind("unix://", 0) != 0)
                r.fail(node["url"], "session.redis.url must be redis://[user[:password]@]host[:port][/db], "
                                    "rediss://… for TLS, or unix:///path/to/redis.sock");
        });
    if (node["tls"])
        r.attempt([&] {
            read_tls(r, node["tls"], out.tls, "session.redis.tls");
            // Settings that would do nothing are a mistake, not a silent plain connection.
            if (out.url.rfind("rediss://", 0) != 0)
                r.fail(node["tls"], "session.redis.tls applies to a rediss:// URL only; session.redis.url is not one");
        });
    if (node["key_prefix"])
        r.attempt([&] { out.key_prefix = r.string(node["key_prefix"], "session.redis.key_prefix"); });
    if (node["password_file"])
        r.attempt([&] { out.password_file = r.path(node["password_file"], "session.redis.password_file"); });
    if (node["password_env"])
        r.attempt([&] { out.password_env = r.string(node["password_env"], "session.redis.password_env"); });
    if (node["connect_timeout_ms"])
        r.attempt([&] {
            out.connect_timeout_ms = r.count(node["connect_timeout_ms"], "session.redis.connect_timeout_ms", 1, 60000);
        });
    if (node["command_timeout_ms"])
        r.attempt([&] {
            out.command_timeout_ms = r.count(node["command_timeout_ms"], "session.redis.command_timeout_ms", 1, 60000);
        });
    if (node["pool_size"])
        r.attempt([&] {
            out.pool_size = static_cast<unsigned>(r.count(node["pool_size"], "session.redis.pool_size", 1, 1024));
        });
}

void read_session(const YamlReader& r, const YamlNode& node, const std::filesystem::path& data_dir,
                  SessionSettings& out) {
    r.expect_map(node, "session");
    r.only_keys(node,
                {"backend", "redis", "state_file", "conversations_dir", "idle_expiry_s", "max_sessions_per_principal",
                 "max_topics", "pinned", "program_state_file", "program_settings_file", "credentials_file",
                 "grants_file", "grants", "rules"},
                "session");
    out.configured = true;
    out.where = r.at(node);
    if (node["backend"])
        r.attempt([&] {
            out.backend = r.string(node["backend"], "session.backend");
            if (out.backend != "memory" && out.backend != "sqlite" && out.backend != "redis")
                r.fail(node["backend"], "session.backend must be memory, sqlite or redis");
        });
    if (node["redis"]) r.attempt([&] { read_redis(r, node["redis"], out.redis); });
    out.state_file = data_dir / "state.sqlite3";
    if (node["state_file"]) r.attempt([&] { out.state_file = r.path(node["state_file"], "session.state_file"); });
    out.conversations_dir = data_dir / "conversations";
    if (node["conversations_dir"])
        r.attempt([&] { out.conversations_dir = r.path(node["conversations_dir"], "session.conversations_dir"); });
    if (node["idle_expiry_s"])
        r.attempt(
            [&] { out.idle_expiry_s = r.count(node["idle_expiry_s"], "session.idle_expiry_s", 1, 86400ull * 365); });
    if (node["max_sessions_per_principal"])
        r.attempt([&] {
            out.max_sessions_per_principal =
                r.count(node["max_sessions_per_principal"], "session.max_sessions_per_principal", 1, 4096);
        });
    if (node["max_topics"])
        r.attempt([&] { out.max_topics = r.count(node["max_topics"], "session.max_topics", 1, 1000000); });
    // Whether exactly one of the two is set says something only when both read well.
    bool store_source_read = true;
    if (node["pinned"])
        store_source_read &= r.attempt([&] {
            const auto& p = node["pinned"];
            r.expect_map(p, "session.pinned");
            r.only_keys(p, {"store", "user"}, "session.pinned");
            if (!p["store"] || !p["user"]) r.fail(p, "session.pinned needs both store and user");
            out.pinned_store = r.string(p["store"], "session.pinned.store");
            out.pinned_user = r.string(p["user"], "session.pinned.user");
            if (out.pinned_store.empty() || out.pinned_user.empty())
                r.fail(p, "session.pinned.store and session.pinned.user must not be empty");
        });
    if (node["program_state_file"])
        store_source_read &= r.attempt(
            [&] { out.program_state_file = r.path(node["program_state_file"], "session.program_state_file"); });
    if (store_source_read && out.pinned() == !out.program_state_file.empty())
        r.note(node, "session needs exactly one of pinned: {store, user} or program_state_file");
    if (node["program_settings_file"])
        r.attempt([&] {
            out.program_settings_file = r.path(node["program_settings_file"], "session.program_settings_file");
        });
    if (node["credentials_file"])
        r.attempt([&] { out.credentials_file = r.path(node["credentials_file"], "session.credentials_file"); });
    if (node["grants_file"]) r.attempt([&] { out.grants_file = r.path(node["grants_file"], "session.grants_file"); });
    if (node["grants"]) r.attempt([&] { out.grants = read_grants(r, node["grants"], "session.grants"); });
    if (node["rules"]) r.attempt([&] { out.rules = r.string(node["rules"], "session.rules"); });
}

std::vector<std::string> string_list(const YamlReader& r, const YamlNode& node, const std::string& what) {
    if (!node.is_sequence()) r.fail(node, what + " must be a list");
    std::vector<std::string> out;
    for (const auto& item : node.items())
        out.push_back(r.string(item, "an item of " + what));
    return out;
}

void read_listen(const YamlReader& r, const YamlNode& node, HttpSettings& out) {
    try {
        apply_listen(out, r.string(node, "http.listen"));
    } catch (const std::invalid_argument& e) {
        r.fail(node, std::string("http.listen: ") + e.what());
    }
}

// Where people reach this server from outside (a proxy in front of it): an
// absolute http(s) URL naming a host, with no user information, query or
// fragment; links to pages are built on it. A trailing '/' is dropped.
std::string read_public_url(const YamlReader& r, const YamlNode& node) {
    std::string url = r.string(node, "http.public_url");
    const auto fail = [&](const std::string& why) {
        r.fail(node, "http.public_url must be an absolute http:// or https:// URL such as "
                     "https://gate.example.com (" +
                         why + "), not '" + url + "'");
    };
    std::string_view rest;
    if (url.rfind("https://", 0) == 0)
        rest = std::string_view(url).substr(8);
    else if (url.rfind("http://", 0) == 0)
        rest = std::string_view(url).substr(7);
    else
        fail("it names no http or https scheme");
    for (unsigned char c : url)
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '`')
            fail("it holds a space or a character a URL cannot");
    if (url.find('?') != std::string::npos) fail("a query has no place in it");
    if (url.find('#') != std::string::npos) fail("a fragment has no place in it");
    const auto authority = rest.substr(0, rest.find('/'));
    if (authority.empty() || authority[0] == ':') fail("it names no host");
    if (authority.find('@') != std::string_view::npos) fail("user information has no place in it");
    while (url.back() == '/')
        url.pop_back();
    return url;
}

void read_http(const YamlReader& r, const YamlNode& node, HttpSettings& out) {
    r.expect_map(node, "http");
    r.only_keys(node,
                {"listen", "path", "allowed_origins", "allowed_hosts", "request_timeout_ms", "idle_timeout_ms",
                 "keepalive_ms", "drain_timeout_ms", "max_connections", "max_streams", "max_streams_per_principal",
                 "max_legacy_sessions", "max_legacy_sessions_per_principal", "legacy_session_idle_s", "threads",
                 "public_url", "instance_name"},
                "http");
    out.where = r.at(node);
    if (node["listen"]) r.attempt([&] { read_listen(r, node["listen"], out); });
    if (node["path"])
        r.attempt([&] {
            out.path = r.string(node["path"], "http.path");
            if (out.path.empty() || out.path[0] != '/' || out.path.find_first_of("?# ") != std::string::npos)
                r.fail(node["path"], "http.path must start with '/' and hold no '?', '#' or space");
        });
    if (node["allowed_origins"])
        r.attempt([&] { out.allowed_origins = string_list(r, node["allowed_origins"], "http.allowed_origins"); });
    if (node["allowed_hosts"])
        r.attempt([&] { out.allowed_hosts = string_list(r, node["allowed_hosts"], "http.allowed_hosts"); });
    const auto ms = [&](const char* key, std::uint64_t& field, std::uint64_t min) {
        if (node[key]) r.attempt([&] { field = r.count(node[key], std::string("http.") + key, min, 86400000ull); });
    };
    const auto number = [&](const char* key, unsigned& field, std::uint64_t max) {
        if (node[key])
            r.attempt([&] { field = static_cast<unsigned>(r.count(node[key], std::string("http.") + key, 1, max)); });
    };
    ms("request_timeout_ms", out.request_timeout_ms, 100);
    ms("idle_timeout_ms", out.idle_timeout_ms, 100);
    ms("keepalive_ms", out.keepalive_ms, 100);
    ms("drain_timeout_ms", out.drain_timeout_ms, 0);
    number("max_connections", out.max_connections, 1u << 20);
    number("max_streams", out.max_streams, 1u << 20);
    number("max_streams_per_principal", out.max_streams_per_principal, 1u << 20);
    number("max_legacy_sessions", out.max_legacy_sessions, 1u << 20);
    number("max_legacy_sessions_per_principal", out.max_legacy_sessions_per_principal, 1u << 20);
    if (node["legacy_session_idle_s"])
        r.attempt([&] {
            out.legacy_session_idle_s =
                r.count(node["legacy_session_idle_s"], "http.legacy_session_idle_s", 1, 86400ull * 30);
        });
    number("threads", out.threads, 64);
    if (node["public_url"]) r.attempt([&] { out.public_url = read_public_url(r, node["public_url"]); });
    if (node["instance_name"])
        r.attempt([&] {
            out.instance_name = r.string(node["instance_name"], "http.instance_name");
            const bool fits = !out.instance_name.empty() && out.instance_name.size() <= 64 &&
                              std::all_of(out.instance_name.begin(), out.instance_name.end(), [](unsigned char c) {
                                  return std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-';
                              });
            if (!fits)
                r.fail(node["instance_name"], "http.instance_name must be 1 to 64 letters, digits, '.', '_', ':' or "
                                              "'-' (it is sent as a response header)");
        });
}

void read_license(const YamlReader& r, const YamlNode& node, const std::filesystem::path& data_dir,
                  LicenseSettings& out) {
    r.expect_map(node, "license");
    r.only_keys(node, {"file", "files", "directory", "free_families", "vendor_keys"}, "license");
    out.configured = true;
    out.where = r.at(node);
    if (node["file"]) r.attempt([&] { out.file = r.path(node["file"], "license.file"); });
    if (node["files"])
        r.attempt([&] {
            const auto& list = node["files"];
            if (!list.is_sequence()) r.fail(list, "license.files must be a list of license file paths");
            for (const auto& item : list.items()) {
                auto path = r.path(item, "a file in license.files");
                if (path == out.file || std::find(out.files.begin(), out.files.end(), path) != out.files.end())
                    r.fail(item, "'" + path.string() + "' is named twice in license.file and license.files");
                out.files.push_back(std::move(path));
            }
        });
    if (node["directory"]) r.attempt([&] { out.directory = r.path(node["directory"], "license.directory"); });
    if (out.file.empty() && out.files.empty() && out.directory.empty()) out.file = data_dir / "license.json";
    if (node["free_families"])
        r.attempt([&] {
            const auto& list = node["free_families"];
            if (!list.is_sequence()) r.fail(list, "license.free_families must be a list of family names");
            for (const auto& item : list.items()) {
                auto family = r.string(item, "a family in license.free_families");
                if (!license::valid_license_name(family))
                    r.fail(item,
                           "'" + family +
                               "' in license.free_families is not a family name (1 to 64 of letters, digits, '_', "
                               "'-' and '.')");
                if (std::find(out.free_families.begin(), out.free_families.end(), family) != out.free_families.end())
                    r.fail(item, "'" + family + "' is listed twice in license.free_families");
                out.free_families.push_back(std::move(family));
            }
        });
    if (node["vendor_keys"])
        r.attempt([&] {
            const auto& keys = node["vendor_keys"];
            if (keys.is_null()) return;
            r.expect_map(keys, "license.vendor_keys");
            for (const auto& kv : keys.entries())
                r.attempt([&] {
                    const auto id = r.key(kv.key, "license.vendor_keys");
                    if (!license::valid_license_name(id))
                        r.fail(kv.key, "'" + id +
                                           "' is not a key id (1 to 64 of letters, digits, '_', '-' and '.'), as a "
                                           "license's key_id names it");
                    const auto text = r.string(kv.value, "license.vendor_keys." + id);
                    try {
                        out.vendor_keys.emplace(id, license::VendorKey::parse(text));
                    } catch (const std::invalid_argument& e) {
                        r.fail(kv.value, "license.vendor_keys." + id + " " + e.what());
                    }
                });
        });
}

bool is_http_url(const std::string& text) {
    return text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0;
}

std::string url_in(const YamlReader& r, const YamlNode& node, const std::string& what) {
    auto url = r.string(node, what);
    if (!is_http_url(url) || url.find_first_of(" #") != std::string::npos)
        r.fail(node, what + " must be an http:// or https:// URL, not '" + url + "'");
    return url;
}

void read_auth(const YamlReader& r, const YamlNode& node, AuthSettings& out) {
    r.expect_map(node, "auth");
    r.only_keys(node,
                {"mode", "resource", "issuers", "audiences", "jwks_uri", "scopes_supported", "clock_skew_s",
                 "fetch_timeout_ms", "jwks_refresh_interval_s", "jwks_min_refresh_s", "jwks_max_stale_s",
                 "introspection_endpoint", "client_id", "client_secret", "introspection_cache_s",
                 "introspection_refused_cache_s", "introspection_calls_per_address_per_minute",
                 "introspection_username_as_subject", "api_keys"},
                "auth");
    out.configured = true;
    out.where = r.at(node);
    // What one mode needs is judged only when everything else read well.
    const std::size_t problems_before = r.problem_count();
    if (!node["mode"]) r.fail(node, "auth.mode is required (none, jwt, introspection or api_keys)");
    out.mode = r.string(node["mode"], "auth.mode");
    if (out.mode != "none" && out.mode != "jwt" && out.mode != "introspection" && out.mode != "api_keys")
        r.fail(node["mode"], "auth.mode must be one of none, jwt, introspection, api_keys, not '" + out.mode + "'");
    if (node["resource"]) r.attempt([&] { out.resource = url_in(r, node["resource"], "auth.resource"); });
    const auto urls = [&](const char* key, std::vector<std::string>& field) {
        if (!node[key]) return;
        const auto& list = node[key];
        if (!list.is_sequence()) {
            r.note(list, std::string("auth.") + key + " must be a list of URLs");
            return;
        }
        for (const auto& item : list.items())
            r.attempt([&] { field.push_back(url_in(r, item, std::string("an entry of auth.") + key)); });
    };
    bool issuers_read = true;
    if (node["issuers"]) {
        const auto& list = node["issuers"];
        if (!list.is_sequence())
            r.fail(list, "auth.issuers must be a list of URLs (or of {issuer: URL, jwks_uri: URL})");
        for (const auto& item : list.items())
            issuers_read &= r.attempt([&] {
                std::string issuer;
                if (item.is_map()) {
                    r.only_keys(item, {"issuer", "jwks_uri"}, "an entry of auth.issuers");
                    if (!item["issuer"])
                        r.fail(item, "an entry of auth.issuers needs issuer: the authorization server's URL");
                    issuer = url_in(r, item["issuer"], "auth.issuers[].issuer");
                    if (item["jwks_uri"])
                        out.issuer_jwks_uris[issuer] = url_in(r, item["jwks_uri"], "auth.issuers[].jwks_uri");
                } else {
                    issuer = url_in(r, item, "an entry of auth.issuers");
                }
                if (std::find(out.issuers.begin(), out.issuers.end(), issuer) != out.issuers.end())
                    r.fail(item, "the issuer " + issuer + " is listed twice in auth.issuers");
                out.issuers.push_back(std::move(issuer));
            });
    }
    urls("audiences", out.audiences);
    // A key source is judged against the issuers only when they read well.
    if (node["jwks_uri"] && issuers_read)
        r.attempt([&] {
            // One key source for several issuers would let each mint tokens in
            // the others' names, reaching their subjects.
            if (out.issuers.size() != 1)
                r.fail(node["jwks_uri"], "auth.jwks_uri names the keys of one issuer, and auth.issuers lists " +
                                             std::to_string(out.issuers.size()) +
                                             ": give each issuer its own, as {issuer: URL, jwks_uri: URL}");
            if (out.issuer_jwks_uris.count(out.issuers.front()))
                r.fail(node["jwks_uri"], "auth.jwks_uri and the issuer's own jwks_uri both name its keys; keep one");
            out.issuer_jwks_uris[out.issuers.front()] = url_in(r, node["jwks_uri"], "auth.jwks_uri");
        });
    r.attempt([&] {
        std::map<std::string, std::string> issuer_of_source;
        for (const auto& [issuer, uri] : out.issuer_jwks_uris) {
            const auto [it, fresh] = issuer_of_source.emplace(uri, issuer);
            if (!fresh)
                r.fail(node["issuers"], "the issuers " + it->second + " and " + issuer + " both take their keys from " +
                                            uri +
                                            ": each could then sign tokens in the other's name; give each issuer "
                                            "its own key source");
        }
    });
    if (node["scopes_supported"])
        r.attempt([&] { out.scopes_supported = string_list(r, node["scopes_supported"], "auth.scopes_supported"); });
    const auto number = [&](const char* key, std::uint64_t& field, std::uint64_t min, std::uint64_t max) {
        if (node[key]) r.attempt([&] { field = r.count(node[key], std::string("auth.") + key, min, max); });
    };
    number("clock_skew_s", out.clock_skew_s, 0, 600);
    number("fetch_timeout_ms", out.fetch_timeout_ms, 100, 60000);
    number("jwks_refresh_interval_s", out.jwks_refresh_interval_s, 10, 86400);
    number("jwks_min_refresh_s", out.jwks_min_refresh_s, 0, 3600);
    number("jwks_max_stale_s", out.jwks_max_stale_s, 60, 30 * 86400);
    // Keys are re-read an interval after the last read ended: a bound of
    // less than two intervals would let them go stale during every read,
    // and one read that fails would answer every token 503.
    if (!node["jwks_max_stale_s"])
        out.jwks_max_stale_s = std::max<std::uint64_t>(out.jwks_max_stale_s, 2 * out.jwks_refresh_interval_s);
    else if (out.jwks_max_stale_s < 2 * out.jwks_refresh_interval_s)
        r.note(node["jwks_max_stale_s"], "auth.jwks_max_stale_s (" + std::to_string(out.jwks_max_stale_s) +
                                             ") must be at least twice auth.jwks_refresh_interval_s (" +
                                             std::to_string(out.jwks_refresh_interval_s) +
                                             "), or the keys would go stale between two reads");
    if (node["introspection_endpoint"])
        r.attempt([&] {
            out.introspection_endpoint = url_in(r, node["introspection_endpoint"], "auth.introspection_endpoint");
        });
    if (node["client_id"]) r.attempt([&] { out.client_id = r.string(node["client_id"], "auth.client_id"); });
    if (node["client_secret"])
        r.attempt([&] { out.client_secret = r.string(node["client_secret"], "auth.client_secret"); });
    number("introspection_cache_s", out.introspection_cache_s, 0, 3600);
    number("introspection_refused_cache_s", out.introspection_refused_cache_s, 0, 3600);
    if (node["introspection_calls_per_address_per_minute"])
        r.attempt([&] {
            out.introspection_calls_per_address_per_minute =
                static_cast<unsigned>(r.count(node["introspection_calls_per_address_per_minute"],
                                              "auth.introspection_calls_per_address_per_minute", 1, 100000));
        });
    if (node["introspection_username_as_subject"])
        r.attempt([&] {
            out.introspection_username_as_subject =
                r.boolean(node["introspection_username_as_subject"], "auth.introspection_username_as_subject");
        });
    if (node["api_keys"])
        r.attempt([&] {
            const auto& list = node["api_keys"];
            if (!list.is_sequence())
                r.fail(list, "auth.api_keys must be a list of {sha256, subject, client_id, scopes}");
            for (const auto& item : list.items())
                r.attempt([&] {
                    r.expect_map(item, "an entry of auth.api_keys");
                    r.only_keys(item, {"sha256", "subject", "client_id", "scopes"}, "an entry of auth.api_keys");
                    ApiKeyEntry key;
                    key.where = r.at(item);
                    if (!item["sha256"] || !item["subject"])
                        r.fail(item, "an entry of auth.api_keys needs sha256 (the key's SHA-256 in hex) and subject");
                    key.sha256_hex = r.string(item["sha256"], "auth.api_keys[].sha256");
                    std::transform(key.sha256_hex.begin(), key.sha256_hex.end(), key.sha256_hex.begin(),
                                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
                    if (key.sha256_hex.size() != 64 ||
                        key.sha256_hex.find_first_not_of("0123456789abcdef") != std::string::npos)
                        r.fail(item["sha256"],
                               "auth.api_keys[].sha256 must be 64 hex digits (printf %s KEY | sha256sum)");
                    key.subject = r.string(item["subject"], "auth.api_keys[].subject");
                    if (key.subject.empty()) r.fail(item["subject"], "auth.api_keys[].subject must not be empty");
                    if (item["client_id"]) key.client_id = r.string(item["client_id"], "auth.api_keys[].client_id");
                    if (item["scopes"]) key.scopes = string_list(r, item["scopes"], "auth.api_keys[].scopes");
                    for (const auto& other : out.api_keys)
                        if (other.sha256_hex == key.sha256_hex)
                            r.fail(item["sha256"], "this API key is listed twice in auth.api_keys");
                    out.api_keys.push_back(std::move(key));
                });
        });
    if (r.problem_count() != problems_before) return;
    if (out.mode == "jwt" && out.issuers.empty())
        r.fail(node, "auth.mode jwt needs auth.issuers: the authorization servers whose tokens are accepted");
    if (out.mode == "introspection" && (out.introspection_endpoint.empty() || out.client_id.empty()))
        r.fail(node, "auth.mode introspection needs auth.introspection_endpoint and auth.client_id (and usually "
                     "auth.client_secret)");
    if (out.mode == "api_keys" && out.api_keys.empty())
        r.fail(node, "auth.mode api_keys needs at least one entry in auth.api_keys");
}

// A scalar by its length and bytes: unambiguous whatever it holds (bytes
// that are no UTF-8 included), and nothing to throw.
void append_scalar(std::string& out, const std::string& text) {
    out += std::to_string(text.size());
    out += '"';
    out += text;
}

// A node as text that depends only on what it says: maps with their keys in
// order (the first of a repeated key), scalars as their text, neither style
// nor comments. Past the bounds (an alias that holds itself) the rest reads
// as "…": such a file never loads anyway. `budget`: the values it may still
// write.
void canonical_text(const YamlNode& node, std::string& out, std::size_t depth, std::size_t& budget);

std::string canonical_text(const YamlNode& node, std::size_t depth, std::size_t& budget) {
    std::string out;
    canonical_text(node, out, depth, budget);
    return out;
}

// A map given as its members' keys and texts.
void append_map(std::string& out, const std::map<std::string, std::string>& members) {
    out += '{';
    for (const auto& [key, value] : members) {
        append_scalar(out, key);
        out += ':';
        out += value;
        out += ',';
    }
    out += '}';
}

// A map's text, or nothing when it has no member.
std::optional<std::string> unless_empty(const std::map<std::string, std::string>& members) {
    if (members.empty()) return std::nullopt;
    std::string out;
    append_map(out, members);
    return out;
}

// A map's members as key and text, the first of a repeated key; `text_of`
// (key, value) writes a value's text, or nothing to leave the member out.
template <class TextOf>
std::map<std::string, std::string> members_of(const YamlNode& map, std::size_t depth, std::size_t& budget,
                                              TextOf&& text_of) {
    std::map<std::string, std::string> members;
    for (const auto& kv : map.entries()) {
        std::string key = kv.key.is_scalar() ? kv.key.text() : canonical_text(kv.key, depth + 1, budget);
        if (members.count(key)) continue;
        if (std::optional<std::string> text = text_of(key, kv.value)) members.emplace(std::move(key), std::move(*text));
    }
    return members;
}

void canonical_text(const YamlNode& node, std::string& out, std::size_t depth, std::size_t& budget) {
    if (depth > kMaxSettingDepth || budget == 0) {
        out += "\u2026";
        return;
    }
    --budget;
    switch (node.kind()) {
    case YamlNode::Kind::map:
        append_map(out, members_of(node, depth, budget, [&](const std::string&, const YamlNode& value) {
                       return std::optional(canonical_text(value, depth + 1, budget));
                   }));
        return;
    case YamlNode::Kind::sequence:
        out += '[';
        for (const auto& item : node.items()) {
            canonical_text(item, out, depth + 1, budget);
            out += ',';
        }
        out += ']';
        return;
    case YamlNode::Kind::scalar: append_scalar(out, node.text()); return;
    default: out += "null"; return;
    }
}

// A domains entry's text without its exposure (its own and its tools'),
// which a re-read applies; a map that this leaves empty reads as not
// written, so a domain that only set exposure has no text.
std::optional<std::string> domain_text(const YamlNode& domain) {
    std::size_t budget = kMaxSettingValues;
    if (!domain.is_map()) return canonical_text(domain, 0, budget);
    // A map's text without its `exposure`, each other value written by
    // `text_of`; nothing when no member is left.
    const auto without_exposure = [&](const YamlNode& map, std::size_t depth,
                                      auto&& text_of) -> std::optional<std::string> {
        return unless_empty(members_of(map, depth, budget, [&](const std::string& key, const YamlNode& value) {
            return key == "exposure" ? std::nullopt : text_of(key, value);
        }));
    };
    const auto tool_text = [&](const std::string&, const YamlNode& tool) -> std::optional<std::string> {
        if (!tool.is_map()) return canonical_text(tool, 2, budget);
        return without_exposure(tool, 2, [&](const std::string&, const YamlNode& value) {
            return std::optional(canonical_text(value, 3, budget));
        });
    };
    return without_exposure(domain, 0,
                            [&](const std::string& key, const YamlNode& value) -> std::optional<std::string> {
                                if (key == "tools" && value.is_map())
                                    return unless_empty(members_of(value, 1, budget, tool_text));
                                return canonical_text(value, 1, budget);
                            });
}

// Config::section_texts.
std::map<std::string, std::string> section_texts(const YamlNode& root) {
    std::map<std::string, std::string> texts;
    for (const auto& section : root.entries()) {
        if (!section.key.is_scalar()) continue;
        const std::string name = section.key.text();
        if (name != "domains" || !section.value.is_map()) {
            std::size_t budget = kMaxSettingValues;
            texts[name] = canonical_text(section.value, 0, budget);
            continue;
        }
        for (const auto& domain : section.value.entries())
            if (domain.key.is_scalar())
                if (auto text = domain_text(domain.value)) texts["domains." + domain.key.text()] = std::move(*text);
    }
    return texts;
}

Config read_root(const YamlReader& r, const YamlNode& root) {
    Config cfg;
    cfg.source = r.source();
    cfg.base_dir = r.base_dir();
    cfg.data_dir = default_data_dir();
    if (root.is_null()) return cfg;
    r.expect_map(root, "the configuration");
    cfg.section_texts = section_texts(root);
    r.only_keys(root, {"server",  "strict",  "gate",           "log_level",   "plugin_dir", "data_dir",
                       "plugins", "domains", "limits",         "rate_limits", "transports", "http",
                       "session", "license", "input_requests", "auth",        "tasks",      "log_format",
                       "metrics", "audit",   "tracing",        "upstreams"},
                "the configuration");
    // Each section alone: a mistake in one does not hide those in the next.
    const auto section = [&](const char* key, auto&& read) {
        if (root[key]) r.attempt([&] { read(root[key]); });
    };
    section("server", [&](const YamlNode& n) { read_server(r, n, cfg.server); });
    section("strict", [&](const YamlNode& n) { cfg.strict = r.boolean(n, "strict"); });
    section("gate", [&](const YamlNode& n) { cfg.gate = r.boolean(n, "gate"); });
    section("log_level", [&](const YamlNode& n) {
        cfg.log_level = r.string(n, "log_level");
        if (!is_log_level(cfg.log_level)) r.fail(n, std::string("log_level must be one of ") + kLogLevelList);
    });
    section("log_format", [&](const YamlNode& n) {
        cfg.log_format = r.string(n, "log_format");
        if (cfg.log_format != "text" && cfg.log_format != "json") r.fail(n, "log_format must be text or json");
    });
    section("metrics", [&](const YamlNode& n) { read_metrics(r, n, cfg.metrics); });
    section("audit", [&](const YamlNode& n) { read_audit(r, n, cfg.audit); });
    section("tracing", [&](const YamlNode& n) { read_tracing(r, n, cfg.tracing); });
    section("plugin_dir", [&](const YamlNode& n) { cfg.plugin_dir = r.path(n, "plugin_dir"); });
    section("data_dir", [&](const YamlNode& n) { cfg.data_dir = r.path(n, "data_dir"); });
    section("plugins", [&](const YamlNode& n) { read_plugins(r, n, cfg.plugins); });
    section("domains", [&](const YamlNode& n) { read_domains(r, n, cfg.domains); });
    section("upstreams", [&](const YamlNode& n) { read_upstreams(r, n, cfg.upstreams); });
    section("limits", [&](const YamlNode& n) { read_limits(r, n, cfg.limits); });
    section("rate_limits", [&](const YamlNode& n) { read_rate_limits(r, n, cfg.rate_limits); });
    section("session", [&](const YamlNode& n) { read_session(r, n, cfg.data_dir, cfg.session); });
    section("license", [&](const YamlNode& n) { read_license(r, n, cfg.data_dir, cfg.license); });
    section("input_requests", [&](const YamlNode& n) { read_input_requests(r, n, cfg.input_requests); });
    section("tasks", [&](const YamlNode& n) { read_tasks(r, n, cfg.tasks); });
    section("transports", [&](const YamlNode& t) {
        if (!t.is_sequence()) r.fail(t, "transports must be a list (allowed: stdio, http)");
        cfg.transports.clear();
        for (const auto& item : t.items())
            r.attempt([&] {
                auto name = r.string(item, "a transport");
                if (name != "stdio" && name != "http")
                    r.fail(item, "unknown transport '" + name + "' (allowed: stdio, http)");
                if (std::find(cfg.transports.begin(), cfg.transports.end(), name) != cfg.transports.end())
                    r.fail(item, "transport '" + name + "' is listed twice");
                cfg.transports.push_back(name);
            });
        if (t.size() == 0) r.fail(t, "transports must name at least one of stdio, http");
    });
    section("http", [&](const YamlNode& n) { read_http(r, n, cfg.http); });
    section("auth", [&](const YamlNode& n) { read_auth(r, n, cfg.auth); });
    if (root["metrics"] && cfg.metrics.enabled && cfg.metrics.path == cfg.http.path)
        r.note(root["metrics"], "metrics.path " + cfg.metrics.path +
                                    " is also http.path, the MCP endpoint; give the metrics another path");
    return cfg;
}

// The line (from 1) where a second YAML document with something in it
// starts, if one does: YamlDocument reads the first and leaves the rest
// unread, and a later one may not even be well formed, so the markers are
// found in the text. A marker is "---" or "..." at the
// start of a line, alone or before a space; inside a block scalar a line is
// indented, so "-----BEGIN PUBLIC KEY-----" there is none. A "---" before
// any content starts the first document, and markers with nothing but
// comments after them end it.
std::optional<std::size_t> second_document_line(std::string_view yaml) {
    const auto marker = [](std::string_view line) {
        for (const std::string_view m : {"---", "..."})
            if (line.starts_with(m) && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r'))
                return true;
        return false;
    };
    const auto content = [](std::string_view line) {
        const auto first = line.find_first_not_of(" \t\r");
        return first != std::string_view::npos && line[first] != '#' && !(first == 0 && line[0] == '%');
    };
    bool seen_content = false, first_ended = false;
    std::size_t number = 0;
    for (std::size_t start = 0; start <= yaml.size();) {
        const std::size_t end = std::min(yaml.find('\n', start), yaml.size());
        const std::string_view line = yaml.substr(start, end - start);
        ++number;
        // "--- value" puts content on the marker's own line.
        const bool is_marker = marker(line);
        if (is_marker && seen_content) first_ended = true;
        if (content(is_marker ? line.substr(3) : line)) {
            if (first_ended) return number;
            seen_content = true;
        }
        start = end + 1;
    }
    return std::nullopt;
}

ConfigReading parse(std::string_view yaml, const std::string& source, const std::filesystem::path& base_dir) {
    ConfigReading reading;
    YamlReader reader(source, base_dir);
    if (const auto line = second_document_line(yaml)) {
        reading.problems.push_back({{source, static_cast<int>(*line), 1},
                                    "a second YAML document starts here; the configuration is one document (remove "
                                    "the '---' or '...' before it, or move it to a file of its own)"});
        return reading;
    }
    std::optional<YamlDocument> document;
    try {
        document = YamlDocument::parse(yaml);
    } catch (const YamlSyntaxError& e) {
        reading.problems.push_back({{source, e.where().line, e.where().column}, e.what()});
        return reading;
    }
    reading.parsed = true;
    reader.attempt([&] { reading.config = read_root(reader, document->root()); });
    reading.problems = reader.take_problems();
    std::stable_sort(reading.problems.begin(), reading.problems.end(),
                     [](const ConfigProblem& a, const ConfigProblem& b) {
                         return std::pair(a.where.line, a.where.column) < std::pair(b.where.line, b.where.column);
                     });
    return reading;
}

Config loaded(ConfigReading reading) {
    if (!reading.problems.empty()) throw ConfigError(std::move(reading.problems));
    return std::move(reading.config);
}

} // namespace

void apply_listen(HttpSettings& http, std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
        throw std::invalid_argument("'" + std::string(text) + "' is not host:port (e.g. 127.0.0.1:8765)");
    std::string host(text.substr(0, colon));
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const std::string port(text.substr(colon + 1));
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port) > 65535)
        throw std::invalid_argument("needs a port between 0 and 65535 after the last ':', not '" + port + "'");
    http.listen_host = host.empty() ? "127.0.0.1" : host;
    http.listen_port = static_cast<std::uint16_t>(std::stoul(port));
}

bool is_log_level(std::string_view name) {
    return kLogLevels.count(name) > 0;
}

std::filesystem::path default_data_dir() {
    if (const char* d = std::getenv("GATEHOUSE_DATA_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::filesystem::path(x) / "gatehouse";
    if (const char* h = std::getenv("HOME"); h && *h)
        return std::filesystem::path(h) / ".local" / "share" / "gatehouse";
    return std::filesystem::temp_directory_path() / "gatehouse";
}

ConfigReading read_config_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        ConfigReading unreadable;
        unreadable.problems.push_back({{file.string(), 0, 0}, "cannot read the config file"});
        return unreadable;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto absolute = std::filesystem::absolute(file);
    return parse(text.str(), file.string(), absolute.parent_path());
}

Config load_config_file(const std::filesystem::path& file) {
    return loaded(read_config_file(file));
}

Config load_config_text(std::string_view yaml, const std::string& source_name, const std::filesystem::path& base_dir) {
    return loaded(parse(yaml, source_name, base_dir));
}

} // namespace gatehouse::config
