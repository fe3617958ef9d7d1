#include "metrics/metric_registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gatehouse::metrics {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(double value) noexcept {
    const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
    buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
    Snapshot snapshot;
    snapshot.cumulative.reserve(bounds_.size() + 1);
    std::uint64_t running = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        running += buckets_[i].load(std::memory_order_relaxed);
        snapshot.cumulative.push_back(running);
    }
    snapshot.count = running;
    snapshot.sum = sum_.load(std::memory_order_relaxed);
    return snapshot;
}

std::string format_sample(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    if (value == std::floor(value) && std::fabs(value) < 1e15) return std::to_string(static_cast<long long>(value));
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

void append_escaped_label(std::string& out, std::string_view value) {
    for (char c : value) {
        switch (c) {
        case '\\': out += "\\\\"; break;
        case '"': out += "\\\""; break;
        case '\n': out += "\\n"; break;
        default: out += c;
        }
    }
}

void MetricFamily::header(std::string& out, std::string_view type) const {
    out += "# HELP ";
    out += name_;
    out += ' ';
    for (char c : help_) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    out += "\n# TYPE ";
    out += name_;
    out += ' ';
    out += type;
    out += '\n';
}

void MetricFamily::series_name(std::string& out, std::string_view suffix, const LabelValues& values,
                               std::string_view extra_name, std::string_view extra_value) const {
    out += name_;
    out += suffix;
    if (values.empty() && extra_name.empty()) return;
    out += '{';
    bool first = true;
    const auto label = [&](std::string_view name, std::string_view value) {
        if (!first) out += ',';
        first = false;
        out += name;
        out += "=\"";
        append_escaped_label(out, value);
        out += '"';
    };
    for (std::size_t i = 0; i < values.size() && i < label_names_.size(); ++i)
        label(label_names_[i], values[i]);
    if (!extra_name.empty()) label(extra_name, extra_value);
    out += '}';
}

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> label_names,
                             std::size_t max_series)
    : MetricFamily(std::move(name), std::move(help), std::move(label_names)),
      series_(label_names_.size(), max_series, [] { return std::make_unique<Counter>(); }) {}

void CounterFamily::render(std::string& out) const {
    header(out, "counter");
    series_.for_each([&](const LabelValues& values, const Counter& counter) {
        series_name(out, "", values);
        out += ' ';
        out += std::to_string(counter.value());
        out += '\n';
    });
}

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                                 std::vector<double> bounds, std::size_t max_series)
    : MetricFamily(std::move(name), std::move(help), std::move(label_names)), bounds_(std::move(bounds)),
      series_(label_names_.size(), max_series, [this] { return std::make_unique<Histogram>(bounds_); }) {}

void HistogramFamily::render(std::string& out) const {
    header(out, "histogram");
    series_.for_each([&](const LabelValues& values, const Histogram& histogram) {
        const auto snapshot = histogram.snapshot();
        for (std::size_t i = 0; i <= bounds_.size(); ++i) {
            series_name(out, "_bucket", values, "le", i < bounds_.size() ? format_sample(bounds_[i]) : "+Inf");
            out += ' ';
            out += std::to_string(snapshot.cumulative[i]);
            out += '\n';
        }
        series_name(out, "_sum", values);
        out += ' ';
        out += format_sample(snapshot.sum);
        out += '\n';
        series_name(out, "_count", values);
        out += ' ';
        out += std::to_string(snapshot.count);
        out += '\n';
    });
}

ReadFamily::ReadFamily(std::string name, std::string help, std::vector<std::string> label_names,
                       std::function<Series()> read, std::string type)
    : MetricFamily(std::move(name), std::move(help), std::move(label_names)), read_(std::move(read)),
      type_(std::move(type)) {}

void ReadFamily::render(std::string& out) const {
    header(out, type_);
    for (const auto& [values, value] : read_()) {
        series_name(out, "", values);
        out += ' ';
        out += format_sample(value);
        out += '\n';
    }
}

std::string MetricRegistry::render() const {
    std::string out;
    out.reserve(16384);
    for (const auto& family : families_)
        family->render(out);
    return out;
}

} // namespace gatehouse::metrics
