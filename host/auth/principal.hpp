#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gatehouse::auth {

// Who calls: the subject of a verified token over HTTP, the local user over
// stdio. Everything kept per user is keyed by it.
struct Principal {
    std::string subject;
    std::string kind; // "local" (stdio) or "token" (HTTP)

    nlohmann::json to_json() const { return {{"subject", subject}, {"kind", kind}}; }
};

// The principal of a stdio connection: GATEHOUSE_PRINCIPAL when set, else the
// operating-system user running the host.
Principal local_principal();

} // namespace gatehouse::auth
