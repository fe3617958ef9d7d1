// openssl_first_use [RUNS]: what the first use of OpenSSL costs a host process
// now that it lives in gatehouse-openssl.so (crypto/openssl.hpp). Each run is
// a fresh process (this program again, with --once) that times, in order:
//   open         crypto::openssl(): dlopen of the module with libcrypto and libssl
//   first call   the first HMAC-SHA256 (OpenSSL's own lazy initialisation)
//   next call    the second one
// and the medians are printed as one JSON line.

#include "crypto/openssl.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

int once() {
    const auto t0 = Clock::now();
    const auto& openssl = gatehouse::crypto::openssl();
    const auto t1 = Clock::now();
    const auto first = openssl.hmac_sha256("key", "first");
    const auto t2 = Clock::now();
    const auto next = openssl.hmac_sha256("key", "next");
    const auto t3 = Clock::now();
    std::printf("%f %f %f\n", ms(t0, t1), ms(t1, t2), ms(t2, t3));
    return first == next; // never equal; keeps both calls
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--once") return once();
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
    std::vector<double> open, first, next;
    for (int i = 0; i < runs; ++i) {
        FILE* child = ::popen(("exec " + std::string(argv[0]) + " --once").c_str(), "r");
        double a = 0, b = 0, c = 0;
        if (!child || std::fscanf(child, "%lf %lf %lf", &a, &b, &c) != 3 || ::pclose(child) != 0) {
            std::fprintf(stderr, "openssl_first_use: a run failed\n");
            return 1;
        }
        open.push_back(a);
        first.push_back(b);
        next.push_back(c * 1000);
    }
    std::printf("{\"runs\":%d,\"open_ms\":%.2f,\"first_call_ms\":%.2f,\"next_call_us\":%.1f}\n", runs, median(open),
                median(first), median(next));
    return 0;
}
