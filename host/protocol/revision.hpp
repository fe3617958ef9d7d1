#pragma once

#include <array>
#include <string_view>

namespace gatehouse::protocol {

// The two eras one host serves, chosen per request.
enum class Revision {
    legacy_2025_11_25, // initialize handshake; state in the connection
    modern_2026_07_28, // stateless; every request carries _meta
};

inline constexpr std::string_view kModernVersion = "2026-07-28";
inline constexpr std::string_view kLegacyVersion = "2025-11-25";
inline constexpr std::array<std::string_view, 2> kSupportedVersions{kModernVersion, kLegacyVersion};

inline std::string_view revision_name(Revision r) {
    return r == Revision::modern_2026_07_28 ? kModernVersion : kLegacyVersion;
}

namespace meta_key {
inline constexpr std::string_view protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view client_capabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view log_level = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view server_info = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view subscription_id = "io.modelcontextprotocol/subscriptionId";
} // namespace meta_key

} // namespace gatehouse::protocol
