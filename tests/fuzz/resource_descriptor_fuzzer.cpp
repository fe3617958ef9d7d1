// What ABI 1.2 added to a plugin's descriptor, as the loader reads it without
// dlopen: a resource, a resource template (compiled, then matched against a
// URI from the input) and a prompt (its arguments JSON), with struct_size,
// flags and the gh_str fields taken from the input. Fields are cut at NUL
// bytes, each in its own allocation, so reading past a field's length is
// caught. A refusal (std::runtime_error) is fine; anything else escaping is a
// finding.
#include "plugins/plugin_loader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gatehouse;

namespace {

int32_t no_read(void*, void*, gh_call*, gh_str, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}
int32_t no_get(void*, void*, gh_call*, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}

// Copies `desc` into exactly struct_size bytes, as a plugin would hand it over.
template <class Desc> std::vector<unsigned char> as_handed_over(const Desc& desc, std::size_t struct_size, bool tail) {
    std::vector<unsigned char> raw(std::max<std::size_t>(struct_size, sizeof(std::uint32_t)), 0);
    std::memcpy(raw.data(), &desc, std::min(struct_size, sizeof desc));
    if (struct_size > sizeof desc && tail) raw[struct_size - 1] = 1;
    const auto declared = static_cast<std::uint32_t>(struct_size);
    std::memcpy(raw.data(), &declared, sizeof declared);
    return raw;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool quiet = (spdlog::set_level(spdlog::level::off), true);
    (void)quiet;
    if (size < 4) return 0;
    const std::uint8_t kind = data[0] % 3;
    const std::uint8_t size_pick = data[1];
    const std::uint8_t flags = data[2];
    const std::uint8_t switches = data[3];
    const char* rest = reinterpret_cast<const char*>(data + 4);
    const char* end = reinterpret_cast<const char*>(data + size);

    std::vector<std::unique_ptr<char[]>> storage;
    std::vector<gh_str> fields;
    while (fields.size() < 8) {
        const char* stop = std::find(rest, end, '\0');
        const auto len = static_cast<std::size_t>(stop - rest);
        storage.push_back(std::make_unique<char[]>(len ? len : 1));
        std::memcpy(storage.back().get(), rest, len);
        fields.push_back({len ? storage.back().get() : nullptr, len});
        if (stop == end) break;
        rest = stop + 1;
    }
    fields.resize(8, gh_str{nullptr, 0});
    const bool tail = switches & 0x2;

    try {
        if (kind == 0) {
            gh_resource_desc d{};
            d.flags = flags & 0x3;
            d.uri = fields[0];
            d.name = fields[1];
            d.title = fields[2];
            d.description = fields[3];
            d.mime_type = fields[4];
            d.annotations = fields[5];
            d.size = static_cast<std::uint64_t>(switches) << 56;
            d.read = (switches & 0x1) ? nullptr : &no_read;
            auto raw = as_handed_over(d, size_pick % (sizeof d + 24), tail);
            auto r = plugins::read_resource_descriptor(reinterpret_cast<const gh_resource_desc*>(raw.data()), 0);
            (void)r->listing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        } else if (kind == 1) {
            gh_resource_template_desc d{};
            d.flags = flags & 0x1;
            d.uri_template = fields[0];
            d.name = fields[1];
            d.mime_type = fields[4];
            d.annotations = fields[5];
            d.read = (switches & 0x1) ? nullptr : &no_read;
            auto raw = as_handed_over(d, size_pick % (sizeof d + 24), tail);
            auto t = plugins::read_resource_template_descriptor(
                reinterpret_cast<const gh_resource_template_desc*>(raw.data()), 0);
            const std::string uri(fields[6].ptr ? fields[6].ptr : "", fields[6].len);
            if (auto values = t->uri_template.match(uri))
                for (const auto& name : t->uri_template.variables())
                    if (!values->count(name)) __builtin_trap(); // a match binds every variable
        } else {
            gh_prompt_desc d{};
            d.flags = flags & 0x1;
            d.name = fields[0];
            d.title = fields[2];
            d.description = fields[3];
            d.arguments = fields[7];
            d.get = (switches & 0x1) ? nullptr : &no_get;
            auto raw = as_handed_over(d, size_pick % (sizeof d + 24), tail);
            auto p = plugins::read_prompt_descriptor(reinterpret_cast<const gh_prompt_desc*>(raw.data()), 0,
                                                     (switches & 0x4) ? "fuzz_" : "");
            (void)p->listing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
