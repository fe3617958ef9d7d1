#pragma once

#include "protocol/json_rpc.hpp"
#include "protocol/list_cursor.hpp"
#include "protocol/request.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace gatehouse::protocol {

// Where a page of a list starts: 0 without a cursor, else the cursor's
// position. A cursor from another list, another host, or none at all, is a
// protocol error that tells the client to start over.
std::size_t page_start(const Request& request, const std::string& fingerprint, std::size_t list_size);

// One page of `items` (each with a .listing) under `key`, with nextCursor
// when more follow: the shared shape of tools/list, resources/list,
// resources/templates/list and prompts/list.
template <class Item>
Json list_page(const Request& request, const std::vector<const Item*>& items, const char* key,
               const std::string& fingerprint, std::size_t page_size) {
    const std::size_t offset = page_start(request, fingerprint, items.size());
    const std::size_t end = std::min(items.size(), offset + page_size);
    Json list = Json::array();
    for (std::size_t i = offset; i < end; ++i)
        list.push_back(items[i]->listing);
    Json result = {{key, std::move(list)}};
    if (end < items.size()) result["nextCursor"] = encode_cursor(fingerprint, end);
    return result;
}

} // namespace gatehouse::protocol
