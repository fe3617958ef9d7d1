#pragma once

#include "protocol/request.hpp"

#include <cstddef>

namespace gatehouse::transport {

// Where a call a transport read runs. This is the one place that decides
// it; the transports only carry the decision out. (A call that waited for a
// place in its plugin, max_in_flight_per_plugin, runs where the call that
// handed it the place ran: on that worker, right after it; see
// CallScheduler::admit. The stdio reader, which reads on after a call it
// ran in place, gives such a call to the pool: RequestPool::release_next.)
enum class CallSite {
    // stdio: the reader runs it itself, at once, watched: should it outlast
    // a tick, InlineCallWatch hands the reading on to a worker.
    reader_watched,
    // stdio: the reader hands its reading to an idle worker and runs the
    // call itself (no hand-off on the answer's critical path); with no idle
    // worker, the call queues on the pool and the reader reads on.
    reader_or_pool,
    // HTTP: on the loop of the connection that read it, nothing woken, the
    // answer written from the same thread: run by the handler that read the
    // request as its last act (ahead of the handlers the loop has queued:
    // the other connections one epoll wait found readable), or posted to
    // that loop when no read handler holds it (HttpService::run_call).
    io_loop,
    // A worker of the pool.
    pool,
    // HTTP: a worker of the pool of their own that what waits on a shared
    // session store runs on (kSharedSessionWork).
    shared_session_workers,
    // HTTP: a worker of the pool of their own that families' pages run on
    // (kPageWork).
    page_workers,
};

// A call that runs in place holds the reading (or the loop) while it runs.
// A quick call of a family in this process keeps its thread busy anyway; one
// of a family in another process only waits for that process's answer, so
// it runs in place only when no other call is in flight and no request
// already read waits behind it (`read_behind`), whose work would otherwise
// wait for that answer: a burst of calls to such a family would be sent to
// its process one at a time. A call whose family answers later
// (ReadyCall::answers_later) holds its thread only to pass the gate and send
// itself, whatever its tool's pace: it runs in place.
inline bool may_run_in_place(const protocol::ReadyCall& call, bool read_behind = false) {
    if (call.answers_later) return true;
    return call.quick && (!call.remote || (call.alone && !read_behind));
}

// stdio. Only a call that may run in place runs watched, and only while a
// worker is free to take the reading over and the watch runs. `read_behind`:
// the reader holds more lines it read with this call's. The facts are asked
// lazily, in this order: the watch starts its thread on its first ask.
template <class FreeWorker, class WatchReady>
CallSite place_stdio_call(const protocol::ReadyCall& call, bool read_behind, FreeWorker&& free_worker,
                          WatchReady&& watch_ready) {
    if (may_run_in_place(call, read_behind) && free_worker() && watch_ready()) return CallSite::reader_watched;
    return CallSite::reader_or_pool;
}

// HTTP, with `io_loops` I/O threads (http.threads). A quick call stays on
// its connection's loop when there is another loop to serve the rest:
// should the tool turn slow, that one call holds only its own loop's
// connections, and its pace sends the tool's next calls to the pool. A
// 2025-11-25 call may send client requests of its own and wait for their
// answers (elicitation, sampling, roots): never on an I/O thread. Every
// other call runs on the pool: a call that waits (on a person, or on
// messages it sends on its own stream) never holds an I/O thread. Nor does a
// call whose schemas run std::regex: an I/O thread has a plain stack, and a
// long string would overflow it (the pool's workers are sized for it).
// Nor does any call of a host whose state is in Redis (`state_in_redis`:
// session.backend redis): the gate's session, the rate limits' buckets and
// the family's state are each a round trip to it, and were Redis slow,
// every call admitted while the tool still counted as quick would hold its
// loop (its other connections, /health among them) for as long as Redis
// takes, one after another. Nor does a call whose family answers later:
// sending it waits while the family's process drains its pipe (up to its
// send_stall), which no loop's other connections should; on the pool it
// holds a worker only for as long as that. Nor does a call of a family that
// runs one call at a time (`serialized`, not reentrant): however quick its
// own work, it first waits for the family's lock behind whatever call or
// page holds it, which may be slow.
inline CallSite place_http_call(const protocol::ReadyCall& call, std::size_t io_loops, bool state_in_redis = false) {
    if (may_run_in_place(call) && !call.answers_later && !call.legacy && !call.needs_worker_stack && !call.serialized &&
        io_loops > 1 && !state_in_redis)
        return CallSite::io_loop;
    return CallSite::pool;
}

// HTTP, a 2025-11-25 session whose record lives in the shared state backend
// (session.backend: redis): finding it, opening and ending it, recording its
// handshake, relaying a client's response across instances, and /ready's
// probe each wait on that backend. Never on an I/O thread, where a slow
// backend would hold every connection of the loop, /health included; nor on
// the call pool, where a client's answer to an elicitation would queue
// behind the calls waiting for it. Workers of their own
// (HttpService::run_shared_session_work), as many as the Redis client keeps
// connections by default. (The session's calls go to the pool, place_http_call.)
inline constexpr CallSite kSharedSessionWork = CallSite::shared_session_workers;
inline constexpr unsigned kSharedSessionWorkers = 8;

// HTTP, a family's page (its show or act, ABI 1.3): never on an I/O thread.
// A page of a family that is not reentrant waits for the family's lock,
// behind whatever call holds it, and its state functions are round trips to
// Redis when state is shared: on a loop either would hold every connection
// of it, /health included. Nor on the call pool, nor among its family's
// places: anyone may ask for a page (a link's shape is all that is checked
// before the family is), and pages must never crowd out the agents' calls.
// Workers of their own, few: a page waits for the lock at most
// kPageLockWait (page_route.cpp), and at most kMostPagesWaiting wait for a
// worker; past either, a 503 page.
inline constexpr CallSite kPageWork = CallSite::page_workers;
inline constexpr unsigned kPageWorkers = 2;
inline constexpr unsigned kMostPagesWaiting = 64;

} // namespace gatehouse::transport
