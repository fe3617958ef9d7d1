#pragma once

namespace gatehouse::isolation {

// `gatehouse serve-family --input FD --output FD [--memory-mb N]
// [--cpu-seconds N] [--open-files N] -- LIBRARY`: the child a FamilyProcess
// starts. Sets its bounds, loads the library, offers its descriptor on the
// output pipe and serves
// the host's frames until the host asks it to stop or goes away. Not for
// people: the host starts it for a plugins entry with isolation: process.
int serve_family(int argc, char** argv);

} // namespace gatehouse::isolation
