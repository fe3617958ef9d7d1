// Objects made on demand and kept for the next caller: at most one per thread
// that has ever called at the same time (the host's worker count). Used for
// database connections and analyzers, neither of which may be shared by two
// threads at once.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace memory {

template <class T> class ObjectPool {
public:
    explicit ObjectPool(std::function<std::unique_ptr<T>()> make) : make_(std::move(make)) {}

    class Lease {
    public:
        Lease(ObjectPool& pool, std::unique_ptr<T> object) : pool_(pool), object_(std::move(object)) {}
        ~Lease() {
            if (object_) pool_.give_back(std::move(object_));
        }
        Lease(Lease&& other) noexcept : pool_(other.pool_), object_(std::move(other.object_)) {}
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        T& operator*() const { return *object_; }
        T* operator->() const { return object_.get(); }
        // The object is broken (a lost connection): it is not given back,
        // and the next caller gets a new one.
        void discard() { object_.reset(); }

    private:
        ObjectPool& pool_;
        std::unique_ptr<T> object_;
    };

    Lease acquire() {
        {
            std::lock_guard lock(mutex_);
            while (!idle_.empty()) {
                auto object = std::move(idle_.back());
                idle_.pop_back();
                // One that went bad while idle (its server restarted) is
                // dropped before anybody sends it a statement.
                if constexpr (requires(T & t) { t.alive(); })
                    if (!object->alive()) continue;
                return Lease(*this, std::move(object));
            }
        }
        return Lease(*this, make_());
    }

private:
    void give_back(std::unique_ptr<T> object) {
        // An object that can tell it is broken (a connection whose server
        // went away) is dropped instead.
        if constexpr (requires(const T& t) { t.reusable(); })
            if (!object->reusable()) return;
        std::lock_guard lock(mutex_);
        idle_.push_back(std::move(object));
    }

    std::function<std::unique_ptr<T>()> make_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<T>> idle_;
};

} // namespace memory
