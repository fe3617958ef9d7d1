#pragma once

#include "plugins/live_registry.hpp"
#include "protocol/request.hpp"

namespace gatehouse::protocol {

// completion/complete: the reference (a prompt by name, or a resource
// template by its uriTemplate) and the argument checked against what was
// declared, then the plugin's complete function, if it has one (none: no
// suggestions). At most 100 values reach the client, with hasMore when more
// were offered.
class Completion {
public:
    explicit Completion(const plugins::LiveRegistry& registry) : registry_(registry) {}

    Json run(Request& request) const;

private:
    const plugins::LiveRegistry& registry_;
};

} // namespace gatehouse::protocol
