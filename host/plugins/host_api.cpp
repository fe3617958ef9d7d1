#include "plugins/host_api.hpp"

#include "plugins/call_environment.hpp"

#include <spdlog/spdlog.h>

#include <string_view>

namespace gatehouse::plugins {

namespace {

std::string_view as_view(gh_str s) { return s.ptr ? std::string_view(s.ptr, s.len) : std::string_view(); }

spdlog::level::level_enum spd_level(int32_t level) {
    switch (level) {
    case GH_LOG_DEBUG: return spdlog::level::debug;
    case GH_LOG_INFO:
    case GH_LOG_NOTICE: return spdlog::level::info;
    case GH_LOG_WARNING: return spdlog::level::warn;
    case GH_LOG_ERROR: return spdlog::level::err;
    default: return spdlog::level::critical;
    }
}

void sink_write(gh_sink* sink, gh_str bytes) noexcept {
    if (!sink || !bytes.ptr) return;
    try {
        sink->bytes.append(bytes.ptr, bytes.len);
    } catch (...) {
        // Out of memory while copying plugin output: the call's result will be
        // incomplete JSON and is refused by the host as malformed.
    }
}

void log(gh_call* call, int32_t level, gh_str message) noexcept {
    try {
        const auto text = as_view(message);
        const auto family = call ? call->family : std::string_view("plugin");
        spdlog::log(spd_level(level), "[{}] {}", family, text);
        if (call && call->environment) call->environment->log(level, family, text);
    } catch (...) {
    }
}

void progress(gh_call* call, double done, double total, gh_str message) noexcept {
    try {
        if (call && call->environment) call->environment->progress(done, total, as_view(message));
    } catch (...) {
    }
}

int32_t is_cancelled(gh_call* call) noexcept {
    return call && call->environment && call->environment->cancelled() ? 1 : 0;
}

gh_str call_context(gh_call* call) noexcept {
    try {
        if (call && call->environment) {
            auto json = call->environment->context_json();
            return gh_str{json.data(), json.size()};
        }
    } catch (...) {
    }
    static constexpr std::string_view empty = "{}";
    return gh_str{empty.data(), empty.size()};
}

const gh_host_api kHostApi = {
    sizeof(gh_host_api), GH_ABI_VERSION, &sink_write, &log, &progress, &is_cancelled, &call_context,
};

} // namespace

const gh_host_api* host_api() { return &kHostApi; }

} // namespace gatehouse::plugins
