/* The CLI as the tests run it ($FT_CLI, set by ctest): a command in the test's scratch folder,
 * stdout and stderr captured together (test_cli, test_hardening_io, test_report). */
#ifndef FT_TEST_CLI_RUN_H
#define FT_TEST_CLI_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

static const char *cli; /* the fusedtune executable */
static char dir[400];   /* the scratch folder commands run in */

typedef struct run_result {
  int code;
  char out[1 << 16]; /* stdout and stderr together */
} run_result;

static run_result R;

/* Runs cmd through the shell in dir, stdout and stderr captured in R; returns its exit code. */
static int capture(const char *cmd) {
  char full[17000];
  snprintf(full, sizeof full, "cd '%s' && %s 2>&1", dir, cmd);
  FILE *p = popen(full, "r");
  if (!p) return -1;
  size_t n = fread(R.out, 1, sizeof R.out - 1, p);
  R.out[n] = 0;
  int st = pclose(p);
  R.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return R.code;
}

/* Runs `fusedtune ARGS` (with no $FUSEDTUNE_DB). */
static int run(const char *args) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "env -u FUSEDTUNE_DB '%s' %s", cli, args);
  return capture(cmd);
}

/* Makes $FT_TEST_TMP/NAME_PID (dir) afresh and enters it; 0, or -1. */
static inline int enter_scratch(const char *name) {
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(dir, sizeof dir, "%s/%s_%ld", tmp ? tmp : "/tmp", name, (long)getpid());
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  return system(cmd) == 0 && chdir(dir) == 0 ? 0 : -1;
}

/* Removes the scratch folder (after a test that passed: a failure keeps it to look at). */
static inline void leave_scratch(void) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd / && rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

#endif
