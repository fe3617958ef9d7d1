#include "card_number_guard.hpp"

namespace memory {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

} // namespace

bool passes_luhn(std::string_view digits) {
    int sum = 0;
    bool twice = false;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
        int d = *it - '0';
        if (twice) {
            d *= 2;
            if (d > 9) d -= 9;
        }
        sum += d;
        twice = !twice;
    }
    return sum % 10 == 0;
}

std::optional<std::string> find_card_number(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        if (!is_digit(text[i])) {
            ++i;
            continue;
        }
        // A run: digits joined by at most one space or dash between them.
        // A longer run of digits is some other number (an IBAN, an id), not a card.
        std::string digits;
        std::size_t j = i;
        while (j < text.size()) {
            if (is_digit(text[j])) {
                digits += text[j++];
            } else if ((text[j] == ' ' || text[j] == '-') && j + 1 < text.size() && is_digit(text[j + 1])) {
                ++j;
            } else {
                break;
            }
        }
        if (digits.size() >= 13 && digits.size() <= 19 && passes_luhn(digits)) return digits.substr(digits.size() - 4);
        i = j;
    }
    return std::nullopt;
}

} // namespace memory
