#include "auth/principal.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace gatehouse::auth {

Principal local_principal() {
    if (const char* p = std::getenv("GATEHOUSE_PRINCIPAL"); p && *p) return {.subject = p, .kind = "local"};
    if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) return {.subject = pw->pw_name, .kind = "local"};
    return {.subject = "uid:" + std::to_string(geteuid()), .kind = "local"};
}

} // namespace gatehouse::auth
