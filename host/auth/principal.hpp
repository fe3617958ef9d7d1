#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gatehouse::auth {

// Who calls: the subject of a verified token over HTTP, the local user over
// stdio. Its identity is kind, issuer and subject together: a token whose
// `sub` is the local user's name is somebody else. Everything kept per
// caller is keyed by owner_key(). The token itself is never part of it, so
// nothing downstream (plugins, logs) can pass it on.
struct Principal {
    std::string subject;
    std::string kind;      // "local" (stdio, or HTTP without auth) or "token" (HTTP, verified)
    std::string client_id; // the OAuth client the token was issued to, when known
    std::vector<std::string> scopes;
    std::string issuer; // a token's `iss`; "" for the local user and for API keys

    // The one key state is kept under for this caller (gate sessions, family
    // state, conversation folders, limits, HTTP sessions and streams), handed
    // to families as an opaque string. Keys of different kinds or issuers
    // never meet: a token's is "token:<issuer>:<subject>" with ':' and '%'
    // escaped in both parts, and the local user's is its name with the same
    // escapes, so it holds no ':' and is the plain name every store keyed
    // the local user's data by before.
    std::string owner_key() const;

    nlohmann::json to_json() const {
        nlohmann::json out = {{"subject", subject}, {"kind", kind}, {"owner", owner_key()}};
        if (kind == "token") {
            out["issuer"] = issuer;
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
