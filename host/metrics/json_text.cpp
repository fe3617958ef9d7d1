#include "metrics/json_text.hpp"

#include "protocol/json_bytes.hpp"

#include <cstdint>

namespace gatehouse::metrics {

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    static constexpr char kReplacement[] = "\xEF\xBF\xBD"; // U+FFFD
    out += '"';
    // Runs of bytes that need no escape go in one append.
    const char* const end = text.data() + text.size();
    const char* run = text.data();
    for (const char* p = run; p < end;) {
        const unsigned char c = static_cast<unsigned char>(*p);
        if (c >= 0x80) {
            // JSON is UTF-8: a byte that starts no well-formed sequence
            // (a user name from the environment, say) is written as U+FFFD,
            // so every line stays one a JSON reader takes.
            if (const std::size_t length = protocol::json_bytes::utf8_sequence(p, end)) {
                p += length;
                continue;
            }
            protocol::json_bytes::append_bytes(out, run, p);
            out.append(kReplacement, 3);
            run = ++p;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            ++p;
            continue;
        }
        protocol::json_bytes::append_bytes(out, run, p);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: {
            const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
            out.append(escaped, sizeof escaped);
        }
        }
        run = ++p;
    }
    protocol::json_bytes::append_bytes(out, run, end);
    out += '"';
}

namespace {

void digits(std::string& out, long long value, int width) {
    char text[8];
    for (int i = width - 1; i >= 0; --i) {
        text[i] = static_cast<char>('0' + value % 10);
        value /= 10;
    }
    out.append(text, static_cast<std::size_t>(width));
}

} // namespace

void append_utc(std::string& out, std::chrono::system_clock::time_point t, int fraction_digits) {
    using namespace std::chrono;
    const auto since = t.time_since_epoch();
    const auto day = floor<days>(since);
    const year_month_day date{sys_days(day)};
    const hh_mm_ss time{floor<microseconds>(since - day)};
    digits(out, static_cast<int>(date.year()), 4);
    out += '-';
    digits(out, static_cast<unsigned>(date.month()), 2);
    out += '-';
    digits(out, static_cast<unsigned>(date.day()), 2);
    out += 'T';
    digits(out, time.hours().count(), 2);
    out += ':';
    digits(out, time.minutes().count(), 2);
    out += ':';
    digits(out, time.seconds().count(), 2);
    out += '.';
    const long long micros = time.subseconds().count();
    if (fraction_digits >= 6)
        digits(out, micros, 6);
    else
        digits(out, micros / 1000, 3);
    out += 'Z';
}

} // namespace gatehouse::metrics
