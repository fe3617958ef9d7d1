// In-process cost of one tools/call of the test family's `noop`, without
// pipes: the whole of McpServer::on_message (parse -> decode -> pool ->
// dispatch -> gate -> validate -> plugin -> result), and the pieces of it
// on their own, so a hot-path cost shows up where it is paid.
//
//   tool_call_bench [--benchmark_filter=...]   (GATEHOUSE_ECHO_PLUGIN=path/echo.so overrides the built-in path)
#include "config/config.hpp"
#include "gate/gate_pipeline.hpp"
#include "gate/license_check.hpp"
#include "gate/make_gate.hpp"
#include "gate/session_check.hpp"
#include "license/license_signer.hpp"
#include "license/path_watch.hpp"
#include "license/utc_timestamp.hpp"
#include "plugins/plugin_loader.hpp"
#include "protocol/connection.hpp"
#include "protocol/json_rpc.hpp"
#include "limits/rate_limiter.hpp"
#include "metrics/observability.hpp"
#include "protocol/mcp_server.hpp"
#include "protocol/request_pool.hpp"
#include "mrtr/state_keys.hpp"
#include "protocol/input_rounds.hpp"
#include "protocol/tool_call.hpp"
#include "schema/json_schema.hpp"

#include <benchmark/benchmark.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef GATEHOUSE_ECHO_PLUGIN
#define GATEHOUSE_ECHO_PLUGIN ""
#endif

namespace {

using namespace gatehouse;
using protocol::Json;

const std::string kModernCall =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"noop","arguments":{},)"
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";

const std::string kModernList =
    R"({"jsonrpc":"2.0","id":8,"method":"tools/list","params":{)"
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";

// Counts answers and encodes them, as the stdio transport would, so the
// encode cost stays in the measured path.
class CountingOutbound final : public protocol::Outbound {
public:
    void send(const Json& message) override {
        bytes_ += protocol::encode(message).size() + 1;
        {
            std::lock_guard lock(mutex_);
            ++answers_;
        }
        answered_.notify_one();
    }

    void wait_for(std::uint64_t answers) {
        std::unique_lock lock(mutex_);
        answered_.wait(lock, [&] { return answers_ >= answers; });
    }

    std::uint64_t answers() {
        std::lock_guard lock(mutex_);
        return answers_;
    }

private:
    std::mutex mutex_;
    std::condition_variable answered_;
    std::uint64_t answers_ = 0;
    std::atomic<std::size_t> bytes_{0};
};

// One host with the echo test family loaded, shared by every benchmark.
const config::Limits kDefaultLimits{};

// What operators see, for the benchmarks that measure its cost: none (the
// host above), metrics only, or metrics and the audit log (to a file).
enum class Windows { none, metrics, metrics_and_audit };

struct Host {
    explicit Host(Windows windows = Windows::none) : pool(1) {
        spdlog::set_level(spdlog::level::warn);
        std::string path = GATEHOUSE_ECHO_PLUGIN;
        if (const char* env = std::getenv("GATEHOUSE_ECHO_PLUGIN"); env && *env) path = env;
        if (path.empty()) throw std::runtime_error("set GATEHOUSE_ECHO_PLUGIN to the echo test plugin");
        config::Config cfg;
        cfg.plugins.push_back(
            {.path = path, .as_written = path, .where = {}, .max_in_flight = {}, .tool_timeout_ms = {}});
        plugins::LoadReport report;
        registry = plugins::PluginLoader::load(cfg, report);
        if (!report.failures.empty())
            throw std::runtime_error("cannot load " + path + ": " + report.failures.front().reason);
        protocol::ServerOptions options;
        if (windows != Windows::none) {
            metrics::Observability::Settings settings;
            if (windows == Windows::metrics_and_audit) {
                audit_file = std::filesystem::temp_directory_path() /
                             ("gatehouse-bench-audit-" + std::to_string(::getpid()) + ".jsonl");
                settings.audit.file = audit_file;
                settings.audit.max_queue = 1 << 20; // the bench measures writing, not dropping
            }
            observability = std::make_unique<metrics::Observability>(settings);
            options.observability = observability.get();
        }
        live = std::make_unique<plugins::LiveRegistry>(registry);
        server = std::make_unique<protocol::McpServer>(*live, gate, cfg.server, cfg.limits, pool, std::move(options));
        outbound = std::make_shared<CountingOutbound>();
        connection = std::make_shared<protocol::Connection>(outbound, auth::Principal{"bench", "local", {}, {}, {}});
    }

    ~Host() {
        server.reset();
        observability.reset();
        if (!audit_file.empty()) std::filesystem::remove(audit_file);
    }

    std::shared_ptr<const plugins::ToolRegistry> registry;
    std::unique_ptr<plugins::LiveRegistry> live;
    gate::GatePipeline gate;
    protocol::RequestPool pool;
    std::filesystem::path audit_file;
    std::unique_ptr<metrics::Observability> observability;
    std::unique_ptr<protocol::McpServer> server;
    std::shared_ptr<CountingOutbound> outbound;
    std::shared_ptr<protocol::Connection> connection;
};

Host& host() {
    static Host h;
    return h;
}

Host& observed_host(Windows windows) {
    static Host metrics_only(Windows::metrics);
    static Host with_audit(Windows::metrics_and_audit);
    return windows == Windows::metrics ? metrics_only : with_audit;
}

// The same family behind the whole gate, every check passing: a license
// (signed at start with a key made here) covering `echo`, a pinned store,
// an open session on the memory backend, no grants needed, no critical
// notes, no rules. What this costs above Host is the gate's added latency.
struct GatedHost {
    GatedHost() {
        auto& h = host();
        dir = std::filesystem::temp_directory_path() / ("gatehouse-bench-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"),
                                                                EVP_PKEY_free);
        std::unique_ptr<BIO, decltype(&BIO_free)> pem(BIO_new(BIO_s_mem()), BIO_free);
        std::unique_ptr<BIO, decltype(&BIO_free)> pub(BIO_new(BIO_s_mem()), BIO_free);
        PEM_write_bio_PrivateKey(pem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
        PEM_write_bio_PUBKEY(pub.get(), key.get());
        const auto text_of = [](BIO* bio) {
            char* data = nullptr;
            const long n = BIO_get_mem_data(bio, &data);
            return std::string(data, static_cast<std::size_t>(n));
        };
        license::LicenseDocument doc;
        doc.licensee = "bench";
        doc.families = {"echo"};
        doc.issued_text = "2026-01-01T00:00:00Z";
        doc.expires_text = "2199-01-01T00:00:00Z";
        doc.key_id = "bench";
        license::sign_license(doc, text_of(pem.get()));
        std::ofstream(dir / "license.json") << license::license_file_text(doc);
        // Other vendors' files beside it, covering other families: a listed
        // one first, and two in a license directory with `echo`'s own copy.
        std::filesystem::create_directories(dir / "licenses.d");
        for (const char* other : {"orders", "ledger", "stock"}) {
            license::LicenseDocument o = doc;
            o.families = {other};
            license::sign_license(o, text_of(pem.get()));
            const auto where = std::string(other) == "orders" ? dir / "orders.json"
                                                              : dir / "licenses.d" / (std::string(other) + ".json");
            std::ofstream(where) << license::license_file_text(o);
        }
        std::ofstream(dir / "licenses.d" / "zz-echo.json") << license::license_file_text(doc);

        license_settings.configured = true;
        license_settings.file = dir / "license.json";
        license_settings.free_families = {"session", "memory"};
        license_settings.vendor_keys.emplace("bench", license::VendorKey::parse(text_of(pub.get())));
        session_settings.configured = true;
        session_settings.backend = "memory";
        session_settings.pinned_store = "shop";
        session_settings.pinned_user = "ann";
        session_settings.conversations_dir = dir / "conversations";
        sessions = std::make_unique<session::SessionService>(session_settings, state::make_memory_backend(), *h.live);
        gate = gate::make_gate(license_settings, {"echo"}, sessions.get(), true);
        handle = sessions->open(principal, "bench")["session"];
        arguments = {{"session", handle}};
        tool = h.registry->find("noop");
        if (!tool) throw std::runtime_error("no noop tool");
    }
    ~GatedHost() { std::filesystem::remove_all(dir); }

    std::filesystem::path dir;
    config::LicenseSettings license_settings;
    config::SessionSettings session_settings;
    gate::GatePipeline gate;
    std::unique_ptr<session::SessionService> sessions;
    auth::Principal principal{"bench", "local", {}, {}, {}};
    std::string handle;
    Json arguments;
    const plugins::Tool* tool = nullptr;
};

GatedHost& gated_host() {
    static GatedHost h;
    return h;
}

// CPU time of the whole process (every thread: the caller, the pool, the
// audit writer), in microseconds.
double process_cpu_us() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto us = [](const timeval& t) { return t.tv_sec * 1e6 + t.tv_usec; };
    return us(usage.ru_utime) + us(usage.ru_stime);
}

// The whole path, one call at a time: on_message hands the call to the pool
// and the answer arrives on a worker thread, as it does in the server.
void BM_OnMessage_ToolsCall_Noop(benchmark::State& state) {
    auto& h = host();
    std::uint64_t expected = h.outbound->answers();
    for (auto _ : state) {
        h.server->on_message(h.connection, kModernCall);
        h.outbound->wait_for(++expected);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OnMessage_ToolsCall_Noop)->UseRealTime();

// The same with 32 calls handed over before waiting: the pool's queue is
// never empty, so the per-call handover cost is amortised as under load.
void batch32(benchmark::State& state, Host& h) {
    std::uint64_t expected = h.outbound->answers();
    const double cpu_before = process_cpu_us();
    for (auto _ : state) {
        for (int i = 0; i < 32; ++i)
            h.server->on_message(h.connection, kModernCall);
        expected += 32;
        h.outbound->wait_for(expected);
    }
    state.SetItemsProcessed(state.iterations() * 32);
    if (h.observability) h.observability->flush_audit();
    state.counters["process_cpu_us_per_call"] = (process_cpu_us() - cpu_before) / double(state.iterations() * 32);
}
void BM_OnMessage_ToolsCall_Noop_Batch32(benchmark::State& state) {
    batch32(state, host());
}
BENCHMARK(BM_OnMessage_ToolsCall_Noop_Batch32)->UseRealTime();

// The same, with what operators see switched on: the difference to the
// benchmark above is what metrics (and the audit log) cost a call: the
// trace ids, two clock reads, the request and tool counters, the latency
// histogram, and the audit line built and queued for its writer thread.
void BM_OnMessage_ToolsCall_Noop_Batch32_Metrics(benchmark::State& state) {
    batch32(state, observed_host(Windows::metrics));
}
BENCHMARK(BM_OnMessage_ToolsCall_Noop_Batch32_Metrics)->UseRealTime();
void BM_OnMessage_ToolsCall_Noop_Batch32_MetricsAudit(benchmark::State& state) {
    batch32(state, observed_host(Windows::metrics_and_audit));
}
BENCHMARK(BM_OnMessage_ToolsCall_Noop_Batch32_MetricsAudit)->UseRealTime();

// The observation alone, on the calling thread: what Observability adds to
// one tools/call (its request and its tool call), with and without audit.
void observe_call(benchmark::State& state, Windows windows) {
    auto& h = observed_host(windows);
    const plugins::Tool* tool = h.registry->find("noop");
    const Json id = 7;
    const auto trace = h.observability->trace_ids().start(std::nullopt);
    for (auto _ : state) {
        const auto started = std::chrono::steady_clock::now();
        auto span = h.observability->trace_ids().start(std::nullopt);
        metrics::RequestRecord request;
        request.method = "tools/call";
        request.revision = "2026-07-28";
        request.request_id = &id;
        request.trace = &span;
        request.took = std::chrono::steady_clock::now() - started;
        h.observability->request(request);
        metrics::CallRecord call;
        call.tool_key = tool;
        call.family = tool->family;
        call.tool = tool->name;
        call.took = request.took;
        call.started = std::chrono::system_clock::now();
        call.principal = "bench";
        call.principal_kind = "local";
        call.revision = "2026-07-28";
        call.transport = "stdio";
        call.request_id = &id;
        call.trace = &trace;
        h.observability->tool_call(call);
    }
    h.observability->flush_audit();
}
void BM_Observe_ToolCall_Metrics(benchmark::State& state) {
    observe_call(state, Windows::metrics);
}
BENCHMARK(BM_Observe_ToolCall_Metrics);
void BM_Observe_ToolCall_MetricsAudit(benchmark::State& state) {
    observe_call(state, Windows::metrics_and_audit);
}
BENCHMARK(BM_Observe_ToolCall_MetricsAudit);

// A scrape of a host that served calls: the exposition's text.
void BM_Metrics_Exposition(benchmark::State& state) {
    auto& h = observed_host(Windows::metrics);
    for (auto _ : state)
        benchmark::DoNotOptimize(h.observability->exposition());
}
BENCHMARK(BM_Metrics_Exposition);

// tools/list is answered on the caller's thread: parse, decode, list, encode,
// with no thread handover.
void BM_OnMessage_ToolsList(benchmark::State& state) {
    auto& h = host();
    for (auto _ : state)
        h.server->on_message(h.connection, kModernList);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OnMessage_ToolsList);

// The pieces.
void BM_Parse_ToolsCall(benchmark::State& state) {
    for (auto _ : state)
        benchmark::DoNotOptimize(Json::parse(kModernCall));
}
BENCHMARK(BM_Parse_ToolsCall);

// A call's arguments checked against an inputSchema with a `pattern` (the
// sessions family's session ids): the regex is compiled when the schema is,
// not again for every value checked.
void BM_Schema_Validate_Pattern(benchmark::State& state) {
    const auto schema = schema::JsonSchema::compile(Json::parse(R"({"type":"object","properties":{"session_id":{
        "type":"string","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000)$"}},
        "required":["session_id"]})"));
    const Json arguments = {{"session_id", "3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d"}};
    for (auto _ : state)
        benchmark::DoNotOptimize(schema->validate(arguments));
}
BENCHMARK(BM_Schema_Validate_Pattern);

// A schema with a pattern loaded and checked once, as at a family's load and
// its tool's first call: the pattern compiled at load serves the first check.
void BM_Schema_CompileAndFirstCheck_Pattern(benchmark::State& state) {
    const Json document = Json::parse(R"({"type":"object","properties":{"session_id":{
        "type":"string","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000)$"}},
        "required":["session_id"]})");
    const Json arguments = {{"session_id", "3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d"}};
    for (auto _ : state)
        benchmark::DoNotOptimize(schema::JsonSchema::compile(document)->validate(arguments));
}
BENCHMARK(BM_Schema_CompileAndFirstCheck_Pattern);

// The same for a date-time format, which valijson itself checks with a
// regex it builds at every check.
void BM_Schema_Validate_DateTime(benchmark::State& state) {
    const auto schema = schema::JsonSchema::compile(
        Json::parse(R"({"type":"object","properties":{"at":{"type":"string","format":"date-time"}}})"));
    const Json arguments = {{"at", "2026-12-07T14:30:00.250+01:00"}};
    for (auto _ : state)
        benchmark::DoNotOptimize(schema->validate(arguments));
}
BENCHMARK(BM_Schema_Validate_DateTime);

// Calls that never ask for input pay nothing for the multi round-trip
// machinery; it is built once, like the server builds it.
const protocol::InputRounds& input_rounds() {
    static const protocol::InputRounds rounds(
        mrtr::make_request_state_sealer(config::InputRequestSettings{}, "gatehouse-bench"), std::chrono::seconds(30));
    return rounds;
}

void BM_ToolCall_Run_Noop(benchmark::State& state) {
    auto& h = host();
    limits::RateLimiter unlimited{config::RateLimits{}};
    const protocol::ToolDisclosure disclosure(*h.live);
    const protocol::RequestDecoder decoder(*h.live, disclosure, nullptr);
    protocol::ToolCall tool_call(
        {h.gate, decoder, disclosure, unlimited, input_rounds()},
        limits::ArgumentBounds{kDefaultLimits.max_string_bytes, kDefaultLimits.max_array_items});
    const Json params = Json::parse(kModernCall)["params"];
    for (auto _ : state) {
        protocol::Request request;
        request.id = 7;
        request.method = "tools/call";
        request.params = params;
        request.principal = h.connection->principal();
        request.connection = h.connection.get();
        request.call = decoder.target(request.params, request.principal);
        benchmark::DoNotOptimize(tool_call.run(request));
    }
}
BENCHMARK(BM_ToolCall_Run_Noop);

// The same call with the session argument, through the whole gate.
void BM_ToolCall_Run_Noop_Gated(benchmark::State& state) {
    auto& h = host();
    auto& g = gated_host();
    limits::RateLimiter unlimited{config::RateLimits{}};
    const protocol::ToolDisclosure disclosure(*h.live);
    const protocol::RequestDecoder decoder(*h.live, disclosure, nullptr);
    protocol::ToolCall tool_call(
        {g.gate, decoder, disclosure, unlimited, input_rounds(), g.sessions.get()},
        limits::ArgumentBounds{kDefaultLimits.max_string_bytes, kDefaultLimits.max_array_items});
    Json params = Json::parse(kModernCall)["params"];
    params["arguments"] = g.arguments;
    {
        protocol::Request probe;
        probe.id = 7;
        probe.method = "tools/call";
        probe.params = params;
        probe.principal = h.connection->principal();
        probe.connection = h.connection.get();
        probe.call = decoder.target(probe.params, probe.principal);
        const auto answer = tool_call.run(probe);
        if (answer.dump().find("isError") != std::string::npos)
            throw std::runtime_error("the gated call was refused: " + answer.dump());
    }
    for (auto _ : state) {
        protocol::Request request;
        request.id = 7;
        request.method = "tools/call";
        request.params = params;
        request.principal = h.connection->principal();
        request.connection = h.connection.get();
        request.call = decoder.target(request.params, request.principal);
        benchmark::DoNotOptimize(tool_call.run(request));
    }
}
BENCHMARK(BM_ToolCall_Run_Noop_Gated);

// The gate alone: every check, all passing.
void BM_Gate_AllChecks_Pass(benchmark::State& state) {
    auto& g = gated_host();
    for (auto _ : state) {
        gate::GateFindings findings;
        auto refusal = g.gate.check({*g.tool, g.principal, g.arguments, &findings});
        if (refusal) throw std::runtime_error("refused: " + refusal->message);
        benchmark::DoNotOptimize(findings);
    }
}
BENCHMARK(BM_Gate_AllChecks_Pass);

// The session check alone: the record fetched from the (memory) backend,
// compared with the text decoded last, and the decoded session shared.
void BM_Gate_SessionCheck_Pass(benchmark::State& state) {
    auto& g = gated_host();
    gate::SessionCheck check(g.sessions->table());
    for (auto _ : state) {
        gate::GateFindings findings;
        auto refusal = check.check({*g.tool, g.principal, g.arguments, &findings});
        if (refusal) throw std::runtime_error("refused: " + refusal->message);
        benchmark::DoNotOptimize(findings);
    }
}
BENCHMARK(BM_Gate_SessionCheck_Pass);

// The license check alone: the watch's one epoll_wait(2), a cached verdict, the
// clock. It fails if the file was looked at again (no stat, no read).
void BM_Gate_LicenseCheck_Pass(benchmark::State& state) {
    auto& g = gated_host();
    gate::LicenseCheck check(g.license_settings);
    if (check.check({*g.tool, g.principal, g.arguments, nullptr})) throw std::runtime_error("refused");
    const auto lookups = check.licenses().sources().front()->lookups();
    for (auto _ : state) {
        auto refusal = check.check({*g.tool, g.principal, g.arguments, nullptr});
        if (refusal) throw std::runtime_error("refused: " + refusal->message);
    }
    if (check.licenses().reads() != 1) throw std::runtime_error("the license file was read more than once");
    if (check.licenses().sources().front()->lookups() != lookups)
        throw std::runtime_error(
            "the license file was looked at on a pass: is the bench's folder on a local file system?");
}
BENCHMARK(BM_Gate_LicenseCheck_Pass);

// The same file reached through a symbolic link to its folder, which the
// watch does not follow: the check falls back to one stat(2) per call, as
// every call paid before the watch.
void BM_Gate_LicenseCheck_Pass_Unfollowed(benchmark::State& state) {
    auto& g = gated_host();
    const auto link = g.dir.parent_path() / (g.dir.filename().string() + "-link");
    std::filesystem::remove(link);
    std::filesystem::create_directory_symlink(g.dir, link);
    auto settings = g.license_settings;
    settings.file = link / "license.json";
    gate::LicenseCheck check(settings);
    for (auto _ : state) {
        auto refusal = check.check({*g.tool, g.principal, g.arguments, nullptr});
        if (refusal) throw std::runtime_error("refused: " + refusal->message);
    }
    std::filesystem::remove(link);
    if (check.licenses().reads() != 1) throw std::runtime_error("the license file was read more than once");
}
BENCHMARK(BM_Gate_LicenseCheck_Pass_Unfollowed);

// Several vendors' files: `orders.json` listed before `echo`'s own file, and a
// license directory of two more. A pass costs the watch's epoll_wait(2) for the
// directory and one for the file that covered the family last time, not one
// per file.
void BM_Gate_LicenseCheck_Pass_SeveralFiles(benchmark::State& state) {
    auto& g = gated_host();
    auto settings = g.license_settings;
    settings.file = g.dir / "orders.json";
    settings.files = {g.dir / "license.json"};
    settings.directory = g.dir / "licenses.d";
    gate::LicenseCheck check(settings);
    for (auto _ : state) {
        auto refusal = check.check({*g.tool, g.principal, g.arguments, nullptr});
        if (refusal) throw std::runtime_error("refused: " + refusal->message);
    }
    if (check.licenses().reads() > 2) throw std::runtime_error("a license file was read more than once");
}
BENCHMARK(BM_Gate_LicenseCheck_Pass_SeveralFiles);

// Only a license directory, `echo`'s file the last of three in it.
void BM_Gate_LicenseCheck_Pass_Directory(benchmark::State& state) {
    auto& g = gated_host();
    auto settings = g.license_settings;
    settings.file.clear();
    settings.directory = g.dir / "licenses.d";
    gate::LicenseCheck check(settings);
    for (auto _ : state) {
        auto refusal = check.check({*g.tool, g.principal, g.arguments, nullptr});
        if (refusal) throw std::runtime_error("refused: " + refusal->message);
    }
}
BENCHMARK(BM_Gate_LicenseCheck_Pass_Directory);

// What the license check pays the kernel now: one epoll_wait(2) that does
// not wait, over an inotify descriptor with nothing queued.
void BM_EpollWait_EmptyInotify(benchmark::State& state) {
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    const int ready = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event watched{EPOLLIN, {.fd = fd}};
    ::epoll_ctl(ready, EPOLL_CTL_ADD, fd, &watched);
    epoll_event out[2];
    for (auto _ : state) {
        benchmark::DoNotOptimize(::epoll_wait(ready, out, 2, 0));
    }
    ::close(ready);
    ::close(fd);
}
BENCHMARK(BM_EpollWait_EmptyInotify);

// What it paid before the watch: one stat(2) of the license file.
void BM_Stat_LicenseFile(benchmark::State& state) {
    auto& g = gated_host();
    const std::string path = g.license_settings.file.string();
    struct stat st {};
    for (auto _ : state) {
        benchmark::DoNotOptimize(::stat(path.c_str(), &st));
    }
}
BENCHMARK(BM_Stat_LicenseFile);

void BM_Encode_NoopResult(benchmark::State& state) {
    const Json response = protocol::make_result(
        7, {{"content", Json::array({{{"type", "text"}, {"text", ""}}})},
            {"resultType", "complete"},
            {"_meta", {{"io.modelcontextprotocol/serverInfo", {{"name", "gatehouse"}, {"version", "0.1.0"}}}}}});
    for (auto _ : state)
        benchmark::DoNotOptimize(protocol::encode(response));
}
BENCHMARK(BM_Encode_NoopResult);

} // namespace

BENCHMARK_MAIN();
