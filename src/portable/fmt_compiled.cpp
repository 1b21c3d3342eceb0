// fmt's compiled part, for the release binary only (src/portable/CMakeLists.txt).
//
// Every object of the product is compiled once, against Debian's fmt headers in their library mode
// (not FMT_HEADER_ONLY): the functions fmt declares FMT_FUNC, and the templates format.h declares
// `extern template`, are left for the library to define. `trainscope` links Debian's libfmt.so
// for them; the release binary cannot (a shared C++ library brings libstdc++.so and the build
// host's glibc floor along), so this file defines them from the same headers: format-inl.h holds
// the FMT_FUNC bodies, and the explicit instantiations below are the ones format.h declares extern
// plus the float conversions its inline code calls. A reference with no definition here fails the
// link of trainscope-portable, never silently.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
