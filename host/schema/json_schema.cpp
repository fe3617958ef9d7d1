#include "schema/json_schema.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validation_visitor.hpp>

#include <algorithm>
#include <charconv>
#include <regex>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

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

bool is_data_keyword(std::string_view key) {
    return key == "enum" || key == "const" || key == "default" || key == "examples";
}

bool is_name_map(std::string_view key) {
    return key == "properties" || key == "patternProperties" || key == "$defs" || key == "definitions" ||
           key == "dependentSchemas" || key == "dependencies";
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

// The largest integer a double holds exactly.
constexpr double kExactIntegers = 9007199254740992.0;

// The longest `$ref`, `$id` or `id` a schema may hold.
constexpr std::size_t kMaxReferenceBytes = 1024;

// What the walk over a schema found besides its faults.
using RegexCache = std::unordered_map<std::string, std::regex>;

struct Findings {
    bool regex = false;                  // std::regex runs while validating
    std::vector<std::string> local_refs; // every "$ref": "#..." as written
    RegexCache patterns;                 // every `pattern`, compiled
};

// Keywords valijson would accept and then fail on while validating, found
// once here so such a schema is refused at load, and what the walk learns
// on the way:
// - `pattern` and `patternProperties` regexes, which valijson compiles only
//   when it validates (std::regex_error then: every call of the tool fails);
//   they, and the formats valijson checks with std::regex (date, time,
//   date-time), make the schema one that recurses per character;
// - a `multipleOf` that is not above zero (the spec requires it), or beyond
//   the integers a double holds exactly: valijson takes an integer instance
//   modulo an integer one (see integer_multiples_as_doubles);
// - every local `$ref`, for check_references.
// Values that are data, not schemas (enum, const, default, examples), are
// not searched: check_references refuses a `$ref` into them.
// `names`: `node` is a name map's object, whose every member is a schema.
void check_keywords(const nlohmann::json& node, const std::string& pointer, Findings& findings, bool names = false) {
    if (node.is_array()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            check_keywords(node[i], pointer + "/" + std::to_string(i), findings);
        return;
    }
    if (!node.is_object()) return;
    if (names) {
        for (const auto& [name, schema] : node.items())
            check_keywords(schema, pointer + "/" + json_pointer_token(name), findings);
        return;
    }
    for (const auto& [key, value] : node.items()) {
        const std::string here = pointer + "/" + json_pointer_token(key);
        if (is_data_keyword(key)) continue;
        try {
            if (key == "pattern" && value.is_string()) {
                const auto& text = value.get_ref<const std::string&>();
                if (!findings.patterns.count(text))
                    findings.patterns.emplace(text, std::regex(text, std::regex::ECMAScript));
                findings.regex = true;
            }
            if (key == "patternProperties" && value.is_object())
                for (const auto& [regex, _] : value.items()) {
                    std::regex(regex, std::regex::ECMAScript);
                    findings.regex = true;
                }
        } catch (const std::regex_error& e) {
            throw std::invalid_argument("the regular expression at " + here + " does not compile: " + e.what());
        }
        if (key == "format" && (value == "date" || value == "time" || value == "date-time")) findings.regex = true;
        // A property named multipleOf holds a schema (an object or a
        // boolean); the keyword, a number (valijson would read the text "0"
        // as the integer 0).
        if (key == "multipleOf" && !value.is_object() && !value.is_boolean() &&
            !(value.is_number() && value.get<double>() > 0 && value.get<double>() <= kExactIntegers))
            throw std::invalid_argument("multipleOf at " + here + " is " + value.dump() +
                                        "; it must be a number greater than 0 and at most 2^53");
        // valijson matches a reference and an id against a regular
        // expression that recurses per character: a long one would exhaust
        // the stack of whoever compiles the schema.
        if ((key == "$ref" || key == "$id" || key == "id") && value.is_string() &&
            value.get_ref<const std::string&>().size() > kMaxReferenceBytes)
            throw std::invalid_argument(key + " at " + here + " is " +
                                        std::to_string(value.get_ref<const std::string&>().size()) +
                                        " bytes long; at most " + std::to_string(kMaxReferenceBytes) + " are read");
        if (key == "$ref" && value.is_string() && value.get_ref<const std::string&>().starts_with("#"))
            findings.local_refs.push_back(value.get<std::string>());
        check_keywords(value, here, findings, is_name_map(key));
    }
}

// The tokens of a local reference "#/a/b~1c" (RFC 6901 after the '#');
// nullopt for one that is not a JSON pointer ("#anchor").
std::optional<std::vector<std::string>> pointer_tokens(std::string_view ref) {
    ref.remove_prefix(1);
    std::vector<std::string> tokens;
    if (ref.empty()) return tokens;
    if (ref.front() != '/') return std::nullopt;
    std::size_t at = 1;
    for (;;) {
        const std::size_t end = std::min(ref.find('/', at), ref.size());
        std::string token;
        for (std::size_t i = at; i < end; ++i) {
            if (ref[i] == '~' && i + 1 < end && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
                token += ref[++i] == '0' ? '~' : '/';
            } else {
                token += ref[i];
            }
        }
        tokens.push_back(std::move(token));
        if (end == ref.size()) return tokens;
        at = end + 1;
    }
}

// The schema a local reference names, or null for an anchor ("#name",
// which valijson resolves by $id). Throws when it names nothing, or a place
// inside data (a `$ref` into `default` would make valijson read data as a
// schema, which no other check here saw).
const nlohmann::json* resolve_local(const nlohmann::json& document, const std::string& ref) {
    const auto tokens = pointer_tokens(ref);
    if (!tokens) return nullptr;
    const nlohmann::json* node = &document;
    bool name_position = false; // the token after a name map's keyword is a name
    for (const auto& token : *tokens) {
        if (node->is_object()) {
            if (!name_position && is_data_keyword(token))
                throw std::invalid_argument("the $ref '" + ref + "' points into '" + token +
                                            "', which holds data, not a schema");
            const auto it = node->find(token);
            if (it == node->end()) throw std::invalid_argument("the $ref '" + ref + "' names nothing");
            name_position = !name_position && is_name_map(token);
            node = &*it;
        } else if (node->is_array()) {
            std::size_t index = 0;
            const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), index);
            if (error != std::errc() || end != token.data() + token.size() || index >= node->size())
                throw std::invalid_argument("the $ref '" + ref + "' names nothing");
            name_position = false;
            node = &(*node)[index];
        } else {
            throw std::invalid_argument("the $ref '" + ref + "' names nothing");
        }
    }
    return node;
}

// The schemas valijson applies to the same value as `node` (not to a part
// of it): a `$ref`'s target, the members of allOf, anyOf and oneOf, not,
// if/then/else, and the schemas of dependentSchemas and dependencies.
std::vector<const nlohmann::json*> same_value_schemas(const nlohmann::json& document, const nlohmann::json& node) {
    std::vector<const nlohmann::json*> out;
    if (!node.is_object()) return out;
    if (const auto ref = node.find("$ref");
        ref != node.end() && ref->is_string() && ref->get_ref<const std::string&>().starts_with("#"))
        if (const auto* target = resolve_local(document, ref->get<std::string>())) out.push_back(target);
    for (const char* key : {"allOf", "anyOf", "oneOf"})
        if (const auto list = node.find(key); list != node.end() && list->is_array())
            for (const auto& each : *list)
                out.push_back(&each);
    for (const char* key : {"not", "if", "then", "else"})
        if (const auto sub = node.find(key); sub != node.end()) out.push_back(&*sub);
    for (const char* key : {"dependentSchemas", "dependencies"})
        if (const auto map = node.find(key); map != node.end() && map->is_object())
            for (const auto& each : *map)
                if (each.is_object()) out.push_back(&each);
    return out;
}

// Every local `$ref` must name a schema (resolve_local), and no loop of
// schemas may apply to one value without ever stepping into a part of it
// ({"$ref": "#"} at the root, or x: {"allOf": [{"$ref": "#/properties/x"}]}):
// valijson follows such a loop until the stack ends, while compiling or
// while validating. A loop passes through a `$ref` (the document is a tree
// otherwise), so the search starts at every reference's target.
void check_references(const nlohmann::json& document, const std::vector<std::string>& refs) {
    enum class Mark { on_path, done };
    std::unordered_map<const nlohmann::json*, Mark> marks;
    struct Frame {
        const nlohmann::json* node;
        std::vector<const nlohmann::json*> next;
        std::size_t at = 0;
    };
    for (const auto& ref : refs) {
        const nlohmann::json* start = resolve_local(document, ref);
        if (!start || marks.count(start)) continue;
        std::vector<Frame> path;
        path.push_back({start, same_value_schemas(document, *start)});
        marks[start] = Mark::on_path;
        while (!path.empty()) {
            Frame& top = path.back();
            if (top.at == top.next.size()) {
                marks[top.node] = Mark::done;
                path.pop_back();
                continue;
            }
            const nlohmann::json* next = top.next[top.at++];
            const auto mark = marks.find(next);
            if (mark != marks.end() && mark->second == Mark::on_path)
                throw std::invalid_argument("the $ref '" + ref +
                                            "' leads through schemas that apply to the same value back to where it "
                                            "started, never to a schema that checks something");
            if (mark != marks.end()) continue;
            marks[next] = Mark::on_path;
            path.push_back({next, same_value_schemas(document, *next)});
        }
    }
}

// valijson checks an integer `multipleOf` by integer modulo: a fraction is
// cut to an integer first (2.5 passes multipleOf 2), and INT64_MIN modulo
// -1 ends the process. As a double, the same divisor is checked on the
// value itself. Only schema positions are rewritten; data stays as written.
void integer_multiples_as_doubles(nlohmann::json& node, bool names = false) {
    if (node.is_array()) {
        for (auto& each : node)
            integer_multiples_as_doubles(each);
        return;
    }
    if (!node.is_object()) return;
    for (auto& [key, value] : node.items()) {
        if (names) {
            integer_multiples_as_doubles(value);
            continue;
        }
        if (is_data_keyword(key)) continue;
        if (key == "multipleOf" && value.is_number_integer()) value = value.get<double>();
        integer_multiples_as_doubles(value, is_name_map(key));
    }
}

// valijson checks the date, time and date-time formats with a std::regex it
// builds inside the check, at every value checked (some 700 µs for a
// date-time). The schema valijson reads carries each as a `pattern` instead,
// compiled once for each of the schema's validators (ValidatorLease), with
// valijson's rules (RFC 3339's shapes, a day within its month, 29 in
// February) but two: a pattern, like a format in JSON Schema, holds only for
// strings (valijson refused a number's text), and an offset's sign is `+`
// or `-` (valijson's class also let `|` through). A failure is reported in
// the format's words (JsonSchema::format_reason).
struct FormatPattern {
    std::string_view format;
    const char* pattern;
    const char* reason; // valijson's own words for the format
};
#define GATEHOUSE_DATE                                                                                                 \
    "[0-9]+-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|[12][" \
    "0-9]))"
#define GATEHOUSE_TIME                                                                                                 \
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?(?:[Zz]|[+\\-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
constexpr FormatPattern kFormatPatterns[] = {
    {"date", "^" GATEHOUSE_DATE "$", "String should be a valid date"},
    {"time", "^" GATEHOUSE_TIME "$", "String should be a valid time"},
    {"date-time", "^" GATEHOUSE_DATE "[Tt]" GATEHOUSE_TIME "$", "String should be a valid date-time"},
};
#undef GATEHOUSE_DATE
#undef GATEHOUSE_TIME

// The index in kFormatPatterns of the format `format` names, or -1.
int format_index(const nlohmann::json& format) {
    if (!format.is_string()) return -1;
    for (std::size_t i = 0; i < std::size(kFormatPatterns); ++i)
        if (format.get_ref<const std::string&>() == kFormatPatterns[i].format) return static_cast<int>(i);
    return -1;
}

// Only schema positions are rewritten; data stays as written. A schema with a
// pattern of its own keeps it and gets the format's beside it in `allOf`.
// `used`: a bit for each of kFormatPatterns met. With `passed_format`, the
// copy format_reason asks: that format's pattern matches every string, all
// else is as valijson reads it.
void formats_as_patterns(nlohmann::json& node, unsigned& used, int passed_format = -1, bool names = false) {
    if (node.is_array()) {
        for (auto& each : node)
            formats_as_patterns(each, used, passed_format);
        return;
    }
    if (!node.is_object()) return;
    if (!names) {
        const auto format = node.find("format");
        if (const int known = format != node.end() ? format_index(*format) : -1; known >= 0) {
            used |= 1u << known;
            node.erase(format);
            const char* pattern = known == passed_format ? "" : kFormatPatterns[known].pattern;
            if (!node.contains("pattern")) {
                node["pattern"] = pattern;
            } else {
                auto& all_of = node["allOf"];
                if (all_of.is_null()) all_of = nlohmann::json::array();
                if (all_of.is_array()) all_of.push_back({{"pattern", pattern}}); // else refused by the parser
            }
        }
    }
    for (auto& [key, value] : node.items()) {
        if (names) {
            formats_as_patterns(value, used, passed_format);
            continue;
        }
        if (is_data_keyword(key)) continue;
        formats_as_patterns(value, used, passed_format, is_name_map(key));
    }
}

// valijson's words for a failed pattern, a format's failure included.
constexpr std::string_view kPatternFailure = "Failed to match regex specified by 'pattern' constraint.";

// The most values of an instance whose violation is pinpointed: finding the
// deepest error means collecting every error, and valijson collects one per
// failing pair for uniqueItems (quadratic in the array).
constexpr std::size_t kMaxPinpointedValues = 4096;

bool more_values_than(const nlohmann::json& value, std::size_t limit) {
    std::vector<const nlohmann::json*> stack{&value};
    std::size_t seen = 0;
    while (!stack.empty()) {
        const nlohmann::json* node = stack.back();
        stack.pop_back();
        if (++seen > limit) return true;
        if (node->is_structured())
            for (const auto& child : *node)
                stack.push_back(&child);
    }
    return false;
}

} // namespace

struct JsonSchema::Patterns {
    RegexCache regexes;
};

// A validator of the schema's, taken for one check and given back after it:
// the regexes valijson reaches a `pattern`'s through. Each starts as a copy
// of those the schema compiled at load (a std::regex copies its compiled
// automaton by reference, and matching only reads it), and keeps any other
// valijson compiles while checking.
class JsonSchema::ValidatorLease {
public:
    explicit ValidatorLease(const JsonSchema& schema) : schema_(schema) {
        {
            std::lock_guard lock(schema_.patterns_mutex_);
            if (!schema_.idle_patterns_.empty()) {
                patterns_ = std::move(schema_.idle_patterns_.back());
                schema_.idle_patterns_.pop_back();
            }
        }
        if (!patterns_) patterns_ = std::make_unique<Patterns>(*schema_.compiled_patterns_);
    }
    ~ValidatorLease() {
        std::lock_guard lock(schema_.patterns_mutex_);
        try {
            schema_.idle_patterns_.push_back(std::move(patterns_));
        } catch (const std::bad_alloc&) {
            // Dropped: the next check makes another.
        }
    }
    ValidatorLease(const ValidatorLease&) = delete;
    ValidatorLease& operator=(const ValidatorLease&) = delete;

    // What valijson::Validator::validate does (strong types, from the root),
    // with this lease's regexes: the Validator keeps its own private.
    bool check(const valijson::Subschema& schema, const valijson::adapters::NlohmannJsonAdapter& target,
               valijson::ValidationResults* results) const {
        valijson::ValidationVisitor<valijson::adapters::NlohmannJsonAdapter> visitor(
            target, std::vector<std::string>(1, "<root>"), true, results, patterns_->regexes);
        return visitor.validateSchema(schema);
    }

private:
    const JsonSchema& schema_;
    std::unique_ptr<Patterns> patterns_;
};

// For each format a schema holds, the schema valijson reads with that
// format's pattern matching every string: a pattern failure that the copy
// does not report at the same place was that format's. Everything else
// (the schema's own patterns, the other formats, `if` and its branches)
// stays, so the copy takes the same paths through the schema.
struct JsonSchema::FormatChecks {
    struct Check {
        nlohmann::json document;
        valijson::Schema schema;
    };
    std::unique_ptr<Check> by_format[std::size(kFormatPatterns)];
};

std::string JsonSchema::format_reason(const nlohmann::json& instance, const std::string& pointer,
                                      std::string reason) const {
    if (!format_checks_ || reason != kPatternFailure) return reason;
    try {
        valijson::adapters::NlohmannJsonAdapter target(instance);
        // The schema's own validators: they hold the same patterns.
        const ValidatorLease validator(*this);
        for (std::size_t k = 0; k < std::size(kFormatPatterns); ++k) {
            const auto& check = format_checks_->by_format[k];
            if (!check) continue;
            valijson::ValidationResults results;
            validator.check(check->schema, target, &results);
            bool still_fails = false;
            valijson::ValidationResults::Error error;
            while (results.popError(error))
                if (error.description == kPatternFailure && pointer_from_context(error.context) == pointer)
                    still_fails = true;
            if (!still_fails) return kFormatPatterns[k].reason;
        }
    } catch (const std::exception&) {
        // valijson's words stand.
    }
    return reason;
}

JsonSchema::~JsonSchema() = default;

std::shared_ptr<const JsonSchema> JsonSchema::compile(const nlohmann::json& document) {
    if (!document.is_object()) throw std::invalid_argument("a schema must be a JSON object");
    check_dialect(document);
    Findings findings;
    check_keywords(document, "", findings);
    check_references(document, findings.local_refs);
    std::shared_ptr<JsonSchema> out(new JsonSchema());
    out->document_ = document;
    out->uses_regex_ = findings.regex;
    out->compiled_document_ = document;
    integer_multiples_as_doubles(out->compiled_document_);
    unsigned formats = 0;
    formats_as_patterns(out->compiled_document_, formats);
    auto patterns = std::make_unique<Patterns>();
    patterns->regexes = std::move(findings.patterns);
    for (std::size_t k = 0; k < std::size(kFormatPatterns); ++k)
        if (formats & (1u << k))
            patterns->regexes.emplace(kFormatPatterns[k].pattern, std::regex(kFormatPatterns[k].pattern));
    // The pattern a format's copy puts in its place (FormatChecks).
    if (formats != 0) patterns->regexes.emplace("", std::regex(""));
    out->compiled_patterns_ = std::move(patterns);
    out->compiled_ = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(out->compiled_document_);
    try {
        // No fetch callback: a remote $ref fails here instead of reaching the network.
        parser.populateSchema(adapter, *out->compiled_);
        if (formats != 0) out->format_checks_ = std::make_unique<FormatChecks>();
        for (std::size_t k = 0; k < std::size(kFormatPatterns); ++k) {
            if (!(formats & (1u << k))) continue;
            auto check = std::make_unique<FormatChecks::Check>();
            check->document = document;
            integer_multiples_as_doubles(check->document);
            unsigned same = 0;
            formats_as_patterns(check->document, same, static_cast<int>(k));
            parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(check->document), check->schema);
            out->format_checks_->by_format[k] = std::move(check);
        }
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string("not a valid JSON Schema: ") + e.what());
    }
    return out;
}

std::optional<SchemaViolation> JsonSchema::validate(const nlohmann::json& value) const {
    valijson::adapters::NlohmannJsonAdapter target(value);
    const ValidatorLease validator(*this);
    // Fast path: stop at the first failure without collecting messages.
    if (validator.check(*compiled_, target, nullptr)) return std::nullopt;
    if (more_values_than(value, kMaxPinpointedValues))
        return SchemaViolation{"", "the value does not match the schema (not pinpointed: it holds more than " +
                                       std::to_string(kMaxPinpointedValues) + " values)"};
    valijson::ValidationResults results;
    validator.check(*compiled_, target, &results);
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
    if (found) best.reason = format_reason(value, best.pointer, std::move(best.reason));
    return best;
}

} // namespace gatehouse::schema
