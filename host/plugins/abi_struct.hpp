#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace gatehouse::plugins {

// Copies a plugin-provided struct that begins with uint32_t struct_size.
// Smaller (older) structs are zero-filled, so new fields read as "old
// behaviour". Larger (newer) structs are accepted only when the tail this host
// does not know is all zero; otherwise the plugin asks for something this host
// cannot do, and it is refused with `why` set.
template <class T> std::optional<T> read_abi_struct(const void* source, std::size_t minimum_size, std::string& why) {
    if (!source) {
        why = "null struct pointer";
        return std::nullopt;
    }
    std::uint32_t size = 0;
    std::memcpy(&size, source, sizeof size);
    if (size < minimum_size) {
        why = "struct_size " + std::to_string(size) + " is smaller than the smallest published size " +
              std::to_string(minimum_size);
        return std::nullopt;
    }
    T out{};
    const std::size_t known = sizeof(T);
    if (size <= known) {
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
