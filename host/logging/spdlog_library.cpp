// spdlog's compiled part, built into the host instead of taken from Debian's
// libspdlog.so: the shared library exports and interposes every symbol, so
// loading it bound some 970 of them at each start and kept half a megabyte
// of its pages resident, where the host runs a few dozen of its functions
// (docs/performance.md, "spdlog and fmt in the binary"). Every other file
// includes spdlog's headers as they are (SPDLOG_COMPILED_LIB: declarations
// only); the definitions are compiled here once, from the same headers.
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_library.cpp compiles spdlog's definitions; SPDLOG_COMPILED_LIB must be defined"
#endif

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_color_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

#include <mutex>

// The class templates whose members live in -inl.h files, for the
// instantiations the host and its tests use: the sinks' common base (an
// ostream sink, the tests' captured log, derives from it) and the coloured
// stderr sink of the default logger.
template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template std::shared_ptr<spdlog::logger>
spdlog::stderr_color_mt<spdlog::synchronous_factory>(const std::string& logger_name, color_mode mode);
