// `servekit bench moe ...`: parses the options, runs the benchmark (bench_moe.h), writes the
// result file of BENCH.md and returns 1 if any row failed its check.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_moe.h"
#include "commands.h"
#include "core/presets.h"
#include "servekit/quant.h"

namespace servekit::cli {

namespace {

using bench::BenchOptions;

constexpr const char* kUsage =
    "usage: servekit bench moe [--preset a,b|all] [--quant q1,q2|default|all]\n"
    "         [--tokens 1,8,32,128,512,2048,8192] [--routing uniform,skewed,one,balanced,biased]\n"
    "         [--path auto|static|dynamic|both] [--repeats 30] [--warmup 5] [--out FILE.json]\n"
    "         [--check-tokens 64] [--group-size 128] [--peer on|off] [--commit SHA]\n"
    "         [--threads N] [--device N]\n"
    "         [--max-seconds S] [--seed N] [--parallel-load on|off] [--then <row options>...]\n"
    "  all presets = every model preset but `tiny`; default quant = the preset's own format.\n"
    "  --then starts another row group (--preset --quant --tokens --routing --path\n"
    "  --check-tokens --group-size), from the defaults: nothing carries over (a note on\n"
    "  stderr names what the group before set and this one does not). The other options\n"
    "  apply to the whole run.\n"
    "  --group-size: int4_w4a16's group size (32, 64 or 128) for the group's int4 rows.\n"
    "  The commit defaults to $SERVEKIT_COMMIT. Exit 1 if a row fails its check.\n";

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  SERVEKIT_CHECK(!v.empty() && *end == '\0' && x >= lo && x <= hi, flag, "=", v,
                 " must be an integer in [", lo, ", ", hi, "]");
  return x;
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

struct Parsed {
  BenchOptions opt;
  std::string out, commit;
  std::vector<std::string> notes;  // printed to stderr before the run
};

// The text form of one row group, before validation.
struct SpecText {
  std::string presets = "all", quants = "default", tokens = "1,8,32,128,512,2048,8192",
              routings = "uniform,skewed", path = "auto";
  int check_tokens = 64;
  int group_size = 128;
  std::vector<std::string> given;  // the row options set in this group, in order
};

// A row group after --then starts from the defaults, not from the group before it. A note for
// each row option (but --preset and --quant, which name the group) that the group before set and
// this one (group `index`, 1-based) leaves at its default: an easy slip in a long command line.
std::vector<std::string> defaulted_row_options(const SpecText& before, const SpecText& group,
                                               size_t index) {
  std::vector<std::string> notes;
  for (const std::string& flag : before.given) {
    if (flag == "--preset" || flag == "--quant") continue;
    if (std::find(group.given.begin(), group.given.end(), flag) != group.given.end()) continue;
    notes.push_back("row group " + std::to_string(index) + " (--preset " + group.presets +
                    ") takes the default " + flag +
                    ": row options do not carry over --then (the group before set it)");
  }
  return notes;
}

bench::RowSpec parse_spec(const SpecText& t) {
  bench::RowSpec spec;
  spec.check_tokens = t.check_tokens;
  spec.group_size = t.group_size;
  if (t.presets == "all") {
    for (const Preset& pr : servekit::presets())
      if (pr.name != "tiny") spec.presets.push_back(pr.name);
  } else {
    spec.presets = split(t.presets);
    for (const auto& name : spec.presets) find_preset(name);
  }
  if (t.quants == "all") {
    for (QuantMethod m : all_quant_methods()) spec.quants.emplace_back(quant_name(m));
  } else {
    spec.quants = split(t.quants);
    for (const auto& q : spec.quants)
      if (q != "default") parse_quant(q);
  }
  for (const auto& v : split(t.tokens)) spec.tokens.push_back(parse_int("--tokens", v, 1, 1 << 20));
  for (const auto& r : split(t.routings)) {
    spec.routings.push_back(parse_routing_skew(r));
  }
  if (t.path == "both") {
    spec.paths = {MoEPath::kStatic, MoEPath::kDynamic};
  } else {
    SERVEKIT_CHECK(t.path == "auto" || t.path == "static" || t.path == "dynamic", "--path=", t.path,
                   " must be auto, static, dynamic or both");
    spec.paths = {t.path == "auto"     ? MoEPath::kAuto
                  : t.path == "static" ? MoEPath::kStatic
                                       : MoEPath::kDynamic};
  }
  SERVEKIT_CHECK(!spec.presets.empty() && !spec.quants.empty() && !spec.tokens.empty() &&
                     !spec.routings.empty(),
                 "--preset, --quant, --tokens and --routing need at least one value each");
  return spec;
}

// argv[0] = "bench", argv[1] = "moe". Row options (--preset --quant --tokens --routing --path
// --check-tokens --group-size) describe one row group; `--then` starts the next group. The others
// are global.
Parsed parse_args(int argc, char** argv) {
  Parsed p;
  BenchOptions& o = p.opt;
  if (const char* c = std::getenv("SERVEKIT_COMMIT")) p.commit = c;
  SpecText spec, before;
  auto end_group = [&] {
    o.specs.push_back(parse_spec(spec));
    if (o.specs.size() > 1) {
      for (std::string& n : defaulted_row_options(before, spec, o.specs.size()))
        p.notes.push_back(std::move(n));
    }
    before = spec;
    spec = SpecText{};
  };
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--then") {
      end_group();
      continue;
    }
    SERVEKIT_CHECK(flag.rfind("--", 0) == 0 && i + 1 < argc, "argument '", flag,
                   "' is not an option followed by a value");
    const std::string v = argv[++i];
    for (const char* row : {"--preset", "--quant", "--tokens", "--routing", "--path",
                            "--check-tokens", "--group-size"})
      if (flag == row && std::find(spec.given.begin(), spec.given.end(), flag) == spec.given.end())
        spec.given.push_back(flag);
    if (flag == "--preset") {
      spec.presets = v;
    } else if (flag == "--quant") {
      spec.quants = v;
    } else if (flag == "--tokens") {
      spec.tokens = v;
    } else if (flag == "--routing") {
      spec.routings = v;
    } else if (flag == "--path") {
      spec.path = v;
    } else if (flag == "--check-tokens") {
      spec.check_tokens = static_cast<int>(parse_int(flag, v, 1, 1 << 20));
    } else if (flag == "--group-size") {
      spec.group_size = static_cast<int>(parse_int(flag, v, 1, 1 << 20));
      QuantConfig q;
      q.method = QuantMethod::kInt4W4A16;
      q.group_size = spec.group_size;
      validate_quant_config(q);  // 32, 64 or 128, with quant.h's message
    } else if (flag == "--repeats") {
      o.repeats = static_cast<int>(parse_int(flag, v, 1, 100000));
    } else if (flag == "--warmup") {
      o.warmup = static_cast<int>(parse_int(flag, v, 0, 100000));
    } else if (flag == "--out") {
      p.out = v;
    } else if (flag == "--commit") {
      p.commit = v;
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(parse_int(flag, v, 0, 4096));
    } else if (flag == "--device") {
      o.device = static_cast<int>(parse_int(flag, v, 0, 1024));
    } else if (flag == "--max-seconds") {
      o.max_seconds = static_cast<double>(parse_int(flag, v, 0, int64_t{1} << 30));
    } else if (flag == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(flag, v, 0, INT64_MAX));
    } else if (flag == "--parallel-load") {
      SERVEKIT_CHECK(v == "on" || v == "off", "--parallel-load=", v, " must be on or off");
      o.parallel_load = v == "on";
    } else if (flag == "--peer") {
      SERVEKIT_CHECK(v == "on" || v == "off", "--peer=", v, " must be on or off");
      o.peer = v == "on";
    } else {
      SERVEKIT_FAIL("unknown option '", flag, "'");
    }
  }
  end_group();
  return p;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h" || (i == 1 && a == "help")) {
      std::printf("%s", kUsage);
      return 0;
    }
  }
  if (argc < 2 || std::string_view(argv[1]) != "moe") {
    std::fprintf(stderr, "servekit: error: bench needs a benchmark name (moe)\n%s", kUsage);
    return 2;
  }
  Parsed p;
  try {
    p = parse_args(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "servekit: error: bench moe: %s\n%s", e.what(), kUsage);
    return 2;
  }
  for (const std::string& n : p.notes) std::fprintf(stderr, "bench: note: %s\n", n.c_str());
  bench::RunInfo info;
  info.commit = p.commit.empty() ? "unknown" : p.commit;
  info.date = today_utc();
  for (int i = 0; i < argc; ++i) info.command += (i ? " " : "servekit ") + std::string(argv[i]);
  bool write_failed = false;
  auto write = [&](const std::vector<bench::BenchRow>& rows) {
    if (p.out.empty()) return;
    const std::string tmp = p.out + ".tmp";
    {
      std::ofstream f(tmp);
      f << bench::results_json(info, rows);
      write_failed = write_failed || !f.good();
    }
    write_failed = write_failed || std::rename(tmp.c_str(), p.out.c_str()) != 0;
  };
  p.opt.on_row = write;
  std::vector<bench::BenchRow> rows;
  try {
    rows = bench::run_moe_bench(p.opt, info);
  } catch (const Error& e) {  // no usable device: a run-time error (names were checked above)
    std::fprintf(stderr, "servekit: error: bench moe: %s\n", e.what());
    return 1;
  }
  int failed = 0, skipped = 0, stopped = 0;
  for (const auto& r : rows) {
    failed += r.status == "fail" || r.status == "error";
    skipped += r.status == "skipped";
    stopped += r.status == "stopped";
  }
  if (!p.out.empty()) {
    write(rows);
    if (write_failed) {
      std::fprintf(stderr, "servekit: error: bench moe: cannot write --out %s\n", p.out.c_str());
      return 2;
    }
    std::fprintf(stderr, "bench: wrote %zu rows to %s\n", rows.size(), p.out.c_str());
  }
  std::printf("bench moe: %zu rows, %d failed, %d skipped", rows.size(), failed, skipped);
  if (stopped)
    std::printf(", %d stopped by SERVEKIT_DIAG_DYNAMIC_STOP (timed, output not checked)", stopped);
  std::printf("\n");
  // A stopped row's output was never checked: not a success either.
  return failed || stopped ? 1 : 0;
}

}  // namespace servekit::cli
