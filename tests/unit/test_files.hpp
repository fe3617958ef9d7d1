#pragma once

#include <filesystem>
#include <string>

namespace gatehouse::test {

// A fresh folder under the system temp dir, removed with everything in it
// when the object dies.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // Writes `text` to path()/name (creating folders) and returns its path.
    std::filesystem::path write(const std::string& name, const std::string& text) const;

private:
    std::filesystem::path path_;
};

// Where the fixture plugins are built (<build>/tests/plugins).
std::filesystem::path plugin_dir();

} // namespace gatehouse::test
