#include "schema/json_schema.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <regex>
#include <stdexcept>

namespace gatehouse::schema {

std::string SchemaViolation::sentence() const {
    std::string why = reason;
    while (!why.empty() && (why.back() == '.' || why.back() == ' '))
        why.pop_back();
    return "at " + (pointer.empty() ? std::string("/ (the arguments object)") : pointer) + ": " + why;
}

std::string json_pointer_token(const std::string& key) {
    std::string out;
    out.reserve(key.size());
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

namespace {

const char* const kDialects[] = {
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
};

void check_dialect(const nlohmann::json& doc) {
    auto it = doc.find("$schema");
    if (it == doc.end()) return;
    if (!it->is_string()) throw std::invalid_argument("$schema must be a string");
    for (const char* d : kDialects)
        if (*it == d) return;
    throw std::invalid_argument("unsupported JSON Schema dialect '" + it->get<std::string>() +
                                "' (supported: draft-07 and 2020-12)");
}

std::string pointer_from_context(const std::vector<std::string>& context) {
    std::string pointer;
    for (const auto& part : context) {
        if (part == "<root>") continue;
        if (part.size() >= 2 && part.front() == '[' && part.back() == ']')
            pointer += "/" + json_pointer_token(part.substr(1, part.size() - 2));
        else
            pointer += "/" + json_pointer_token(part);
    }
    return pointer;
}

// Keywords valijson would accept and then fail on while validating, found
// once here so such a schema is refused at load:
// - `pattern` and `patternProperties` regexes, which valijson compiles only
//   when it validates (std::regex_error then: every call of the tool fails);
// - a `multipleOf` that is not above zero (the spec requires it): valijson
//   takes an integer instance modulo it, and modulo zero ends the process.
// Values that are data, not schemas (enum, const, default, examples), are
// not searched.
void check_keywords(const nlohmann::json& node, const std::string& pointer) {
    if (node.is_array()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            check_keywords(node[i], pointer + "/" + std::to_string(i));
        return;
    }
    if (!node.is_object()) return;
    for (const auto& [key, value] : node.items()) {
        const std::string here = pointer + "/" + json_pointer_token(key);
        if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;
        try {
            if (key == "pattern" && value.is_string()) std::regex(value.get<std::string>(), std::regex::ECMAScript);
            if (key == "patternProperties" && value.is_object())
                for (const auto& [regex, _] : value.items())
                    std::regex(regex, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            throw std::invalid_argument("the regular expression at " + here + " does not compile: " + e.what());
        }
        // A property named multipleOf holds a schema (an object), not a number.
        if (key == "multipleOf" && value.is_number() && !(value.get<double>() > 0))
            throw std::invalid_argument("multipleOf at " + here + " is " + value.dump() +
                                        "; it must be a number greater than 0");
        check_keywords(value, here);
    }
}

} // namespace

JsonSchema::~JsonSchema() = default;

std::shared_ptr<const JsonSchema> JsonSchema::compile(const nlohmann::json& document) {
    if (!document.is_object()) throw std::invalid_argument("a schema must be a JSON object");
    check_dialect(document);
    check_keywords(document, "");
    std::shared_ptr<JsonSchema> out(new JsonSchema());
    out->document_ = document;
    out->compiled_ = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(out->document_);
    try {
        // No fetch callback: a remote $ref fails here instead of reaching the network.
        parser.populateSchema(adapter, *out->compiled_);
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string("not a valid JSON Schema: ") + e.what());
    }
    return out;
}

std::optional<SchemaViolation> JsonSchema::validate(const nlohmann::json& value) const {
    valijson::adapters::NlohmannJsonAdapter target(value);
    {
        // Fast path: stop at the first failure without collecting messages.
        valijson::Validator fast;
        if (fast.validate(*compiled_, target, nullptr)) return std::nullopt;
    }
    valijson::Validator validator;
    valijson::ValidationResults results;
    validator.validate(*compiled_, target, &results);
    // The deepest error names the value to fix; the outer ones only repeat
    // that a parent failed because of it.
    SchemaViolation best{"", "the value does not match the schema"};
    std::size_t best_depth = 0;
    bool found = false;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) {
        if (!found || error.context.size() > best_depth) {
            best = {pointer_from_context(error.context), error.description};
            best_depth = error.context.size();
            found = true;
        }
    }
    return best;
}

} // namespace gatehouse::schema
