#pragma once

#include <cstddef>
#include <string>

namespace gatehouse::session {

// `bytes` bytes from the kernel's generator, as lowercase hex. Throws when the
// generator cannot deliver (a handle must never be guessable).
std::string random_token(std::size_t bytes);

} // namespace gatehouse::session
