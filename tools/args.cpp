#include "args.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

#include "servekit/error.h"

namespace servekit::cli {
namespace {

std::string valid_flags(const std::vector<FlagSpec>& spec) {
  std::string s;
  for (const FlagSpec& f : spec) s += (s.empty() ? "--" : ", --") + f.name;
  return s.empty() ? "none" : s;
}

bool is_flag(std::string_view word) {
  return word.size() > 2 && word.substr(0, 2) == "--";
}

}  // namespace

Args::Args(const std::vector<std::string>& args, const std::vector<FlagSpec>& spec) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    SERVEKIT_CHECK(is_flag(word), "unexpected argument '", word,
                   "' (flags look like --name value)");
    std::string_view body = std::string_view(word).substr(2);
    const size_t eq = body.find('=');
    const std::string name(body.substr(0, eq));
    const FlagSpec* flag = nullptr;
    for (const FlagSpec& f : spec)
      if (f.name == name) flag = &f;
    SERVEKIT_CHECK(flag != nullptr, "unknown flag --", name, " (valid: ", valid_flags(spec), ")");
    SERVEKIT_CHECK(!values_.contains(name), "flag --", name, " given more than once");
    std::string value;
    if (!flag->takes_value) {
      SERVEKIT_CHECK(eq == std::string_view::npos, "flag --", name, " takes no value, got '",
                     body.substr(eq + 1), "'");
    } else if (eq != std::string_view::npos) {
      value = std::string(body.substr(eq + 1));
      SERVEKIT_CHECK(!value.empty(), "flag --", name, " is missing its value");
    } else {
      SERVEKIT_CHECK(i + 1 < args.size() && !is_flag(args[i + 1]), "flag --", name,
                     " is missing its value");
      value = args[++i];
    }
    values_.emplace(name, std::move(value));
  }
}

Args::Args(int argc, char** argv, const std::vector<FlagSpec>& spec)
    : Args(std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc), spec) {}

const std::string* Args::find(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

bool Args::has(std::string_view name) const {
  return find(name) != nullptr;
}

std::string Args::get_string(std::string_view name, std::string_view fallback) const {
  const std::string* v = find(name);
  return v ? *v : std::string(fallback);
}

int64_t Args::get_int(std::string_view name, int64_t fallback, int64_t min, int64_t max) const {
  const std::string* v = find(name);
  if (!v) return fallback;
  int64_t x = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  SERVEKIT_CHECK(ec == std::errc() && end == v->data() + v->size(), "flag --", name, "='", *v,
                 "' is not an integer");
  SERVEKIT_CHECK(x >= min && x <= max, "flag --", name, "=", x, " is out of range [", min, ", ",
                 max, "]");
  return x;
}

uint64_t Args::get_uint(std::string_view name, uint64_t fallback) const {
  const std::string* v = find(name);
  if (!v) return fallback;
  uint64_t x = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  SERVEKIT_CHECK(ec == std::errc() && end == v->data() + v->size(), "flag --", name, "='", *v,
                 "' is not a non-negative integer");
  return x;
}

double Args::get_double(std::string_view name, double fallback) const {
  const std::string* v = find(name);
  if (!v) return fallback;
  double x = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  SERVEKIT_CHECK(ec == std::errc() && end == v->data() + v->size() && std::isfinite(x), "flag --",
                 name, "='", *v, "' is not a finite number");
  return x;
}

std::string Args::get_choice(std::string_view name, std::string_view fallback,
                             const std::vector<std::string>& choices) const {
  std::string v = get_string(name, fallback);
  for (const std::string& c : choices)
    if (c == v) return v;
  std::string valid;
  for (const std::string& c : choices) valid += (valid.empty() ? "" : ", ") + c;
  SERVEKIT_FAIL("flag --", name, "='", v, "' is not one of: ", valid);
}

bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view w = argv[i];
    if (w == "--help" || w == "-h") return true;
  }
  return false;
}

std::string without_location(std::string_view message) {
  // SERVEKIT_CHECK appends " (<file>:<line>)"; the file has no spaces, the line only digits.
  if (!message.ends_with(')')) return std::string(message);
  const size_t open = message.rfind(" (");
  const size_t colon = message.rfind(':');
  if (open == std::string_view::npos || colon == std::string_view::npos || colon < open)
    return std::string(message);
  const std::string_view file = message.substr(open + 2, colon - open - 2);
  const std::string_view line = message.substr(colon + 1, message.size() - colon - 2);
  const bool is_location = !file.empty() && file.find(' ') == std::string_view::npos &&
                           !line.empty() &&
                           line.find_first_not_of("0123456789") == std::string_view::npos;
  return std::string(is_location ? message.substr(0, open) : message);
}

int report_error(std::string_view message, int code) {
  std::string line(message);
  for (size_t pos = line.find('\n'); pos != std::string::npos; pos = line.find('\n', pos))
    line.replace(pos, 1, "; ");
  while (line.size() >= 2 && line.ends_with("; ")) line.resize(line.size() - 2);
  std::fprintf(stderr, "servekit: error: %s\n", line.c_str());
  return code;
}

}  // namespace servekit::cli
