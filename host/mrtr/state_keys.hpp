#pragma once

#include "config/config.hpp"
#include "mrtr/request_state_sealer.hpp"

#include <memory>
#include <string>

namespace gatehouse::mrtr {

// The environment variable that carries requestState keys: base64 keys
// separated by commas, the sealing one first. When set it replaces
// input_requests.state_keys of the YAML (a secret belongs outside the file).
inline constexpr const char* kStateKeyVariable = "GATEHOUSE_STATE_KEY";

// The sealer this host uses, named `server_name`: keys from
// GATEHOUSE_STATE_KEY, else from the YAML, else one made for this process
// (then logged as a warning: several instances reject each other's state).
// Throws std::runtime_error when GATEHOUSE_STATE_KEY holds a malformed key.
std::shared_ptr<const RequestStateSealer> make_request_state_sealer(const config::InputRequestSettings& settings,
                                                                    const std::string& server_name);

} // namespace gatehouse::mrtr
