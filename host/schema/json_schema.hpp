#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

namespace valijson {
class Schema;
}

namespace gatehouse::schema {

// Where a value broke a schema: the JSON pointer of the value and why.
struct SchemaViolation {
    std::string pointer; // "" is the whole document, "/items/0/name" a nested value
    std::string reason;

    std::string sentence() const; // "at /items/0/name: <reason>"
};

// A JSON Schema compiled once (at plugin load) and used from many threads.
// Supports the draft-07 vocabulary (plus $defs); documents naming a dialect
// other than draft-07 or 2020-12 are refused, and so are remote $refs, which
// are never fetched.
class JsonSchema {
public:
    // Throws std::invalid_argument with a sentence when the schema is not one.
    static std::shared_ptr<const JsonSchema> compile(const nlohmann::json& document);

    ~JsonSchema();

    std::optional<SchemaViolation> validate(const nlohmann::json& value) const;

    const nlohmann::json& document() const { return document_; }

private:
    JsonSchema() = default;
    nlohmann::json document_;
    std::unique_ptr<valijson::Schema> compiled_;
};

// RFC 6901 escaping of one reference token.
std::string json_pointer_token(const std::string& key);

} // namespace gatehouse::schema
