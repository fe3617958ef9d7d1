#include "license/license_document.hpp"

#include "license/base64.hpp"
#include "license/utc_timestamp.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace gatehouse::license {

namespace {

constexpr std::size_t kMaxLicenseeBytes = 256;
constexpr std::size_t kMaxFamilies = 256;

[[noreturn]] void fail(const std::string& message) {
    throw LicenseFormatError(message);
}

const nlohmann::json& field(const nlohmann::json& doc, const char* name) {
    auto it = doc.find(name);
    if (it == doc.end()) fail(std::string("the field \"") + name + "\" is missing");
    return *it;
}

std::string string_field(const nlohmann::json& doc, const char* name) {
    const auto& value = field(doc, name);
    if (!value.is_string()) fail(std::string("\"") + name + "\" must be a string");
    return value.get<std::string>();
}

std::chrono::system_clock::time_point time_field(const nlohmann::json& doc, const char* name, std::string& text) {
    text = string_field(doc, name);
    auto when = parse_utc_timestamp(text);
    if (!when)
        fail(std::string("\"") + name + "\" must be a UTC time written YYYY-MM-DDTHH:MM:SSZ (years 1970-2200), not \"" +
             text + "\"");
    return *when;
}

} // namespace

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items)
        out += (out.empty() ? "" : ", ") + i;
    return out;
}

bool valid_license_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.';
    });
}

std::string LicenseDocument::signed_bytes() const {
    std::string out(kFormat);
    out += "\nlicensee:" + licensee + "\nfamilies:";
    for (std::size_t i = 0; i < families.size(); ++i)
        out += (i ? "," : "") + families[i];
    out += "\nissued:" + issued_text + "\nexpires:" + expires_text + "\nkey_id:" + key_id + "\n";
    return out;
}

bool LicenseDocument::covers(std::string_view family) const {
    return std::find(families.begin(), families.end(), family) != families.end();
}

LicenseDocument parse_license_document(std::string_view text) {
    const auto doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (doc.is_discarded()) fail("the file is not JSON");
    if (!doc.is_object()) fail("the file must hold one JSON object");
    static const std::set<std::string> known{"format",  "licensee", "families", "issued",
                                             "expires", "key_id",   "signature"};
    for (const auto& [name, value] : doc.items())
        if (!known.count(name))
            fail("unknown field \"" + name +
                 "\" (a license holds exactly format, licensee, families, issued, expires, key_id, signature)");

    if (string_field(doc, "format") != LicenseDocument::kFormat)
        fail("\"format\" must be \"" + std::string(LicenseDocument::kFormat) + "\"");

    LicenseDocument d;
    d.licensee = string_field(doc, "licensee");
    if (d.licensee.empty() || d.licensee.size() > kMaxLicenseeBytes)
        fail("\"licensee\" must be 1 to " + std::to_string(kMaxLicenseeBytes) + " bytes");
    if (std::any_of(d.licensee.begin(), d.licensee.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
        fail("\"licensee\" must not hold line breaks or other control characters");

    const auto& families = field(doc, "families");
    if (!families.is_array() || families.empty() || families.size() > kMaxFamilies)
        fail("\"families\" must be a list of 1 to " + std::to_string(kMaxFamilies) + " family names");
    for (const auto& f : families) {
        if (!f.is_string() || !valid_license_name(f.get<std::string>()))
            fail("\"families\" holds " + f.dump() + "; a family name is 1 to 64 of letters, digits, '_', '-' and '.'");
        if (d.covers(f.get<std::string>())) fail("\"families\" names " + f.dump() + " twice");
        d.families.push_back(f.get<std::string>());
    }

    d.issued = time_field(doc, "issued", d.issued_text);
    d.expires = time_field(doc, "expires", d.expires_text);
    if (d.expires <= d.issued) fail("\"expires\" must come after \"issued\"");

    d.key_id = string_field(doc, "key_id");
    if (!valid_license_name(d.key_id)) fail("\"key_id\" must be 1 to 64 of letters, digits, '_', '-' and '.'");

    const auto signature = base64_decode(string_field(doc, "signature"));
    if (!signature) fail("\"signature\" is not base64");
    if (signature->size() != 64)
        fail("\"signature\" decodes to " + std::to_string(signature->size()) + " bytes; an Ed25519 signature is 64");
    d.signature = *signature;
    return d;
}

} // namespace gatehouse::license
