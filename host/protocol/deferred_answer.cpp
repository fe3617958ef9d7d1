#include "protocol/deferred_answer.hpp"

namespace gatehouse::protocol {

void DeferredAnswer::begin(std::function<void(const Below&)> outermost, Elsewhere elsewhere) {
    // The answer holds this object, and with it every layer's captures,
    // until it has passed through them all.
    Answered answered = [self = shared_from_this(), outermost = std::move(outermost)](PluginAnswer answer) {
        outermost([&] { return self->produce(self->layers_.size(), answer); });
    };
    begin_(std::move(answered), std::move(elsewhere));
}

Json DeferredAnswer::produce(std::size_t level, PluginAnswer& answer) const {
    if (level == 0) return innermost_(std::move(answer));
    return layers_[level - 1]([&] { return produce(level - 1, answer); });
}

} // namespace gatehouse::protocol
