#include "protocol/method_table.hpp"

namespace gatehouse::protocol {

namespace {

std::size_t slot(Revision revision) {
    return revision == Revision::modern_2026_07_28 ? 1 : 0;
}

} // namespace

void MethodTable::add(std::string_view name, std::initializer_list<Revision> revisions, Runs runs, Handler handler,
                      Offered offered) {
    for (Revision revision : revisions)
        methods_[slot(revision)].insert_or_assign(std::string(name), Method{runs, handler, offered});
}

const MethodTable::Method* MethodTable::find(std::string_view name, Revision revision) const {
    const auto& methods = methods_[slot(revision)];
    auto it = methods.find(name);
    if (it == methods.end() || (it->second.offered && !it->second.offered())) return nullptr;
    return &it->second;
}

} // namespace gatehouse::protocol
