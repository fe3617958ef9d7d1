#include "gate/refusal.hpp"
#include "state/notification_bus.hpp"
#include "state/state_backend.hpp"
#include "tasks/task_runner.hpp"
#include "tasks/task_store.hpp"
#include "test_files.hpp"

#include <catch2/catch.hpp>

#include <pthread.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace gatehouse;
using namespace std::chrono_literals;

namespace {

tasks::TaskRecord working_task(const std::string& owner, std::int64_t lease_ms = 60000) {
    tasks::TaskRecord r;
    r.id = tasks::TaskStore::new_id();
    r.owner = owner;
    r.tool = "slow_compute";
    r.created_ms = r.updated_ms = tasks::now_ms();
    r.ttl_ms = 60000;
    r.poll_ms = 1000;
    r.runner = "here";
    r.lease_until_ms = tasks::now_ms() + lease_ms;
    r.arguments = {{"seconds", 5}, {"session", "handle"}};
    return r;
}

// A round that waits for its cancellation; answers why it came.
tasks::StopReason until_cancelled(tasks::RoundControl& control) {
    while (!control.in_flight->cancelled.load())
        std::this_thread::sleep_for(5ms);
    return control.why.load();
}

// What the round's lease renewals ask, as TaskCalls sets it.
void ask_at_renewal(tasks::RoundControl& control, std::function<std::optional<nlohmann::json>()> authorised) {
    std::lock_guard lock(control.refusal_mutex);
    control.authorised = std::move(authorised);
}

// Until the runner holds no round, or `patience` passed.
void until_idle(tasks::TaskRunner& runner, std::chrono::milliseconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (runner.held() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
}

// What the bus carried, for the assertions on notifications/tasks.
struct Heard {
    std::mutex mutex;
    std::vector<state::Change> changes;
};

} // namespace

TEMPLATE_TEST_CASE("task records: owner-checked, counted per principal, changed by compare-and-set", "[tasks]",
                   std::true_type, std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());
    auto bus = std::make_shared<state::NotificationBus>();
    Heard heard;
    bus->subscribe([&](const state::Change& c) {
        std::lock_guard lock(heard.mutex);
        heard.changes.push_back(c);
    });
    config::TaskSettings settings;
    settings.max_per_principal = 2;
    tasks::TaskStore store(*backend, bus, settings);

    const auto ann = working_task("ann");
    REQUIRE(store.create(ann));
    REQUIRE(heard.changes.size() == 1);
    CHECK(heard.changes[0].kind == state::Change::Kind::task_status);
    CHECK(nlohmann::json::parse(heard.changes[0].detail)["status"] == "working");

    SECTION("ids are 128 random bits, never reused") {
        CHECK(ann.id.size() == 32);
        CHECK(tasks::TaskStore::new_id() != tasks::TaskStore::new_id());
    }

    SECTION("another owner's id is an unknown one") {
        CHECK(store.find(ann.id, "ann"));
        CHECK_FALSE(store.find(ann.id, "bob"));
        CHECK_FALSE(store.find("0123", "ann"));
        CHECK_FALSE(store.find(std::string(200, 'a'), "ann"));
    }

    SECTION("the record keeps what the next round needs, and the wire shows only the Task") {
        const auto found = store.find(ann.id, "ann");
        REQUIRE(found);
        CHECK(found->arguments == ann.arguments);
        const auto wire = found->detailed();
        CHECK(wire["taskId"] == ann.id);
        CHECK(wire["ttlMs"] == 60000);
        CHECK(wire["pollIntervalMs"] == 1000);
        CHECK_FALSE(wire.contains("arguments"));
        CHECK_FALSE(wire.contains("owner"));
        CHECK_FALSE(wire.contains("result"));
        CHECK(wire["createdAt"].get<std::string>().size() == std::string("2026-12-01T10:30:00.000Z").size());
    }

    SECTION("unfinished tasks per principal are bounded; a finished one makes room") {
        REQUIRE(store.create(working_task("ann")));
        CHECK_FALSE(store.create(working_task("ann")));
        CHECK(store.create(working_task("bob")));
        store.update(ann.id, [](tasks::TaskRecord& r) {
            r.status = tasks::Status::completed;
            r.result = {{"content", nlohmann::json::array()}};
            return true;
        });
        CHECK(store.create(working_task("ann")));
    }

    SECTION("a working task whose host stopped renewing its lease reads as failed, with the reason") {
        const auto orphan = working_task("ann", -1);
        REQUIRE(store.create(orphan));
        const auto found = store.find(orphan.id, "ann");
        REQUIRE(found);
        CHECK(found->status == tasks::Status::failed);
        CHECK(found->error["code"] == -32603);
        CHECK_THAT(found->error["message"].get<std::string>(), Catch::Contains("stopped before it finished"));
        // It no longer counts: room for another.
        CHECK(store.create(working_task("ann")));
    }

    SECTION("concurrent changes of one record lose nothing") {
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < 10; ++i)
                    store.update(ann.id, [&](tasks::TaskRecord& r) {
                        r.answers[std::to_string(t) + "-" + std::to_string(i)] = nlohmann::json::object();
                        return true;
                    });
            });
        for (auto& t : threads)
            t.join();
        CHECK(store.find(ann.id, "ann")->answers.size() == 40);
    }

    SECTION("a lease renewal is not a change a client sees") {
        const auto before = heard.changes.size();
        const auto updated = store.find(ann.id, "ann")->updated_ms;
        std::this_thread::sleep_for(5ms);
        store.update(
            ann.id,
            [](tasks::TaskRecord& r) {
                r.lease_until_ms += 1000;
                return true;
            },
            false);
        CHECK(heard.changes.size() == before);
        CHECK(store.find(ann.id, "ann")->updated_ms == updated);
    }
}

TEMPLATE_TEST_CASE("task records: creates racing at the limit never hold more than it", "[tasks]", std::true_type,
                   std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());
    config::TaskSettings settings;
    settings.max_per_principal = 3;
    tasks::TaskStore store(*backend, std::make_shared<state::NotificationBus>(), settings);
    // Rounds of eight threads, each creating at once against a full or
    // filling index. Before, a create that found it full pruned it of an id
    // whose record another create had not written yet, and that task went
    // on uncounted: the principal then held more than the limit.
    std::vector<std::string> accepted;
    std::mutex accepted_mutex;
    for (int round = 0; round < 20; ++round) {
        std::vector<std::thread> threads;
        for (int t = 0; t < 8; ++t)
            threads.emplace_back([&] {
                const auto task = working_task("ann");
                try {
                    if (store.create(task)) {
                        std::lock_guard lock(accepted_mutex);
                        accepted.push_back(task.id);
                    }
                } catch (const state::BackendError&) {
                    // the index kept changing: refused, which is allowed
                }
            });
        for (auto& thread : threads)
            thread.join();
        std::size_t unfinished = 0;
        for (const auto& id : accepted)
            if (auto found = store.find(id, "ann"); found && !tasks::terminal(found->status)) ++unfinished;
        REQUIRE(unfinished <= settings.max_per_principal);
        // Finish one, so the next round races for its place.
        bool finished = false;
        for (const auto& id : accepted) {
            store.update(id, [&finished](tasks::TaskRecord& r) {
                if (tasks::terminal(r.status)) return false;
                r.status = tasks::Status::completed;
                return finished = true;
            });
            if (finished) break;
        }
    }
    CHECK(accepted.size() >= settings.max_per_principal);
}

TEMPLATE_TEST_CASE("task records: a principal's finished tasks are kept up to max_kept_per_principal, the oldest "
                   "forgotten first",
                   "[tasks]", std::true_type, std::false_type) {
    const bool memory = TestType::value;
    test::TempDir dir;
    auto backend =
        memory ? state::make_memory_backend() : state::make_sqlite_backend((dir.path() / "state.sqlite3").string());
    config::TaskSettings settings;
    settings.max_per_principal = 2;
    settings.max_kept_per_principal = 3;
    tasks::TaskStore store(*backend, std::make_shared<state::NotificationBus>(), settings);
    const auto finish = [&](const tasks::TaskRecord& task) {
        REQUIRE(store.update(task.id, [](tasks::TaskRecord& r) {
            r.status = tasks::Status::completed;
            r.result = {{"content", nlohmann::json::array()}};
            return true;
        }));
    };
    // Quick work, one task after another: never more than one unfinished,
    // yet every result would be kept for ttl_ms.
    std::vector<tasks::TaskRecord> done;
    for (int i = 0; i < 5; ++i) {
        done.push_back(working_task("ann"));
        REQUIRE(store.create(done.back()));
        finish(done.back());
    }
    const auto bobs = working_task("bob");
    REQUIRE(store.create(bobs));
    finish(bobs);
    CHECK_FALSE(store.find(done[0].id, "ann"));
    CHECK_FALSE(store.find(done[1].id, "ann"));
    for (int i = 2; i < 5; ++i)
        CHECK(store.find(done[i].id, "ann"));
    CHECK(store.find(bobs.id, "bob")); // another principal's are his own
    // An unfinished task is never forgotten for finished ones.
    const auto running = working_task("ann");
    REQUIRE(store.create(running));
    const auto sixth = working_task("ann");
    REQUIRE(store.create(sixth));
    finish(sixth);
    CHECK(store.find(running.id, "ann"));
    CHECK_FALSE(store.find(done[2].id, "ann"));
    CHECK(backend->scan("task/").size() == 3 + 1 + 1); // ann's three finished and one running, bob's one
}

TEST_CASE("a damaged task record is no record", "[tasks]") {
    CHECK_FALSE(tasks::TaskRecord::from_text("not json"));
    CHECK_FALSE(tasks::TaskRecord::from_text(R"({"id":"x"})"));
    CHECK_FALSE(tasks::TaskRecord::from_text(
        R"({"id":"x","owner":"o","tool":"t","status":"sleeping","createdMs":1,"updatedMs":1,"ttlMs":1,"pollMs":1})"));
    const auto r = working_task("ann");
    const auto back = tasks::TaskRecord::from_text(r.to_text());
    REQUIRE(back);
    CHECK(back->id == r.id);
    CHECK(back->lease_until_ms == r.lease_until_ms);
}

TEST_CASE("the task runner renews leases, cancels on a published cancellation, and stops rounds past max_run_ms",
          "[tasks]") {
    auto backend = state::make_memory_backend();
    auto bus = std::make_shared<state::NotificationBus>();
    config::TaskSettings settings;
    settings.lease_ms = 1000;
    settings.max_run_ms = 1000;
    settings.workers = 2;
    tasks::TaskStore store(*backend, bus, settings);
    std::atomic<bool> allowed{true};
    tasks::TaskRunner runner(store, "runner-1");

    auto record = working_task("ann", 500);
    record.runner = runner.instance();
    REQUIRE(store.create(record));

    SECTION("a cancellation published by another instance reaches the round") {
        std::atomic<bool> stopped{false};
        std::atomic<int> why{0};
        REQUIRE(runner.run(record.id, record.owner, [&](tasks::RoundControl& control) {
            why = static_cast<int>(until_cancelled(control));
            stopped = true;
        }));
        std::this_thread::sleep_for(50ms);
        store.publish_cancel(record.id);
        until_idle(runner, 1000ms);
        CHECK(stopped);
        CHECK(why == static_cast<int>(tasks::StopReason::client));
    }

    SECTION("the lease is renewed while the round runs, and a round past max_run_ms is cancelled") {
        std::atomic<int> why{0};
        REQUIRE(runner.run(record.id, record.owner,
                           [&](tasks::RoundControl& control) { why = static_cast<int>(until_cancelled(control)); }));
        std::this_thread::sleep_for(700ms);
        const auto found = store.find(record.id, "ann");
        REQUIRE(found);
        CHECK(found->status == tasks::Status::working); // its first lease (500 ms) would have lapsed without renewal
        CHECK(found->lease_until_ms > record.lease_until_ms);
        until_idle(runner, 3000ms);
        CHECK(why == static_cast<int>(tasks::StopReason::deadline));
    }

    SECTION("a round whose caller may no longer run the tool is stopped, with the gate's refusal") {
        std::atomic<int> why{0};
        nlohmann::json refusal;
        REQUIRE(runner.run(record.id, record.owner, [&](tasks::RoundControl& control) {
            ask_at_renewal(control, [&]() -> std::optional<nlohmann::json> {
                if (allowed) return std::nullopt;
                return nlohmann::json{{"code", "NOT_CONNECTED"}};
            });
            why = static_cast<int>(until_cancelled(control));
            std::lock_guard lock(control.refusal_mutex);
            refusal = control.refusal;
        }));
        std::this_thread::sleep_for(100ms);
        allowed = false;
        until_idle(runner, 2000ms);
        CHECK(why == static_cast<int>(tasks::StopReason::unauthorised));
        CHECK(refusal["code"] == "NOT_CONNECTED");
    }

    SECTION("a refusal because the state backend did not answer does not end the round") {
        std::atomic<int> asked{0};
        std::atomic<int> why{0};
        REQUIRE(runner.run(record.id, record.owner, [&](tasks::RoundControl& control) {
            ask_at_renewal(control, [&]() -> std::optional<nlohmann::json> {
                ++asked;
                gate::Refusal unavailable; // what the gate answers when Redis does not
                unavailable.code = gate::refusal_code::state_unavailable;
                unavailable.message = "The gate could not read the session just now.";
                return unavailable.to_tool_result();
            });
            why = static_cast<int>(until_cancelled(control));
        }));
        // Renewed every lease / 3: several refusals of a moment of Redis,
        // and the round runs on until its own deadline.
        until_idle(runner, 3000ms);
        CHECK(asked >= 2);
        CHECK(why == static_cast<int>(tasks::StopReason::deadline));
    }

    SECTION("a round whose record is gone (expired, or failed elsewhere) is stopped at the next renewal") {
        std::atomic<int> why{0};
        REQUIRE(runner.run(record.id, record.owner,
                           [&](tasks::RoundControl& control) { why = static_cast<int>(until_cancelled(control)); }));
        std::this_thread::sleep_for(50ms);
        backend->erase("task/" + record.id);
        until_idle(runner, 3000ms);
        CHECK(why == static_cast<int>(tasks::StopReason::released));
    }

    SECTION("stopping cancels what runs, says why, and takes no more rounds") {
        std::atomic<int> why{0};
        REQUIRE(runner.run(record.id, record.owner,
                           [&](tasks::RoundControl& control) { why = static_cast<int>(until_cancelled(control)); }));
        std::this_thread::sleep_for(30ms);
        CHECK(runner.stop(2000ms));
        CHECK(why == static_cast<int>(tasks::StopReason::host_stopping));
        CHECK_FALSE(runner.run(record.id, record.owner, [](tasks::RoundControl&) {}));
    }
}

// A task store in memory whose runners have two workers.
struct TwoWorkerStore {
    std::unique_ptr<state::StateBackend> backend = state::make_memory_backend();
    std::shared_ptr<state::NotificationBus> bus = std::make_shared<state::NotificationBus>();
    config::TaskSettings settings = [] {
        config::TaskSettings s;
        s.workers = 2;
        return s;
    }();
    tasks::TaskStore store{*backend, bus, settings};
};

TEST_CASE("one owner's task rounds leave a worker for another owner's; the rest wait their turn", "[tasks]") {
    TwoWorkerStore two;
    auto& store = two.store;
    tasks::TaskRunner runner(store, "runner-1");
    const auto created = [&](const std::string& owner) {
        auto record = working_task(owner);
        record.runner = runner.instance();
        REQUIRE(store.create(record));
        return record;
    };
    const auto eventually = [](const std::function<bool()>& holds) {
        for (int i = 0; i < 400 && !holds(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return holds();
    };
    std::atomic<bool> release{false};
    std::atomic<int> ann_started{0};
    std::atomic<bool> bob_ran{false};
    const auto long_round = [&](tasks::RoundControl&) {
        ++ann_started;
        while (!release)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    const auto first = created("ann");
    const auto second = created("ann");
    const auto bobs = created("bob");
    REQUIRE(runner.run(first.id, first.owner, long_round));
    REQUIRE(runner.run(second.id, second.owner, long_round));
    REQUIRE(runner.run(bobs.id, bobs.owner, [&](tasks::RoundControl&) { bob_ran = true; }));
    // Before, Ann's two long rounds took both workers and Bob's waited for them.
    CHECK(eventually([&] { return bob_ran.load(); }));
    CHECK(ann_started == 1);
    // Her second round starts once her first has ended: one owner's rounds
    // hold at most all workers but one.
    release = true;
    CHECK(eventually([&] { return ann_started == 2; }));
    CHECK(eventually([&] { return runner.held() == 0; }));
}

TEST_CASE("task rounds run on threads with the stack the call workers get", "[tasks]") {
    // A round validates its result against the tool's outputSchema, whose
    // patterns std::regex matches with stack in proportion to the string.
    TwoWorkerStore two;
    auto& store = two.store;
    constexpr std::size_t kStack = 64u << 20;
    tasks::TaskRunner runner(store, "runner-1", kStack);
    auto record = working_task("ann");
    record.runner = runner.instance();
    REQUIRE(store.create(record));
    std::atomic<std::size_t> stack{0};
    REQUIRE(runner.run(record.id, record.owner, [&](tasks::RoundControl&) {
        pthread_attr_t attributes;
        std::size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
            pthread_attr_getstacksize(&attributes, &size);
            pthread_attr_destroy(&attributes);
        }
        stack = size;
    }));
    for (int i = 0; i < 400 && stack == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(stack >= kStack);
}
