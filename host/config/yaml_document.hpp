#pragma once

#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::config {

// Where a node or a mistake is in the text, counted from 1; 0 when unknown.
struct YamlMark {
    int line = 0;
    int column = 0;
};

// The text is not YAML: the parser's words and where it stopped.
class YamlSyntaxError : public std::runtime_error {
public:
    YamlSyntaxError(YamlMark where, const std::string& message) : std::runtime_error(message), where_(where) {}
    YamlMark where() const { return where_; }

private:
    YamlMark where_;
};

namespace detail {
struct YamlNodeData;
}

struct YamlEntry;

// One node of a YamlDocument, or none (a key a map does not hold). A handle:
// cheap to copy, valid while its document lives. An alias is the node its
// anchor names, so a node may hold itself: whoever walks a tree bounds it.
class YamlNode {
public:
    enum class Kind { none, null, scalar, sequence, map };

    YamlNode() = default;

    Kind kind() const;
    explicit operator bool() const { return kind() != Kind::none; }
    bool is_null() const { return kind() == Kind::null; }
    bool is_scalar() const { return kind() == Kind::scalar; }
    bool is_sequence() const { return kind() == Kind::sequence; }
    bool is_map() const { return kind() == Kind::map; }

    // A scalar's text ("" for anything else).
    const std::string& text() const;
    // Written in quotes, as a block scalar or tagged !!str: text whatever it
    // says, never a number, a boolean or null.
    bool quoted() const;
    YamlMark mark() const;

    // A sequence's items, a map's entries in the order written (a repeated
    // key is kept twice); empty for anything else.
    const std::vector<YamlNode>& items() const;
    const std::vector<YamlEntry>& entries() const;
    std::size_t size() const;

    // The value of the first entry whose key is the scalar `key`; none when a
    // map has no such key, or this is no map.
    YamlNode operator[](std::string_view key) const;

private:
    friend class YamlDocument;
    explicit YamlNode(const detail::YamlNodeData* data) : data_(data) {}

    const detail::YamlNodeData* data_ = nullptr;
};

struct YamlEntry {
    YamlNode key;
    YamlNode value;
};

namespace detail {
struct YamlNodeData {
    YamlNode::Kind kind = YamlNode::Kind::null;
    std::string text;
    bool quoted = false;
    YamlMark mark;
    std::vector<YamlNode> items;
    std::vector<YamlEntry> entries;
};
} // namespace detail

// The first YAML document of a text as a tree of nodes that know where they
// were written, read with libyaml. What follows the first document is not
// read. Throws YamlSyntaxError for text that is not YAML, an alias whose
// anchor is not defined before it, or nesting deeper than kMaxNesting.
class YamlDocument {
public:
    static constexpr std::size_t kMaxNesting = 1000;

    static YamlDocument parse(std::string_view text);

    // The document's top node; null for a text with no document. Its nodes
    // live as long as the document, so a document about to go has none.
    YamlNode root() const& { return root_; }
    YamlNode root() const&& = delete;

private:
    YamlDocument() = default;
    detail::YamlNodeData& add();

    // A deque keeps each node where it is while others are added and when the
    // document moves, so handles stay valid.
    std::deque<detail::YamlNodeData> nodes_;
    YamlNode root_;
};

// What a plain scalar reads as in YAML 1.2's core schema, beside yaml-cpp's
// booleans (y/n, yes/no, on/off), which configurations already use. Each
// takes any node and is false for one it does not fit.
bool yaml_bool(const YamlNode& node, bool& value);
bool yaml_integer(const YamlNode& node, long long& value);
bool yaml_real(const YamlNode& node, double& value);

} // namespace gatehouse::config
