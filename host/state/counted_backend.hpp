#pragma once

#include "state/state_backend.hpp"

#include <functional>
#include <memory>

namespace gatehouse::state {

// A backend that tells `failed` of every BackendError its operations throw
// (the operators' count of backend errors), then throws it on unchanged.
std::unique_ptr<StateBackend> make_counted_backend(std::unique_ptr<StateBackend> backend,
                                                   std::function<void(const char* backend)> failed);

} // namespace gatehouse::state
