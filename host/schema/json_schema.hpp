#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace valijson {
class Schema;
} // namespace valijson

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
// are never fetched, local ones into data (default, enum, const, examples),
// and chains of references that never reach a schema.
class JsonSchema {
public:
    // Throws std::invalid_argument with a sentence when the schema is not one.
    static std::shared_ptr<const JsonSchema> compile(const nlohmann::json& document);

    ~JsonSchema();

    std::optional<SchemaViolation> validate(const nlohmann::json& value) const;

    const nlohmann::json& document() const { return document_; }

    // Validating runs std::regex (a pattern, patternProperties, or a date,
    // time or date-time format), which recurses once per character of the
    // string it matches: such a validation belongs on a pool worker or a
    // task round's thread, whose stacks are sized for it
    // (limits::worker_stack_bytes), never on an I/O thread.
    bool uses_regex() const { return uses_regex_; }

private:
    class ValidatorLease;
    struct FormatChecks;

    // valijson's words for a failed pattern, or the words of the date, time
    // or date-time format the string at `pointer` broke (the schema valijson
    // reads carries those formats as patterns).
    std::string format_reason(const nlohmann::json& instance, const std::string& pointer, std::string reason) const;

    JsonSchema() = default;
    nlohmann::json document_;          // as given
    nlohmann::json compiled_document_; // as valijson reads it (integer_multiples_as_doubles)
    bool uses_regex_ = false;
    std::unique_ptr<valijson::Schema> compiled_;
    // For the date, time and date-time formats it holds, which valijson reads
    // as patterns: what tells their failures apart (format_reason). Null
    // when it holds none.
    std::unique_ptr<FormatChecks> format_checks_;
    // valijson compiles a `pattern`'s regex when it first checks one and keeps
    // it in the cache it was given (a Validator's own, private), not in the
    // schema: a Validator made for each check compiled every pattern again
    // each time (some 200 µs for a UUID's), and one kept per concurrent check
    // compiled it once each. The schema compiles its patterns (the formats'
    // included) once at load; each check runs with a copy of them, taken from
    // the idle ones (one for each check that ran at the same moment as
    // others).
    struct Patterns;
    std::unique_ptr<const Patterns> compiled_patterns_;
    mutable std::mutex patterns_mutex_;
    mutable std::vector<std::unique_ptr<Patterns>> idle_patterns_;
};

// A keyword whose value is data, never a schema (enum, const, default,
// examples): a walk over a schema's keywords does not enter it.
bool is_data_keyword(std::string_view key);
// A keyword whose members are named schemas (properties, patternProperties,
// $defs, definitions, dependentSchemas, dependencies): their keys are names,
// never keywords.
bool is_name_map(std::string_view key);

// RFC 6901 escaping of one reference token.
std::string json_pointer_token(const std::string& key);

} // namespace gatehouse::schema
