#pragma once

// Equal and built alike, for comparing two JSON readers: an unsigned integer
// is not a signed one here, nor a double that happens to be whole, and
// members come in the same order.

#include <nlohmann/json.hpp>

#include <cstring>

namespace gatehouse::testing {

inline bool same_tree(const nlohmann::json& a, const nlohmann::json& b) {
    if (a.type() != b.type()) return false;
    if (a.is_object()) {
        if (a.size() != b.size()) return false;
        for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
            if (ia.key() != ib.key() || !same_tree(*ia, *ib)) return false;
        return true;
    }
    if (a.is_array()) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!same_tree(a[i], b[i])) return false;
        return true;
    }
    if (a.is_number_float()) {
        const double x = a.get<double>(), y = b.get<double>();
        return std::memcmp(&x, &y, sizeof x) == 0;
    }
    return a == b;
}

} // namespace gatehouse::testing
