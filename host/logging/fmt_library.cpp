// fmt's compiled part (spdlog formats with it), built into the host instead
// of taken from Debian's libfmt.so, for the reason spdlog_library.cpp gives.
// Without FMT_HEADER_ONLY, format-inl.h defines fmt's out-of-line functions
// (FMT_FUNC) here, once; the templates below are those the headers declare
// and leave to the library.
#ifdef FMT_HEADER_ONLY
#error "fmt_library.cpp compiles fmt's definitions; FMT_HEADER_ONLY must not be defined"
#endif

#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

} // namespace detail
FMT_END_NAMESPACE
