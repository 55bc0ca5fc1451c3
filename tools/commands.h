// Sub-commands of the `servekit` program. Each returns the process exit code: 0 on success,
// 1 when a check fails, 2 for bad arguments (after printing a one-line error).
#pragma once

namespace servekit::cli {

int cmd_moe(int argc, char** argv);    // servekit moe ...   (tools/moe_cmd.cpp)
int cmd_info(int argc, char** argv);   // servekit info      (tools/info_cmd.cpp)
int cmd_bench(int argc, char** argv);  // servekit bench moe (tools/bench_cmd.cpp)

}  // namespace servekit::cli
