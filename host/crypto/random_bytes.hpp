#pragma once

#include <cstddef>
#include <string>

namespace gatehouse::crypto {

// `count` bytes from the kernel's generator (getrandom(2)), which is ready
// as soon as the system is and needs nothing loaded or seeded first. Throws
// std::runtime_error when the kernel cannot give them.
std::string random_bytes(std::size_t count);

} // namespace gatehouse::crypto
