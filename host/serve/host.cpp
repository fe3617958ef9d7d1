#include "serve/host.hpp"
#include "serve/host_status.hpp"

#include "isolation/family_process.hpp"
#include "upstream/upstream_family.hpp"

#include "cli/host_setup.hpp"
#include "cli/stdout_diversion.hpp"
#include "gate/make_gate.hpp"
#include "limits/argument_bounds.hpp"
#include "limits/local_buckets.hpp"
#include "limits/redis_buckets.hpp"
#include "mrtr/state_keys.hpp"
#include "state/counted_backend.hpp"
#include "state/redis_client.hpp"
#include "transport/stdio_transport.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace gatehouse::serve {

namespace {

metrics::Observability::Settings observability_settings(const config::Config& config) {
    metrics::Observability::Settings settings;
    settings.metrics = config.metrics;
    settings.audit = config.audit;
    settings.tracing = config.tracing;
    settings.service_name = config.tracing.service_name;
    settings.service_version = GATEHOUSE_VERSION;
    settings.instance = config.http.instance_name;
    return settings;
}

std::vector<std::string> family_names(const plugins::ToolRegistry& registry) {
    std::vector<std::string> names;
    for (const auto& f : registry.families())
        names.push_back(f.family);
    return names;
}

} // namespace

Host::Host(config::Config config, Transports transports) : config_(std::move(config)), transports_(transports) {
    try {
        observability_ = std::make_unique<metrics::Observability>(observability_settings(config_));
    } catch (const std::exception& e) {
        throw HostError(e.what(), 1);
    }
    // The sessions' SQLite file opens on a thread of its own while the
    // plugins load: a millisecond of start-up that needs nothing from them.
    // With Redis, one client (one pool) serves the backend, the bus and the
    // rate limits' buckets.
    std::future<std::unique_ptr<state::StateBackend>> opening_state;
    if (config_.session.configured && config_.session.backend != "memory")
        opening_state = std::async(std::launch::async, [this, &session = config_.session] {
            if (session.backend != "redis") return state::make_sqlite_backend(session.state_file.string());
            redis_ = std::make_shared<state::RedisClient>(session.redis); // read only after get()
            return state::make_redis_backend(redis_);
        });
    registry_ = load_families();
    sessions_ = open_sessions(opening_state);
    services_.family_state = family_state();
    gate_ = gate::make_gate(config_.license, family_names(*registry_->current()), sessions_.get(), config_.gate);
    bus_ = open_bus();
    pool_ = make_pool();
    state_sealer_ = make_state_sealer();
    server_ = make_server();
    registry_->watch([server = server_.get()](const plugins::ToolRegistry&, const plugins::RegistryChanges& changes) {
        server->registry_changed(changes);
    });
    reload(config_);
    follow_upstreams();
    services_.changed = publish_changes();
    changes_outside_calls_.emplace(services_);
    if (transports_.http) http_ = listen_http();
    add_gauges();
    if (config_.metrics.own_listener()) ops_ = listen_ops();
}

Host::~Host() = default;

Host::UpstreamsStop::~UpstreamsStop() {
    // What an upstream's supervisor hears changes the registry, which the
    // parts destroyed after this are about to stop reading.
    if (!host.registry_) return;
    host.registry_->close();
    for (const auto& plugin : host.registry_->current()->plugins())
        if (auto* upstream = plugin->upstream()) upstream->retire();
}

std::unique_ptr<plugins::LiveRegistry> Host::load_families() {
    plugins::LoadReport report;
    std::unique_ptr<plugins::ToolRegistry> registry;
    {
        cli::StdoutDiversion plugins_print_to_stderr;
        registry = cli::load_plugins(config_, report, {.wait_for_upstreams = true});
    }
    observability_->plugin_load_failures(report.failures.size());
    {
        std::lock_guard lock(not_loaded_mutex_);
        not_loaded_ = report.failures;
    }
    observability_->families_loaded(registry->families().size());
    if (config_.strict && !report.failures.empty())
        throw HostError(std::to_string(report.failures.size()) +
                            " plugin(s) failed to load and the configuration is strict; not serving",
                        1);
    families_config_ = config_;
    return std::make_unique<plugins::LiveRegistry>(std::move(registry));
}

// Each upstream family's offer, as its server lists anew, becomes its entry
// in a new registry; the first time also for what it listed before anyone
// listened.
void Host::follow_upstreams() {
    for (const auto& plugin : registry_->current()->plugins())
        if (auto* upstream = plugin->upstream()) follow_upstream(*upstream);
}

void Host::follow_upstream(upstream::UpstreamFamily& upstream) {
    upstream.on_offer_changed([this, name = upstream.name()] { take_upstream_offer(name); });
    take_upstream_offer(upstream.name());
}

void Host::take_upstream_offer(const std::string& name) {
    auto lock = registry_->change_lock();
    if (registry_->closed(lock)) return;
    const auto serving = registry_->current();
    const auto* entry = serving->entry(name);
    if (!entry || !entry->plugin->upstream()) return; // removed meanwhile
    const auto offer = entry->plugin->upstream()->offer();
    if (entry->listing.get() == static_cast<const void*>(offer.get())) return; // served as it is
    auto relisted = plugins::PluginLoader::relist_upstream(*entry, families_config_, *serving);
    spdlog::info("upstream '{}': {} tool(s), {} resource(s), {} prompt(s) served", name, relisted->tools.size(),
                 relisted->offer.resources.size(), relisted->offer.prompts.size());
    registry_->publish(plugins::with_family(*serving, name, std::move(relisted)), lock);
}

namespace {

// What upstream families are listed and connected under after a re-read:
// the configuration the host started with (the gate, sessions, limits, the
// data folder: what only a restart changes, report_unapplied says so), with
// the re-read's upstreams and the domains of the families they name. Else
// an edit reported as waiting for a restart would reach the upstreams' tools
// alone (a session section taken out dropped their `session` argument while
// the gate still asked for it).
config::Config upstream_view(const config::Config& started, const config::Config& fresh) {
    config::Config view = started;
    view.upstreams = fresh.upstreams;
    for (const auto& entry : fresh.upstreams) {
        if (auto domain = fresh.domains.find(entry.name); domain != fresh.domains.end())
            view.domains[entry.name] = domain->second;
        else
            view.domains.erase(entry.name);
    }
    return view;
}

} // namespace

std::vector<plugins::LoadFailure> Host::not_loaded() const {
    std::lock_guard lock(not_loaded_mutex_);
    return not_loaded_;
}

void Host::upstreams_not_loaded(std::vector<plugins::LoadFailure> failed, bool replacing) {
    observability_->plugin_load_failures(failed.size());
    std::lock_guard lock(not_loaded_mutex_);
    if (replacing) std::erase_if(not_loaded_, [](const plugins::LoadFailure& f) { return f.upstream; });
    for (auto& failure : failed)
        not_loaded_.push_back(std::move(failure));
}

namespace {

plugins::LoadFailure upstream_failure(const config::UpstreamEntry& entry, std::string reason) {
    return {plugins::upstream_label(entry.name), std::move(reason), entry.where, true};
}

} // namespace

// upstreams: as the re-read configuration says. An entry removed (or its
// domain disabled) leaves, its server disconnected; one added joins; one
// changed connects anew; the others list again under the new domains.
void Host::reload_upstreams(const config::Config& fresh) {
    const config::Config view = upstream_view(config_, fresh);
    // Every configured entry that is not in the registry is tried again
    // below (one that failed before among them), and those no longer
    // configured are gone: what failed before is replaced by what fails now.
    std::vector<plugins::LoadFailure> failed;
    std::vector<upstream::UpstreamFamily*> gone;
    std::vector<std::shared_ptr<const plugins::FamilyEntry>> keep_until_retired;
    std::vector<const config::UpstreamEntry*> adding;
    {
        auto lock = registry_->change_lock();
        if (registry_->closed(lock)) return;
        const auto before = registry_->current();
        auto serving = before;
        const auto wanted = [&fresh](const std::string& name) -> const config::UpstreamEntry* {
            auto domain = fresh.domains.find(name);
            if (domain != fresh.domains.end() && !domain->second.enabled) return nullptr;
            for (const auto& entry : fresh.upstreams)
                if (entry.name == name) return &entry;
            return nullptr;
        };
        for (const auto& e : before->entries()) {
            auto* upstream = e->plugin->upstream();
            if (!upstream) continue;
            const auto* now = wanted(e->info.family);
            if (now && now->same_as(upstream->entry())) continue;
            spdlog::info("upstream '{}' {}", e->info.family,
                         now ? "changed in the configuration: connecting anew" : "is no longer configured: it leaves");
            gone.push_back(upstream);
            keep_until_retired.push_back(e);
            serving = plugins::with_family(*serving, e->info.family, nullptr);
        }
        families_config_ = view;
        for (const auto& entry : fresh.upstreams) {
            if (!wanted(entry.name)) continue;
            if (const auto* e = serving->entry(entry.name)) {
                if (!e->plugin->upstream()) {
                    spdlog::error("upstream '{}' ({}) is not served: family '{}' is already served by {}", entry.name,
                                  entry.where.str(), entry.name, e->info.path);
                    failed.push_back(
                        upstream_failure(entry, "family '" + entry.name + "' is already served by " + e->info.path));
                } else // kept: its tools again, under the domains as they read now
                    serving = plugins::with_family(
                        *serving, entry.name, plugins::PluginLoader::relist_upstream(*e, families_config_, *serving));
                continue;
            }
            adding.push_back(&entry);
        }
        // Before the change is seen: whoever finds it finds this too.
        upstreams_not_loaded(std::exchange(failed, {}), true);
        registry_->publish(std::move(serving), lock);
    }
    // Outside the change lock: a supervisor being joined may be waiting for
    // it, and a server slow to answer holds up no other family's listing.
    for (auto* upstream : gone)
        upstream->retire();
    // An entry that does not join is dropped at the end, outside the lock,
    // where its supervisor is joined.
    // All at once, as at start: a re-read takes as long as its slowest server.
    std::vector<std::shared_ptr<const plugins::FamilyEntry>> opened;
    std::vector<std::future<std::shared_ptr<const plugins::FamilyEntry>>> opening;
    for (const auto* entry : adding)
        opening.push_back(std::async(std::launch::async, [this, entry, &view] {
            // A stop meanwhile ends the connecting at once: the host's teardown waits for this re-read.
            return plugins::PluginLoader::open_upstream(*entry, view, [this] { return stopping_.load(); });
        }));
    for (std::size_t i = 0; i < opening.size(); ++i) {
        try {
            if (auto added = opening[i].get()) opened.push_back(std::move(added));
        } catch (const std::exception& e) {
            spdlog::error("upstream '{}' ({}) is not served: {}", adding[i]->name, adding[i]->where.str(), e.what());
            failed.push_back(upstream_failure(*adding[i], e.what()));
        }
    }
    if (opened.empty()) {
        upstreams_not_loaded(std::move(failed), false);
        return;
    }
    std::vector<upstream::UpstreamFamily*> joined;
    {
        auto lock = registry_->change_lock();
        if (registry_->closed(lock)) return;
        auto serving = registry_->current();
        for (const auto& added : opened) {
            try {
                plugins::PluginLoader::check_joins(*added, *serving);
            } catch (const std::exception& e) {
                spdlog::error("upstream '{}' is not served: {}", added->info.family, e.what());
                for (const auto* entry : adding)
                    if (entry->name == added->info.family) failed.push_back(upstream_failure(*entry, e.what()));
                continue;
            }
            joined.push_back(added->plugin->upstream());
            serving = plugins::with_family(*serving, added->info.family, added);
        }
        // Before the tools are seen: whoever finds them finds this too.
        upstreams_not_loaded(std::move(failed), false);
        registry_->publish(std::move(serving), lock);
    }
    // Said once it is so: a client that reads the line and lists finds the tools.
    for (const auto& added : opened)
        if (auto* upstream = added->plugin->upstream();
            std::find(joined.begin(), joined.end(), upstream) != joined.end())
            spdlog::info("upstream '{}' joins ({} tool(s){})", added->info.family, added->tools.size(),
                         upstream->serving() ? "" : "; its server is not reachable yet");
    for (auto* upstream : joined)
        follow_upstream(*upstream);
}

std::unique_ptr<session::SessionService>
Host::open_sessions(std::future<std::unique_ptr<state::StateBackend>>& opening) {
    if (!config_.session.configured) return nullptr;
    std::unique_ptr<state::StateBackend> backend;
    try {
        backend = opening.valid() ? opening.get() : state::make_memory_backend();
    } catch (const state::BackendError& e) {
        throw HostError(e.what(), 1);
    }
    // Every failure of the backend is counted, whichever part met it.
    backend = state::make_counted_backend(std::move(backend), [observability = observability_.get()](const char* name) {
        observability->backend_error(name);
    });
    // An environment secret is for the local user only: never for callers a host reaches over HTTP.
    auto sessions = std::make_unique<session::SessionService>(config_.session, std::move(backend), *registry_,
                                                              transports_.stdio && !transports_.http);
    spdlog::info("sessions: {} backend, {} store", sessions->table().backend_name(),
                 config_.session.pinned() ? "pinned" : "program-chosen");
    return sessions;
}

// Families keep what outlives a call in the same backend as sessions, so
// every instance sharing it answers alike.
state::StateBackend* Host::family_state() {
    if (sessions_) return &sessions_->table().backend();
    families_only_state_ = state::make_memory_backend();
    return families_only_state_.get();
}

// Changes reach the subscribers of every instance sharing the Redis of
// session.backend: redis; else those of this process.
std::shared_ptr<state::NotificationBus> Host::open_bus() const {
    if (!redis_) return std::make_shared<state::NotificationBus>();
    try {
        return state::make_redis_bus(redis_);
    } catch (const state::BackendError& e) {
        throw HostError(e.what(), 1);
    }
}

// rate_limits count in the Redis of session.backend: redis, so every
// instance sharing it grants a principal what one host would; else in this
// process.
std::shared_ptr<limits::BucketStore> Host::rate_buckets() const {
    if (!config_.rate_limits.any() || !redis_) return std::make_shared<limits::LocalBuckets>();
    try {
        return limits::make_redis_buckets(redis_);
    } catch (const state::BackendError& e) {
        throw HostError(e.what(), 1);
    }
}

std::unique_ptr<protocol::RequestPool> Host::make_pool() const {
    const auto& limits = config_.limits;
    if (limits.max_in_flight_per_plugin >= limits.workers)
        spdlog::warn("limits.max_in_flight_per_plugin ({}) is not below limits.workers ({}): one plugin that never "
                     "returns can hold every worker",
                     limits.max_in_flight_per_plugin, limits.workers);
    // Over stdio the reading of stdin runs on the pool too (leader/follower,
    // transport/stdio_transport.cpp): one worker more keeps limits.workers
    // for calls.
    return std::make_unique<protocol::RequestPool>(limits.workers + (transports_.stdio ? 1 : 0),
                                                   limits::worker_stack_bytes(limits.max_string_bytes));
}

std::shared_ptr<const mrtr::RequestStateSealer> Host::make_state_sealer() const {
    try {
        return mrtr::make_request_state_sealer(config_.input_requests, config_.server.name);
    } catch (const std::exception& e) {
        throw HostError(e.what(), 1);
    }
}

std::unique_ptr<protocol::McpServer> Host::make_server() {
    protocol::ServerOptions options;
    options.rate_limits = config_.rate_limits;
    options.rate_buckets = rate_buckets();
    options.input_requests = config_.input_requests;
    options.state_sealer = state_sealer_;
    options.sessions = sessions_.get();
    options.host = &services_;
    options.bus = bus_;
    options.observability = observability_.get();
    // Tasks live where families keep their values (the sessions' backend:
    // SQLite on one machine, Redis for a cluster), and tasks/get's pace is
    // counted in that Redis too.
    options.tasks = config_.tasks;
    options.task_state = services_.family_state;
    if (redis_) try {
            options.task_buckets = limits::make_redis_buckets(redis_);
        } catch (const state::BackendError& e) {
            throw HostError(e.what(), 1);
        }
    return std::make_unique<protocol::McpServer>(*registry_, gate_, config_.server, config_.limits, *pool_,
                                                 std::move(options));
}

// What families report as changed reaches the open subscriptions.
plugins::ChangeSink Host::publish_changes() {
    return [server = server_.get()](int32_t kind, std::string_view uri) {
        using Kind = state::Change::Kind;
        const Kind k = kind == GH_CHANGE_TOOLS_LIST       ? Kind::tools_list
                       : kind == GH_CHANGE_PROMPTS_LIST   ? Kind::prompts_list
                       : kind == GH_CHANGE_RESOURCES_LIST ? Kind::resources_list
                                                          : Kind::resource_updated;
        server->bus().publish({k, std::string(uri)});
    };
}

std::unique_ptr<transport::HttpTransport> Host::listen_http() {
    // Pages' form tokens are sealed with the same keys as requestState, so
    // every instance of a cluster accepts the forms of the others.
    auto http = std::make_unique<transport::HttpTransport>(*server_, *registry_, config_.http, config_.limits,
                                                           config_.auth, state_sealer_);
    try {
        http->listen();
    } catch (const std::exception& e) {
        throw HostError(e.what(), 1);
    }
    // Behind a proxy the listen address is not where people reach the
    // host: http.public_url, when set, is.
    const auto& listen_host = config_.http.listen_host;
    services_.pages_origin =
        !config_.http.public_url.empty()
            ? config_.http.public_url
            : "http://" + (listen_host.find(':') != std::string::npos ? "[" + listen_host + "]" : listen_host) + ":" +
                  std::to_string(http->port());
    return http;
}

// What is read when scraped: the host's parts that count themselves.
void Host::add_gauges() {
    auto& registry = observability_->registry();
    using Series = metrics::ReadFamily::Series;
    registry.add<metrics::ReadFamily>("gatehouse_calls_in_flight",
                                      "Requests running plugin code, accepted and not yet answered.",
                                      std::vector<std::string>{}, [server = server_.get()] {
                                          return Series{{{}, double(server->in_flight())}};
                                      });
    registry.add<metrics::ReadFamily>("gatehouse_listen_streams_open",
                                      "subscriptions/listen streams open (2026-07-28).", std::vector<std::string>{},
                                      [server = server_.get()] {
                                          return Series{{{}, double(server->open_subscriptions())}};
                                      });
    // Families with isolation: process: how often each one's process died,
    // and whether one serves it now (0 while it waits out its backoff).
    const auto processes = [live = registry_.get()](auto&& each) {
        const auto families = live->current();
        for (const auto& plugin : families->plugins())
            if (plugin->process()) each(plugin->family(), *plugin->process());
    };
    registry.add<metrics::ReadFamily>(
        "gatehouse_family_crashes_total", "Times the process of a family with isolation: process died.",
        std::vector<std::string>{"family"},
        [processes] {
            Series series;
            processes([&](const std::string& family, const isolation::FamilyProcess& process) {
                series.push_back({{family}, double(process.crashes())});
            });
            return series;
        },
        "counter");
    registry.add<metrics::ReadFamily>(
        "gatehouse_family_process_up", "1 while a process serves the family (isolation: process), else 0.",
        std::vector<std::string>{"family"}, [processes] {
            Series series;
            processes([&](const std::string& family, const isolation::FamilyProcess& process) {
                series.push_back({{family}, process.serving() ? 1.0 : 0.0});
            });
            return series;
        });
    registry.add<metrics::ReadFamily>(
        "gatehouse_upstream_up", "1 while the MCP server of a family of upstreams: is connected, else 0.",
        std::vector<std::string>{"family"}, [live = registry_.get()] {
            Series series;
            const auto families = live->current();
            for (const auto& plugin : families->plugins())
                if (const auto* upstream = plugin->upstream())
                    series.push_back({{plugin->family()}, upstream->serving() ? 1.0 : 0.0});
            return series;
        });
    if (!http_) return;
    registry.add<metrics::ReadFamily>("gatehouse_http_connections_open", "HTTP connections open.",
                                      std::vector<std::string>{}, [http = http_.get()] {
                                          return Series{{{}, double(http->service().connections.load())}};
                                      });
    registry.add<metrics::ReadFamily>(
        "gatehouse_legacy_sessions_open",
        "2025-11-25 sessions (Mcp-Session-Id) this instance holds; with a shared backend, those it has seen.",
        std::vector<std::string>{}, [http = http_.get()] {
            return Series{{{}, double(http->service().legacy_sessions.size())}};
        });
}

std::unique_ptr<transport::OpsListener> Host::listen_ops() {
    try {
        return std::make_unique<transport::OpsListener>(
            config_.metrics, *observability_,
            transport::OpsListener::Probes{[server = server_.get()] { return server->readiness(); },
                                           [this] { return stopping_.load(); },
                                           [this] {
                                               // The registry first: a re-read changes the list before it
                                               // publishes, so this list is at least as new as the registry.
                                               const auto registry = registry_->current();
                                               return host_status(*registry, not_loaded());
                                           }});
    } catch (const std::exception& e) {
        throw HostError(e.what(), 1);
    }
}

int Host::run(transport::StopSignal& stop) {
    stop.on_stop([this] { stopping_ = true; });
    if (transports_.stdio && http_) {
        // Both: HTTP serves on its own thread; stdin closing ends both, as
        // a stop signal does.
        std::thread http_thread([&] { http_->run(stop); });
        transport::StdioTransport stdio(*server_, *pool_, config_.limits.max_message_bytes);
        const int status = stdio.run(stop);
        stop.request();
        http_thread.join();
        return status;
    }
    if (http_) {
        http_->run(stop);
        return 0;
    }
    transport::StdioTransport stdio(*server_, *pool_, config_.limits.max_message_bytes);
    const int status = stdio.run(stop);
    // stdin's end is a stop like a signal: a re-read adding an upstream is
    // abandoned, and a signal that comes during the teardown finds the stop
    // already requested (nothing left to reach this host through).
    stop.request();
    return status;
}

void Host::flush_audit() const {
    if (observability_) observability_->flush_audit();
}

bool Host::stop_workers(std::chrono::milliseconds grace) {
    // Tasks first: their records say the host stopped, before the pool goes.
    const bool tasks_ended = server_->stop_tasks(grace);
    // Calls answered later before the pool: the host functions their
    // families call back meanwhile run on it.
    const bool later_answered = server_->await_later_answers(grace);
    const bool joined = pool_->stop(grace) && tasks_ended && later_answered;
    changes_outside_calls_.reset();
    return joined;
}

// What the YAML says tools/list shows: each domain's exposure, and a tool's
// own (domains.<family>.tools.<tool>.exposure) over its family's.
// A re-read applies the upstreams (with their domains entries) and every
// domain's exposure; whatever else changed holds only after a restart. It is
// named, so an operator who edited it (took a leaked API key out of
// auth.api_keys, say) does not believe it applied.
void Host::report_unapplied(const config::Config& fresh) const {
    std::set<std::string> applied{"upstreams"};
    for (const auto* upstreams : {&config_.upstreams, &fresh.upstreams})
        for (const auto& entry : *upstreams)
            applied.insert("domains." + entry.name);
    std::set<std::string> sections;
    for (const auto* texts : {&config_.section_texts, &fresh.section_texts})
        for (const auto& [name, _] : *texts)
            sections.insert(name);
    std::string changed;
    for (const auto& name : sections) {
        if (applied.contains(name)) continue;
        const auto before = config_.section_texts.find(name);
        const auto after = fresh.section_texts.find(name);
        const bool same = before != config_.section_texts.end() && after != fresh.section_texts.end() &&
                          before->second == after->second;
        if (same) continue;
        if (!changed.empty()) changed += ", ";
        changed += name;
    }
    if (!changed.empty())
        spdlog::error("the configuration was re-read, but what changed in {} takes effect only when the host "
                      "restarts; until then it serves with what it started with (a re-read applies upstreams and "
                      "exposure, and reopens the audit file)",
                      changed);
}

void Host::reload(const config::Config& fresh) {
    // logrotate's convention: the audit file is opened anew on SIGHUP.
    observability_->reopen_audit();
    if (&fresh != &config_) report_unapplied(fresh);
    if (&fresh != &config_) reload_upstreams(fresh);
    std::set<std::string> families;
    protocol::ToolDisclosure::ToolExposure tools;
    for (const auto& [family, domain] : fresh.domains) {
        if (domain.on_demand) families.insert(family);
        for (const auto& [name, change] : domain.tools)
            if (change.on_demand) tools[{family, name}] = *change.on_demand;
    }
    server_->apply_exposure(families, tools);
}

} // namespace gatehouse::serve
