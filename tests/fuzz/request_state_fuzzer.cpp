// What a client controls of a multi round-trip retry: the requestState it
// echoes, and (through a plugin's answer, which the host also parses) the
// input requests. The input is split at the first NUL byte: the part before
// is opened as a requestState against a fixed key and binding (it must be
// refused or opened, never crash), and also sealed and opened again (it must
// come back unchanged); the part after is parsed as a plugin's
// input_required answer and checked against the client's capabilities.
#include "mrtr/input_requests.hpp"
#include "mrtr/request_state_sealer.hpp"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

using gatehouse::mrtr::RequestStateSealer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const RequestStateSealer sealer({std::string(RequestStateSealer::kKeyBytes, 'k')}, "gatehouse",
                                           std::chrono::minutes(10));
    static const gatehouse::mrtr::StateBinding binding{"local:fuzz", "tools/call", "tool",
                                                       RequestStateSealer::fingerprint(nlohmann::json::object())};
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const auto cut = input.find('\0');
    const std::string_view token = input.substr(0, cut);

    (void)sealer.open(token, binding);
    if (token.size() <= RequestStateSealer::kMaxStateBytes) {
        std::string sealed;
        try {
            sealed = sealer.seal(binding, token);
        } catch (const std::invalid_argument&) {
            // Not UTF-8 text: refused, as a plugin's state never is (it arrives as a JSON string).
        }
        if (!sealed.empty()) {
            const auto opened = sealer.open(sealed, binding);
            if (!opened || *opened != token) std::abort();
        }
    }

    if (cut != std::string_view::npos) {
        try {
            const auto asked = gatehouse::mrtr::parse_input_required(input.substr(cut + 1));
            (void)gatehouse::mrtr::missing_capabilities(asked.requests, nlohmann::json::parse(R"({"elicitation":{}})"));
        } catch (const std::invalid_argument&) {
        }
    }
    return 0;
}
