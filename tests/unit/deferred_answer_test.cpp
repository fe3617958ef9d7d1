// A request answered later (protocol::DeferredAnswer): each layer wraps the
// one below as the stack unwinds, nothing runs before the outermost begins
// it, and what a layer throws reaches the layers above as it would in a call
// answered at once.
#include "protocol/deferred_answer.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using gatehouse::protocol::DeferredAnswer;
using gatehouse::protocol::Json;
using gatehouse::protocol::PluginAnswer;

namespace {

// What each part saw, in order.
struct Seen {
    std::vector<std::string> steps;
};

} // namespace

TEST_CASE("an answer that comes later passes every layer, innermost first, on the thread it comes on", "[deferred]") {
    Seen seen;
    DeferredAnswer::Answered hold;
    DeferredAnswer::Elsewhere given;
    auto deferred = std::make_shared<DeferredAnswer>(
        [&](DeferredAnswer::Answered answered, DeferredAnswer::Elsewhere elsewhere) {
            seen.steps.push_back("begun");
            hold = std::move(answered);
            given = std::move(elsewhere);
        },
        [&](PluginAnswer answer) {
            seen.steps.push_back("innermost " + answer.text);
            return Json{{"text", answer.text}};
        });
    deferred->wrap([&](const DeferredAnswer::Below& below) {
        Json result = below();
        seen.steps.push_back("finish");
        result["finished"] = true;
        return result;
    });
    CHECK(seen.steps.empty()); // wrapping runs nothing
    Json sent;
    std::thread::id answered_on;
    bool elsewhere_ran = false;
    deferred->begin(
        [&](const DeferredAnswer::Below& below) {
            sent = below();
            answered_on = std::this_thread::get_id();
            seen.steps.push_back("sent");
        },
        [&](std::function<void()> work) {
            elsewhere_ran = true;
            work();
        });
    REQUIRE(seen.steps == std::vector<std::string>{"begun"});
    deferred.reset(); // the answer keeps what it needs
    given([] {});
    CHECK(elsewhere_ran);
    std::thread([&] { hold({GH_STATUS_OK, "hi", std::nullopt}); }).join();
    CHECK(seen.steps == std::vector<std::string>{"begun", "innermost hi", "finish", "sent"});
    CHECK(sent == Json{{"text", "hi"}, {"finished", true}});
    CHECK(answered_on != std::this_thread::get_id());
}

TEST_CASE("what a layer below throws reaches the layer above, as in a call answered at once", "[deferred]") {
    auto deferred = std::make_shared<DeferredAnswer>(
        [](DeferredAnswer::Answered answered, DeferredAnswer::Elsewhere) {
            answered({GH_STATUS_INPUT_REQUIRED, "{", std::nullopt}); // at once, on this thread
        },
        [](PluginAnswer) -> Json { throw std::runtime_error("malformed"); });
    deferred->wrap([](const DeferredAnswer::Below& below) {
        try {
            return below();
        } catch (const std::exception& e) {
            return Json{{"error", e.what()}};
        }
    });
    Json sent;
    deferred->begin([&](const DeferredAnswer::Below& below) { sent = below(); }, [](std::function<void()>) {});
    CHECK(sent == Json{{"error", "malformed"}});
}

TEST_CASE("an answer that may lead to waiting goes through the layers on a worker, any other where it came",
          "[deferred]") {
    DeferredAnswer::Answered hold;
    auto deferred = std::make_shared<DeferredAnswer>(
        [&](DeferredAnswer::Answered answered, DeferredAnswer::Elsewhere) { hold = std::move(answered); },
        [](PluginAnswer answer) {
            return Json{{"status", answer.status}};
        });
    deferred->run_elsewhere_when([](const PluginAnswer& answer) { return answer.status == GH_STATUS_INPUT_REQUIRED; });
    std::vector<std::function<void()>> on_workers;
    std::vector<Json> sent;
    deferred->begin([&](const DeferredAnswer::Below& below) { sent.push_back(below()); },
                    [&](std::function<void()> work) { on_workers.push_back(std::move(work)); });
    deferred.reset();
    hold({GH_STATUS_INPUT_REQUIRED, "{}", std::nullopt});
    CHECK(sent.empty()); // not here: on a worker
    REQUIRE(on_workers.size() == 1);
    on_workers.front()();
    REQUIRE(sent.size() == 1);
    CHECK(sent.front() == Json{{"status", GH_STATUS_INPUT_REQUIRED}});

    auto plain = std::make_shared<DeferredAnswer>(
        [&](DeferredAnswer::Answered answered, DeferredAnswer::Elsewhere) {
            answered({GH_STATUS_OK, "", {}});
        },
        [](PluginAnswer answer) {
            return Json{{"status", answer.status}};
        });
    plain->run_elsewhere_when([](const PluginAnswer& answer) { return answer.status == GH_STATUS_INPUT_REQUIRED; });
    plain->begin([&](const DeferredAnswer::Below& below) { sent.push_back(below()); },
                 [&](std::function<void()> work) { on_workers.push_back(std::move(work)); });
    CHECK(sent.size() == 2); // at once, where it came
    CHECK(on_workers.size() == 1);
}
