// `servekit` — the command-line program: dispatches to the sub-commands of commands.h.
#include <cstdio>
#include <string>
#include <string_view>

#include "args.h"
#include "commands.h"
#include "servekit/servekit.h"

namespace {

void print_usage() {
  std::printf(
      "servekit %s — Mixture-of-Experts kernels for LLM serving\n"
      "usage: servekit <command> [flags]\n"
      "commands:\n"
      "  moe     build one MoE layer of a model preset with random weights, run and time it,\n"
      "          optionally --check it against the fp64 reference (servekit moe --help)\n"
      "  bench   benchmark the MoE layer (servekit bench --help)\n"
      "  info    version, build configuration and CUDA devices\n"
      "  help    this text (also --help, -h)\n"
      "  --version\n"
      "example:\n"
      "  servekit moe --preset qwen3-30b-a3b --tokens 8 --quant bf16 --device auto --check\n"
      "exit status: 0 ok, 1 check failed or run-time error, 2 bad arguments\n",
      servekit::version());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage();
    return 0;
  }
  const std::string_view command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    print_usage();
    return 0;
  }
  if (command == "--version") {
    std::printf("servekit %s\n", servekit::version());
    return 0;
  }
  if (command == "moe") return servekit::cli::cmd_moe(argc - 1, argv + 1);
  if (command == "bench") return servekit::cli::cmd_bench(argc - 1, argv + 1);
  if (command == "info") return servekit::cli::cmd_info(argc - 1, argv + 1);
  return servekit::cli::report_error(
      "unknown command '" + std::string(command) + "' (valid: moe, bench, info, help, --version)",
      2);
}
