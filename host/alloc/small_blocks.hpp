#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gatehouse::alloc {

// The sizes of small blocks: glibc's usable sizes for small chunks, 24, 40,
// 56 … 520 bytes (a chunk is a multiple of 16 bytes, 8 of them its header).
namespace small_classes {

inline constexpr std::size_t kCount = 32;
inline constexpr std::size_t kLargest = 24 + 16 * (kCount - 1); // 520

// The class whose blocks serve `size` bytes; kCount when none does.
// (size + 7) / 16 is 1 for 9 to 24 bytes, 2 up to 40 …; up to 8 bytes share
// the first class. A size past the largest class is ruled out first: near
// SIZE_MAX the sum would wrap to a small class (clang passes SIZE_MAX to
// operator new[] for an array whose size overflows).
constexpr std::size_t for_request(std::size_t size) {
    if (size > kLargest) return kCount;
    const std::size_t sixteenths = (size + 7) >> 4;
    return sixteenths - (sixteenths != 0);
}
// The class a block of `usable` bytes can serve (a usable size between two
// classes serves the smaller); kCount or more when it is too large to keep
// (or below glibc's smallest, which wraps around).
constexpr std::size_t for_block(std::size_t usable) {
    return (usable - 24) >> 4;
}
constexpr std::size_t size(std::size_t klass) {
    return 24 + 16 * klass;
}
// How many blocks of a class one thread keeps: 128 of the smallest, and no
// more than 4 KiB of any larger one.
constexpr std::uint16_t max_kept(std::size_t klass) {
    return static_cast<std::uint16_t>(4096 / size(klass) < 128 ? 4096 / size(klass) : 128);
}
inline constexpr auto kMaxKept = [] {
    std::array<std::uint16_t, kCount> most{};
    for (std::size_t klass = 0; klass < kCount; ++klass)
        most[klass] = max_kept(klass);
    return most;
}();
// What one thread keeps at most, all classes full.
inline constexpr std::size_t kMaxBytes = [] {
    std::size_t bytes = 0;
    for (std::size_t klass = 0; klass < kCount; ++klass)
        bytes += max_kept(klass) * size(klass);
    return bytes;
}();

} // namespace small_classes

// One thread's small blocks, freed by `operator delete` and kept to be handed
// out again by the next `operator new` of that size on the same thread. A
// request over HTTP allocates and frees some eighty small blocks (its JSON
// tree, its headers, the call's bookkeeping); glibc's own per-thread cache
// keeps seven blocks a size and sends the rest through its bins: some 180
// instructions a pair of malloc and free there, some 80 here, checks and
// malloc_usable_size included.
//
// The blocks are glibc's: each was malloc'd at its class's size, and whatever
// does not fit here goes back with free(). So memory from either side (a
// library that calls malloc, a plugin loaded with its own binding of
// `operator new`) may be freed by the other.
//
// Blocks are kept by size class (small_classes). What a thread keeps is
// bounded per class (`max_kept`), so a thread that frees what others
// allocated keeps a little and frees the rest, and a thread that goes idle
// holds at most `kMaxBytes` (122 KiB).
//
// A kept block holds the next one's address, mangled with its own address
// and the thread's key (as glibc's safe-linking does), and the key itself: a
// block deleted twice while kept is recognised by its key and found on the
// list, and a block written to after its delete is caught when it is handed
// out again (its key changed, or its next pointer no longer aligned), both
// before any damage (std::abort with a line on stderr). A block this thread
// hands back to free() is marked in its third word, which glibc's small
// bins leave alone: deleted again, it goes to free() too, where glibc's own
// check finds it while it is still in glibc's per-thread cache (the two
// checks together, not more than glibc alone: a block freed once to glibc
// and reused there is beyond either).
//
// Zero-initialised, so it can live in static thread-local storage: no
// constructor runs on a thread's first allocation. Blocks are glibc's on
// x86-64: 16-byte aligned, 8-byte words.
static_assert(sizeof(void*) == 8 && alignof(std::max_align_t) == 16, "glibc's chunk sizes on a 64-bit machine");

class SmallBlocks {
public:
    // A kept block of `klass`, or null when this thread keeps none.
    [[gnu::always_inline]] void* take(std::size_t klass) {
        Kept* block = heads_[klass];
        if (!block) return nullptr;
        heads_[klass] = checked_next(block);
        --counts_[klass];
        block->key = 0;
        return block;
    }

    // Keeps `block` (`usable` bytes, from malloc) for a later `take`; false
    // when it should go back to free() (`released` first): too large, or over
    // a bound, or the thread is ending, or this thread released it before.
    [[gnu::always_inline]] bool keep(void* block, std::size_t usable) {
        const std::size_t klass = small_classes::for_block(usable);
        if (klass >= small_classes::kCount || !open_) return false;
        Kept* kept = static_cast<Kept*>(block);
        if (kept->key == key_) refuse_if_kept(klass, kept);
        if (counts_[klass] >= small_classes::kMaxKept[klass] || kept->released == released_mark()) return false;
        kept->next = hide(kept, heads_[klass]);
        kept->key = key_;
        heads_[klass] = kept;
        ++counts_[klass];
        return true;
    }

    // `block`, refused by `keep`, goes to free() now: marked (when it is a
    // small block of an open thread) so that deleting it again sends it
    // there again.
    [[gnu::always_inline]] void released(void* block, std::size_t usable) {
        // Volatile: a store just before free() is otherwise a dead store to
        // the compiler, and removed.
        if (open_ && small_classes::for_block(usable) < small_classes::kCount)
            *static_cast<volatile std::uintptr_t*>(&static_cast<Kept*>(block)->released) = released_mark();
    }

    // `block` came from malloc for this thread: whatever mark an earlier life
    // left in it is not about this allocation.
    static void fresh(void* block) { static_cast<Kept*>(block)->released = 0; }

    // Starts keeping blocks, under `key` (nonzero; random, so a live object
    // rarely carries it by chance). Until then `keep` refuses every block.
    void open(std::uintptr_t key) {
        key_ = key;
        open_ = true;
    }
    bool opened_once() const { return key_ != 0; }

    // Hands every kept block to `release` and keeps none from now on: the
    // thread is ending, and what it frees later goes straight back.
    template <typename Release> void close(Release&& release) {
        open_ = false;
        for (std::size_t klass = 0; klass < small_classes::kCount; ++klass) {
            while (void* block = take(klass))
                release(block);
        }
    }

    std::size_t kept_bytes() const {
        std::size_t bytes = 0;
        for (std::size_t klass = 0; klass < small_classes::kCount; ++klass)
            bytes += counts_[klass] * small_classes::size(klass);
        return bytes;
    }
    std::size_t kept_count(std::size_t klass) const { return counts_[klass]; }

private:
    struct Kept {
        Kept* next; // mangled: hide()
        std::uintptr_t key;
        std::uintptr_t released; // released_mark(): handed to free() by this thread
    };
    std::uintptr_t released_mark() const { return ~key_; }

    Kept* hide(const Kept* at, const Kept* next) const {
        return reinterpret_cast<Kept*>((reinterpret_cast<std::uintptr_t>(at) >> 12) ^ key_ ^
                                       reinterpret_cast<std::uintptr_t>(next));
    }
    Kept* reveal(const Kept* at, const Kept* hidden) const { return hide(at, hidden); }
    // The block after `kept` on its list, once `kept` shows it was not
    // written to since it was kept: its key, and a next pointer that reveals
    // aligned.
    [[gnu::always_inline]] Kept* checked_next(const Kept* kept) const {
        Kept* next = reveal(kept, kept->next);
        if (kept->key != key_ || (reinterpret_cast<std::uintptr_t>(next) & 15) != 0) corrupted(kept);
        return next;
    }

    [[gnu::noinline, gnu::cold]] void refuse_if_kept(std::size_t klass, const Kept* block) const;
    [[noreturn, gnu::noinline, gnu::cold]] static void corrupted(const void* block);

    Kept* heads_[small_classes::kCount];
    std::uint16_t counts_[small_classes::kCount];
    std::uintptr_t key_;
    bool open_;
};

// The calling thread's blocks, where alloc/operator_new.cpp is linked (the
// gatehouse executable outside sanitizer builds, and its own test).
const SmallBlocks& this_thread_small_blocks();

} // namespace gatehouse::alloc
