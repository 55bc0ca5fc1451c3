// servekit/error.h — the one exception type of the library and the checks that raise it.
//
// Every host-side precondition failure throws servekit::Error with a message that names the
// argument, the value it had and what would be valid, e.g.
//   "moe: hidden_size=2880 must be a multiple of 128 for quant fp8_block128 (file.cpp:42)".
// Library code never calls exit() or abort() on bad input.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace servekit {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

[[noreturn]] inline void throw_error(const char* file, int line, const std::string& msg) {
  throw Error(concat(msg, " (", file, ":", line, ")"));
}

}  // namespace detail
}  // namespace servekit

// SERVEKIT_CHECK(cond, parts...): throws servekit::Error(concat(parts...)) when cond is false.
#define SERVEKIT_CHECK(cond, ...)                                                    \
  do {                                                                               \
    if (!(cond))                                                                     \
      ::servekit::detail::throw_error(__FILE__, __LINE__,                            \
                                      ::servekit::detail::concat(__VA_ARGS__));      \
  } while (0)

#define SERVEKIT_FAIL(...) \
  ::servekit::detail::throw_error(__FILE__, __LINE__, ::servekit::detail::concat(__VA_ARGS__))
