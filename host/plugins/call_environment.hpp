#pragma once

#include <gatehouse/plugin.h>

#include <string>
#include <string_view>

namespace gatehouse::plugins {

// What a plugin can reach of the request it is serving, through the host
// function table. The protocol layer implements it for each tools/call.
class CallEnvironment {
public:
    virtual ~CallEnvironment() = default;
    virtual bool cancelled() const = 0;
    virtual void log(int32_t level, std::string_view logger, std::string_view message) = 0;
    virtual void progress(double done, double total, std::string_view message) = 0;
    virtual std::string_view context_json() = 0;
};

} // namespace gatehouse::plugins

// The opaque ABI handles, defined by the host.
struct gh_sink {
    std::string bytes;
};

struct gh_call {
    gatehouse::plugins::CallEnvironment* environment;
    std::string_view family;
};
