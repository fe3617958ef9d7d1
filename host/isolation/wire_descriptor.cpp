#include "isolation/wire_descriptor.hpp"

#include "plugins/abi_struct.hpp"
#include "plugins/abi_text.hpp"

#include <cstring>
#include <stdexcept>

namespace gatehouse::isolation {

namespace {

using plugins::abi_copy;
using plugins::read_abi_struct;

class Writer {
public:
    void u32(std::uint32_t value) { out_.append(reinterpret_cast<const char*>(&value), sizeof value); }
    void u64(std::uint64_t value) { out_.append(reinterpret_cast<const char*>(&value), sizeof value); }
    void str(gh_str text) {
        const std::size_t size = text.ptr ? text.len : 0;
        u64(size);
        if (size) out_.append(text.ptr, size);
    }
    void flag(const void* pointer) { u32(pointer ? 1 : 0); }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    std::uint32_t u32() { return number<std::uint32_t>(); }
    std::uint64_t u64() { return number<std::uint64_t>(); }
    std::string str() {
        const auto size = u64();
        if (size > bytes_.size() - at_) throw BrokenChannel("the descriptor's text runs past its end");
        std::string text(bytes_.substr(at_, size));
        at_ += size;
        return text;
    }
    bool flag() { return u32() != 0; }
    bool done() const { return at_ == bytes_.size(); }

private:
    std::string_view bytes_;
    std::size_t at_ = 0;
    template <class T> T number() {
        if (bytes_.size() - at_ < sizeof(T)) throw BrokenChannel("the descriptor ends early");
        T value;
        std::memcpy(&value, bytes_.data() + at_, sizeof value);
        at_ += sizeof value;
        return value;
    }
};

// Each table is read as the host reads one: its count within bounds, its
// pointers only when it has entries, every entry through read_abi_struct.
template <class T> std::vector<T> read_table(const T* const* table, std::uint32_t count, const char* what) {
    if (count > 10000) throw std::runtime_error(std::string("descriptor declares more than 10000 ") + what + "s");
    std::vector<T> out;
    if (count == 0 || !table) return out;
    for (std::uint32_t i = 0; i < count; ++i) {
        std::string why;
        auto entry = read_abi_struct<T>(table[i], why);
        if (!entry) throw std::runtime_error(std::string(what) + " #" + std::to_string(i) + ": " + why);
        out.push_back(*entry);
    }
    return out;
}

// The table's presence first: a count with no table is for the host to refuse.
template <class T> void write_presence(Writer& w, const T* const* table, std::uint32_t count) {
    w.u32(count);
    w.flag(table);
}

int32_t tool_trampoline(void*, void* data, gh_call* call, gh_str arguments, gh_sink* out) {
    auto* target = static_cast<ProxyDescriptor::Target*>(data);
    return target->calls->invoke(CallKind::tool, target->index, call, {abi_copy(arguments)}, out, nullptr);
}

template <CallKind kind>
int32_t read_trampoline(void*, void* data, gh_call* call, gh_str uri, gh_str variables, gh_sink* out) {
    auto* target = static_cast<ProxyDescriptor::Target*>(data);
    return target->calls->invoke(kind, target->index, call, {abi_copy(uri), abi_copy(variables)}, out, nullptr);
}

template <CallKind kind>
int32_t complete_trampoline(void*, void* data, gh_call* call, gh_str argument, gh_str value, gh_str context,
                            gh_sink* out) {
    auto* target = static_cast<ProxyDescriptor::Target*>(data);
    return target->calls->invoke(kind, target->index, call, {abi_copy(argument), abi_copy(value), abi_copy(context)},
                                 out, nullptr);
}

int32_t prompt_trampoline(void*, void* data, gh_call* call, gh_str arguments, gh_sink* out) {
    auto* target = static_cast<ProxyDescriptor::Target*>(data);
    return target->calls->invoke(CallKind::prompt_get, target->index, call, {abi_copy(arguments)}, out, nullptr);
}

template <CallKind kind>
int32_t page_trampoline(void*, void* data, gh_call* call, gh_str token, gh_str action, gh_sink* out) {
    auto* target = static_cast<ProxyDescriptor::Target*>(data);
    return target->calls->invoke(kind, target->index, call, {abi_copy(token), abi_copy(action)}, out, nullptr);
}

int32_t command_trampoline(void*, void* data, gh_str context, const gh_str* args, uint32_t arg_count, gh_sink* out,
                           gh_sink* err) {
    auto* target = static_cast<ProxyDescriptor::Target*>(data);
    std::vector<std::string> fields{abi_copy(context)};
    for (uint32_t i = 0; i < arg_count; ++i)
        fields.push_back(abi_copy(args[i]));
    return target->calls->invoke(CallKind::command, target->index, nullptr, std::move(fields), out, err);
}

int32_t critical_items_trampoline(void* plugin_state, gh_str owner, gh_sink* out) {
    return static_cast<ProxiedCalls*>(plugin_state)
        ->invoke(CallKind::critical_items, 0, nullptr, {abi_copy(owner)}, out, nullptr);
}

} // namespace

PluginTables read_plugin_tables(const gh_plugin_desc* raw) {
    std::string why;
    auto desc = read_abi_struct<gh_plugin_desc>(raw, why);
    if (!desc) throw std::runtime_error("descriptor: " + why);
    PluginTables t;
    t.desc = *desc;
    t.tools = read_table(desc->tools, desc->tool_count, "tool");
    t.resources = read_table(desc->resources, desc->resource_count, "resource");
    t.templates = read_table(desc->resource_templates, desc->resource_template_count, "resource template");
    t.prompts = read_table(desc->prompts, desc->prompt_count, "prompt");
    t.pages = read_table(desc->pages, desc->page_count, "page");
    // The host allows at most 64 commands; more is refused there, by count.
    t.commands = read_table(desc->commands, desc->command_count > 64 ? 0 : desc->command_count, "command");
    return t;
}

std::string encode_descriptor(const PluginTables& tables) {
    const gh_plugin_desc* desc = &tables.desc;
    Writer w;
    w.u32(desc->abi_version);
    w.u32(desc->flags);
    w.str(desc->name);
    w.str(desc->version);
    w.str(desc->family);
    w.str(desc->rules);
    w.flag(reinterpret_cast<const void*>(desc->critical_items));
    w.u32(desc->reserved1);
    w.u32(desc->reserved2);
    w.u32(desc->reserved3);

    write_presence(w, desc->tools, desc->tool_count);
    for (const auto& t : tables.tools) {
        w.u32(t.flags);
        for (gh_str s : {t.name, t.title, t.description, t.input_schema, t.output_schema, t.scope, t.required_scopes})
            w.str(s);
        w.u32(t.risk);
        w.u32(t.reserved0);
        w.str(t.rules);
        w.str(t.annotations);
        w.flag(reinterpret_cast<const void*>(t.call));
        w.u32(t.task_support);
        w.u32(t.reserved1);
    }
    write_presence(w, desc->resources, desc->resource_count);
    for (const auto& r : tables.resources) {
        w.u32(r.flags);
        for (gh_str s : {r.uri, r.name, r.title, r.description, r.mime_type, r.annotations})
            w.str(s);
        w.u64(r.size);
        w.flag(reinterpret_cast<const void*>(r.read));
    }
    write_presence(w, desc->resource_templates, desc->resource_template_count);
    for (const auto& t : tables.templates) {
        w.u32(t.flags);
        for (gh_str s : {t.uri_template, t.name, t.title, t.description, t.mime_type, t.annotations})
            w.str(s);
        w.flag(reinterpret_cast<const void*>(t.read));
        w.flag(reinterpret_cast<const void*>(t.complete));
    }
    write_presence(w, desc->prompts, desc->prompt_count);
    for (const auto& p : tables.prompts) {
        w.u32(p.flags);
        for (gh_str s : {p.name, p.title, p.description, p.arguments})
            w.str(s);
        w.flag(reinterpret_cast<const void*>(p.get));
        w.flag(reinterpret_cast<const void*>(p.complete));
    }
    write_presence(w, desc->pages, desc->page_count);
    for (const auto& p : tables.pages) {
        w.u32(p.flags);
        w.str(p.name);
        w.flag(reinterpret_cast<const void*>(p.show));
        w.flag(reinterpret_cast<const void*>(p.act));
    }
    write_presence(w, desc->commands, desc->command_count);
    for (const auto& c : tables.commands) {
        w.u32(c.flags);
        for (gh_str s : {c.name, c.usage, c.summary})
            w.str(s);
        w.flag(reinterpret_cast<const void*>(c.run));
    }
    return w.take();
}

gh_str ProxyDescriptor::keep(std::string text) {
    const auto& kept = strings_.emplace_back(std::move(text));
    return gh_str{kept.data(), kept.size()};
}

ProxyDescriptor::ProxyDescriptor(std::string_view bytes, ProxiedCalls& calls) {
    Reader r(bytes);
    auto target = [&](std::uint32_t index) { return &targets_.emplace_back(Target{&calls, index}); };
    desc_.struct_size = sizeof desc_;
    desc_.abi_version = r.u32();
    desc_.flags = r.u32();
    desc_.name = keep(r.str());
    desc_.version = keep(r.str());
    desc_.family = keep(r.str());
    desc_.rules = keep(r.str());
    if (r.flag()) desc_.critical_items = &critical_items_trampoline;
    desc_.reserved1 = r.u32();
    desc_.reserved2 = r.u32();
    desc_.reserved3 = r.u32();

    // Each table as the child saw it: the count, whether there was a table,
    // and the entries it could read (all of them, or none for no table).
    auto table = [&](std::uint32_t& count, auto& entries, auto& pointers, auto read_entry) {
        count = r.u32();
        const bool present = r.flag();
        if (!present || count == 0) return false;
        if (count > 10000) throw BrokenChannel("the descriptor's table is beyond its bound");
        entries.resize(count);
        for (std::uint32_t i = 0; i < count; ++i)
            read_entry(entries[i], i);
        for (const auto& entry : entries)
            pointers.push_back(&entry);
        return true;
    };
    if (table(desc_.tool_count, tools_, tool_table_, [&](gh_tool_desc& t, std::uint32_t i) {
            t.struct_size = sizeof t;
            t.flags = r.u32();
            for (gh_str* s :
                 {&t.name, &t.title, &t.description, &t.input_schema, &t.output_schema, &t.scope, &t.required_scopes})
                *s = keep(r.str());
            t.risk = r.u32();
            t.reserved0 = r.u32();
            t.rules = keep(r.str());
            t.annotations = keep(r.str());
            if (r.flag()) t.call = &tool_trampoline;
            t.tool_data = target(i);
            t.task_support = r.u32();
            t.reserved1 = r.u32();
        }))
        desc_.tools = tool_table_.data();
    if (table(desc_.resource_count, resources_, resource_table_, [&](gh_resource_desc& res, std::uint32_t i) {
            res.struct_size = sizeof res;
            res.flags = r.u32();
            for (gh_str* s : {&res.uri, &res.name, &res.title, &res.description, &res.mime_type, &res.annotations})
                *s = keep(r.str());
            res.size = r.u64();
            if (r.flag()) res.read = &read_trampoline<CallKind::resource_read>;
            res.resource_data = target(i);
        }))
        desc_.resources = resource_table_.data();
    if (table(desc_.resource_template_count, templates_, template_table_,
              [&](gh_resource_template_desc& t, std::uint32_t i) {
                  t.struct_size = sizeof t;
                  t.flags = r.u32();
                  for (gh_str* s : {&t.uri_template, &t.name, &t.title, &t.description, &t.mime_type, &t.annotations})
                      *s = keep(r.str());
                  if (r.flag()) t.read = &read_trampoline<CallKind::template_read>;
                  if (r.flag()) t.complete = &complete_trampoline<CallKind::template_complete>;
                  t.template_data = target(i);
              }))
        desc_.resource_templates = template_table_.data();
    if (table(desc_.prompt_count, prompts_, prompt_table_, [&](gh_prompt_desc& p, std::uint32_t i) {
            p.struct_size = sizeof p;
            p.flags = r.u32();
            for (gh_str* s : {&p.name, &p.title, &p.description, &p.arguments})
                *s = keep(r.str());
            if (r.flag()) p.get = &prompt_trampoline;
            if (r.flag()) p.complete = &complete_trampoline<CallKind::prompt_complete>;
            p.prompt_data = target(i);
        }))
        desc_.prompts = prompt_table_.data();
    if (table(desc_.page_count, pages_, page_table_, [&](gh_page_desc& p, std::uint32_t i) {
            p.struct_size = sizeof p;
            p.flags = r.u32();
            p.name = keep(r.str());
            if (r.flag()) p.show = &page_trampoline<CallKind::page_show>;
            if (r.flag()) p.act = &page_trampoline<CallKind::page_act>;
            p.page_data = target(i);
        }))
        desc_.pages = page_table_.data();
    // More than 64 commands came without entries, for the host to refuse by count.
    desc_.command_count = r.u32();
    const bool commands_present = r.flag();
    if (commands_present && desc_.command_count > 0 && desc_.command_count <= 64) {
        commands_.resize(desc_.command_count);
        for (std::uint32_t i = 0; i < desc_.command_count; ++i) {
            auto& c = commands_[i];
            c.struct_size = sizeof c;
            c.flags = r.u32();
            for (gh_str* s : {&c.name, &c.usage, &c.summary})
                *s = keep(r.str());
            if (r.flag()) c.run = &command_trampoline;
            c.command_data = target(i);
        }
        for (const auto& c : commands_)
            command_table_.push_back(&c);
        desc_.commands = command_table_.data();
    } else if (commands_present && desc_.command_count > 64) {
        // A table the loader refuses by its count before reading an entry.
        static const gh_command_desc* const kNone[1] = {nullptr};
        desc_.commands = kNone;
    }
    if (!r.done()) throw BrokenChannel("the descriptor has bytes after its end");
}

} // namespace gatehouse::isolation
