#include "protocol/list_page.hpp"

namespace gatehouse::protocol {

std::size_t page_start(const Request& request, const std::string& fingerprint, std::size_t list_size) {
    auto c = request.params.find("cursor");
    if (c == request.params.end() || c->is_null()) return 0;
    std::optional<std::size_t> decoded;
    if (c->is_string()) decoded = decode_cursor(c->get<std::string>(), fingerprint);
    if (!decoded || *decoded > list_size)
        throw ProtocolError(error_code::invalid_params,
                            "Invalid cursor; list again without a cursor to start from the beginning.");
    return *decoded;
}

} // namespace gatehouse::protocol
