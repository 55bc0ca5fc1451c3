// Environment switches. Integer ones (SERVEKIT_STATIC_ROW_COST and the SERVEKIT_DIAG_* timing
// switches): one parser, so that every such variable reads the same way. Unset or empty means
// the caller's default; anything else must be a whole decimal integer within the variable's
// range, or the read throws servekit::Error naming the variable, its value and the range (a
// typo is refused, not silently read as 0). Switches with named values (the GEMMs' and the
// dynamic path's, each with its own parser): env_choice. Pure C++: tested on the CPU
// (tests/cpp/core).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "servekit/error.h"

namespace servekit {

// The value of text as a decimal integer in [lo, hi]: an optional sign and digits only (no
// blanks, no suffix), or nullopt.
inline std::optional<long long> parse_env_int(const char* text, long long lo, long long hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const char* p = text + (*text == '-' || *text == '+' ? 1 : 0);
  if (*p < '0' || *p > '9') return std::nullopt;  // strtoll would skip blanks
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

// The integer switch `name`: fallback when unset or empty, else its value in [lo, hi].
// Throws servekit::Error for any other value.
inline long long env_int(const char* name, long long lo, long long hi, long long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const std::optional<long long> v = parse_env_int(text, lo, hi);
  SERVEKIT_CHECK(v.has_value(), name, "='", text, "' must be an integer from ", lo, " to ", hi,
                 " (or unset)");
  return *v;
}

// The switch `name` read through `parse` (std::optional<T> of a std::string_view: the value it
// means, or nullopt for a value it refuses): `unset` when the variable is unset, else parse's
// value (parse decides what empty means). A refused value throws servekit::Error
// "NAME='value' must be <expected>".
template <class T, class Parse>
T env_choice(const char* name, T unset, Parse parse, const char* expected) {
  const char* text = std::getenv(name);
  if (text == nullptr) return unset;
  const std::optional<T> v = parse(std::string_view(text));
  SERVEKIT_CHECK(v.has_value(), name, "='", text, "' must be ", expected);
  return *v;
}

}  // namespace servekit
