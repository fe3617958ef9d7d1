#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gatehouse::auth {

// Who calls: the subject of a verified token over HTTP, the local user over
// stdio. Everything kept per user is keyed by it. The token itself is never
// part of it, so nothing downstream (plugins, logs) can pass it on.
struct Principal {
    std::string subject;
    std::string kind;      // "local" (stdio, or HTTP without auth) or "token" (HTTP, verified)
    std::string client_id; // the OAuth client the token was issued to, when known
    std::vector<std::string> scopes;

    nlohmann::json to_json() const {
        nlohmann::json out = {{"subject", subject}, {"kind", kind}};
        if (kind == "token") {
            out["client_id"] = client_id;
            out["scopes"] = scopes;
        }
        return out;
    }

    bool has_scope(const std::string& scope) const {
        for (const auto& s : scopes)
            if (s == scope) return true;
        return false;
    }
};

// The principal of a stdio connection: GATEHOUSE_PRINCIPAL when set, else the
// operating-system user running the host.
Principal local_principal();

} // namespace gatehouse::auth
