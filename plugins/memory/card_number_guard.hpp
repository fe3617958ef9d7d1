// Refuses payment card numbers in note text: 13-19 digits that pass the Luhn
// check. Digits of any script count as 0-9 (Arabic-Indic, Devanagari,
// fullwidth, ...), and any run of separators between digits is skipped:
// spaces of every width (no-break ones too), dots, dashes, zero-width and
// other invisible characters. Dates (31.12.2025, 2025-12-31) and IPv4
// addresses inside such a run stay what they are and cut it. A guard against
// the common slip, not a guarantee: it cannot see a number spelled out, split
// across notes or lines, or broken by letters or other punctuation, and about
// one in ten random digit runs of that length passes Luhn, so an order number
// can be refused.
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
