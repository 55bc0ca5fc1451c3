// A tiny command-line flag parser for the `servekit` sub-commands.
//
// Accepts `--flag value`, `--flag=value` and bare switches (`--check`). Every mistake throws
// servekit::Error naming the flag: an unknown flag (listing the valid ones), a missing value, a
// value given to a switch, a flag given twice, a positional argument, a value that is not a
// number or is out of range, a choice that is not among the allowed ones.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace servekit::cli {

struct FlagSpec {
  std::string name;  // without the leading "--"
  bool takes_value;  // false: a switch, present or absent
};

class Args {
 public:
  // Parses args (the words after the sub-command) against spec. Throws servekit::Error.
  Args(const std::vector<std::string>& args, const std::vector<FlagSpec>& spec);
  // Convenience for main(): argv[0] is the sub-command and is skipped.
  Args(int argc, char** argv, const std::vector<FlagSpec>& spec);

  // Whether the flag or switch was given.
  bool has(std::string_view name) const;
  std::string get_string(std::string_view name, std::string_view fallback) const;
  // The value parsed as a base-10 integer in [min, max]; fallback if the flag is absent (the
  // fallback itself is not range-checked).
  int64_t get_int(std::string_view name, int64_t fallback, int64_t min = INT64_MIN,
                  int64_t max = INT64_MAX) const;
  uint64_t get_uint(std::string_view name, uint64_t fallback) const;
  double get_double(std::string_view name, double fallback) const;
  // The value, which must be one of choices; fallback if the flag is absent.
  std::string get_choice(std::string_view name, std::string_view fallback,
                         const std::vector<std::string>& choices) const;

 private:
  const std::string* find(std::string_view name) const;

  std::map<std::string, std::string, std::less<>> values_;  // switches map to ""
};

// Whether any word after the sub-command is --help or -h.
bool wants_help(int argc, char** argv);
// The message of a servekit::Error without its trailing " (file:line)", for errors that are
// the user's (bad arguments) rather than the program's.
std::string without_location(std::string_view message);
// Prints `servekit: error: <message>` as one line on stderr (newlines in message become "; ")
// and returns code.
int report_error(std::string_view message, int code);

}  // namespace servekit::cli
