#include "protocol/deferred_answer.hpp"

namespace gatehouse::protocol {

void DeferredAnswer::begin(std::function<void(const Below&)> outermost, Elsewhere elsewhere) {
    // The answer holds this object, and with it every layer's captures,
    // until it has passed through them all.
    Answered answered = [self = shared_from_this(), outermost = std::move(outermost),
                         elsewhere](PluginAnswer answer) mutable {
        if (self->elsewhere_when_ && self->elsewhere_when_(answer))
            return elsewhere([self, outermost = std::move(outermost), answer = std::move(answer)]() mutable {
                self->finish(outermost, answer);
            });
        self->finish(outermost, answer);
    };
    // Out of this object before it runs: an answer that comes at once, on
    // this stack, releases what the layers hold while this still runs.
    const Begin start = std::move(begin_);
    begin_ = nullptr;
    start(std::move(answered), std::move(elsewhere));
}

void DeferredAnswer::finish(const std::function<void(const Below&)>& outermost, PluginAnswer& answer) {
    outermost([&] { return produce(layers_.size(), answer); });
    // What the layers hold goes now, before the outermost's own captures
    // (which go with the closure holding it): whatever waits for those to go
    // finds nothing of the call left.
    release();
}

void DeferredAnswer::release() {
    innermost_ = nullptr;
    layers_.clear();
}

Json DeferredAnswer::produce(std::size_t level, PluginAnswer& answer) const {
    if (level == 0) return innermost_(std::move(answer));
    return layers_[level - 1]([&] { return produce(level - 1, answer); });
}

} // namespace gatehouse::protocol
