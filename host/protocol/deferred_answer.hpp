#pragma once

#include "protocol/json_rpc.hpp"
#include "protocol/request_environment.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace gatehouse::protocol {

// A request whose plugin answers later, on the thread that hears the
// answer, so that no thread of the host waits for it: a family in a process
// of its own answers on the thread that reads that process
// (plugins::LoadedPlugin::answers_later). The call sets Request::deferred
// where it would have called its plugin, and returns; each layer it passed
// on its way down wraps what it does with the result as the stack unwinds
// (the tool call's checks innermost, the method's finish, the scheduler's
// sending outermost); the outermost then begins the plugin's work. Nothing
// of that work starts before every layer is in place, so an answer that
// comes at once finds them all.
class DeferredAnswer : public std::enable_shared_from_this<DeferredAnswer> {
public:
    // What the layers below one produce; it throws as their synchronous
    // selves would (a ProtocolError for the protocol tier).
    using Below = std::function<Json()>;
    using Layer = std::function<Json(const Below& below)>;
    // Runs work on the host's workers: what may wait, as a host function a
    // family calls back while its call runs.
    using Elsewhere = std::function<void(std::function<void()>)>;
    // The plugin's answer, once, on whichever thread it arrives on.
    using Answered = std::function<void(PluginAnswer)>;
    // Starts the plugin's work.
    using Begin = std::function<void(Answered answered, Elsewhere elsewhere)>;

    // `innermost`: the call's own work on its plugin's answer.
    DeferredAnswer(Begin begin, std::function<Json(PluginAnswer)> innermost)
        : begin_(std::move(begin)), innermost_(std::move(innermost)) {}

    // By each layer as the stack unwinds, the innermost first.
    void wrap(Layer layer) { layers_.push_back(std::move(layer)); }

    // An answer `when` holds for goes through the layers on the host's
    // workers (begin's `elsewhere`), not on the thread it came on: what the
    // layers then do may wait (a 2025-11-25 call asking its client).
    void run_elsewhere_when(std::function<bool(const PluginAnswer&)> when) { elsewhere_when_ = std::move(when); }

    // By the outermost layer, last: begins the plugin's work. `outermost`
    // gets the result of every layer below, on the thread the answer comes
    // on (this one, when it comes at once).
    void begin(std::function<void(const Below&)> outermost, Elsewhere elsewhere);

private:
    Json produce(std::size_t level, PluginAnswer& answer) const;
    // The answer through every layer, then what they hold let go.
    void finish(const std::function<void(const Below&)>& outermost, PluginAnswer& answer);
    void release();

    Begin begin_;
    std::function<Json(PluginAnswer)> innermost_;
    std::vector<Layer> layers_;
    std::function<bool(const PluginAnswer&)> elsewhere_when_;
};

} // namespace gatehouse::protocol
