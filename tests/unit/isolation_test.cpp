#include "isolation/family_process.hpp"
#include "isolation/frame_channel.hpp"
#include "isolation/wire_descriptor.hpp"
#include "metrics/log_allowance.hpp"
#include "plugins/call_environment.hpp"

#include "captured_log.hpp"

#include <catch2/catch.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <optional>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace gatehouse::isolation;

namespace {

struct SocketPair {
    int ends[2] = {-1, -1};
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0); }
};

// Raw bytes as the other end would write them: length, type, pad, code, index, id, count, fields.
std::string raw_frame(std::uint32_t length, std::uint32_t count, const std::string& body = {}) {
    std::string out(reinterpret_cast<const char*>(&length), 4);
    out += std::string(4, '\0');         // type and three zero bytes
    out += std::string(4 + 4 + 8, '\0'); // code, index, id
    out.append(reinterpret_cast<const char*>(&count), 4);
    return out + body;
}

gh_str str(const char* text) {
    return gh_str{text, std::strlen(text)};
}

} // namespace

TEST_CASE("FrameChannel carries frames whole, in order, and ends cleanly between frames", "[isolation]") {
    SocketPair pair;
    FrameChannel a(pair.ends[0]), b(pair.ends[1]);
    const std::string big(1 << 20, 'x');
    std::thread writer([&] {
        CHECK(a.send(Frame{FrameType::call, 7, 3, 42, {"one", "", big}}));
        CHECK(a.send(Frame{FrameType::cancel, 0, 0, 42, {}}));
        a.shut_down();
    });
    auto first = b.receive();
    REQUIRE(first);
    CHECK(first->type == FrameType::call);
    CHECK(first->code == 7);
    CHECK(first->index == 3);
    CHECK(first->id == 42);
    REQUIRE(first->fields.size() == 3);
    CHECK(first->fields[0] == "one");
    CHECK(first->fields[1].empty());
    CHECK(first->fields[2] == big);
    auto second = b.receive();
    REQUIRE(second);
    CHECK(second->type == FrameType::cancel);
    CHECK_FALSE(b.receive());
    writer.join();
    CHECK(field_double(number_field(2.5)) == 2.5);
    CHECK(field_u64(number_field(std::uint64_t{1} << 40)) == std::uint64_t{1} << 40);
}

TEST_CASE("FrameChannel read in steps takes every whole frame, however the bytes arrive", "[isolation]") {
    SocketPair pair;
    FrameChannel a(pair.ends[0]), b(pair.ends[1]);
    // Many frames in one read, then one frame larger than the buffer that
    // arrives a byte at a time at first, then small ones again.
    for (std::uint64_t id = 1; id <= 50; ++id)
        REQUIRE(a.send(Frame{FrameType::result, 0, 0, id, {std::string(id, 'r')}}));
    REQUIRE(b.read_some());
    std::uint64_t next = 1;
    while (next <= 50) {
        auto frame = b.next_buffered();
        if (!frame) {
            REQUIRE(b.read_some());
            continue;
        }
        CHECK(frame->id == next);
        CHECK(frame->field(0) == std::string(next, 'r'));
        ++next;
    }
    CHECK_FALSE(b.next_buffered());
    CHECK_FALSE(b.holds_partial());

    const std::string big(300 * 1024, 'b');
    std::thread writer([&] {
        // The same bytes a send() would write, the first 40 one by one.
        SocketPair scratch;
        std::thread encode([&] {
            FrameChannel encoder(scratch.ends[0]); // closed when done: the end of the bytes
            CHECK(encoder.send(Frame{FrameType::result, 3, 0, 99, {big}}));
        });
        std::string bytes;
        char chunk[65536];
        for (ssize_t n; (n = ::read(scratch.ends[1], chunk, sizeof chunk)) > 0;)
            bytes.append(chunk, static_cast<std::size_t>(n));
        encode.join();
        for (std::size_t i = 0; i < 40; ++i)
            REQUIRE(::write(pair.ends[0], bytes.data() + i, 1) == 1);
        for (std::size_t at = 40; at < bytes.size();) {
            const ssize_t n = ::write(pair.ends[0], bytes.data() + at, bytes.size() - at);
            REQUIRE(n > 0);
            at += static_cast<std::size_t>(n);
        }
        REQUIRE(a.send(Frame{FrameType::cancel, 0, 0, 100, {}}));
        a.shut_down();
        ::close(scratch.ends[1]);
    });
    std::optional<Frame> large;
    while (!(large = b.next_buffered())) {
        REQUIRE(b.read_some());
        if (!large) CHECK(b.holds_partial());
    }
    CHECK(large->id == 99);
    CHECK(large->code == 3);
    CHECK(large->field(0) == big);
    auto after = b.receive();
    REQUIRE(after);
    CHECK(after->id == 100);
    CHECK_FALSE(b.receive());
    writer.join();
}

TEST_CASE("FrameChannel refuses a frame beyond its bounds, cut short, or with fields that do not fit", "[isolation]") {
    auto refused = [](const std::string& bytes, const char* why) {
        SocketPair pair;
        FrameChannel reader(pair.ends[0]);
        REQUIRE(::write(pair.ends[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
        ::close(pair.ends[1]);
        CHECK_THROWS_WITH(reader.receive(), Catch::Contains(why));
    };
    refused(raw_frame(static_cast<std::uint32_t>(kMaxFrameBytes + 1), 0), "beyond the bounds");
    refused(raw_frame(3, 0), "beyond the bounds");
    refused(raw_frame(24 + 100, 0), "ended inside a frame");
    refused(raw_frame(24, static_cast<std::uint32_t>(kMaxFrameFields + 1)), "fields is beyond the bound");
    std::uint32_t size = 1000;
    refused(raw_frame(24 + 4 + 2, 1, std::string(reinterpret_cast<const char*>(&size), 4) + "ab"),
            "runs past its frame");
    refused(raw_frame(24 + 3, 0, "abc"), "bytes after its last field");
    refused(std::string("\x10\x00", 2), "inside a frame's length");
}

namespace {

struct Recorded : ProxiedCalls {
    CallKind kind{};
    std::uint32_t index = 99;
    std::vector<std::string> fields;
    int32_t invoke(CallKind k, std::uint32_t i, gh_call*, std::vector<std::string> f, gh_sink* out, gh_sink*) override {
        kind = k;
        index = i;
        fields = std::move(f);
        if (out) out->bytes = "answered";
        return GH_STATUS_OK;
    }
};

int32_t a_tool(void*, void*, gh_call*, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}
int32_t a_read(void*, void*, gh_call*, gh_str, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}
int32_t a_get(void*, void*, gh_call*, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}

} // namespace

TEST_CASE("A descriptor crosses the channel whole, and its proxy forwards each call with its entry", "[isolation]") {
    gh_tool_desc first{}, second{};
    for (auto* t : {&first, &second}) {
        t->struct_size = sizeof *t;
        t->risk = GH_RISK_READ;
        t->input_schema = str(R"({"type":"object"})");
        t->call = &a_tool;
    }
    first.name = str("first");
    second.name = str("second");
    second.output_schema = str(R"({"type":"object"})");
    second.task_support = GH_TASK_OPTIONAL;
    const gh_tool_desc* tools[] = {&first, &second};
    gh_resource_desc resource{};
    resource.struct_size = sizeof resource;
    resource.uri = str("test://a");
    resource.name = str("a");
    resource.flags = GH_RESOURCE_HAS_SIZE;
    resource.size = 12;
    resource.read = &a_read;
    const gh_resource_desc* resources[] = {&resource};
    gh_prompt_desc prompt{};
    prompt.struct_size = sizeof prompt;
    prompt.name = str("ask");
    prompt.get = &a_get;
    const gh_prompt_desc* prompts[] = {&prompt};
    gh_plugin_desc desc{};
    desc.struct_size = sizeof desc;
    desc.abi_version = GH_ABI_VERSION;
    desc.flags = GH_PLUGIN_REENTRANT;
    desc.name = str("gatehouse-test");
    desc.version = str("1.0.0");
    desc.family = str("wired");
    desc.tool_count = 2;
    desc.tools = tools;
    desc.resource_count = 1;
    desc.resources = resources;
    desc.prompt_count = 1;
    desc.prompts = prompts;

    const std::string bytes = encode_descriptor(read_plugin_tables(&desc));
    Recorded recorded;
    ProxyDescriptor proxy(bytes, recorded);
    const gh_plugin_desc* out = proxy.descriptor();
    CHECK(std::string(out->family.ptr, out->family.len) == "wired");
    CHECK(out->flags == GH_PLUGIN_REENTRANT);
    CHECK(out->init == nullptr);
    CHECK(out->critical_items == nullptr);
    REQUIRE(out->tool_count == 2);
    CHECK(std::string(out->tools[1]->name.ptr, out->tools[1]->name.len) == "second");
    CHECK(out->tools[1]->output_schema.len > 0);
    CHECK(out->tools[1]->task_support == GH_TASK_OPTIONAL);
    REQUIRE(out->resource_count == 1);
    CHECK(out->resources[0]->size == 12);
    CHECK(out->resources[0]->flags == GH_RESOURCE_HAS_SIZE);
    CHECK(out->resource_template_count == 0);
    CHECK(out->resource_templates == nullptr);

    gh_sink sink;
    CHECK(out->tools[1]->call(nullptr, out->tools[1]->tool_data, nullptr, str(R"({"x":1})"), &sink) == GH_STATUS_OK);
    CHECK(recorded.kind == CallKind::tool);
    CHECK(recorded.index == 1);
    REQUIRE(recorded.fields.size() == 1);
    CHECK(recorded.fields[0] == R"({"x":1})");
    CHECK(sink.bytes == "answered");
    CHECK(out->resources[0]->read(nullptr, out->resources[0]->resource_data, nullptr, str("test://a"), str("{}"),
                                  &sink) == GH_STATUS_OK);
    CHECK(recorded.kind == CallKind::resource_read);
    CHECK(recorded.index == 0);
    CHECK(recorded.fields == std::vector<std::string>{"test://a", "{}"});

    // Every cut of the bytes is refused, never read past.
    for (std::size_t cut = 0; cut < bytes.size(); cut += 7)
        CHECK_THROWS_AS(ProxyDescriptor(std::string_view(bytes).substr(0, cut), recorded), BrokenChannel);
    CHECK_THROWS_AS(ProxyDescriptor(bytes + "x", recorded), BrokenChannel);

    // A table the plugin counts but does not give is the host's to refuse, not read.
    desc.prompts = nullptr;
    ProxyDescriptor tableless(encode_descriptor(read_plugin_tables(&desc)), recorded);
    CHECK(tableless.descriptor()->prompt_count == 1);
    CHECK(tableless.descriptor()->prompts == nullptr);
    const gh_tool_desc* broken[] = {&first, nullptr};
    desc.tools = broken;
    CHECK_THROWS_WITH(read_plugin_tables(&desc), Catch::Contains("tool #1: null struct pointer"));
}

namespace {

// The log lines the host writes while it lives (the default logger's).
class LogLines final : public spdlog::sinks::base_sink<std::mutex> {
public:
    bool wait_for(const std::string& text, std::chrono::milliseconds timeout) {
        std::unique_lock lock(lines_mutex_);
        return seen_.wait_for(lock, timeout, [&] {
            return std::any_of(lines_.begin(), lines_.end(),
                               [&](const std::string& line) { return line.find(text) != std::string::npos; });
        });
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        {
            std::lock_guard lock(lines_mutex_);
            lines_.emplace_back(msg.payload.data(), msg.payload.size());
        }
        seen_.notify_all();
    }
    void flush_() override {}

private:
    std::mutex lines_mutex_;
    std::condition_variable seen_;
    std::vector<std::string> lines_;
};

struct CapturedLog {
    std::shared_ptr<LogLines> lines = std::make_shared<LogLines>();
    CapturedLog() { spdlog::default_logger()->sinks().push_back(lines); }
    ~CapturedLog() {
        auto& sinks = spdlog::default_logger()->sinks();
        sinks.erase(std::remove(sinks.begin(), sinks.end(), lines), sinks.end());
    }
};

// `frames`, as a FrameChannel writes them, in one write to `fd`: the
// reader gets them in one read.
void send_together(int fd, const std::vector<Frame>& frames) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) std::_Exit(3);
    {
        FrameChannel encoder(pair[0]);
        for (const auto& frame : frames)
            encoder.send(frame);
    }
    std::string bytes;
    char chunk[4096];
    for (ssize_t n; (n = ::read(pair[1], chunk, sizeof chunk)) > 0;)
        bytes.append(chunk, static_cast<std::size_t>(n));
    ::close(pair[1]);
    if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) std::_Exit(4);
}

} // namespace

// The stand-in for `gatehouse serve-family` (tests/unit/main.cpp). It offers
// a one-tool family, answers init, and acts out the scenario named where
// the library's path would be:
//   result-then-log  init's result and a log line outside any call in one
//                    write, then silence until the host shuts it down.
//   stops-reading    asks 20000 host functions for its first call, reads
//                    none of the answers, and stops (SIGSTOP).
//   floods-a-call    the same, then 200 frames of 1 MiB for that call.
//   trickles         a log line every 200 ms, and never its descriptor.
//   floods-a-call-with-reports  for its first call: a log line holding a
//                    password and a line that looks like the host's, then
//                    kFloodCount log lines, as many in one frame, as many
//                    progress reports, as many changes in the call and
//                    outside it; then the call's result.
//   lists-descriptors  answers each call with the descriptors it holds open
//                    ("0 1 2 3 4"), as /proc/self/fd lists them.
//   drains-slowly    after init, reads 4 KiB of what the host sends every
//                    second and nothing more, never a whole frame.
//   asks-while-progress-is-held  for its first call: kProgressBurst + 10
//                    progress reports at once (past the budget's burst, so
//                    the latest is held), then, 250 ms later, a host function
//                    (call_context); the call's result once it is answered.
//   hangs-init-after-a-crash  its first process aborts on its first call;
//                    every later one offers its descriptor and never
//                    answers init (a marker file, named by the host's pid,
//                    tells them apart).
constexpr int kFloodCount = 3000;
constexpr int kProgressBurst = 50; // a family process's progress budget at once (FamilyProcess)

std::string open_descriptors() {
    std::vector<int> open;
    DIR* listing = ::opendir("/proc/self/fd");
    if (!listing) return "cannot list /proc/self/fd";
    while (const dirent* entry = ::readdir(listing))
        if (entry->d_name[0] != '.' && std::atoi(entry->d_name) != ::dirfd(listing))
            open.push_back(std::atoi(entry->d_name));
    ::closedir(listing);
    std::sort(open.begin(), open.end());
    std::string said;
    for (int fd : open)
        said += (said.empty() ? "" : " ") + std::to_string(fd);
    return said;
}

// What the scripted child's first call gets, once init has run.
std::optional<Frame> first_call(FrameChannel& host) {
    host.send(Frame{FrameType::result, GH_STATUS_OK, 0, 0, {""}});
    std::optional<Frame> call;
    while ((call = host.receive()) && call->type != FrameType::call) {
    }
    return call;
}

int scripted_family_child(int argc, char** argv) {
    const std::string scenario = argv[argc - 1];
    FrameChannel host(3, 4); // the pipes the host made, as serve-family's --input and --output
    gh_tool_desc tool{};
    tool.struct_size = sizeof tool;
    tool.name = str("scripted_tool");
    tool.risk = GH_RISK_READ;
    tool.input_schema = str(R"({"type":"object"})");
    tool.call = &a_tool;
    const gh_tool_desc* tools[] = {&tool};
    if (scenario == "trickles")
        while (host.send(Frame{FrameType::log, GH_LOG_INFO, 0, 0, {"still loading"}}))
            ::usleep(200 * 1000);
    gh_plugin_desc desc{};
    desc.struct_size = sizeof desc;
    desc.abi_version = GH_ABI_VERSION;
    desc.name = str("scripted");
    desc.version = str("1.0.0");
    desc.family = str("scripted");
    desc.tool_count = 1;
    desc.tools = tools;
    host.send(Frame{FrameType::descriptor, 0, 0, 0, {encode_descriptor(read_plugin_tables(&desc))}});
    try {
        const auto init = host.receive();
        if (!init || init->type != FrameType::init) return 1;
        if (scenario == "result-then-log")
            send_together(host.output_fd(), {Frame{FrameType::result, GH_STATUS_OK, 0, 0, {""}},
                                             Frame{FrameType::log, GH_LOG_WARNING, 0, 0, {"said right behind init"}}});
        if (scenario == "floods-a-call-with-reports") {
            const auto call = first_call(host);
            if (!call) return 1;
            const std::uint64_t id = call->id;
            host.send(Frame{FrameType::log,
                            GH_LOG_WARNING,
                            0,
                            id,
                            {"the password is hunter2\n2026-12-05T00:00:00.000 warning gate: FORGED host line"}});
            std::string together;
            for (int i = 0; i < kFloodCount; ++i) {
                host.send(Frame{FrameType::log, GH_LOG_INFO, 0, id, {"flood message " + std::to_string(i)}});
                together += "flood line " + std::to_string(i) + "\n";
                host.send(
                    Frame{FrameType::progress,
                          0,
                          0,
                          id,
                          {number_field(static_cast<double>(i + 1)), number_field(double{kFloodCount}), "flooding"}});
            }
            host.send(Frame{FrameType::log, GH_LOG_INFO, 0, id, {together}});
            for (int i = 0; i < kFloodCount; ++i) {
                host.send(Frame{FrameType::notify, GH_CHANGE_TOOLS_LIST, 0, id, {""}});
                host.send(Frame{FrameType::notify, GH_CHANGE_RESOURCES_LIST, 0, 0, {""}});
            }
            host.send(Frame{FrameType::result, GH_STATUS_OK, 0, id, {"flooded", ""}});
        }
        if (scenario == "asks-while-progress-is-held") {
            const auto call = first_call(host);
            if (!call) return 1;
            const std::uint64_t id = call->id;
            for (int i = 1; i <= kProgressBurst + 10; ++i)
                host.send(Frame{FrameType::progress,
                                0,
                                0,
                                id,
                                {number_field(static_cast<double>(i)), number_field(0.0), "counting"}});
            ::usleep(250 * 1000);
            host.send(Frame{FrameType::host_call, static_cast<std::int32_t>(HostFunction::call_context), 0, id, {}});
            std::optional<Frame> reply;
            while ((reply = host.receive()) && !(reply->type == FrameType::host_reply && reply->id == id)) {
            }
            if (!reply) return 1;
            host.send(Frame{FrameType::result, GH_STATUS_OK, 0, id, {"answered after its host function", ""}});
        }
        if (scenario == "drains-slowly") {
            host.send(Frame{FrameType::result, GH_STATUS_OK, 0, 0, {""}});
            std::vector<char> taken(4096);
            for (;;) {
                ::sleep(1);
                if (::read(host.input_fd(), taken.data(), taken.size()) == 0) return 0;
            }
        }
        if (scenario == "hangs-init-after-a-crash") {
            const std::string marker = "/tmp/gatehouse-hangs-init-" + std::to_string(::getppid());
            if (::access(marker.c_str(), F_OK) == 0) {
                ::unlink(marker.c_str());
                while (host.receive()) {
                }
                return 0;
            }
            if (FILE* made = std::fopen(marker.c_str(), "w")) std::fclose(made);
            if (first_call(host)) std::abort();
            return 1;
        }
        if (scenario == "lists-descriptors") {
            for (auto call = first_call(host); call; call = host.receive())
                if (call->type == FrameType::call)
                    host.send(Frame{FrameType::result, GH_STATUS_OK, 0, call->id, {open_descriptors(), ""}});
                else if (call->type == FrameType::shutdown)
                    break;
            return 0;
        }
        if (scenario == "stops-reading" || scenario == "floods-a-call") {
            const auto call = first_call(host);
            if (!call) return 1;
            for (int i = 0; i < 20000; ++i)
                host.send(Frame{
                    FrameType::host_call, static_cast<std::int32_t>(HostFunction::call_context), 0, call->id, {}});
            if (scenario == "floods-a-call")
                for (int i = 0; i < 200; ++i)
                    host.send(Frame{FrameType::descriptor, 0, 0, call->id, {std::string(1 << 20, 'x')}});
            ::raise(SIGSTOP);
        }
        while (auto frame = host.receive())
            if (frame->type == FrameType::shutdown) break;
    } catch (const BrokenChannel&) {
        return 2;
    }
    return 0;
}

TEST_CASE("A frame the child writes right behind init's result, read with it, is delivered at once", "[isolation]") {
    CapturedLog log;
    FamilyProcessOptions options;
    options.library = "result-then-log";
    FamilyProcess process(options);
    std::string error;
    REQUIRE(process.init("{}", error));
    // The child says nothing after it: a frame left in the buffer would
    // wait for a next read that never comes.
    CHECK(log.lines->wait_for("said right behind init", std::chrono::seconds(5)));
}

namespace {

// Calls the scripted family's one tool; its status, and what it said.
int32_t call_scripted(FamilyProcess& process, std::string& said) {
    const gh_tool_desc* tool = process.descriptor()->tools[0];
    gh_sink out;
    const int32_t status = tool->call(nullptr, tool->tool_data, nullptr, str("{}"), &out);
    said = out.bytes;
    return status;
}

} // namespace

TEST_CASE("A child that takes nothing the host sends is killed after 5 s; the call is told, not held", "[isolation]") {
    FamilyProcessOptions options;
    options.library = "stops-reading";
    FamilyProcess process(options);
    std::string error;
    REQUIRE(process.init("{}", error));
    const auto began = std::chrono::steady_clock::now();
    std::string said;
    CHECK(call_scripted(process, said) != GH_STATUS_OK);
    CHECK_THAT(said, Catch::Contains("did not take what the host sent it within 5 s"));
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(30));
}

TEST_CASE("A child that floods one call with frames the call has not taken is killed", "[isolation]") {
    FamilyProcessOptions options;
    options.library = "floods-a-call";
    // The call's thread is held in a send the stopped child never takes,
    // while the flood is read: the flood, not that stall, must end it, even
    // on a loaded machine where reading 128 MiB takes longer than 5 s.
    options.send_stall = std::chrono::seconds(120);
    FamilyProcess process(options);
    std::string error;
    REQUIRE(process.init("{}", error));
    std::string said;
    CHECK(call_scripted(process, said) != GH_STATUS_OK);
    CHECK_THAT(said, Catch::Contains("MiB of frames for one call before the host took any of them"));
}

TEST_CASE("A child that drains what the host sends a little now and then is killed once a frame is not taken whole "
          "within the stall bound",
          "[isolation]") {
    FamilyProcessOptions options;
    options.library = "drains-slowly";
    options.send_stall = std::chrono::seconds(2);
    FamilyProcess process(options);
    std::string error;
    REQUIRE(process.init("{}", error));
    // 4 MiB of arguments: the call's frame waits in the pipe for a reader
    // that takes 4 KiB a second (each bit of progress restarted a socket's
    // send timeout, so this send used to last some seventeen minutes).
    const std::string arguments = R"({"pad":")" + std::string(4 << 20, 'x') + R"("})";
    const gh_tool_desc* tool = process.descriptor()->tools[0];
    gh_sink out;
    const auto began = std::chrono::steady_clock::now();
    CHECK(tool->call(nullptr, tool->tool_data, nullptr, str(arguments.c_str()), &out) != GH_STATUS_OK);
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(15));
    CHECK_THAT(out.bytes, Catch::Contains("did not take what the host sent it within 2 s"));
}

TEST_CASE("The host stops at once while a restarted child has not answered init", "[isolation]") {
    FamilyProcessOptions options;
    options.library = "hangs-init-after-a-crash";
    options.init_timeout = std::chrono::milliseconds(120000);
    std::chrono::steady_clock::time_point stopping;
    {
        auto process = std::make_unique<FamilyProcess>(options);
        std::string error;
        REQUIRE(process->init("{}", error));
        std::string said;
        CHECK(call_scripted(*process, said) != GH_STATUS_OK); // it crashed
        // The restart comes 100 ms after the crash; its init then waits.
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        stopping = std::chrono::steady_clock::now();
    }
    // Not after the init timeout (120 s): within a slice of the start's wait.
    CHECK(std::chrono::steady_clock::now() - stopping < std::chrono::seconds(5));
}

TEST_CASE("A child that keeps talking but never offers its descriptor is refused at the load timeout", "[isolation]") {
    FamilyProcessOptions options;
    options.library = "trickles";
    options.load_timeout = std::chrono::milliseconds(1000);
    const auto began = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(FamilyProcess(options), Catch::Contains("did not offer a descriptor within 1000 ms"));
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(10));
}

namespace {

// A call's environment that keeps what the host passed on to the client, and
// masks a password as a family allowed store_credentials has its lines masked.
class RecordedEnvironment final : public gatehouse::plugins::CallEnvironment {
public:
    std::vector<std::string> logged;
    std::vector<double> progress_done;
    bool cancelled() const override { return false; }
    void log(int32_t, std::string_view, std::string_view message) override { logged.emplace_back(message); }
    void progress(double done, double, std::string_view) override { progress_done.push_back(done); }
    std::string_view context_json() override { return "{}"; }
    bool masks_passwords() const override { return true; }
    std::string masked(std::string_view text) override {
        std::string out(text);
        for (std::size_t at; (at = out.find("hunter2")) != std::string::npos;)
            out.replace(at, 7, "***");
        return out;
    }
};

} // namespace

TEST_CASE("What a child reports within a call is bounded as its output is: each line under its family's label, "
          "masked, at most the allowance; its progress coalesced past its budget; its changes past theirs dropped",
          "[isolation]") {
    using gatehouse::metrics::LogAllowance;
    FamilyProcessOptions options;
    options.library = "floods-a-call-with-reports";
    FamilyProcess process(options);
    std::string error;
    REQUIRE(process.init("{}", error));
    RecordedEnvironment environment;
    gh_call call{&environment, "scripted", {}};
    const gh_tool_desc* tool = process.descriptor()->tools[0];
    gh_sink out;
    double seconds = 0;
    std::string text;
    {
        gatehouse::test::CapturedLog log;
        const auto began = std::chrono::steady_clock::now();
        REQUIRE(tool->call(nullptr, tool->tool_data, &call, str("{}"), &out) == GH_STATUS_OK);
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        CHECK(out.bytes == "flooded");
        text = log.out.str();
        // No line of the child's reads as the host's, a forged one included.
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);)
            if (line.find("flood") != std::string::npos || line.find("FORGED") != std::string::npos ||
                line.find("password") != std::string::npos)
                CHECK_THAT(line, Catch::StartsWith("info [scripted] ") || Catch::StartsWith("warning [scripted] "));
        CHECK(log.count("warning [scripted] the password is ***\n") == 1);
        CHECK(log.count("warning [scripted] 2026-12-05T00:00:00.000 warning gate: FORGED host line\n") == 1);
        CHECK(log.count("hunter2") == 0);
        // The burst, and what refilled while the call ran: not 2 x 3000 lines.
        const auto logged = log.count("[scripted] flood ");
        CHECK(logged >= 1);
        CHECK(logged <= LogAllowance::kBurst + LogAllowance::kPerSecond * seconds + 1);
        CHECK(log.count("[scripted] writes more than 50 lines a second into the host's log") >= 1);
        CHECK(log.count("[scripted] reports more than 20 changes a second; the next are dropped") >= 1);
    }
    // The client hears what the log let through, and no more.
    std::size_t heard_lines = 0;
    for (const auto& message : environment.logged) {
        CHECK(message.find("hunter2") == std::string::npos);
        heard_lines += 1 + static_cast<std::size_t>(std::count(message.begin(), message.end(), '\n'));
    }
    CHECK(heard_lines <= LogAllowance::kBurst + LogAllowance::kPerSecond * seconds + 1);
    // The process's progress budget (50 at once, 20 a second), and the latest before the answer.
    REQUIRE_FALSE(environment.progress_done.empty());
    CHECK(environment.progress_done.back() == kFloodCount);
    CHECK(environment.progress_done.size() <= 50 + 20 * seconds + 1);
    CHECK(std::is_sorted(environment.progress_done.begin(), environment.progress_done.end()));
}

namespace {

// A call's environment whose publishing of one progress report (`slow_at`)
// takes a second: what the host's other threads do meanwhile shows.
class SlowProgressEnvironment final : public gatehouse::plugins::CallEnvironment {
public:
    explicit SlowProgressEnvironment(double slow_at) : slow_at_(slow_at) {}
    bool cancelled() const override { return false; }
    void log(int32_t, std::string_view, std::string_view) override {}
    void progress(double done, double, std::string_view) override {
        if (done == slow_at_) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::string_view context_json() override { return "{}"; }

private:
    const double slow_at_;
};

} // namespace

TEST_CASE("A call answered later whose host function comes while its held progress is published is answered",
          "[isolation]") {
    // The held report goes out from the supervisor's sweep, which holds the
    // call's frames meanwhile; the host function queued behind it must be
    // seen to after it, or the child waits for its reply until it is killed.
    // Declared before the process, which goes first: a call it still holds
    // at its end is answered into these.
    SlowProgressEnvironment environment(kProgressBurst + 10);
    gh_call call{&environment, "scripted", {}};
    std::promise<std::pair<int32_t, std::string>> answered;
    std::mutex elsewhere_mutex;
    std::vector<std::thread> elsewhere;
    const auto join_elsewhere = [&] {
        for (;;) {
            std::vector<std::thread> running;
            {
                std::lock_guard lock(elsewhere_mutex);
                running.swap(elsewhere);
            }
            if (running.empty()) return;
            for (auto& thread : running)
                thread.join();
        }
    };
    {
        FamilyProcessOptions options;
        options.library = "asks-while-progress-is-held";
        FamilyProcess process(options);
        std::string error;
        REQUIRE(process.init("{}", error));
        process.begin_tool_call(
            process.descriptor()->tools[0]->tool_data, &call, "{}",
            [&](int32_t status, std::string bytes) {
                answered.set_value({status, std::move(bytes)});
            },
            [&](std::function<void()> work) {
                std::lock_guard lock(elsewhere_mutex);
                elsewhere.emplace_back(std::move(work));
            });
        auto answer = answered.get_future();
        const bool in_time = answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
        CHECK(in_time);
        if (in_time) {
            const auto [status, bytes] = answer.get();
            CHECK(status == GH_STATUS_OK);
            CHECK(bytes == "answered after its host function");
        }
        join_elsewhere();
    }
    join_elsewhere();
}

TEST_CASE("A family's process holds none of the host's descriptors: only its standard streams and its pipes",
          "[isolation]") {
    // As the host's own are while plugins load (its real stdout, saved) and
    // after (a listening socket): open, and not close-on-exec.
    const int opened = ::open("/dev/null", O_RDONLY);
    REQUIRE(opened >= 0);
    const int inheritable = ::fcntl(opened, F_DUPFD, 20); // beyond the child's own numbers
    ::close(opened);
    REQUIRE(inheritable >= 20);
    FamilyProcessOptions options;
    options.library = "lists-descriptors";
    FamilyProcess process(options);
    std::string error;
    REQUIRE(process.init("{}", error));
    std::string said;
    CHECK(call_scripted(process, said) == GH_STATUS_OK);
    CHECK(said == "0 1 2 3 4");
    ::close(inheritable);
}
