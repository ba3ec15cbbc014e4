/* fusedtune: the command line. Dispatches to one function per command (tools/cmd_*.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

static const char *usage_text =
    "usage: fusedtune [--db PATH] COMMAND [options]\n"
    "       fusedtune [--db PATH] --shape MxNxK --epilogue E [tune options]   (same as 'tune')\n"
    "\n"
    "Autotunes fused GEMM + elementwise-epilogue CUDA kernels, y = E(x W^T) with x [M,K] and\n"
    "W [N,K] row-major (nn.Linear), and remembers every result in a SQLite database.\n"
    "\n"
    "commands:\n"
    "  tune       tune a problem on this GPU (or a file of them over several GPUs); store every measurement\n"
    "  query      print the best configuration for a problem\n"
    "  list       list every tuned (device, problem) with its best configuration\n"
    "  export     write the database as JSON or CSV\n"
    "  import     merge an export from another machine\n"
    "  init       create an empty database\n"
    "  variants   list (and optionally compile) the kernel variants for a problem\n"
    "  epilogue   parse an epilogue expression: canonical form, parameters, CUDA code\n"
    "  devices    list the visible CUDA devices\n"
    "  bench      time the stored best (and the fastest fused GEMM) beside the cuBLAS baselines\n"
    "  report     write the stored results as one self-contained HTML file of charts (no GPU)\n"
    "\n"
    "global options:\n"
    "  --db PATH      database file (default: $FUSEDTUNE_DB, else ./fusedtune.db)\n"
    "  -h, --help     this help; 'fusedtune COMMAND --help' for a command\n"
    "  --version      print the version\n"
    "\n"
    "Shapes are MxNxK: M rows of x, N output features, K input features. Each option is given at\n"
    "most once: a repeated option is a usage error.\n"
    "Exit status: 0 success, 1 failure, 2 usage error, 3 nothing tuned for the key (query, report).\n";

typedef struct command {
  const char *name;
  int (*run)(cli *c, int argc, char **argv);
} command;

static const command commands[] = {
    {"tune", cmd_tune},         {"query", cmd_query},       {"list", cmd_list},
    {"export", cmd_export},     {"import", cmd_import},     {"init", cmd_init},
    {"variants", cmd_variants}, {"epilogue", cmd_epilogue}, {"devices", cmd_devices},
    {"bench", cmd_bench},       {"report", cmd_report},
};

static int dispatch(int argc, char **argv) {
  cli c = {NULL, argv[0]};
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--db") || !strncmp(a, "--db=", 5)) {
      const char *v = a[4] == '=' ? a + 5 : (i + 1 < argc ? argv[++i] : NULL);
      if (!v || !v[0]) return usage_error(NULL, "--db needs a path");
      if (c.db_path) return usage_error(NULL, "option --db given twice (each option at most once)");
      c.db_path = v;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_text, stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("fusedtune %s\n", ft_version_string());
      return 0;
    } else {
      break;
    }
  }
  if (i >= argc) {
    fputs(usage_text, stderr);
    return EXIT_USAGE;
  }
  /* The tuner's worker process (not for people): `fusedtune __worker FD`. */
  if (!strcmp(argv[i], "__worker") && i + 1 < argc) return ft_worker_serve(atoi(argv[i + 1]));
  /* A device's process of `tune --problems` (not for people): `fusedtune --db P __batch FD ORDINAL ...`. */
  if (!strcmp(argv[i], "__batch")) return batch_child(&c, argc - i - 1, argv + i + 1);
  /* Options without a command word belong to tune: `fusedtune --shape S --epilogue E`. */
  if (argv[i][0] == '-') return cmd_tune(&c, argc - i, argv + i);
  for (size_t j = 0; j < sizeof commands / sizeof commands[0]; j++)
    if (!strcmp(argv[i], commands[j].name)) return commands[j].run(&c, argc - i - 1, argv + i + 1);
  return usage_error(NULL, "unknown command '%s'", argv[i]);
}

int main(int argc, char **argv) {
  int rc = dispatch(argc, argv);
  /* Output that did not arrive (a full disk, a closed pipe) is a failure of every command:
   * checked once, here. A command that failed has already said why. */
  errno = 0;
  int bad = fflush(stdout) != 0;
  int e = errno;
  if ((bad || ferror(stdout)) && rc == 0) {
    fprintf(stderr, "fusedtune: writing standard output failed: %s\n", e ? strerror(e) : "write error");
    rc = 1;
  }
  return rc;
}
