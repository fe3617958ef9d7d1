#pragma once

#include <string>
#include <string_view>

namespace gatehouse::upstream {

// How an upstream's names read in this host (upstreams[].names): a pattern
// with {name} once and {upstream} at most once, "{upstream}_{name}" unless
// the operator says otherwise ("none" is "{name}"). Two upstreams that
// offer a tool of the same name stay apart under the default; a clash the
// hook leaves is refused at load, naming both.
class NameHook {
public:
    NameHook(std::string pattern, std::string upstream)
        : pattern_(std::move(pattern)), upstream_(std::move(upstream)) {}

    std::string apply(std::string_view name) const;
    // Whether apply() could have made `published` from some name, by the
    // fixed text around {name}. A hook with none ("none") claims no name.
    bool could_have_named(std::string_view published) const;
    const std::string& pattern() const { return pattern_; }

private:
    std::string pattern_;
    std::string upstream_;
};

} // namespace gatehouse::upstream
