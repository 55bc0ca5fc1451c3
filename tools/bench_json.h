// A small streaming JSON writer for benchmark result files: commas and nesting are tracked, strings
// are escaped (RFC 8259), non-finite numbers are written as null (JSON has no NaN/inf). Nesting is
// at most kMaxDepth containers (a fixed stack: std::vector's growth made gcc 13 warn
// -Wstringop-overflow, a false positive, which a -Werror build turns into an error).
// Header-only so the CPU unit test can include it.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "servekit/error.h"

namespace servekit::bench {

class JsonWriter {
 public:
  static constexpr int kMaxDepth = 32;

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& key(std::string_view k) {
    SERVEKIT_CHECK(depth_ > 0 && top().kind == '{' && !after_key_, "json: key '", k,
                   "' outside an object or after another key");
    separate();
    write_string(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(std::string_view s) {
    before_value();
    write_string(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    before_value();
    out_ += b ? "true" : "false";
    return *this;
  }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(int64_t v) {
    before_value();
    out_ += std::to_string(v);
    return *this;
  }
  // Up to 7 significant digits: enough for microseconds and errors, short enough to read.
  JsonWriter& value(double v) {
    before_value();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.7g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& null() {
    before_value();
    out_ += "null";
    return *this;
  }

  // Starts the next element of the current container on a new line (one row per line).
  JsonWriter& newline() {
    pending_newline_ = true;
    return *this;
  }

  // The document; throws if a container is still open.
  const std::string& str() const {
    SERVEKIT_CHECK(depth_ == 0, "json: ", depth_, " container(s) still open");
    return out_;
  }

 private:
  struct Level {
    char kind;
    bool has_items;
  };

  Level& top() { return stack_[static_cast<size_t>(depth_ - 1)]; }

  JsonWriter& open(char c) {
    SERVEKIT_CHECK(depth_ < kMaxDepth, "json: more than ", kMaxDepth, " nested containers");
    before_value();
    out_ += c;
    stack_[static_cast<size_t>(depth_++)] = {c, false};
    return *this;
  }
  JsonWriter& close(char c) {
    const char want = c == '}' ? '{' : '[';
    SERVEKIT_CHECK(depth_ > 0 && top().kind == want && !after_key_, "json: '", c,
                   "' does not close the open container");
    --depth_;
    if (pending_newline_) out_ += '\n';
    pending_newline_ = false;
    out_ += c;
    return *this;
  }
  // Comma (and the requested line break) before an element of the current container.
  void separate() {
    if (depth_ == 0) return;
    if (top().has_items) out_ += ',';
    if (pending_newline_) out_ += "\n ";
    pending_newline_ = false;
    top().has_items = true;
  }
  void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    SERVEKIT_CHECK(depth_ == 0 ? out_.empty() : top().kind == '[',
                   "json: a value inside an object needs a key first");
    separate();
  }
  void write_string(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (c == '\n') {
        out_ += "\\n";
      } else if (c == '\t') {
        out_ += "\\t";
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out_ += buf;
      } else {
        out_ += ch;
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::array<Level, kMaxDepth> stack_{};
  int depth_ = 0;
  bool after_key_ = false;
  bool pending_newline_ = false;
};

}  // namespace servekit::bench
