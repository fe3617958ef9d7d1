// In-process recall timing: NoteStore::recall with no host and no pipes, on
// notes shaped like compare.mjs's (8-16 words from a 5000-word vocabulary,
// half Latin, half Cyrillic; one of 50 tags), so the store's own share of a
// round trip can be measured and profiled apart from the transport.
//
//   recall_bench --database /tmp/notes.db|postgresql://... [--notes 100000] [--queries 300]
//                [--others 0] [--common 0] [--threads 1] [--write-queries FILE] [--owner bench]
//
// An existing file with enough notes is reused (filling 100 000 notes one
// remember each takes a while). --others N adds N notes of another owner
// sharing the vocabulary (their posting-list entries are walked too);
// --common P puts one word into P % of the notes, and queries it, to show
// the cost of a frequent word. --threads fills with that many writers (the
// PostgreSQL backend takes writes side by side); --write-queries keeps the
// timed queries, one per line, for compare.mjs to send over stdio; --owner
// fills and asks as another owner of the same file (a small owner beside a
// large one shows what the others' notes cost a recall). Words are
// letters only, so the stemmers see every one of them.
#include "note_store.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
    std::string database;
    int notes = 100000;
    int queries = 300;
    int others = 0;
    int common = 0;
    int threads = 1;
    std::string write_queries;
    std::string owner = "bench";
};

Options parse(int argc, char** argv) {
    Options o;
    std::map<std::string, std::string> args;
    for (int i = 1; i + 1 < argc; i += 2)
        args[argv[i]] = argv[i + 1];
    if (!args.count("--database")) {
        std::fprintf(stderr, "usage: recall_bench --database FILE [--notes N] [--queries Q] [--others N] "
                             "[--common PERCENT]\n");
        std::exit(2);
    }
    o.database = args["--database"];
    if (args.count("--notes")) o.notes = std::stoi(args["--notes"]);
    if (args.count("--queries")) o.queries = std::stoi(args["--queries"]);
    if (args.count("--others")) o.others = std::stoi(args["--others"]);
    if (args.count("--common")) o.common = std::stoi(args["--common"]);
    if (args.count("--threads")) o.threads = std::max(1, std::stoi(args["--threads"]));
    if (args.count("--write-queries")) o.write_queries = args["--write-queries"];
    if (args.count("--owner")) o.owner = args["--owner"];
    return o;
}

std::vector<std::string> make_vocabulary(std::mt19937& random) {
    const std::string latin = "abcdefghijklmnopqrstuvwxyz";
    const std::vector<std::string> cyrillic = {"а", "б", "в", "г", "д", "е", "ж", "з", "и", "к", "л", "м", "н", "о",
                                               "п", "р", "с", "т", "у", "ф", "х", "ц", "ч", "ш", "э", "ю", "я"};
    std::vector<std::string> words;
    for (int i = 0; i < 5000; ++i) {
        std::string w;
        for (int k = 0; k < 4 + i % 5; ++k) {
            if (i % 2)
                w += cyrillic[random() % cyrillic.size()];
            else
                w += latin[random() % latin.size()];
        }
        // A suffix of letters keeps the words apart without digits (a word
        // with a digit is never stemmed).
        for (int rest = i; rest > 0; rest /= 26)
            w += i % 2 ? cyrillic[static_cast<std::size_t>(rest % 26)] : std::string(1, latin[rest % 26]);
        words.push_back(w);
    }
    return words;
}

double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

} // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    memory::StoreSettings settings;
    settings.database_path = options.database;
    memory::NoteStore store(settings);
    const memory::Owner owner{options.owner, ""};
    const memory::Owner other{"other", ""};

    std::mt19937 random(42);
    const auto vocabulary = make_vocabulary(random);
    const std::string common_word = "commonword";
    auto make_note = [&](int i) {
        memory::NewNote n;
        const int count = 8 + static_cast<int>(random() % 9);
        for (int k = 0; k < count; ++k) {
            if (!n.text.empty()) n.text += ' ';
            n.text += vocabulary[random() % vocabulary.size()];
        }
        if (options.common > 0 && static_cast<int>(random() % 100) < options.common) n.text += " " + common_word;
        n.tags = {"tag" + std::to_string(i % 50)};
        return n;
    };

    const auto have = store.recall(owner, {"", {}, 1});
    const int64_t existing = have.empty() ? 0 : have.front().id;
    if (existing < options.notes) {
        const auto t = std::chrono::steady_clock::now();
        // The notes are drawn up front, in order, so a filled database is the
        // same whatever the thread count.
        std::vector<memory::NewNote> pending;
        for (int64_t i = existing; i < options.notes; ++i)
            pending.push_back(make_note(static_cast<int>(i)));
        std::atomic<std::size_t> next{0};
        std::vector<std::thread> writers;
        for (int w = 0; w < options.threads; ++w)
            writers.emplace_back([&] {
                for (std::size_t i; (i = next++) < pending.size();) {
                    store.remember(owner, pending[i]);
                    if (static_cast<int64_t>(i) + existing < options.others) store.remember(other, pending[i]);
                }
            });
        for (auto& w : writers)
            w.join();
        std::printf("filled %lld notes in %.1f s (%d writers)\n", static_cast<long long>(options.notes - existing),
                    ms_since(t) / 1000, options.threads);
    }

    std::vector<std::string> queries;
    for (int q = 0; q < options.queries; ++q)
        queries.push_back(options.common > 0 && q % 2 ? common_word : vocabulary[random() % vocabulary.size()]);
    if (!options.write_queries.empty()) {
        std::FILE* out = std::fopen(options.write_queries.c_str(), "w");
        for (const auto& q : queries)
            std::fprintf(out, "%s\n", q.c_str());
        std::fclose(out);
    }
    for (int q = 0; q < 20 && q < options.queries; ++q)
        (void)store.recall(owner, {queries[static_cast<std::size_t>(q)], {}, 0});
    std::vector<double> times;
    std::size_t returned = 0;
    for (const auto& q : queries) {
        const auto t = std::chrono::steady_clock::now();
        returned += store.recall(owner, {q, {}, 0}).size();
        times.push_back(ms_since(t));
    }
    std::sort(times.begin(), times.end());
    auto at = [&](double p) {
        return times[std::min(times.size() - 1, static_cast<std::size_t>(p / 100 * static_cast<double>(times.size())))];
    };
    std::printf("%zu recalls at %d notes: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms; %zu notes returned\n",
                times.size(), options.notes, at(50), at(90), at(99), times.back(), returned);
    return 0;
}
