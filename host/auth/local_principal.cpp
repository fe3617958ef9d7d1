#include "auth/principal.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace gatehouse::auth {

Principal local_principal() {
    if (const char* p = std::getenv("GATEHOUSE_PRINCIPAL"); p && *p) return {p, "local", {}, {}};
    if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) return {pw->pw_name, "local", {}, {}};
    return {"uid:" + std::to_string(geteuid()), "local", {}, {}};
}

} // namespace gatehouse::auth
