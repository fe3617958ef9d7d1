#pragma once

#include <gatehouse/plugin.h>

#include <string>

namespace gatehouse::plugins {

class LoadedPlugin;

// A page a family asks the host to serve (ABI 1.3) at
// /pages/<family>/<name>/<token>, checked at load time.
struct Page {
    std::string family;
    std::string name;
    gh_page_fn show = nullptr;
    gh_page_fn act = nullptr;
    void* data = nullptr;
    LoadedPlugin* plugin = nullptr;
};

} // namespace gatehouse::plugins
