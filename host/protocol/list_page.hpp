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

// One page of a list of `count` entries under `key` (`entry(i)`, the i-th
// entry's JSON), with nextCursor when more follow: the shared shape of
// tools/list, resources/list, resources/templates/list and prompts/list.
template <class Entry>
Json list_page_of(const Request& request, std::size_t count, const Entry& entry, const char* key,
                  const std::string& fingerprint, std::size_t page_size) {
    const std::size_t offset = page_start(request, fingerprint, count);
    const std::size_t end = std::min(count, offset + page_size);
    Json list = Json::array();
    for (std::size_t i = offset; i < end; ++i)
        list.push_back(entry(i));
    Json result = {{key, std::move(list)}};
    if (end < count) result["nextCursor"] = encode_cursor(fingerprint, end);
    return result;
}

// A page of `items`, each listed as its .listing.
template <class Item>
Json list_page(const Request& request, const std::vector<const Item*>& items, const char* key,
               const std::string& fingerprint, std::size_t page_size) {
    return list_page_of(
        request, items.size(), [&items](std::size_t i) -> const Json& { return items[i]->listing; }, key, fingerprint,
        page_size);
}

} // namespace gatehouse::protocol
