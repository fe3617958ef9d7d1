#include "auth/principal.hpp"

namespace gatehouse::auth {

namespace {

// ':' separates the parts of a key and '%' starts an escape, so once both
// are escaped no part can imitate a separator.
std::string escaped(const std::string& part) {
    std::string out;
    out.reserve(part.size());
    for (char c : part) {
        if (c == '%')
            out += "%25";
        else if (c == ':')
            out += "%3A";
        else
            out += c;
    }
    return out;
}

} // namespace

std::string Principal::owner_key() const {
    if (kind == "local") return escaped(subject);
    return escaped(kind) + ":" + escaped(issuer) + ":" + escaped(subject);
}

} // namespace gatehouse::auth
