#include "state/counted_backend.hpp"

namespace gatehouse::state {

namespace {

class CountedBackend final : public StateBackend {
public:
    CountedBackend(std::unique_ptr<StateBackend> inner, std::function<void(const char*)> failed)
        : inner_(std::move(inner)), failed_(std::move(failed)) {}

    std::optional<std::string> get(std::string_view key) override {
        return counted([&] { return inner_->get(key); });
    }
    void put(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        counted([&] { inner_->put(key, value, ttl); });
    }
    bool erase(std::string_view key) override {
        return counted([&] { return inner_->erase(key); });
    }
    bool replace(std::string_view key, std::string_view expected, std::string_view value,
                 std::chrono::milliseconds ttl) override {
        return counted([&] { return inner_->replace(key, expected, value, ttl); });
    }
    bool add(std::string_view key, std::string_view value, std::chrono::milliseconds ttl) override {
        return counted([&] { return inner_->add(key, value, ttl); });
    }
    std::optional<std::string> take(std::string_view key) override {
        return counted([&] { return inner_->take(key); });
    }
    std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) override {
        return counted([&] { return inner_->scan(prefix); });
    }
    const char* name() const override { return inner_->name(); }
    void probe() override {
        counted([&] { inner_->probe(); });
    }

private:
    template <class Operation> auto counted(Operation&& operation) -> decltype(operation()) {
        try {
            return operation();
        } catch (const BackendError&) {
            failed_(inner_->name());
            throw;
        }
    }

    std::unique_ptr<StateBackend> inner_;
    std::function<void(const char*)> failed_;
};

} // namespace

std::unique_ptr<StateBackend> make_counted_backend(std::unique_ptr<StateBackend> backend,
                                                   std::function<void(const char*)> failed) {
    return std::make_unique<CountedBackend>(std::move(backend), std::move(failed));
}

} // namespace gatehouse::state
