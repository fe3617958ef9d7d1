#include "plugins/host_api.hpp"

#include "plugins/abi_text.hpp"
#include "plugins/call_environment.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::plugins {

namespace {

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
        auto text = abi_view(message);
        std::string masked;
        if (call && call->environment && call->environment->masks_passwords()) {
            masked = call->environment->masked(text);
            text = masked;
        }
        const auto family = call ? call->family : std::string_view("plugin");
        spdlog::log(log_level(level), "[{}] {}", family, text);
        if (call && call->environment) call->environment->log(level, family, text);
    } catch (...) {
    }
}

void progress(gh_call* call, double done, double total, gh_str message) noexcept {
    try {
        if (call && call->environment && call->environment->masks_passwords())
            call->environment->progress(done, total, call->environment->masked(abi_view(message)));
        else if (call && call->environment)
            call->environment->progress(done, total, abi_view(message));
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

gh_sink* sink_new(gh_call* call) noexcept {
    try {
        return call ? &call->answer_sinks.emplace_back() : nullptr;
    } catch (...) {
        return nullptr;
    }
}

gh_str sink_bytes(gh_sink* sink) noexcept {
    return sink ? gh_str{sink->bytes.data(), sink->bytes.size()} : gh_str{nullptr, 0};
}

// A host service's answer into the plugin's sink; a service that throws
// is a fault of the host, logged, and GH_STATUS_INTERNAL to the plugin.
template <class Service>
int32_t answer_service(const char* what, gh_call* call, gh_sink* out, Service&& service) noexcept {
    try {
        if (!call || !call->environment || !out) return GH_STATUS_INTERNAL;
        plugins::ServiceAnswer answer = service(*call->environment);
        out->bytes.append(answer.json);
        return answer.status;
    } catch (const std::exception& e) {
        spdlog::error("[{}] {}: {}", call ? call->family : "plugin", what, e.what());
    } catch (...) {
    }
    return GH_STATUS_INTERNAL;
}

int32_t session_describe(gh_call* call, gh_str handle, gh_sink* out) noexcept {
    return answer_service("session_describe", call, out,
                          [&](CallEnvironment& environment) { return environment.describe_session(abi_view(handle)); });
}

int32_t session_open(gh_call* call, gh_str topic, gh_sink* out) noexcept {
    return answer_service("session_open", call, out,
                          [&](CallEnvironment& environment) { return environment.open_session(abi_view(topic)); });
}

int32_t rules_accept(gh_call* call, gh_str handle, gh_str code, gh_sink* out) noexcept {
    return answer_service("rules_accept", call, out, [&](CallEnvironment& environment) {
        return environment.accept_rules(abi_view(handle), abi_view(code));
    });
}

int32_t critical_read(gh_call* call, gh_str item_ids, gh_sink* out) noexcept {
    return answer_service("critical_read", call, out, [&](CallEnvironment& environment) {
        return environment.record_critical_read(abi_view(item_ids));
    });
}

// The hosts alive in this process, for a change reported outside any call.
std::mutex g_hosts_mutex;
std::vector<const HostServices*> g_hosts;

void notify_changed(gh_call* call, int32_t kind, gh_str uri) noexcept {
    try {
        if (kind < GH_CHANGE_TOOLS_LIST || kind > GH_CHANGE_RESOURCE_UPDATED) {
            spdlog::warn("a plugin reported a change of unknown kind {}; ignored", kind);
            return;
        }
        const std::string_view changed_uri = kind == GH_CHANGE_RESOURCE_UPDATED ? abi_view(uri) : std::string_view();
        if (call && call->host) {
            if (call->host->changed) call->host->changed(kind, changed_uri);
            return;
        }
        std::vector<ChangeSink> sinks;
        {
            std::lock_guard lock(g_hosts_mutex);
            for (const HostServices* host : g_hosts)
                if (host->changed) sinks.push_back(host->changed);
        }
        for (const auto& sink : sinks)
            sink(kind, changed_uri);
    } catch (...) {
    }
}

gh_str input_responses(gh_call* call) noexcept {
    const std::string_view text = call ? call->input_responses : std::string_view("{}");
    return gh_str{text.data(), text.size()};
}

gh_str request_state(gh_call* call) noexcept {
    const std::string_view text = call ? call->request_state : std::string_view();
    return gh_str{text.data(), text.size()};
}

constexpr std::size_t kMaxStateKeyBytes = 512;
constexpr std::size_t kMaxStateValueBytes = 1024 * 1024;

// Each family's keys live under its own prefix, apart from the host's keys
// (session/, session-topic/) and every other family's.
std::string family_key(const gh_call* call, gh_str key) {
    return "family/" + std::string(call->family) + "/" + std::string(abi_view(key));
}

// The state backend of the call's host (checked non-null by valid_key's caller).
state::StateBackend* family_state(const gh_call* call) {
    return call->host ? call->host->family_state : nullptr;
}

bool valid_key(gh_call* call, gh_str key) {
    return call && key.ptr && key.len > 0 && key.len <= kMaxStateKeyBytes;
}

// state_get and state_take answer alike: the value into the sink, or NOT_FOUND.
int32_t read_state(const char* what, gh_call* call, gh_str key, gh_sink* out,
                   std::optional<std::string> (state::StateBackend::*read)(std::string_view)) noexcept {
    try {
        if (!valid_key(call, key) || !out) return GH_STATUS_INVALID_ARGS;
        auto* backend = family_state(call);
        if (!backend) return GH_STATUS_INTERNAL;
        auto value = (backend->*read)(family_key(call, key));
        if (!value) return GH_STATUS_NOT_FOUND;
        out->bytes.append(*value);
        return GH_STATUS_OK;
    } catch (const std::exception& e) {
        spdlog::error("[{}] {}: {}", call ? call->family : "plugin", what, e.what());
    } catch (...) {
    }
    return GH_STATUS_INTERNAL;
}

int32_t state_get(gh_call* call, gh_str key, gh_sink* out) noexcept {
    return read_state("state_get", call, key, out, &state::StateBackend::get);
}

int32_t state_put(gh_call* call, gh_str key, gh_str value, uint64_t ttl_ms) noexcept {
    try {
        if (!valid_key(call, key) || value.len > kMaxStateValueBytes || (!value.ptr && value.len > 0))
            return GH_STATUS_INVALID_ARGS;
        auto* backend = family_state(call);
        if (!backend) return GH_STATUS_INTERNAL;
        // A TTL beyond what a signed millisecond count holds means "a very long time", not "never".
        const auto ttl = std::chrono::milliseconds(static_cast<std::int64_t>(
            std::min<uint64_t>(ttl_ms, static_cast<uint64_t>(std::numeric_limits<std::int64_t>::max() / 2))));
        backend->put(family_key(call, key), abi_view(value), ttl);
        return GH_STATUS_OK;
    } catch (const std::exception& e) {
        spdlog::error("[{}] state_put: {}", call ? call->family : "plugin", e.what());
    } catch (...) {
    }
    return GH_STATUS_INTERNAL;
}

int32_t state_erase(gh_call* call, gh_str key) noexcept {
    try {
        if (!valid_key(call, key)) return GH_STATUS_INVALID_ARGS;
        auto* backend = family_state(call);
        if (!backend) return GH_STATUS_INTERNAL;
        return backend->erase(family_key(call, key)) ? GH_STATUS_OK : GH_STATUS_NOT_FOUND;
    } catch (const std::exception& e) {
        spdlog::error("[{}] state_erase: {}", call ? call->family : "plugin", e.what());
    } catch (...) {
    }
    return GH_STATUS_INTERNAL;
}

// ABI 1.4 slots; implemented with the backend's atomic take and the store
// credentials grant.
int32_t state_take(gh_call* call, gh_str key, gh_sink* out) noexcept {
    return read_state("state_take", call, key, out, &state::StateBackend::take);
}

int32_t store_credentials(gh_call* call, gh_sink* out) noexcept {
    return answer_service("store_credentials", call, out,
                          [](CallEnvironment& environment) { return environment.store_credentials(); });
}

const gh_host_api kHostApi = {
    sizeof(gh_host_api), GH_ABI_VERSION,    &sink_write,      &log,
    &progress,           &is_cancelled,     &call_context,    &sink_new,
    &sink_bytes,         &session_describe, &session_open,    &rules_accept,
    &critical_read,      &notify_changed,   &input_responses, &request_state,
    &state_get,          &state_put,        &state_erase,     &state_take,
    &store_credentials,
};

} // namespace

spdlog::level::level_enum log_level(int32_t level) {
    switch (level) {
    case GH_LOG_DEBUG: return spdlog::level::debug;
    case GH_LOG_INFO:
    case GH_LOG_NOTICE: return spdlog::level::info;
    case GH_LOG_WARNING: return spdlog::level::warn;
    case GH_LOG_ERROR: return spdlog::level::err;
    default: return spdlog::level::critical;
    }
}

const gh_host_api* host_api() {
    return &kHostApi;
}

ChangesOutsideCalls::ChangesOutsideCalls(const HostServices& host) : host_(host) {
    std::lock_guard lock(g_hosts_mutex);
    g_hosts.push_back(&host_);
}

ChangesOutsideCalls::~ChangesOutsideCalls() {
    std::lock_guard lock(g_hosts_mutex);
    g_hosts.erase(std::remove(g_hosts.begin(), g_hosts.end(), &host_), g_hosts.end());
}

} // namespace gatehouse::plugins
