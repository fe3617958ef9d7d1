#include "auth/api_key_table.hpp"

#include "auth/sha256_hex.hpp"

#include <openssl/crypto.h>

namespace gatehouse::auth {

ApiKeyTable::ApiKeyTable(std::vector<config::ApiKeyEntry> keys) : keys_(std::move(keys)) {}

TokenVerdict ApiKeyTable::verify(std::string_view key) const {
    const std::string digest = sha256_hex(key);
    const config::ApiKeyEntry* found = nullptr;
    // Every entry is compared in constant time, so timing tells nothing about which digest is near.
    for (const auto& entry : keys_)
        if (CRYPTO_memcmp(entry.sha256_hex.data(), digest.data(), digest.size()) == 0) found = &entry;
    if (!found) return TokenVerdict::reject("the API key is not known");
    Principal principal;
    principal.kind = "token";
    principal.subject = found->subject;
    principal.client_id = found->client_id;
    principal.scopes = found->scopes;
    return TokenVerdict::accept(std::move(principal));
}

} // namespace gatehouse::auth
