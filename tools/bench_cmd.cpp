// `servekit bench` — placeholder until the benchmark lands.
#include <cstdio>

#include "commands.h"

namespace servekit::cli {

int cmd_bench(int, char**) {
  std::fprintf(stderr, "servekit: error: bench is not implemented yet\n");
  return 2;
}

}  // namespace servekit::cli
