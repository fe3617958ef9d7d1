// The host's operator new (host/alloc/operator_new.cpp), linked here as in
// the gatehouse executable: what a thread keeps, its bounds, what it gives
// back when it ends, blocks crossing threads, and the two checks that stop a
// process whose heap was misused.

#include "alloc/small_blocks.hpp"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

using gatehouse::alloc::SmallBlocks;
namespace small_classes = gatehouse::alloc::small_classes;
using gatehouse::alloc::this_thread_small_blocks;

namespace {

int failures = 0;

void check(bool holds, const std::string& what) {
    if (!holds) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

// operator new and delete called as a new-expression would, out of the
// optimiser's reach (it may otherwise pair and remove them).
void* new_block(std::size_t size) {
    void* volatile block = ::operator new(size);
    return block;
}
void delete_block(void* block) {
    void* volatile kept = block;
    ::operator delete(kept);
}

void the_classes_cover_every_small_size() {
    for (std::size_t size = 0; size <= small_classes::kLargest; ++size) {
        const std::size_t klass = small_classes::for_request(size);
        check(klass < small_classes::kCount && small_classes::size(klass) >= size &&
                  (klass == 0 || small_classes::size(klass - 1) < size),
              "size " + std::to_string(size) + " gets the smallest class that holds it");
        void* block = new_block(size);
        check(small_classes::for_block(malloc_usable_size(block)) >= klass,
              "a block of size " + std::to_string(size) + " is kept in a class it can serve");
        delete_block(block);
    }
    check(small_classes::for_request(small_classes::kLargest + 1) == small_classes::kCount,
          "a larger size has no class");
    for (std::size_t below = 0; below < 8; ++below)
        check(small_classes::for_request(SIZE_MAX - below) == small_classes::kCount,
              "SIZE_MAX - " + std::to_string(below) + " has no class (the rounding would wrap to a small one)");
}

// clang passes SIZE_MAX to operator new[] for an array whose size overflows:
// that must fail, never return a small block.
void an_impossible_size_fails() {
    bool threw = false;
    try {
        new_block(SIZE_MAX);
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    check(threw, "operator new(SIZE_MAX) throws std::bad_alloc");
    threw = false;
    try {
        void* volatile block = ::operator new[](SIZE_MAX - 3);
        (void)block;
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    check(threw, "operator new[](SIZE_MAX - 3) throws std::bad_alloc");
    void* volatile none = ::operator new(SIZE_MAX - 5, std::nothrow);
    check(none == nullptr, "operator new(SIZE_MAX - 5, nothrow) returns null");
}

void a_thread_keeps_what_it_frees_and_hands_it_out_again() {
    std::thread([] {
        const SmallBlocks& mine = this_thread_small_blocks();
        const std::size_t klass = small_classes::for_request(40);
        std::vector<void*> blocks;
        std::vector<void*> again;
        blocks.reserve(50);
        again.reserve(50);
        for (int i = 0; i < 50; ++i)
            blocks.push_back(new_block(40));
        // (What check() builds and frees is kept too: each figure is read
        // before the checks that name it.)
        const std::size_t count_before = mine.kept_count(klass);
        const std::size_t kept_before = mine.kept_bytes();
        for (void* block : blocks)
            delete_block(block);
        const std::size_t count_deleted = mine.kept_count(klass);
        const std::size_t kept_deleted = mine.kept_bytes();
        for (int i = 0; i < 50; ++i)
            again.push_back(new_block(30)); // the same class
        const std::size_t count_again = mine.kept_count(klass);
        const std::size_t kept_after = mine.kept_bytes();
        check(count_before == 0, "nothing is kept before a delete");
        check(count_deleted == 50, "fifty deleted blocks are kept, found " + std::to_string(count_deleted));
        check(kept_deleted == kept_before + 50 * small_classes::size(klass), "their bytes are counted");
        const std::size_t kept_again = kept_deleted;
        check(count_again == 0, "the next fifty of that class take them all");
        check(kept_after == kept_again - 50 * small_classes::size(klass), "and their bytes are no longer counted");
        for (void* block : again)
            check(std::find(blocks.begin(), blocks.end(), block) != blocks.end(), "a kept block is handed out again");
        const std::size_t kept_before_large = mine.kept_bytes();
        void* large = new_block(small_classes::kLargest + 1);
        delete_block(large);
        const std::size_t kept_after_large = mine.kept_bytes();
        check(kept_after_large == kept_before_large, "a block past the largest class goes back to malloc");
        for (void* block : again)
            delete_block(block);
    }).join();
}

void what_a_thread_keeps_is_bounded() {
    std::thread([] {
        const SmallBlocks& mine = this_thread_small_blocks();
        std::vector<void*> blocks;
        for (int i = 0; i < 1000; ++i)
            blocks.push_back(new_block(40));
        for (void* block : blocks)
            delete_block(block);
        const std::size_t klass = small_classes::for_request(40);
        check(mine.kept_count(klass) == small_classes::max_kept(klass),
              "one class keeps at most " + std::to_string(small_classes::max_kept(klass)) + ", found " +
                  std::to_string(mine.kept_count(klass)));
        blocks.clear();
        for (std::size_t size = 24; size <= small_classes::kLargest; size += 16)
            for (int i = 0; i < 200; ++i)
                blocks.push_back(new_block(size));
        for (void* block : blocks)
            delete_block(block);
        check(mine.kept_bytes() <= small_classes::kMaxBytes, "a thread keeps at most " +
                                                                 std::to_string(small_classes::kMaxBytes) +
                                                                 " bytes, found " + std::to_string(mine.kept_bytes()));
        check(mine.kept_bytes() > small_classes::kMaxBytes / 2, "and keeps up to its bound");
    }).join();
}

std::size_t bytes_in_use() {
    return mallinfo2().uordblks;
}

void an_ending_thread_gives_its_blocks_back() {
    // Warm up what threads themselves allocate, then measure.
    std::thread([] {}).join();
    const std::size_t before = bytes_in_use();
    for (int round = 0; round < 40; ++round) {
        std::thread([] {
            std::vector<void*> blocks;
            for (std::size_t size = 24; size <= small_classes::kLargest; size += 16)
                for (int i = 0; i < 50; ++i)
                    blocks.push_back(new_block(size));
            for (void* block : blocks)
                delete_block(block);
            check(this_thread_small_blocks().kept_bytes() > 64 * 1024, "the thread kept blocks before it ended");
        }).join();
    }
    const std::size_t after = bytes_in_use();
    // Forty threads that each kept over 64 KiB would leave 2.5 MiB behind.
    check(after < before + 256 * 1024, "forty ended threads left " + std::to_string(after - before) +
                                           " bytes in use (before: " + std::to_string(before) + ")");
}

// One thread allocates, another frees, as an HTTP request read on one thread
// and answered on another: every block holds its own pattern until it is
// freed, so two owners of one block would show.
void blocks_crossing_threads_stay_whole() {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<std::pair<unsigned char*, std::size_t>> queue;
    bool done = false;
    std::atomic<int> damaged{0};
    std::thread consumer([&] {
        for (;;) {
            std::unique_lock lock(mutex);
            ready.wait(lock, [&] { return !queue.empty() || done; });
            if (queue.empty()) return;
            auto [block, size] = queue.front();
            queue.pop_front();
            lock.unlock();
            for (std::size_t i = 0; i < size; ++i)
                if (block[i] != static_cast<unsigned char>(size + i)) {
                    ++damaged;
                    break;
                }
            delete_block(block);
            // The consumer allocates too, from what it was given.
            auto* own = static_cast<unsigned char*>(new_block(size));
            std::memset(own, 0xAB, size);
            delete_block(own);
        }
    });
    std::vector<std::thread> producers;
    for (int t = 0; t < 3; ++t)
        producers.emplace_back([&, t] {
            for (int i = 0; i < 20000; ++i) {
                const std::size_t size = 1 + static_cast<std::size_t>((i * 37 + t * 11) % 600);
                auto* block = static_cast<unsigned char*>(new_block(size));
                for (std::size_t k = 0; k < size; ++k)
                    block[k] = static_cast<unsigned char>(size + k);
                std::lock_guard lock(mutex);
                queue.emplace_back(block, size);
                ready.notify_one();
            }
        });
    for (auto& producer : producers)
        producer.join();
    {
        std::lock_guard lock(mutex);
        done = true;
    }
    ready.notify_one();
    consumer.join();
    check(damaged == 0, std::to_string(damaged.load()) + " blocks were changed while another thread owned them");
}

// Runs `misuse` in a child process; the child must stop with SIGABRT and
// say `expected` on stderr.
void stops_the_process(const char* what, void (*misuse)(), const std::string& expected) {
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return check(false, "pipe");
    const pid_t child = fork();
    if (child == 0) {
        dup2(pipe_ends[1], STDERR_FILENO);
        close(pipe_ends[0]);
        misuse();
        _exit(0);
    }
    close(pipe_ends[1]);
    std::string said;
    char buffer[256];
    for (ssize_t n; (n = read(pipe_ends[0], buffer, sizeof buffer)) > 0;)
        said.append(buffer, static_cast<std::size_t>(n));
    close(pipe_ends[0]);
    int status = 0;
    waitpid(child, &status, 0);
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
          std::string(what) + ": the process stops with SIGABRT (status " + std::to_string(status) + ")");
    check(said.find(expected) != std::string::npos,
          std::string(what) + ": stderr says \"" + expected + "\", it said \"" + said + "\"");
}

void a_block_deleted_twice_stops_the_process() {
    stops_the_process(
        "a double delete",
        [] {
            void* first = new_block(64);
            void* other = new_block(64);
            delete_block(first);
            delete_block(other);
            delete_block(first);
        },
        "was deleted twice");
}

// A block handed to free() because its class was full, deleted again once
// there is room: it must not be kept (glibc holds it too), but go to free()
// again, where glibc's own check stops the process.
void a_block_deleted_twice_after_glibc_took_it_stops_the_process() {
    stops_the_process(
        "a double delete of a block glibc took",
        [] {
            const std::size_t klass = small_classes::for_request(40);
            std::vector<void*> blocks;
            blocks.reserve(small_classes::max_kept(klass) + 1);
            for (std::size_t i = 0; i <= small_classes::max_kept(klass); ++i)
                blocks.push_back(new_block(40));
            for (void* block : blocks)
                delete_block(block); // the last one goes to free()
            new_block(40);           // room for one more
            delete_block(blocks.back());
        },
        "double free");
}

// The walk that looks for a block deleted twice checks each link it follows.
void a_damaged_list_met_by_a_double_delete_stops_the_process() {
    stops_the_process(
        "a double delete behind a damaged link",
        [] {
            void* first = new_block(200);
            auto* second = static_cast<unsigned char*>(new_block(200));
            void* third = new_block(200);
            delete_block(first);
            delete_block(second);
            delete_block(third); // kept: third, second, first
            std::memset(second, 0x41, 16);
            delete_block(first);
        },
        "was written to after its delete");
}

void a_block_written_after_its_delete_stops_the_process() {
    stops_the_process(
        "a write after delete",
        [] {
            auto* first = static_cast<unsigned char*>(new_block(64));
            void* second = new_block(64);
            delete_block(second);
            delete_block(first);
            std::memset(first, 0x41, 16); // over the kept block's link and key
            new_block(64);
            new_block(64);
        },
        "was written to after its delete");
}

} // namespace

int main() {
    the_classes_cover_every_small_size();
    an_impossible_size_fails();
    a_thread_keeps_what_it_frees_and_hands_it_out_again();
    what_a_thread_keeps_is_bounded();
    an_ending_thread_gives_its_blocks_back();
    blocks_crossing_threads_stay_whole();
    a_block_deleted_twice_stops_the_process();
    a_block_deleted_twice_after_glibc_took_it_stops_the_process();
    a_damaged_list_met_by_a_double_delete_stops_the_process();
    a_block_written_after_its_delete_stops_the_process();
    if (failures == 0) std::printf("the host's operator new: every check holds\n");
    return failures == 0 ? 0 : 1;
}
