#include "protocol/deferred_answer.hpp"

namespace gatehouse::protocol {

void DeferredAnswer::begin(std::function<void(const Below&)> outermost, Elsewhere elsewhere) {
    // The answer holds this object, and with it every layer's captures,
    // until it has passed through them all.
    Answered answered = [self = shared_from_this(), outermost = std::move(outermost)](PluginAnswer answer) {
        outermost([&] { return self->produce(self->layers_.size(), answer); });
        // What the layers hold goes now, before the outermost's own captures
        // (which go with this closure): whatever waits for those to go finds
        // nothing of the call left.
        self->release();
    };
    // Out of this object before it runs: an answer that comes at once, on
    // this stack, releases what the layers hold while this still runs.
    const Begin start = std::move(begin_);
    begin_ = nullptr;
    start(std::move(answered), std::move(elsewhere));
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
