// A plugin's tool descriptor as the loader reads it, without dlopen: a struct
// of any struct_size (smaller, equal or larger than this host's, with a zero
// or non-zero unknown tail), flags and risk from the input, and the gh_str
// fields (name, title, description, schemas, scopes, rules, annotations) cut
// from the rest at NUL bytes. Each field is its own allocation, so reading
// past a field's length is caught. A refusal (std::runtime_error) is fine;
// anything else escaping is a finding.
#include "plugins/abi_struct.hpp"
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

int32_t no_call(void*, void*, gh_call*, gh_str, gh_sink*) {
    return GH_STATUS_OK;
}

struct Reader {
    const std::uint8_t* p;
    std::size_t left;
    template <class T> T take() {
        T value{};
        const std::size_t n = std::min(sizeof value, left);
        std::memcpy(&value, p, n);
        p += n;
        left -= n;
        return value;
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool quiet = (spdlog::set_level(spdlog::level::off), true);
    (void)quiet;
    Reader in{data, size};
    const auto size_pick = in.take<std::uint16_t>();
    const auto flags = in.take<std::uint32_t>();
    const auto risk = in.take<std::uint8_t>();
    const auto switches = in.take<std::uint8_t>();

    // The rest: up to nine fields separated by NUL bytes, each copied alone.
    std::vector<std::unique_ptr<char[]>> storage;
    std::vector<gh_str> fields;
    const char* rest = reinterpret_cast<const char*>(in.p);
    const char* end = rest + in.left;
    while (fields.size() < 9) {
        const char* stop = std::find(rest, end, '\0');
        const auto len = static_cast<std::size_t>(stop - rest);
        storage.push_back(std::make_unique<char[]>(len ? len : 1));
        std::memcpy(storage.back().get(), rest, len);
        fields.push_back({len || (switches & 0x10) ? storage.back().get() : nullptr, len});
        if (stop == end) break;
        rest = stop + 1;
    }
    fields.resize(9, gh_str{nullptr, 0});

    gh_tool_desc desc{};
    desc.flags = flags;
    desc.name = fields[0];
    desc.title = fields[1];
    desc.description = fields[2];
    desc.input_schema = fields[3];
    desc.output_schema = fields[4];
    desc.scope = fields[5];
    desc.required_scopes = fields[6];
    desc.risk = risk % 6;
    desc.reserved0 = 0;
    desc.rules = fields[7];
    desc.annotations = fields[8];
    desc.call = (switches & 0x1) ? nullptr : &no_call;

    // The struct as the plugin hands it over: exactly struct_size bytes.
    // Mostly a published size (the host refuses any other at once), else any.
    const std::size_t struct_size = size_pick % 4 == 0   ? GH_TOOL_DESC_SIZE_V1
                                    : size_pick % 4 == 1 ? GH_TOOL_DESC_SIZE_V2
                                                         : (size_pick / 4) % (sizeof(gh_tool_desc) + 48);
    std::vector<unsigned char> raw(std::max<std::size_t>(struct_size, sizeof(std::uint32_t)), 0);
    std::memcpy(raw.data(), &desc, std::min(struct_size, sizeof desc));
    if (struct_size > sizeof desc && (switches & 0x2)) raw[struct_size - 1] = 1;
    const auto declared = static_cast<std::uint32_t>(struct_size);
    std::memcpy(raw.data(), &declared, sizeof declared);

    std::string why;
    (void)plugins::read_abi_struct<gh_plugin_desc>(raw.data(), why);

    const std::string prefix = (switches & 0x4) ? "fuzz_" : "";
    try {
        auto tool = plugins::read_tool_descriptor(reinterpret_cast<const gh_tool_desc*>(raw.data()), 0, prefix,
                                                  (switches & 0x8) != 0);
        (void)tool->listing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        (void)tool->input_schema->validate(nlohmann::json::object());
    } catch (const std::runtime_error&) {
    }
    return 0;
}
