// The host's global `operator new` and `operator delete`: glibc's malloc
// behind a cache of small blocks per thread (alloc/small_blocks.hpp).
//
// Linked into the gatehouse executable only, and never into a sanitizer
// build: AddressSanitizer replaces these functions itself to see every
// allocation, which is what its builds are for. tests/alloc runs this file
// without a sanitizer.

#include "alloc/small_blocks.hpp"

#include <malloc.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>

namespace gatehouse::alloc {

namespace {

// Static thread-local storage, zero at every thread's start: the hot path
// reads it with one instruction and no initialisation check.
__attribute__((tls_model("initial-exec"))) thread_local SmallBlocks t_small_blocks;

// Its destructor hands a thread's kept blocks back to glibc when the thread
// ends (a pthread key: a C++ thread-local destructor would need a guard on
// every access).
pthread_key_t g_thread_end_key;

void release_at_thread_end(void*) {
    t_small_blocks.close([](void* block) { std::free(block); });
}

// First slow path of a thread: registers the release at its end and starts
// keeping blocks under a key of its own. Without the key (every pthread key
// taken) no thread keeps blocks: they would outlive their thread.
void open_this_thread() {
    // Neither pthread_once, nor the first keys of pthread_key_create and
    // pthread_setspecific, nor getrandom allocates: nothing here comes back
    // into operator new.
    static pthread_once_t key_created = PTHREAD_ONCE_INIT;
    static bool key_usable = false;
    pthread_once(&key_created, [] { key_usable = pthread_key_create(&g_thread_end_key, release_at_thread_end) == 0; });
    if (!key_usable || pthread_setspecific(g_thread_end_key, &t_small_blocks) != 0) return;
    // The system call itself: glibc's getrandom() is a cancellation point,
    // and an operator new must not end a thread.
    std::uintptr_t key = 0;
    if (syscall(SYS_getrandom, &key, sizeof key, GRND_NONBLOCK) != static_cast<long>(sizeof key))
        key = reinterpret_cast<std::uintptr_t>(&t_small_blocks) * 0x9E3779B97F4A7C15u;
    t_small_blocks.open(key | 1);
}

// malloc, calling the new-handler while it fails, as the standard's
// operator new does; null when there is none.
void* malloc_or_handler(std::size_t size) {
    for (;;) {
        if (void* block = std::malloc(size)) return block;
        std::new_handler handler = std::get_new_handler();
        if (!handler) return nullptr;
        handler();
    }
}

[[gnu::always_inline]] inline void* allocate(std::size_t size) {
    SmallBlocks& blocks = t_small_blocks;
    const std::size_t klass = small_classes::for_request(size);
    if (klass >= small_classes::kCount) return malloc_or_handler(size);
    if (void* block = blocks.take(klass)) return block;
    if (!blocks.opened_once()) open_this_thread();
    void* block = malloc_or_handler(small_classes::size(klass));
    if (block) SmallBlocks::fresh(block);
    return block;
}

[[gnu::always_inline]] inline void deallocate(void* block) noexcept {
    if (!block) return;
    SmallBlocks& blocks = t_small_blocks;
    const std::size_t usable = malloc_usable_size(block);
    if (blocks.keep(block, usable)) return;
    blocks.released(block, usable);
    std::free(block);
}

} // namespace

const SmallBlocks& this_thread_small_blocks() {
    return t_small_blocks;
}

// The walk checks every link as take() does, and goes no further than the
// class holds: a list damaged by a write after delete ends the process with
// that message, not in a fault or a loop.
void SmallBlocks::refuse_if_kept(std::size_t klass, const Kept* block) const {
    const Kept* kept = heads_[klass];
    for (std::size_t walked = 0; kept && walked < counts_[klass]; ++walked) {
        if (kept == block) {
            std::fprintf(stderr, "gatehouse: a block at %p was deleted twice\n", static_cast<const void*>(block));
            std::abort();
        }
        kept = checked_next(kept);
    }
}

void SmallBlocks::corrupted(const void* block) {
    std::fprintf(stderr, "gatehouse: a deleted block at %p was written to after its delete\n", block);
    std::abort();
}

} // namespace gatehouse::alloc

void* operator new(std::size_t size) {
    if (void* block = gatehouse::alloc::allocate(size)) return block;
    throw std::bad_alloc();
}

void* operator new[](std::size_t size) {
    if (void* block = gatehouse::alloc::allocate(size)) return block;
    throw std::bad_alloc();
}

// A new-handler may throw: the nothrow forms catch it, as the standard's do.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return gatehouse::alloc::allocate(size);
    } catch (...) {
        return nullptr;
    }
}

void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return gatehouse::alloc::allocate(size);
    } catch (...) {
        return nullptr;
    }
}

void operator delete(void* block) noexcept {
    gatehouse::alloc::deallocate(block);
}

void operator delete[](void* block) noexcept {
    gatehouse::alloc::deallocate(block);
}

void operator delete(void* block, std::size_t) noexcept {
    gatehouse::alloc::deallocate(block);
}

void operator delete[](void* block, std::size_t) noexcept {
    gatehouse::alloc::deallocate(block);
}

void operator delete(void* block, const std::nothrow_t&) noexcept {
    gatehouse::alloc::deallocate(block);
}

void operator delete[](void* block, const std::nothrow_t&) noexcept {
    gatehouse::alloc::deallocate(block);
}
