#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gatehouse::metrics {

// A count that only goes up. Lock-free; safe from any thread.
class Counter {
public:
    void add(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

// Observations counted into fixed buckets (upper bounds, ascending), with
// their sum. Lock-free; safe from any thread.
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);

    void observe(double value) noexcept;

    struct Snapshot {
        std::vector<std::uint64_t> cumulative; // per bound, then +Inf
        std::uint64_t count = 0;
        double sum = 0;
    };
    Snapshot snapshot() const;

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_; // bounds_.size() + 1
    std::atomic<double> sum_{0};
};

// Label values of one series, in the order of its family's label names.
using LabelValues = std::vector<std::string>;

// One metric family of the exposition: its name, help, type and series.
class MetricFamily {
public:
    MetricFamily(std::string name, std::string help, std::vector<std::string> label_names)
        : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
    virtual ~MetricFamily() = default;

    const std::string& name() const { return name_; }
    // Appends the family in the Prometheus text format (version 0.0.4).
    virtual void render(std::string& out) const = 0;

protected:
    void header(std::string& out, std::string_view type) const;
    // name{label="value",...}: `extra` is one more label (a histogram's le).
    void series_name(std::string& out, std::string_view suffix, const LabelValues& values,
                     std::string_view extra_name = {}, std::string_view extra_value = {}) const;

    std::string name_;
    std::string help_;
    std::vector<std::string> label_names_;
};

// Series of one family by their label values, made on first use. Label
// values come from what the host knows (the registry's tools, its own
// codes), never from a caller's input; past `max_series` further values
// share one series whose labels all read "other", so a mistake cannot
// grow the exposition without bound.
template <class Metric> class Labeled {
public:
    Labeled(std::size_t label_count, std::size_t max_series, std::function<std::unique_ptr<Metric>()> make)
        : label_count_(label_count), max_series_(max_series), make_(std::move(make)) {}

    Metric& with(std::initializer_list<std::string_view> values) {
        {
            std::shared_lock lock(mutex_);
            if (auto it = series_.find(values); it != series_.end()) return *it->second;
        }
        std::unique_lock lock(mutex_);
        if (auto it = series_.find(values); it != series_.end()) return *it->second;
        LabelValues key;
        if (series_.size() < max_series_)
            key.assign(values.begin(), values.end());
        else
            key.assign(label_count_, "other");
        auto& slot = series_[std::move(key)];
        if (!slot) slot = make_();
        return *slot;
    }

    template <class Visit> void for_each(Visit&& visit) const {
        std::shared_lock lock(mutex_);
        for (const auto& [values, metric] : series_)
            visit(values, *metric);
    }

private:
    // Finds a series by string_views without building its key.
    struct Less {
        using is_transparent = void;
        template <class A, class B> bool operator()(const A& a, const B& b) const {
            return std::lexicographical_compare(std::begin(a), std::end(a), std::begin(b), std::end(b),
                                                [](std::string_view x, std::string_view y) { return x < y; });
        }
    };

    const std::size_t label_count_;
    const std::size_t max_series_;
    std::function<std::unique_ptr<Metric>()> make_;
    mutable std::shared_mutex mutex_;
    std::map<LabelValues, std::unique_ptr<Metric>, Less> series_;
};

inline constexpr std::size_t kMaxSeries = 4096;

// What a scrape answers with: the text format, version 0.0.4.
inline constexpr std::string_view kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

class CounterFamily final : public MetricFamily {
public:
    CounterFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::size_t max_series = kMaxSeries);
    Counter& with(std::initializer_list<std::string_view> values) { return series_.with(values); }
    void render(std::string& out) const override;

private:
    Labeled<Counter> series_;
};

class HistogramFamily final : public MetricFamily {
public:
    HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                    std::vector<double> bounds, std::size_t max_series = kMaxSeries);
    Histogram& with(std::initializer_list<std::string_view> values) { return series_.with(values); }
    void render(std::string& out) const override;

private:
    std::vector<double> bounds_;
    Labeled<Histogram> series_;
};

// Values read when scraped (a gauge, or a counter the host does not keep
// itself, such as the process's CPU time): the callback lists each
// series' labels and value.
class ReadFamily final : public MetricFamily {
public:
    using Series = std::vector<std::pair<LabelValues, double>>;
    ReadFamily(std::string name, std::string help, std::vector<std::string> label_names, std::function<Series()> read,
               std::string type = "gauge");
    void render(std::string& out) const override;

private:
    std::function<Series()> read_;
    std::string type_;
};

// The families one host exposes, rendered in the order they were added.
class MetricRegistry {
public:
    template <class Family, class... Args> Family& add(Args&&... args) {
        auto family = std::make_unique<Family>(std::forward<Args>(args)...);
        Family& added = *family;
        families_.push_back(std::move(family));
        return added;
    }

    // A counter with no labels, a family of its own.
    Counter& counter(std::string name, std::string help) {
        return add<CounterFamily>(std::move(name), std::move(help), std::vector<std::string>{}).with({});
    }

    std::string render() const;

private:
    std::vector<std::unique_ptr<MetricFamily>> families_;
};

// A sample value as the text format writes it: integers without a
// fraction, +Inf, -Inf and NaN by name.
std::string format_sample(double value);
// A label value with \, " and newline escaped.
void append_escaped_label(std::string& out, std::string_view value);

} // namespace gatehouse::metrics
