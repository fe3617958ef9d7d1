#pragma once

#include "protocol/request.hpp"
#include "protocol/revision.hpp"

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

namespace gatehouse::protocol {

// Method name -> handler, per revision: which methods each revision speaks
// and how each is answered. Filled once, when the server is built; read-only
// afterwards, so any thread may look a method up. A method the families'
// offer decides (resources, prompts, completions) is there while they offer
// it, as the registry serving at that moment says.
class MethodTable {
public:
    enum class Runs {
        at_once,     // cheap: answered on the thread that read it, in arrival order
        plugin_code, // runs plugin code: admitted, given a deadline, placed by the transport
        stream,      // stays open until cancelled (subscriptions/listen): the server's own
    };
    // Returns the method's result (finish() adds what the revision wants);
    // throws ProtocolError for the protocol tier.
    using Handler = std::function<Json(Request&)>;
    // Whether the method is there now; none: always.
    using Offered = std::function<bool()>;
    struct Method {
        Runs runs = Runs::at_once;
        Handler handler;
        Offered offered;
    };

    void add(std::string_view name, std::initializer_list<Revision> revisions, Runs runs, Handler handler,
             Offered offered = nullptr);

    // Null: the revision has no such method, or not now (-32601).
    const Method* find(std::string_view name, Revision revision) const;

private:
    std::array<std::map<std::string, Method, std::less<>>, 2> methods_; // by Revision
};

} // namespace gatehouse::protocol
