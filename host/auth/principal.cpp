#include "auth/principal.hpp"

namespace gatehouse::auth {

namespace {

// ':' separates the parts of a key and '%' starts an escape, so once both
// are escaped no part can imitate a separator. Control bytes are escaped
// too: a key travels into stores that end a text at NUL (libpq sends its
// parameters as C strings), where "victim\0x" would read as "victim"; and
// into log lines, where a newline would start a line of its own.
std::string escaped(const std::string& part) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(part.size());
    for (char c : part) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '%' || c == ':' || byte < 0x20 || byte == 0x7f) {
            out += '%';
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        } else {
            out += c;
        }
    }
    return out;
}

} // namespace

std::string Principal::owner_key() const {
    if (kind == "local") return escaped(subject);
    return escaped(kind) + ":" + escaped(issuer) + ":" + escaped(subject);
}

} // namespace gatehouse::auth
