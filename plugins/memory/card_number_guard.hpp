// Refuses payment card numbers in note text: 13-19 digits, optionally grouped
// by single spaces or dashes, that pass the Luhn check. A guard against the
// common slip, not a guarantee: it cannot see a number spelled out, split
// across notes or written with other separators, and about one in ten random
// digit runs of that length passes Luhn, so an order number can be refused.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace memory {

bool passes_luhn(std::string_view digits);

// The last four digits of the first card-like number in `text`, if any (to
// name it in the refusal without repeating it).
std::optional<std::string> find_card_number(std::string_view text);

} // namespace memory
