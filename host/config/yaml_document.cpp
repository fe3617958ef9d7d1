#include "config/yaml_document.hpp"

#include <yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <unordered_map>

namespace gatehouse::config {

YamlNode::Kind YamlNode::kind() const {
    return data_ ? data_->kind : Kind::none;
}

const std::string& YamlNode::text() const {
    static const std::string no_text;
    return data_ && data_->kind == Kind::scalar ? data_->text : no_text;
}

bool YamlNode::quoted() const {
    return data_ && data_->quoted;
}

YamlMark YamlNode::mark() const {
    return data_ ? data_->mark : YamlMark{};
}

const std::vector<YamlNode>& YamlNode::items() const {
    static const std::vector<YamlNode> no_items;
    return data_ ? data_->items : no_items;
}

const std::vector<YamlEntry>& YamlNode::entries() const {
    static const std::vector<YamlEntry> no_entries;
    return data_ ? data_->entries : no_entries;
}

std::size_t YamlNode::size() const {
    return is_map() ? entries().size() : items().size();
}

YamlNode YamlNode::operator[](std::string_view key) const {
    for (const auto& entry : entries())
        if (entry.key.is_scalar() && entry.key.text() == key) return entry.value;
    return {};
}

namespace {

YamlMark mark_of(const yaml_mark_t& mark) {
    return {static_cast<int>(mark.line) + 1, static_cast<int>(mark.column) + 1};
}

// libyaml's reader names a byte offset, not a line.
YamlMark mark_at_offset(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    const auto before = text.substr(0, offset);
    const auto line_start = before.rfind('\n');
    const auto line = std::count(before.begin(), before.end(), '\n');
    const auto column = line_start == std::string_view::npos ? offset : offset - line_start - 1;
    return {static_cast<int>(line) + 1, static_cast<int>(column) + 1};
}

[[noreturn]] void throw_parser_error(const yaml_parser_t& parser, std::string_view text) {
    if (parser.error == YAML_MEMORY_ERROR) throw YamlSyntaxError({}, "out of memory reading the YAML");
    std::string message = parser.problem ? parser.problem : "the text is not YAML";
    if (parser.error == YAML_READER_ERROR) {
        if (parser.problem_value != -1) {
            char value[16];
            std::snprintf(value, sizeof value, " (0x%x)", static_cast<unsigned>(parser.problem_value));
            message += value;
        }
        throw YamlSyntaxError(mark_at_offset(text, parser.problem_offset), message + ": YAML is UTF-8 text");
    }
    if (parser.context) {
        const auto context = mark_of(parser.context_mark);
        message += std::string(" (") + parser.context + " that starts at line " + std::to_string(context.line) +
                   ", column " + std::to_string(context.column) + ")";
    }
    // Inside [ ] or { } a ':' always separates a key from its value, so a
    // value that starts with one must be quoted there (a block list, "- ::1",
    // reads it as it is).
    const auto at = parser.problem_mark.index;
    if (parser.context && std::strstr(parser.context, "flow") && at < text.size() && text[at] == ':')
        message += "; inside [ ] or { } quote a value that starts with ':', such as an IPv6 address ('::1')";
    throw YamlSyntaxError(mark_of(parser.problem_mark), message);
}

class Parser {
public:
    explicit Parser(std::string_view text) {
        if (!yaml_parser_initialize(&parser_)) throw YamlSyntaxError({}, "out of memory reading the YAML");
        yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    }
    ~Parser() { yaml_parser_delete(&parser_); }
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;

    yaml_parser_t& get() { return parser_; }

private:
    yaml_parser_t parser_{};
};

class Event {
public:
    Event(yaml_parser_t& parser, std::string_view text) {
        if (!yaml_parser_parse(&parser, &event_)) throw_parser_error(parser, text);
    }
    ~Event() { yaml_event_delete(&event_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    const yaml_event_t* operator->() const { return &event_; }
    const yaml_event_t& get() const { return event_; }

private:
    yaml_event_t event_{};
};

bool is_null_text(std::string_view text) {
    return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

const char* anchor_of(const yaml_event_t& event) {
    switch (event.type) {
    case YAML_SCALAR_EVENT: return reinterpret_cast<const char*>(event.data.scalar.anchor);
    case YAML_SEQUENCE_START_EVENT: return reinterpret_cast<const char*>(event.data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT: return reinterpret_cast<const char*>(event.data.mapping_start.anchor);
    default: return nullptr;
    }
}

} // namespace

detail::YamlNodeData& YamlDocument::add() {
    return nodes_.emplace_back();
}

YamlDocument YamlDocument::parse(std::string_view text) {
    YamlDocument document;
    Parser parser(text);

    // The collections being read, innermost last; a map's key waits beside
    // it until its value is read.
    struct Open {
        detail::YamlNodeData* node;
        YamlNode key;
    };
    std::vector<Open> open;
    std::unordered_map<std::string, const detail::YamlNodeData*> anchors;

    const auto place = [&](YamlNode node) {
        if (open.empty()) {
            document.root_ = node;
            return;
        }
        auto& parent = open.back();
        if (parent.node->kind == YamlNode::Kind::sequence) {
            parent.node->items.push_back(node);
        } else if (!parent.key) {
            parent.key = node;
        } else {
            parent.node->entries.push_back({parent.key, node});
            parent.key = {};
        }
    };

    for (;;) {
        const Event event(parser.get(), text);
        const auto mark = mark_of(event->start_mark);
        switch (event->type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT: break;
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT:
            if (!document.root_) {
                auto& null = document.add();
                null.mark = mark;
                document.root_ = YamlNode(&null);
            }
            return document;
        case YAML_ALIAS_EVENT: {
            const auto found = anchors.find(reinterpret_cast<const char*>(event->data.alias.anchor));
            if (found == anchors.end())
                throw YamlSyntaxError(mark, std::string("the alias *") +
                                                reinterpret_cast<const char*>(event->data.alias.anchor) +
                                                " names no anchor (&name) written before it");
            place(YamlNode(found->second));
            break;
        }
        case YAML_SCALAR_EVENT: {
            auto& node = document.add();
            const auto& scalar = event->data.scalar;
            node.text.assign(reinterpret_cast<const char*>(scalar.value), scalar.length);
            node.mark = mark;
            const char* tag = reinterpret_cast<const char*>(scalar.tag);
            const bool plain = scalar.style == YAML_PLAIN_SCALAR_STYLE;
            node.quoted = !plain || (tag && std::strcmp(tag, YAML_STR_TAG) == 0);
            node.kind = plain && !tag && is_null_text(node.text) ? YamlNode::Kind::null : YamlNode::Kind::scalar;
            if (node.kind == YamlNode::Kind::null) node.text.clear();
            if (const char* anchor = anchor_of(event.get())) anchors[anchor] = &node;
            place(YamlNode(&node));
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            if (open.size() >= kMaxNesting)
                throw YamlSyntaxError(mark, "the YAML nests deeper than " + std::to_string(kMaxNesting) + " levels");
            auto& node = document.add();
            node.kind = event->type == YAML_MAPPING_START_EVENT ? YamlNode::Kind::map : YamlNode::Kind::sequence;
            node.mark = mark;
            // Named before its content is read: an alias inside may name the
            // collection that holds it, as YAML allows.
            if (const char* anchor = anchor_of(event.get())) anchors[anchor] = &node;
            open.push_back({&node, {}});
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            const YamlNode done(open.back().node);
            open.pop_back();
            place(done);
            break;
        }
        case YAML_NO_EVENT: break;
        }
    }
}

bool yaml_bool(const YamlNode& node, bool& value) {
    if (!node.is_scalar()) return false;
    const std::string& text = node.text();
    // Each word in lower case, upper case, or with a capital first letter.
    const bool lower = std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::isupper(c); });
    const bool upper = std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::islower(c); });
    const bool capital = !text.empty() && std::isupper(static_cast<unsigned char>(text[0])) &&
                         std::none_of(text.begin() + 1, text.end(), [](unsigned char c) { return std::isupper(c); });
    if (!lower && !upper && !capital) return false;
    std::string word = text;
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const auto& [yes, no] : {std::pair{"y", "n"}, {"yes", "no"}, {"true", "false"}, {"on", "off"}}) {
        if (word == yes) return value = true, true;
        if (word == no) return value = false, true;
    }
    return false;
}

bool yaml_integer(const YamlNode& node, long long& value) {
    if (!node.is_scalar()) return false;
    std::string_view text = node.text();
    int base = 10;
    if (text.starts_with("0x")) {
        base = 16;
        text.remove_prefix(2);
    } else if (text.starts_with("0o")) {
        base = 8;
        text.remove_prefix(2);
    } else if (text.starts_with('+')) {
        text.remove_prefix(1);
        if (text.starts_with('-')) return false;
    }
    if (text.empty()) return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    return error == std::errc() && end == text.data() + text.size() && (base == 10 || text[0] != '-');
}

bool yaml_real(const YamlNode& node, double& value) {
    if (!node.is_scalar()) return false;
    std::string_view text = node.text();
    // [-+]? ( . digits | digits ( . digits? )? ) ( [eE] [-+]? digits )?
    std::size_t at = 0;
    const auto digits = [&] {
        const auto from = at;
        while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])))
            ++at;
        return at > from;
    };
    if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
    const bool whole = digits();
    bool fraction = false;
    if (at < text.size() && text[at] == '.') {
        ++at;
        fraction = digits();
    }
    if (!whole && !fraction) return false;
    if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
        ++at;
        if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
        if (!digits()) return false;
    }
    if (at != text.size()) return false;
    if (text.starts_with('+')) text.remove_prefix(1);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size();
}

} // namespace gatehouse::config
