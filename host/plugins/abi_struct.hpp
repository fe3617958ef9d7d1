#pragma once

#include <gatehouse/plugin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace gatehouse::plugins {

// The sizes each ABI struct has had, smallest first: a plugin built against
// any version of plugin.h sets one of them (the last is this host's sizeof).
template <class T> struct PublishedSizes;
template <> struct PublishedSizes<gh_plugin_desc> {
    static constexpr std::array sizes{GH_PLUGIN_DESC_SIZE_V1, GH_PLUGIN_DESC_SIZE_V2, GH_PLUGIN_DESC_SIZE_V3,
                                      GH_PLUGIN_DESC_SIZE_V4, GH_PLUGIN_DESC_SIZE_V5};
};
template <> struct PublishedSizes<gh_tool_desc> {
    static constexpr std::array sizes{GH_TOOL_DESC_SIZE_V1, GH_TOOL_DESC_SIZE_V2};
};
template <> struct PublishedSizes<gh_resource_desc> { static constexpr std::array sizes{GH_RESOURCE_DESC_SIZE_V1}; };
template <> struct PublishedSizes<gh_resource_template_desc> {
    static constexpr std::array sizes{GH_RESOURCE_TEMPLATE_DESC_SIZE_V1};
};
template <> struct PublishedSizes<gh_prompt_desc> { static constexpr std::array sizes{GH_PROMPT_DESC_SIZE_V1}; };
template <> struct PublishedSizes<gh_page_desc> { static constexpr std::array sizes{GH_PAGE_DESC_SIZE_V1}; };
template <> struct PublishedSizes<gh_command_desc> { static constexpr std::array sizes{GH_COMMAND_DESC_SIZE_V1}; };

// Copies a plugin-provided struct that begins with uint32_t struct_size.
// Smaller (older) structs are zero-filled, so new fields read as "old
// behaviour"; their size must be one some plugin.h published, so no field is
// copied in part (half a function pointer would be called). Larger (newer)
// structs are accepted only when the tail this host does not know is all
// zero; otherwise the plugin asks for something this host cannot do, and it
// is refused with `why` set.
template <class T> std::optional<T> read_abi_struct(const void* source, std::string& why) {
    constexpr auto& published = PublishedSizes<T>::sizes;
    static_assert(published.back() == sizeof(T), "the last published size is this host's struct");
    if (!source) {
        why = "null struct pointer";
        return std::nullopt;
    }
    std::uint32_t size = 0;
    std::memcpy(&size, source, sizeof size);
    if (size < published.front()) {
        why = "struct_size " + std::to_string(size) + " is smaller than the smallest published size " +
              std::to_string(published.front());
        return std::nullopt;
    }
    T out{};
    const std::size_t known = sizeof(T);
    if (size <= known) {
        if (std::find(published.begin(), published.end(), size) == published.end()) {
            std::string sizes;
            for (const std::size_t s : published)
                sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
            why = "struct_size " + std::to_string(size) + " is none of the published sizes (" + sizes +
                  "): it would end inside a field";
            return std::nullopt;
        }
        std::memcpy(&out, source, size);
    } else {
        const auto* bytes = static_cast<const unsigned char*>(source);
        for (std::size_t i = known; i < size; ++i) {
            if (bytes[i] != 0) {
                why = "struct_size " + std::to_string(size) + " sets fields this host (size " + std::to_string(known) +
                      ") does not know";
                return std::nullopt;
            }
        }
        std::memcpy(&out, source, known);
    }
    return out;
}

} // namespace gatehouse::plugins
