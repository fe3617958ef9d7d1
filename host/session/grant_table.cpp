#include "session/grant_table.hpp"

#include "config/yaml_document.hpp"
#include "session/bounded_file.hpp"

#include <algorithm>

namespace gatehouse::session {

namespace {

// Far more than any owner's grants; the bound is what a file at the path may
// cost each connect.
constexpr std::size_t kMaxGrantsFileBytes = 1024 * 1024;

void add_scopes(const nlohmann::json& grants, const std::string& store, const std::string& user,
                std::vector<std::string>& out) {
    auto s = grants.find(store);
    if (s == grants.end() || !s->is_object()) return;
    auto u = s->find(user);
    if (u == s->end() || !u->is_array()) return;
    for (const auto& scope : *u)
        if (scope.is_string() && std::find(out.begin(), out.end(), scope.get<std::string>()) == out.end())
            out.push_back(scope.get<std::string>());
}

} // namespace

GrantTable::GrantTable(const config::SessionSettings& settings)
    : inline_grants_(settings.grants), grants_file_(settings.grants_file) {}

std::vector<std::string> GrantTable::scopes(const std::string& store, const std::string& user) const {
    std::vector<std::string> out;
    add_scopes(inline_grants_, store, user, out);
    if (grants_file_.empty()) return out;
    std::optional<BoundedFile> file;
    try {
        file = read_bounded_file(grants_file_, kMaxGrantsFileBytes);
    } catch (const BoundedFileRefused& e) {
        throw GrantsUnavailable("the grants file " + grants_file_.string() + " " + e.what());
    }
    if (!file) throw GrantsUnavailable("the grants file " + grants_file_.string() + " does not exist");
    std::optional<config::YamlDocument> document;
    try {
        document = config::YamlDocument::parse(file->text);
    } catch (const config::YamlSyntaxError& e) {
        throw GrantsUnavailable("the grants file " + grants_file_.string() + " is not YAML: line " +
                                std::to_string(e.where().line) + ", column " + std::to_string(e.where().column) + ": " +
                                e.what());
    }
    const config::YamlNode root = document->root();
    if (!root.is_map() || (root["grants"] && !root["grants"].is_map()))
        throw GrantsUnavailable("the grants file " + grants_file_.string() +
                                " must hold grants: {<store>: {<user>: [scopes]}}");
    const config::YamlNode grants = root["grants"] ? root["grants"] : root;
    const config::YamlNode for_store = grants[store];
    if (!for_store.is_map()) return out;
    const config::YamlNode for_user = for_store[user];
    if (!for_user) return out;
    if (!for_user.is_sequence())
        throw GrantsUnavailable("the grants file " + grants_file_.string() + " lists no scope list for " + store + "/" +
                                user);
    for (const auto& scope : for_user.items()) {
        if (!scope.is_scalar())
            throw GrantsUnavailable("the grants file " + grants_file_.string() + " lists a scope for " + store + "/" +
                                    user + " that is not a name (line " + std::to_string(scope.mark().line) + ")");
        const auto& name = scope.text();
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace gatehouse::session
