#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gatehouse::session {

// A critical note a family reported at connect, and whether the agent has
// been shown it in this session.
struct CriticalItem {
    std::string family;
    std::string id;
    std::string title;
    bool read = false;
};

// One agent's work with one store under one user, as kept in the state
// backend. The handle is the key; it is checked against the principal on
// every access. Nothing here is a secret but the handle and the nonce, and
// neither is ever handed to a plugin.
struct Session {
    std::string handle;
    std::string principal;
    std::string store;
    std::string user;
    std::string topic;
    std::string folder;                      // the conversation folder, an absolute path
    std::vector<std::string> scopes;         // granted at connect
    std::string nonce;                       // binds rule codes to this session
    std::vector<std::string> accepted_rules; // accepted_rules_key: a tool's name and its rules' digest
    std::vector<CriticalItem> critical;
    std::int64_t created_ms = 0;
    std::int64_t last_used_ms = 0;

    std::size_t unread_critical() const;
    bool has_scope(const std::string& scope) const;
    bool accepted(const std::string& tool) const;

    // What a gated tool's plugin sees in its call context.
    nlohmann::json context_view() const;

    nlohmann::json to_json() const;
    static Session from_json(const nlohmann::json& record);
};

} // namespace gatehouse::session
