// ClientRequests: the requests the host asked a 2025-11-25 client, and
// which response answers which. Two tables stand for two instances' copies
// of one shared session, both of which hear every response the client sends.
#include "mrtr/client_requests.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using gatehouse::mrtr::ClientRequests;
using nlohmann::json;

namespace {

json accepted(const json& id, const std::string& username) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", {{"action", "accept"}, {"content", {{"username", username}}}}}};
}

bool waiting(ClientRequests::Pending& pending) {
    return !ClientRequests::wait(pending, std::chrono::milliseconds(0), [] { return false; });
}

} // namespace

TEST_CASE("two copies of one session ask under different ids; each answer reaches only its own asker",
          "[client_requests]") {
    ClientRequests on_first_instance;
    ClientRequests on_second_instance;
    auto [first_id, first_pending] = on_first_instance.expect();
    auto [second_id, second_pending] = on_second_instance.expect();
    CHECK((first_id.is_string() || first_id.is_number_integer())); // a valid JSON-RPC id
    CHECK(first_id != second_id);

    // The answer to the second copy's question reaches both copies (one
    // received it, the bus relays it to the other): the first ignores it.
    const json second_answer = accepted(second_id, "bob");
    CHECK_FALSE(on_first_instance.deliver(second_answer));
    CHECK(on_second_instance.deliver(second_answer));
    CHECK(waiting(*first_pending));
    CHECK(second_pending->response == second_answer);

    const json first_answer = accepted(first_id, "ann");
    CHECK_FALSE(on_second_instance.deliver(first_answer));
    CHECK(on_first_instance.deliver(first_answer));
    CHECK(first_pending->response == first_answer);
}

TEST_CASE("one table's ids never repeat and an answer is taken once", "[client_requests]") {
    ClientRequests table;
    auto [one, one_pending] = table.expect();
    auto [two, two_pending] = table.expect();
    CHECK(one != two);
    CHECK(table.deliver(accepted(two, "ann")));
    CHECK_FALSE(table.deliver(accepted(two, "ann"))); // answered already
    CHECK(waiting(*one_pending));
    table.forget(one);
    CHECK_FALSE(table.deliver(accepted(one, "ann"))); // given up
}
