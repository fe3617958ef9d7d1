// The unit tests' own main: FamilyProcess starts /proc/self/exe with the
// verb serve-family, and in this binary that verb is the tests' scripted
// stand-in for the family process (isolation_test.cpp), which can write
// the byte sequences a real child writes only by chance.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <csignal>
#include <string_view>

int scripted_family_child(int argc, char** argv);

int main(int argc, char** argv) {
    // As gatehouse's own main: a family process's pipe whose reader is gone
    // is an EPIPE for the writer, not the end of the tests.
    std::signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && std::string_view(argv[1]) == "serve-family") return scripted_family_child(argc, argv);
    return Catch::Session().run(argc, argv);
}
