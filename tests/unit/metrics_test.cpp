#include "metrics/address_allow_list.hpp"
#include "metrics/audit_log.hpp"
#include "metrics/log_allowance.hpp"
#include "metrics/log_context.hpp"
#include "metrics/metric_registry.hpp"
#include "metrics/observability.hpp"
#include "metrics/otlp_encoding.hpp"
#include "metrics/trace_context.hpp"
#include "protocol/call_outcome.hpp"
#include "state/counted_backend.hpp"
#include "captured_log.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

using namespace gatehouse;
using nlohmann::json;

namespace {

std::vector<std::string> lines_of(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

} // namespace

TEST_CASE("the exposition writes counters, histograms and read values in the text format", "[metrics]") {
    metrics::MetricRegistry registry;
    auto& calls = registry.add<metrics::CounterFamily>("t_calls_total", "Calls, by tool.",
                                                       std::vector<std::string>{"tool", "outcome"});
    auto& took = registry.add<metrics::HistogramFamily>("t_seconds", "Time\nit took.", std::vector<std::string>{"f"},
                                                        std::vector<double>{0.001, 0.01, 1});
    registry.add<metrics::ReadFamily>("t_open", "Open now.", std::vector<std::string>{}, [] {
        return metrics::ReadFamily::Series{{{}, 3.5}};
    });
    calls.with({"remember", "ok"}).add();
    calls.with({"remember", "ok"}).add(2);
    calls.with({"we\"ird\\\n", "ok"}).add();
    took.with({"memory"}).observe(0.0005);
    took.with({"memory"}).observe(0.001); // on a bound: counted in that bucket (le is <=)
    took.with({"memory"}).observe(5);
    const std::string text = registry.render();
    CHECK_THAT(text, Catch::Contains("# HELP t_calls_total Calls, by tool.\n# TYPE t_calls_total counter\n"));
    CHECK_THAT(text, Catch::Contains("t_calls_total{tool=\"remember\",outcome=\"ok\"} 3\n"));
    CHECK_THAT(text, Catch::Contains("t_calls_total{tool=\"we\\\"ird\\\\\\n\",outcome=\"ok\"} 1\n"));
    CHECK_THAT(text, Catch::Contains("# HELP t_seconds Time\\nit took.\n# TYPE t_seconds histogram\n"));
    CHECK_THAT(text, Catch::Contains("t_seconds_bucket{f=\"memory\",le=\"0.001\"} 2\n"));
    CHECK_THAT(text, Catch::Contains("t_seconds_bucket{f=\"memory\",le=\"0.01\"} 2\n"));
    CHECK_THAT(text, Catch::Contains("t_seconds_bucket{f=\"memory\",le=\"1\"} 2\n"));
    CHECK_THAT(text, Catch::Contains("t_seconds_bucket{f=\"memory\",le=\"+Inf\"} 3\n"));
    CHECK_THAT(text, Catch::Contains("t_seconds_count{f=\"memory\"} 3\n"));
    CHECK_THAT(text, Catch::Contains("t_seconds_sum{f=\"memory\"} 5.0015\n"));
    CHECK_THAT(text, Catch::Contains("# TYPE t_open gauge\nt_open 3.5\n"));
}

TEST_CASE("a family past its series cap counts further label values under \"other\"", "[metrics]") {
    metrics::CounterFamily family("t_total", "T.", {"a", "b"}, 2);
    family.with({"1", "x"}).add();
    family.with({"2", "x"}).add();
    family.with({"3", "x"}).add();
    family.with({"4", "y"}).add();
    family.with({"1", "x"}).add(); // an existing series is still its own
    std::string text;
    family.render(text);
    CHECK_THAT(text, Catch::Contains("t_total{a=\"1\",b=\"x\"} 2\n"));
    CHECK_THAT(text, Catch::Contains("t_total{a=\"other\",b=\"other\"} 2\n"));
    CHECK(text.find("a=\"3\"") == std::string::npos);
}

TEST_CASE("counters and histograms add up from many threads", "[metrics]") {
    metrics::CounterFamily family("t_total", "T.", {"k"});
    metrics::Histogram histogram(std::vector<double>{1.0});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10000; ++i) {
                family.with({i % 2 ? "odd" : "even"}).add();
                histogram.observe(t % 2 ? 0.5 : 2.0);
            }
        });
    for (auto& thread : threads)
        thread.join();
    CHECK(family.with({"odd"}).value() == 20000);
    CHECK(family.with({"even"}).value() == 20000);
    const auto snapshot = histogram.snapshot();
    CHECK(snapshot.count == 40000);
    CHECK(snapshot.cumulative[0] == 20000);
    CHECK(snapshot.sum == Approx(20000 * 0.5 + 20000 * 2.0));
}

TEST_CASE("format_sample writes integers plainly and the special values by name", "[metrics]") {
    CHECK(metrics::format_sample(3) == "3");
    CHECK(metrics::format_sample(0.25) == "0.25");
    CHECK(metrics::format_sample(1.0 / 0.0) == "+Inf");
    CHECK(metrics::format_sample(-1.0 / 0.0) == "-Inf");
    CHECK(metrics::format_sample(std::nan("")) == "NaN");
}

TEST_CASE("a traceparent is read as W3C Trace Context defines it, and nothing else is", "[metrics][trace]") {
    const auto parsed = metrics::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    REQUIRE(parsed);
    CHECK(parsed->trace_id[0] == 0x0a);
    CHECK(parsed->trace_id[15] == 0x9c);
    CHECK(parsed->parent_id[7] == 0x31);
    CHECK(parsed->flags == 1);
    // A later version may carry more fields after a '-'.
    CHECK(metrics::parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-extra"));
    for (const char* bad : {
             "",
             "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", // version 00 has no more fields
             "00-00000000000000000000000000000000-b7ad6b7169203331-01",       // all-zero trace id
             "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",       // all-zero parent id
             "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",       // version 255 is invalid
             "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",       // upper case
             "00-0af7651916cd43dd8448eb211c80319-cb7ad6b7169203331-01",       // misplaced dash
             "00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01",
             "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
         })
        CHECK_FALSE(metrics::parse_traceparent(bad));
    CHECK(metrics::checked_tracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"));
    CHECK_FALSE(metrics::checked_tracestate(std::string(513, 'a')));
    CHECK_FALSE(metrics::checked_tracestate("a=\n"));
}

TEST_CASE("a request's span continues the caller's trace, or starts one; ids never repeat", "[metrics][trace]") {
    metrics::TraceIds ids;
    const auto incoming = metrics::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
    const auto span = ids.start(incoming, "k=v");
    CHECK(span.trace_hex() == "0af7651916cd43dd8448eb211c80319c");
    CHECK(span.parent_hex() == "b7ad6b7169203331");
    CHECK(span.has_parent());
    CHECK_FALSE(span.sampled());
    CHECK(span.tracestate == "k=v");
    // What a family or an upstream passes on names this span as its parent.
    CHECK(span.traceparent() == "00-0af7651916cd43dd8448eb211c80319c-" + span.span_hex() + "-00");
    REQUIRE(metrics::parse_traceparent(span.traceparent()));

    const auto own = ids.start(std::nullopt);
    CHECK_FALSE(own.has_parent());
    CHECK(own.sampled());
    CHECK_FALSE(own.empty());
    // A task round continues its starting call's trace from the traceparent it kept.
    const auto child = ids.start(metrics::parse_traceparent(own.traceparent()));
    CHECK(child.trace_hex() == own.trace_hex());
    CHECK(child.parent_hex() == own.span_hex());

    std::set<std::string> seen;
    for (int i = 0; i < 10000; ++i)
        seen.insert(ids.start(std::nullopt).span_hex());
    CHECK(seen.size() == 10000);
}

TEST_CASE("log lines written inside a request's scope name its trace, in text and in JSON", "[metrics][trace]") {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger logger("trace-test", sink);
    metrics::TraceIds ids;
    const auto trace = ids.start(metrics::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));

    metrics::set_log_format(logger, metrics::LogFormat::text);
    logger.info("outside");
    {
        metrics::LogScope scope(&trace);
        logger.info("inside");
        {
            const auto nested = ids.start(metrics::parse_traceparent(trace.traceparent()));
            metrics::LogScope inner(&nested);
            logger.info("nested " + nested.span_hex());
        }
        logger.info("inside again");
    }
    logger.info("after");
    std::istringstream text(out.str());
    std::vector<std::string> lines;
    for (std::string line; std::getline(text, line);)
        lines.push_back(line);
    REQUIRE(lines.size() == 5);
    CHECK(lines[0].find("trace_id") == std::string::npos);
    CHECK_THAT(lines[1],
               Catch::EndsWith("inside trace_id=0af7651916cd43dd8448eb211c80319c span_id=" + trace.span_hex()));
    const std::string nested_span = lines[2].substr(lines[2].find("nested ") + 7, 16);
    CHECK_THAT(lines[2], Catch::EndsWith("span_id=" + nested_span));
    CHECK_THAT(lines[3], Catch::EndsWith("span_id=" + trace.span_hex()));
    CHECK(lines[4].find("trace_id") == std::string::npos);

    out.str("");
    metrics::set_log_format(logger, metrics::LogFormat::json);
    {
        metrics::LogScope scope(&trace);
        logger.warn("a \"quoted\"\nline\x01");
    }
    logger.info("plain");
    std::istringstream json_lines(out.str());
    std::string first, second;
    std::getline(json_lines, first);
    std::getline(json_lines, second);
    const json a = json::parse(first);
    CHECK(a["level"] == "warning");
    CHECK(a["message"] == "a \"quoted\"\nline\x01");
    CHECK(a["trace_id"] == "0af7651916cd43dd8448eb211c80319c");
    CHECK(a["span_id"] == trace.span_hex());
    CHECK_THAT(a["time"].get<std::string>(), Catch::Matches(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"));
    const json b = json::parse(second);
    CHECK_FALSE(b.contains("trace_id"));
}

TEST_CASE("the audit log appends whole lines, reopens its path, and counts what it loses", "[metrics][audit]") {
    test::TempDir dir;
    const auto file = dir.path() / "audit.jsonl";
    int dropped = 0, failed = 0;
    {
        metrics::AuditLog log(file, 100, {[&] { ++dropped; }, [&] { ++failed; }});
        log.write(R"({"n":1})");
        log.write(R"({"n":2})");
        log.flush();
        CHECK(lines_of(file) == std::vector<std::string>{R"({"n":1})", R"({"n":2})"});
        const auto owner_only = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;
        CHECK((std::filesystem::status(file).permissions() & std::filesystem::perms::all) == owner_only);
        // logrotate moved the file away; after SIGHUP the path is written anew.
        std::filesystem::rename(file, dir.path() / "audit.jsonl.1");
        log.write(R"({"n":3})");
        log.flush();
        log.reopen();
        log.write(R"({"n":4})");
        log.flush();
        CHECK(lines_of(dir.path() / "audit.jsonl.1") ==
              std::vector<std::string>{R"({"n":1})", R"({"n":2})", R"({"n":3})"});
        CHECK(lines_of(file) == std::vector<std::string>{R"({"n":4})"});
    }
    CHECK(dropped == 0);
    CHECK(failed == 0);

    // A path that cannot be opened: each line is counted as failed, none blocks.
    {
        metrics::AuditLog log(dir.path() / "missing" / "audit.jsonl", 100, {[&] { ++dropped; }, [&] { ++failed; }});
        log.write("a");
        log.write("b");
        log.flush();
    }
    CHECK(failed == 2);
}

TEST_CASE("a full audit queue drops lines and counts them instead of waiting", "[metrics][audit]") {
    test::TempDir dir;
    std::atomic<int> dropped{0};
    metrics::AuditLog log(dir.path() / "audit.jsonl", 16, {[&] { ++dropped; }, nullptr});
    for (int i = 0; i < 5000; ++i)
        log.write(std::string(200, 'x'));
    log.flush();
    const auto written = lines_of(dir.path() / "audit.jsonl").size();
    CHECK(written + static_cast<std::size_t>(dropped.load()) == 5000);
}

TEST_CASE("metrics.allow matches addresses and CIDR blocks, IPv4 also as mapped IPv6", "[metrics]") {
    metrics::AddressAllowList allow({"127.0.0.1", "10.0.0.0/8", "fd00::/8"});
    const auto address = [](const char* text) { return boost::asio::ip::make_address(text); };
    CHECK(allow.allows(address("127.0.0.1")));
    CHECK_FALSE(allow.allows(address("127.0.0.2")));
    CHECK(allow.allows(address("10.200.3.4")));
    CHECK(allow.allows(address("::ffff:10.1.2.3")));
    CHECK_FALSE(allow.allows(address("11.0.0.1")));
    CHECK(allow.allows(address("fd12::1")));
    CHECK_FALSE(allow.allows(address("fe80::1")));
    CHECK_FALSE(allow.allows(address("::1")));
    CHECK_THROWS_AS(metrics::AddressAllowList({"10.0.0.0/33"}), std::invalid_argument);
    CHECK_THROWS_AS(metrics::AddressAllowList({"example.com"}), std::invalid_argument);
}

TEST_CASE("a tools/call answer is read as the outcome the metrics count", "[metrics]") {
    using metrics::CallOutcome;
    const auto verdict = [](const json& response, bool timed_out = false) {
        return protocol::call_verdict(&response, timed_out);
    };
    CHECK(verdict({{"result", {{"content", json::array()}}}}).outcome == CallOutcome::ok);
    CHECK(verdict({{"result", {{"content", json::array()}, {"isError", true}}}}).outcome == CallOutcome::tool_error);
    // The verdict's code and message are views into the answer, which stays alive.
    const json refused = {
        {"result",
         {{"isError", true},
          {"structuredContent", {{"code", "NOT_GRANTED"}, {"message", "m"}, {"next", json::object()}}}}}};
    CHECK(verdict(refused).outcome == CallOutcome::refused);
    CHECK(verdict(refused).code == "NOT_GRANTED");
    // A tool's own structured error is not taken for a refusal.
    CHECK(
        verdict({{"result", {{"isError", true}, {"structuredContent", {{"code", "E1"}, {"message", "m"}, {"x", 1}}}}}})
            .outcome == CallOutcome::tool_error);
    const json timeout = {
        {"result", {{"isError", true}, {"structuredContent", {{"code", "TOOL_TIMEOUT"}, {"message", "m"}}}}}};
    CHECK(verdict(timeout, true).outcome == CallOutcome::timeout);
    CHECK(verdict({{"result", {{"resultType", "input_required"}}}}).outcome == CallOutcome::input_required);
    CHECK(verdict({{"result", {{"resultType", "task"}}}}).outcome == CallOutcome::task);
    const json failed = {{"error", {{"code", -32602}, {"message", "bad"}}}};
    const auto error = verdict(failed);
    CHECK(error.outcome == CallOutcome::protocol_error);
    CHECK(error.message == "bad");
    CHECK(protocol::call_verdict(nullptr, false).outcome == CallOutcome::cancelled);
}

TEST_CASE("an OTLP export request carries the spans in protobuf's wire format", "[metrics][trace]") {
    metrics::TraceIds ids;
    metrics::Span span;
    span.trace = ids.start(metrics::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    span.name = "tools/call remember";
    span.start_unix_ns = 1000;
    span.end_unix_ns = 2000;
    span.attributes = {{"gen_ai.tool.name", std::string("remember")}, {"n", std::int64_t{-1}}, {"b", true}, {"d", 0.5}};
    span.error = true;
    const std::string bytes =
        metrics::encode_export_request({{"service.name", std::string("gatehouse")}}, "gatehouse", "0.1.0", {span});
    // ExportTraceServiceRequest.resource_spans (field 1, length-delimited).
    REQUIRE(bytes.size() > 2);
    CHECK(static_cast<unsigned char>(bytes[0]) == (1 << 3 | 2));
    // The ids and strings are in it as they are; the full decoding is the
    // integration test's, with the OpenTelemetry packages' own decoder.
    const std::string trace_id(reinterpret_cast<const char*>(span.trace.trace_id.data()), 16);
    CHECK(bytes.find(trace_id) != std::string::npos);
    CHECK(bytes.find("tools/call remember") != std::string::npos);
    CHECK(bytes.find("service.name") != std::string::npos);
}

TEST_CASE("a counted backend counts each failure and passes it on", "[metrics]") {
    class Failing final : public state::StateBackend {
    public:
        std::optional<std::string> get(std::string_view) override { throw state::BackendError("down"); }
        void put(std::string_view, std::string_view, std::chrono::milliseconds) override {}
        bool erase(std::string_view) override { return true; }
        bool add(std::string_view, std::string_view, std::chrono::milliseconds) override { return false; }
        bool replace(std::string_view, std::string_view, std::string_view, std::chrono::milliseconds) override {
            return false;
        }
        std::optional<std::string> take(std::string_view) override { return std::nullopt; }
        std::vector<std::pair<std::string, std::string>> scan(std::string_view) override { return {}; }
        const char* name() const override { return "failing"; }
    };
    std::vector<std::string> failures;
    auto backend = state::make_counted_backend(std::make_unique<Failing>(),
                                               [&](const char* name) { failures.emplace_back(name); });
    CHECK_THROWS_AS(backend->get("k"), state::BackendError);
    CHECK(backend->erase("k"));
    CHECK(failures == std::vector<std::string>{"failing"});
}

TEST_CASE("Observability counts each tool call once under its outcome and code, and audits it", "[metrics][audit]") {
    test::TempDir dir;
    metrics::Observability::Settings settings;
    settings.audit.file = dir.path() / "audit.jsonl";
    settings.service_version = "9.9.9";
    metrics::Observability observability(settings);
    int tool_key = 0;
    const json id = 7;
    const json arguments = {{"text", "secret plan"}, {"session", "s-handle"}};
    const auto trace = observability.trace_ids().start(std::nullopt);
    metrics::CallRecord call;
    call.tool_key = &tool_key;
    call.family = "memory";
    call.tool = "remember";
    call.outcome = metrics::CallOutcome::refused;
    call.code = "NOT_GRANTED";
    call.took = std::chrono::milliseconds(3);
    call.started = std::chrono::system_clock::now();
    call.principal = "alice";
    call.principal_kind = "local";
    call.store = "s1";
    call.user = "u1";
    call.revision = "2026-07-28";
    call.transport = "stdio";
    call.request_id = &id;
    call.arguments = &arguments;
    call.trace = &trace;
    observability.tool_call(call);
    call.outcome = metrics::CallOutcome::ok;
    call.code = {};
    observability.tool_call(call);
    const std::string text = observability.exposition();
    CHECK_THAT(
        text, Catch::Contains("gatehouse_tool_calls_total{family=\"memory\",tool=\"remember\",outcome=\"refused\"} 1"));
    CHECK_THAT(text,
               Catch::Contains("gatehouse_tool_calls_total{family=\"memory\",tool=\"remember\",outcome=\"ok\"} 1"));
    CHECK_THAT(text, Catch::Contains(
                         "gatehouse_tool_refusals_total{family=\"memory\",tool=\"remember\",code=\"NOT_GRANTED\"} 1"));
    CHECK_THAT(text, Catch::Contains("gatehouse_tool_call_duration_seconds_count{family=\"memory\"} 2"));
    CHECK_THAT(text, Catch::Contains("gatehouse_build_info{version=\"9.9.9\""));
    CHECK_THAT(text, Catch::Contains("process_resident_memory_bytes "));
    observability.flush_audit();
    const auto lines = lines_of(settings.audit.file);
    REQUIRE(lines.size() == 2);
    const json refusal = json::parse(lines[0]);
    CHECK(refusal["decision"] == "refused");
    CHECK(refusal["code"] == "NOT_GRANTED");
    CHECK(refusal["principal"] == "alice");
    CHECK(refusal["store"] == "s1");
    CHECK(refusal["user"] == "u1");
    CHECK(refusal["trace_id"] == trace.trace_hex());
    CHECK(refusal["request_id"] == 7);
    CHECK(refusal["duration_ms"].get<double>() == Approx(3.0));
    // Arguments only when the operator asks for them.
    CHECK_FALSE(refusal.contains("arguments"));
    CHECK(lines[0].find("secret plan") == std::string::npos);
    CHECK(json::parse(lines[1])["decision"] == "allowed");
}

namespace {

// An Observability writing its audit log in a folder of its own, and a call
// of the echo family's echo by the local user alice over stdio to record
// through it, as the audit tests below do.
struct AuditedEcho {
    AuditedEcho() {
        call.tool_key = &tool_key;
        call.family = "echo";
        call.tool = "echo";
        call.started = std::chrono::system_clock::now();
        call.principal = "alice";
        call.principal_kind = "local";
        call.revision = "2026-07-28";
        call.transport = "stdio";
    }

    // Every line written so far.
    std::vector<std::string> lines() {
        observability.flush_audit();
        return lines_of(settings.audit.file);
    }

    test::TempDir dir;
    metrics::Observability::Settings settings = [this] {
        metrics::Observability::Settings audited;
        audited.audit.file = dir.path() / "audit.jsonl";
        return audited;
    }();
    metrics::Observability observability{settings};
    int tool_key = 0;
    metrics::CallRecord call;
};

} // namespace

TEST_CASE("the audit line carries a request id as the request did, however large", "[metrics][audit]") {
    AuditedEcho audited;
    const std::vector<json> ids = {json(18446744073709551615ULL), json(9223372036854775808ULL), json(-3),
                                   json("req-1")};
    for (const auto& id : ids) {
        audited.call.request_id = &id;
        audited.observability.tool_call(audited.call);
    }
    const auto lines = audited.lines();
    REQUIRE(lines.size() == ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
        CHECK(json::parse(lines[i])["request_id"] == ids[i]);
    CHECK(lines[0].find("\"request_id\":18446744073709551615") != std::string::npos);
}

TEST_CASE("an audit line stays JSON a reader takes when a name is not UTF-8", "[metrics][audit]") {
    AuditedEcho audited;
    const json id = 1;
    // A local principal comes from the environment or the passwd entry,
    // whose bytes are whatever they are.
    audited.call.principal = "bad\xff name \xe2\x82 é\x01";
    audited.call.request_id = &id;
    audited.observability.tool_call(audited.call);
    const auto lines = audited.lines();
    REQUIRE(lines.size() == 1);
    const json line = json::parse(lines[0]); // nlohmann refuses text that is not UTF-8
    CHECK(line["principal"] == "bad\uFFFD name \uFFFD\uFFFD é\x01");
}

namespace {

using test::CapturedLog;

} // namespace

TEST_CASE("A program's log lines past its allowance are counted, not written, and the flood is told once",
          "[metrics][log]") {
    CapturedLog log;
    {
        metrics::LogAllowance allowance("chatty");
        const auto started = std::chrono::steady_clock::now();
        for (int i = 0; i < 2000; ++i)
            allowance.write(spdlog::level::info, "line " + std::to_string(i));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        // The burst, and what refilled at 50 a second while the loop ran.
        const auto logged = log.count("info [chatty] line ");
        CHECK(logged >= 500);
        CHECK(logged <= 500 + static_cast<std::size_t>(50 * seconds) + 1);
        CHECK(allowance.dropped() == 2000 - logged);
        CHECK(log.count("info [chatty] line 0\n") == 1);
        // Told as the flood begins, then at most once a second.
        CHECK(log.count("[chatty] writes more than 50 lines a second into the host's log") >= 1);
        CHECK(log.count("[chatty] writes more than 50 lines a second into the host's log") <=
              1 + static_cast<std::size_t>(seconds));
    }
    // The count is told when the allowance ends, if not before.
    CHECK(log.count("lines of its were not logged") >= 1);
}

TEST_CASE("A program's lines reach the log cut short, whole UTF-8, and a line without end is skipped to its newline",
          "[metrics][log]") {
    CapturedLog log;
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    std::thread writer([fd = pipe_fds[1]] {
        std::string text =
            std::string(metrics::LogAllowance::kLineBytes - 1, 'a') + "\xC3\xA9tail\n"; // é across the cut
        text += std::string(200 * 1024, 'b') + "\nafter\n";
        for (std::size_t at = 0; at < text.size();) {
            const auto n = ::write(fd, text.data() + at, text.size() - at);
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
        ::close(fd);
    });
    metrics::LogAllowance allowance("lines");
    metrics::copy_lines_to_log(pipe_fds[0], allowance);
    writer.join();
    ::close(pipe_fds[0]);
    const std::string text = log.out.str();
    CHECK(text.find("info [lines] " + std::string(metrics::LogAllowance::kLineBytes - 1, 'a') + "… (cut)\n") !=
          std::string::npos);
    CHECK(log.count("\xC3\xA9") == 0); // not half of it either
    CHECK(log.count("info [lines] bbbb") == 1);
    CHECK(log.count("info [lines] after\n") == 1);
    CHECK(text.size() < 3 * metrics::LogAllowance::kLineBytes);
}

TEST_CASE("Once its stop is readable, a program's output is copied to what the pipe holds, though a writer keeps it "
          "open",
          "[metrics][log]") {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const int stop = ::eventfd(0, EFD_CLOEXEC);
    REQUIRE(stop >= 0);
    {
        CapturedLog log;
        const std::string said = "said before the end\nand a last line without its newline";
        REQUIRE(::write(pipe_fds[1], said.data(), said.size()) == static_cast<ssize_t>(said.size()));
        const std::uint64_t one = 1;
        REQUIRE(::write(stop, &one, sizeof one) == sizeof one);
        metrics::LogAllowance allowance("held");
        // The write end stays open: without the stop this would wait for ever.
        metrics::copy_lines_to_log(pipe_fds[0], allowance, stop);
        CHECK(log.count("info [held] said before the end\n") == 1);
        CHECK(log.count("info [held] and a last line without its newline\n") == 1);
    }
    {
        // A writer that never stops: the copying still ends, after about a MiB.
        std::atomic<bool> writing{true};
        ::fcntl(pipe_fds[1], F_SETFL, ::fcntl(pipe_fds[1], F_GETFL) | O_NONBLOCK);
        std::thread writer([&] {
            const std::string chunk = std::string(1000, 'z') + "\n";
            while (writing)
                if (::write(pipe_fds[1], chunk.data(), chunk.size()) < 0)
                    std::this_thread::sleep_for(std::chrono::microseconds(100)); // full: the reader is behind
        });
        metrics::LogAllowance allowance("endless");
        const auto started = std::chrono::steady_clock::now();
        metrics::copy_lines_to_log(pipe_fds[0], allowance, stop);
        CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
        writing = false;
        writer.join();
    }
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::close(stop);
}
