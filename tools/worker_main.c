/* fusedtune-worker: the executable ft_tune runs candidates in, `fusedtune-worker __worker FD`
 * (FD: its end of the tuner's socket), so that a faulting or hanging kernel costs one result.
 * Not for people. Installed to libexec/fusedtune/, where the library finds it from its own
 * folder (src/tune/worker.c); in a build tree it sits beside the library. A client of the public API
 * only: the work is ft_worker_serve's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedtune_tool.h"

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "__worker")) {
    char *end;
    errno = 0;
    const long fd = strtol(argv[2], &end, 10);
    if (end != argv[2] && !*end && !errno && fd >= 0 && fd <= 1 << 20) return ft_worker_serve((int)fd);
  }
  fprintf(stderr,
          "fusedtune-worker %s: the tuner's worker process, started by ft_tune (`%s __worker FD`); "
          "not for running by hand\n",
          ft_version_string(), argc > 0 ? argv[0] : "fusedtune-worker");
  return 2;
}
