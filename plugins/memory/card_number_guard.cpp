#include "card_number_guard.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

namespace memory {

namespace {

// The zero of every run of ten decimal digits (Unicode general category Nd):
// each script's digit d is zero + d. Unicode 15.0.
constexpr char32_t kDigitZeros[] = {
    0x30,    0x660,   0x6F0,   0x7C0,   0x966,   0x9E6,   0xA66,   0xAE6,   0xB66,   0xBE6,   0xC66,   0xCE6,
    0xD66,   0xDE6,   0xE50,   0xED0,   0xF20,   0x1040,  0x1090,  0x17E0,  0x1810,  0x1946,  0x19D0,  0x1A80,
    0x1A90,  0x1B50,  0x1BB0,  0x1C40,  0x1C50,  0xA620,  0xA8D0,  0xA900,  0xA9D0,  0xA9F0,  0xAA50,  0xABF0,
    0xFF10,  0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0,
    0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x11F50, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8,
    0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E950, 0x1FBF0,
};

struct Range {
    char32_t first, last;
};

// What may stand between the digits of one number and is skipped: spaces of
// every width (Zs, no-break ones included), invisible format characters (Cf:
// zero-width spaces and joiners, bidi marks, the soft hyphen), dashes (Pd),
// the hyphen bullet and the minus sign, full stops and middle dots of several
// scripts, variation selectors and the keycap mark. Line breaks are not among
// them: numbers on separate lines are separate numbers. Sorted, for the
// binary search.
constexpr Range kSeparators[] = {
    {0x09, 0x09},       {0x20, 0x20},       {0x2D, 0x2E},       {0xA0, 0xA0},       {0xAD, 0xAD},
    {0xB7, 0xB7},       {0x58A, 0x58A},     {0x5BE, 0x5BE},     {0x600, 0x605},     {0x61C, 0x61C},
    {0x6DD, 0x6DD},     {0x70F, 0x70F},     {0x890, 0x891},     {0x8E2, 0x8E2},     {0x1400, 0x1400},
    {0x1680, 0x1680},   {0x1806, 0x1806},   {0x180E, 0x180E},   {0x2000, 0x2015},   {0x2024, 0x2024},
    {0x2027, 0x2027},   {0x202A, 0x202F},   {0x2043, 0x2043},   {0x205F, 0x2064},   {0x2066, 0x206F},
    {0x20E3, 0x20E3},   {0x2212, 0x2212},   {0x2E17, 0x2E17},   {0x2E1A, 0x2E1A},   {0x2E3A, 0x2E3B},
    {0x2E40, 0x2E40},   {0x2E5D, 0x2E5D},   {0x3000, 0x3000},   {0x3002, 0x3002},   {0x301C, 0x301C},
    {0x3030, 0x3030},   {0x30A0, 0x30A0},   {0x30FB, 0x30FB},   {0xFE00, 0xFE0F},   {0xFE31, 0xFE32},
    {0xFE52, 0xFE52},   {0xFE58, 0xFE58},   {0xFE63, 0xFE63},   {0xFEFF, 0xFEFF},   {0xFF0D, 0xFF0E},
    {0xFF61, 0xFF61},   {0xFF65, 0xFF65},   {0xFFF9, 0xFFFB},   {0x10EAD, 0x10EAD}, {0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x13438}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
    {0xE0020, 0xE007F}, {0xE0100, 0xE01EF},
};

// The digit's value 0-9, or -1 when `c` is no decimal digit.
int digit_value(char32_t c) {
    const auto* it = std::upper_bound(std::begin(kDigitZeros), std::end(kDigitZeros), c);
    if (it == std::begin(kDigitZeros)) return -1;
    const char32_t zero = *(it - 1);
    return c - zero < 10 ? static_cast<int>(c - zero) : -1;
}

bool is_separator(char32_t c) {
    const auto* it = std::upper_bound(std::begin(kSeparators), std::end(kSeparators), c,
                                      [](char32_t v, const Range& r) { return v < r.first; });
    return it != std::begin(kSeparators) && c <= (it - 1)->last;
}

// One code point from `text` at `i` (advanced past it). Bytes that are no
// valid UTF-8 come out one by one as U+FFFD, which is neither digit nor
// separator, so they end a number.
char32_t next_code_point(std::string_view text, std::size_t& i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    std::size_t length = lead < 0x80           ? 1
                         : (lead >> 5) == 0x6  ? 2
                         : (lead >> 4) == 0xE  ? 3
                         : (lead >> 3) == 0x1E ? 4
                                               : 0;
    if (length == 0 || i + length > text.size()) {
        ++i;
        return 0xFFFD;
    }
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) {
            ++i;
            return 0xFFFD;
        }
        c = (c << 6) | (byte(i + k) & 0x3F);
    }
    i += length;
    return c;
}

// A run of digits as written: its groups of digits (0-9 each) and, between
// two groups, the separators that joined them.
struct Run {
    std::vector<std::string> groups;
    std::vector<std::u32string> joins; // joins[k] stands between groups[k] and groups[k + 1]
};

int number_of(const std::string& digits) {
    int n = 0;
    for (char d : digits)
        n = n * 10 + (d - '0');
    return n;
}

bool single(const std::u32string& join, char32_t c) {
    return join.size() == 1 && join[0] == c;
}

// Groups `k`, `k+1`, `k+2` read as a date (31.12.2025, 12-31-2025,
// 2025-12-31): day, month and a year of 1900-2099, joined by one dot or one
// dash, the same twice.
bool date_at(const Run& run, std::size_t k) {
    if (k + 2 >= run.groups.size()) return false;
    const auto& a = run.groups[k];
    const auto& b = run.groups[k + 1];
    const auto& c = run.groups[k + 2];
    if (run.joins[k].size() != 1 || run.joins[k] != run.joins[k + 1]) return false;
    if (run.joins[k][0] != U'.' && run.joins[k][0] != U'-') return false;
    const auto year = [](const std::string& g) {
        return g.size() == 4 && number_of(g) >= 1900 && number_of(g) <= 2099;
    };
    const auto small = [](const std::string& g, int most) {
        return !g.empty() && g.size() <= 2 && number_of(g) >= 1 && number_of(g) <= most;
    };
    if (year(c) && small(a, 31) && small(b, 31) && (number_of(a) <= 12 || number_of(b) <= 12)) return true;
    return year(a) && small(b, 12) && small(c, 31);
}

// Groups `k` to `k+3` read as an IPv4 address (192.168.10.200).
bool address_at(const Run& run, std::size_t k) {
    if (k + 3 >= run.groups.size()) return false;
    for (std::size_t g = k; g < k + 4; ++g) {
        const auto& group = run.groups[g];
        if (group.size() > 3 || number_of(group) > 255 || (group.size() > 1 && group[0] == '0')) return false;
        if (g < k + 3 && !single(run.joins[g], U'.')) return false;
    }
    return true;
}

bool looks_like_card(const std::string& digits) {
    return digits.size() >= 13 && digits.size() <= 19 && passes_luhn(digits);
}

// Dates and addresses inside a run are what they look like, and they cut the
// run: only the stretches between them can be a card number. A stretch
// longer than a card is some other number (an IBAN, an id).
std::optional<std::string> card_in(const Run& run) {
    std::string digits;
    for (std::size_t k = 0; k < run.groups.size();) {
        std::size_t skip = date_at(run, k) ? 3 : address_at(run, k) ? 4 : 0;
        if (skip) {
            if (looks_like_card(digits)) return digits.substr(digits.size() - 4);
            digits.clear();
            k += skip;
            continue;
        }
        digits += run.groups[k++];
    }
    if (looks_like_card(digits)) return digits.substr(digits.size() - 4);
    return std::nullopt;
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
        std::size_t after = i;
        const char32_t first = next_code_point(text, after);
        if (digit_value(first) < 0) {
            i = after;
            continue;
        }
        // A run: digits of any script, joined by any run of separators that
        // is followed by another digit.
        Run run;
        run.groups.emplace_back(1, static_cast<char>('0' + digit_value(first)));
        i = after;
        std::u32string join;
        while (i < text.size()) {
            std::size_t next = i;
            const char32_t c = next_code_point(text, next);
            if (const int d = digit_value(c); d >= 0) {
                if (!join.empty()) {
                    run.joins.push_back(std::move(join));
                    join.clear();
                    run.groups.emplace_back();
                }
                run.groups.back() += static_cast<char>('0' + d);
            } else if (is_separator(c)) {
                join += c;
            } else {
                break;
            }
            i = next;
        }
        if (auto last4 = card_in(run)) return last4;
    }
    return std::nullopt;
}

} // namespace memory
