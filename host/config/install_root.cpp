#include "config/install_root.hpp"

namespace gatehouse::config {

std::filesystem::path install_root() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::current_path() : exe.parent_path().parent_path();
}

} // namespace gatehouse::config
