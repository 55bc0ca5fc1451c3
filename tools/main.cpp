// `servekit` — placeholder dispatcher (the CLI issue work replaces it).
#include <cstdio>
#include <cstring>

#include "commands.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "bench") == 0)
    return servekit::cli::cmd_bench(argc - 1, argv + 1);
  std::fprintf(stderr, "servekit: error: no command implemented yet\n");
  return 2;
}
