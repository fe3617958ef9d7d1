#pragma once

#include "license/vendor_key.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gatehouse::config {

// Where a value came from, so every complaint can name file:line:column.
struct SourceLocation {
    std::string file;
    int line = 0;   // 1-based; 0 when unknown
    int column = 0; // 1-based; 0 when unknown

    std::string str() const;
    bool operator==(const SourceLocation&) const = default;
};

struct PluginEntry {
    std::filesystem::path path; // resolved: absolute, or a bare file name found in plugin_dir
    std::string as_written;
    SourceLocation where;
    // Per-plugin overrides of limits.max_in_flight_per_plugin and limits.tool_timeout_ms.
    std::optional<unsigned> max_in_flight;
    std::optional<std::uint64_t> tool_timeout_ms;
    // The operator lets this plugin ask for the session store's password
    // (ABI 1.4 store_credentials); its answers are then checked for it.
    bool store_credentials = false;
    // isolation: process serves the family from a child process of its own,
    // within these bounds (each unset: none but the host's).
    bool own_process = false;
    std::optional<std::uint64_t> memory_mb;
    std::optional<std::uint64_t> cpu_seconds;
    std::optional<std::uint64_t> open_files;
    // environment: the names of the host's environment variables its
    // process sees besides the basic ones (PATH, HOME, ...); unset, all of
    // them (inherit).
    std::optional<std::vector<std::string>> environment;
};

// How this host's TLS to a server checks it and shows itself (YAML
// `session.redis.tls:` for a rediss:// URL, `upstreams[].tls:` for https://).
struct TlsSettings {
    std::filesystem::path ca_file;   // PEM CAs that vouch for the server; default the system's trust store
    std::filesystem::path cert_file; // PEM client certificate for mutual TLS, with key_file
    std::filesystem::path key_file;  // its unencrypted PEM private key
    std::string server_name;         // SNI and the name the certificate must carry; default the URL's host
    bool verify = true;              // false: any certificate under any name (warned at start)
    bool operator==(const TlsSettings&) const = default;
};

// The host's own OAuth client at an HTTP upstream's authorization server
// (the client credentials grant; upstream/client_credentials.hpp).
struct UpstreamOAuth {
    std::string client_id;                    // empty: no oauth
    std::filesystem::path client_secret_file; // or
    std::string client_secret_env;
    std::string scope;     // asked for; empty: none
    std::string token_url; // empty: found from the upstream's metadata
    std::string resource;  // RFC 8707; empty: the upstream's metadata's, else its url
    // The authorization servers (issuer URLs) discovery may send the client
    // secret to, besides one on the upstream's own origin.
    std::vector<std::string> authorization_servers;
    bool configured() const { return !client_id.empty(); }
    bool operator==(const UpstreamOAuth&) const = default;
};

// One MCP server mounted as a family (YAML upstreams:): the host is its
// client, and its tools pass the same gate as a plugin's.
struct UpstreamEntry {
    std::string name;                        // the family it serves as
    std::vector<std::string> command;        // over stdio: the program and its arguments; or
    std::string url;                         // over Streamable HTTP: http:// or https://
    TlsSettings tls;                         // with an https:// URL
    std::map<std::string, std::string> env;  // over the host's own environment, for a command
    std::filesystem::path cwd;               // a command's working directory (empty: the host's)
    std::string names = "{upstream}_{name}"; // the name hook: how its tool names read here
    std::vector<std::string> allow, deny;    // its tools by their own names (allow empty: all)
    bool resources = true;                   // false: its resources and templates are left out
    // What the upstream cannot declare, for every tool of it (domains.<name>.tools
    // overrides one tool): the token scope, the grants, the risk (unset: from
    // its annotations, else write), the rules, whether the gate checks it.
    std::string scope;
    std::vector<std::string> required_scopes;
    std::optional<std::string> risk;
    std::string rules;
    bool gated = true;
    std::optional<unsigned> max_in_flight;
    std::optional<std::uint64_t> tool_timeout_ms;
    std::uint64_t connect_timeout_ms = 30000;
    // The host's own bearer token for the upstream (never the agent's).
    std::filesystem::path token_file;
    std::string token_env;
    UpstreamOAuth oauth; // or a token of its own from its authorization server
    SourceLocation where;

    // The same server reached the same way (where it is written aside).
    bool same_as(UpstreamEntry other) const {
        other.where = where;
        return *this == other;
    }
    bool operator==(const UpstreamEntry&) const = default;
};

// The operator's word on one tool of a family (YAML domains.<family>.tools.<tool>),
// laid over what the plugin declared before the registry is frozen. Unset
// fields keep the plugin's declaration.
struct ToolOverride {
    std::optional<std::string> rules;                        // the tool's own rules, accepted before its first run
    std::optional<std::string> risk;                         // read | write | money | destructive
    std::optional<std::string> scope;                        // the token scope over HTTP; "" for none
    std::optional<std::vector<std::string>> required_scopes; // all must be granted; [] needs none
    std::optional<bool> gated;                               // false: the gate does not check the tool
    std::optional<bool> on_demand;                           // exposure, over the family's
    SourceLocation where;                                    // the tool's key
};

struct DomainSettings {
    bool enabled = true;
    std::string prefix;     // prepended to every tool name of the family
    bool on_demand = false; // exposure: on_demand keeps the family out of tools/list (load_domain reveals it)
    nlohmann::json settings = nlohmann::json::object(); // handed to the plugin's init
    std::map<std::string, ToolOverride> tools;          // by the name the plugin declares (without prefix)
    SourceLocation where;
};

struct Limits {
    std::size_t max_message_bytes = 4 * 1024 * 1024;
    std::size_t max_json_depth = 64;
    unsigned workers = 8;
    unsigned max_in_flight = 256;
    unsigned page_size = 100;
    std::uint64_t tools_list_ttl_ms = 300000;
    // Longest string (or object key) anywhere in a tool call's arguments, in
    // bytes. Checked before JSON Schema validation: libstdc++'s std::regex
    // recurses once per character, so a long string meeting a `pattern` would
    // overflow a worker's stack (which is sized from this value).
    std::size_t max_string_bytes = 64 * 1024;
    std::size_t max_array_items = 10000; // longest array in a tool call's arguments
    unsigned max_in_flight_per_principal = 64;
    // Calls inside one plugin (or waiting for it). A plugin that never returns
    // holds a worker per call: this caps how many workers it can take.
    unsigned max_in_flight_per_plugin = 4;
    std::uint64_t tool_timeout_ms = 120000;
};

// Multi round-trip requests: how the host seals a plugin's state between
// rounds (2026-07-28) and how long it waits for a 2025-11-25 client's answer.
struct InputRequestSettings {
    std::vector<std::string> state_keys; // raw 32-byte AES keys, the sealing one first; none: one per process
    std::uint64_t state_ttl_ms = 600000; // how long a requestState may be echoed
    std::uint64_t client_timeout_ms = 300000;
    SourceLocation where;
};

// The Tasks extension (tasks/): how long work runs, is kept and is polled.
struct TaskSettings {
    bool enabled = true;                       // false: no task is ever created, nor the extension offered
    std::uint64_t ttl_ms = 3600000;            // a task is kept this long after it was created
    std::uint64_t poll_interval_ms = 1000;     // what tasks/get suggests; polling faster is refused
    std::uint32_t poll_burst = 5;              // tasks/get of one task allowed at once before the pace applies
    std::uint32_t max_per_principal = 16;      // unfinished tasks one principal may have at once
    std::uint32_t max_kept_per_principal = 64; // finished tasks kept for one principal; more forget the oldest
    std::uint64_t max_result_bytes = 1048576;  // a larger result completes the task with a tool error
    std::uint32_t workers = 4;                 // task rounds this host runs at once; more wait their turn
    std::uint64_t max_run_ms = 3600000;        // a round running longer is cancelled
    std::uint64_t lease_ms = 30000;            // a task its host stopped renewing this long has failed
    SourceLocation where;
};

// A token bucket: `burst` calls at once, refilled at `calls_per_second`.
struct RateLimit {
    double calls_per_second = 0;
    double burst = 0;
    SourceLocation where;
};

// YAML `rate_limits:`; without it tools/call has no rate limit.
struct RateLimits {
    std::optional<RateLimit> per_principal;    // every tools/call of one principal
    std::map<std::string, RateLimit> per_tool; // one principal's calls of one tool, by published name

    bool any() const { return per_principal || !per_tool.empty(); }
};

struct ServerIdentity {
    std::string name = "gatehouse";
    std::string title = "Gatehouse";
    std::string version;
    std::string instructions;
};

// Where a `session.backend: redis` keeps state (YAML `session.redis:`).
struct RedisSettings {
    // redis://[user[:password]@]host[:port][/db], rediss://… for TLS, or unix:///path/to/redis.sock[?db=N]
    std::string url = "redis://127.0.0.1:6379";
    TlsSettings tls;                       // with a rediss:// URL
    std::string key_prefix = "gatehouse:"; // every key of this host's cluster starts with it
    std::filesystem::path password_file;   // the AUTH password, read at start; never logged
    std::string password_env;              // or the environment variable holding it
    std::uint64_t connect_timeout_ms = 1000;
    std::uint64_t command_timeout_ms = 1000;
    unsigned pool_size = 8; // connections kept open at most
    SourceLocation where;
};

// The session story (YAML `session:`). Without the section the host runs no
// gate checks and says so in the log at start-up.
struct SessionSettings {
    bool configured = false;
    std::string backend = "sqlite";                // memory | sqlite | redis
    RedisSettings redis;                           // backend redis
    std::filesystem::path state_file;              // sqlite file; default <data_dir>/state.sqlite3
    std::filesystem::path conversations_dir;       // default <data_dir>/conversations
    std::uint64_t idle_expiry_s = 8 * 3600;        // a session unused this long is gone
    std::uint64_t max_sessions_per_principal = 64; // topics' sessions one caller keeps; more end the oldest
    std::uint64_t max_topics = 1000; // topics' folders one caller keeps as one user in one store (TOO_MANY_TOPICS)
    std::string pinned_store;        // pinned mode: both set
    std::string pinned_user;
    std::filesystem::path program_state_file;         // program mode: the file the desktop program writes
    std::filesystem::path program_settings_file;      // the program's saved logins; must not be group/other-readable
    std::filesystem::path credentials_file;           // the store password; must not be group/other-readable
    std::filesystem::path grants_file;                // grants: {<store>: {<user>: [scopes]}}, read at connect
    nlohmann::json grants = nlohmann::json::object(); // the same shape, inline in the YAML
    std::string rules;                                // general rules, answered by session_connect
    SourceLocation where;

    bool pinned() const { return !pinned_store.empty(); }
};

// http.threads when the configuration does not say: the machine's cores,
// within [2, 16].
inline unsigned default_http_threads() {
    return std::clamp(std::thread::hardware_concurrency(), 2u, 16u);
}

// The Streamable HTTP transport (YAML `http:`). Loopback by default: a host
// reachable from elsewhere is an operator's explicit choice.
struct HttpSettings {
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 8765;
    std::string path = "/mcp";
    // Origins (scheme://host[:port]) a browser page may call from; requests
    // with any other Origin get 403. Loopback origins are always allowed
    // while the host listens on loopback.
    std::vector<std::string> allowed_origins;
    // Host header names accepted, against DNS rebinding. Empty: the loopback
    // names when listening on loopback, else the listen address itself.
    std::vector<std::string> allowed_hosts;
    std::uint64_t request_timeout_ms = 10000; // headers and body of one request
    std::uint64_t idle_timeout_ms = 120000;   // a keep-alive connection with no request
    std::uint64_t keepalive_ms = 15000;       // SSE comment on a quiet long-lived stream
    std::uint64_t drain_timeout_ms = 10000;   // SIGTERM: in-flight requests get this long
    unsigned max_connections = 1024;
    unsigned max_streams = 256;                      // SSE streams open at once
    unsigned max_streams_per_principal = 32;         // of them, one caller's
    unsigned max_legacy_sessions = 1024;             // 2025-11-25 Mcp-Session-Id records
    unsigned max_legacy_sessions_per_principal = 32; // of them, one caller's
    std::uint64_t legacy_session_idle_s = 3600;
    // I/O threads, one event loop each; with 2 or more, quick tool calls run
    // on their connection's loop (HttpService::run_call), at about half the
    // CPU of a hand-off to the worker pool. Default: one per core, at least
    // 2 (so a quick tool turned slow holds only its own loop's connections)
    // and at most 16.
    unsigned threads = default_http_threads();
    // Base of the links the host hands out to its pages (a confirmation
    // link) when a proxy stands in front: e.g. https://gate.example.com, no
    // trailing '/'. Empty: links name the listen address.
    std::string public_url;
    // Sent as the Gatehouse-Instance header of every response when set, so
    // an operator (and a test) behind a load balancer sees which instance
    // answered. Letters, digits and . _ : - only.
    std::string instance_name;
    SourceLocation where;
};

// Licensing (YAML `license:`, docs/licenses.md). Without the section no
// family is license-checked; with it, every family not listed in
// free_families needs the license file to cover it.
struct LicenseSettings {
    bool configured = false;
    // Where licenses are looked for: `file`, then `files` in their order, then
    // every *.json in `directory`. Without any of the three, `file` is
    // <data_dir>/license.json.
    std::filesystem::path file;               // empty when only files or directory are given
    std::vector<std::filesystem::path> files; // one per vendor, say
    std::filesystem::path directory;          // empty: none
    std::vector<std::string> free_families;   // need no license
    license::VendorKeys vendor_keys;          // key id -> Ed25519 public key
    SourceLocation where;
};

// One static API key (YAML `auth.api_keys`): only its SHA-256 is stored.
struct ApiKeyEntry {
    std::string sha256_hex; // lower-case hex of SHA-256(key)
    std::string subject;
    std::string client_id;
    std::vector<std::string> scopes;
    SourceLocation where;
};

// Who may call over HTTP (YAML `auth:`, docs/security.md). Without the
// section, or with mode none, every HTTP caller is the local principal, which
// the host allows only while listening on loopback unless mode none is
// written out.
struct AuthSettings {
    bool configured = false;
    std::string mode = "none"; // none | jwt | introspection | api_keys
    // The canonical URL of this server's MCP endpoint (RFC 8707): tokens must
    // name it in `aud`. Default: http://<listen>/<path>.
    std::string resource;
    std::vector<std::string> issuers;   // authorization servers; a JWT's `iss` must be one
    std::vector<std::string> audiences; // accepted besides `resource`
    // An issuer's own configured JWK Set (`issuers: [{issuer, jwks_uri}]`, or
    // `jwks_uri` beside a single issuer); an issuer without one has its keys
    // read from its RFC 8414 metadata. No two issuers share a key source.
    std::map<std::string, std::string> issuer_jwks_uris;
    std::vector<std::string> scopes_supported;
    std::uint64_t clock_skew_s = 60;
    std::uint64_t fetch_timeout_ms = 3000;       // one call to an authorization server
    std::uint64_t jwks_refresh_interval_s = 300; // keys are re-read this often in the background
    std::uint64_t jwks_min_refresh_s = 10;       // an unknown kid re-reads the keys at most this often
    std::uint64_t jwks_max_stale_s = 86400;      // keys not re-read for this long are no longer trusted
    std::string introspection_endpoint;
    std::string client_id; // the host's own credentials at the introspection endpoint
    std::string client_secret;
    std::uint64_t introspection_cache_s = 60;
    std::uint64_t introspection_refused_cache_s = 30;         // an inactive or refused token is not asked about again
    unsigned introspection_calls_per_address_per_minute = 60; // beyond it, 429 until the minute is over
    // An introspection answer without `sub` names its caller by `username`
    // (RFC 7662 calls it human-readable: it may be renamed or given to
    // someone else later, who would then own the notes, sessions and tasks
    // kept under it). Off: such an answer is refused.
    bool introspection_username_as_subject = false;
    std::vector<ApiKeyEntry> api_keys;
    SourceLocation where;

    bool verifies_tokens() const { return mode != "none"; }
};

// Prometheus metrics (YAML `metrics:`, docs/operations.md): GET <path> on the
// HTTP listener, and on a listener of their own when `listen` is set (so a
// stdio-only host can be scraped on loopback).
struct MetricsSettings {
    bool enabled = true;
    std::string path = "/metrics";
    std::string listen_host; // empty: no listener of their own
    std::uint16_t listen_port = 0;
    // Addresses (or CIDR blocks) that may scrape without a token. Empty: with
    // auth: on, a scrape needs a valid bearer token like any request; without
    // it, anyone who reaches the listener may scrape.
    std::vector<std::string> allow;
    SourceLocation where;

    bool own_listener() const { return !listen_host.empty(); }
};

// The audit log (YAML `audit:`): one JSON line per tool call to `file`.
struct AuditSettings {
    std::filesystem::path file; // empty: no audit log
    bool include_arguments = false;
    std::uint64_t max_queue = 10000; // lines waiting for the disk; more are dropped and counted
    SourceLocation where;
};

// Span export (YAML `tracing:`): OTLP/HTTP to a collector.
struct TracingSettings {
    std::string otlp_endpoint; // http://host:port/v1/traces; empty: no export
    std::string service_name = "gatehouse";
    std::uint64_t export_timeout_ms = 5000;
    std::uint64_t max_queue = 2048; // spans waiting for export; more are dropped and counted
    SourceLocation where;
};

struct Config {
    std::string source;             // file path, or "<embedded>"
    std::filesystem::path base_dir; // relative paths resolve against this
    ServerIdentity server;
    bool strict = false; // exit non-zero when any plugin fails to load
    bool gate = true;    // false: gated tools run unchecked (testing a plugin only)
    std::string log_level = "info";
    std::string log_format = "text";  // text | json
    std::filesystem::path plugin_dir; // where bare plugin file names are looked up
    std::filesystem::path data_dir;   // where families keep their files
    std::vector<PluginEntry> plugins;
    std::vector<UpstreamEntry> upstreams;
    // Each top-level section as the file wrote it (YAML text), and each
    // domains entry apart ("domains.<family>") without its exposure settings:
    // what a re-read changed, so the sections a SIGHUP cannot apply are named.
    std::map<std::string, std::string> section_texts;
    std::map<std::string, DomainSettings> domains;
    Limits limits;
    RateLimits rate_limits;
    std::vector<std::string> transports{"stdio"};
    HttpSettings http;
    SessionSettings session;
    LicenseSettings license;
    InputRequestSettings input_requests;
    AuthSettings auth;
    TaskSettings tasks;
    MetricsSettings metrics;
    AuditSettings audit;
    TracingSettings tracing;
};

} // namespace gatehouse::config
