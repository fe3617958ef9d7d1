#include "auth/api_key_table.hpp"

#include "crypto/bytes.hpp"
#include "crypto/openssl.hpp"

namespace gatehouse::auth {

ApiKeyTable::ApiKeyTable(std::vector<config::ApiKeyEntry> keys) : keys_(std::move(keys)) {}

TokenVerdict ApiKeyTable::verify(std::string_view key) const {
    const std::string digest = crypto::sha256_hex(key);
    const config::ApiKeyEntry* found = nullptr;
    // Every entry is compared in constant time, so timing tells nothing about which digest is near.
    for (const auto& entry : keys_)
        if (crypto::equal_in_constant_time(entry.sha256_hex, digest)) found = &entry;
    if (!found) return TokenVerdict::reject("the API key is not known");
    Principal principal;
    principal.kind = "token";
    principal.subject = found->subject;
    principal.client_id = found->client_id;
    principal.scopes = found->scopes;
    return TokenVerdict::accept(std::move(principal));
}

} // namespace gatehouse::auth
