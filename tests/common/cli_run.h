/* The CLI as the tests run it ($FT_CLI, set by ctest): a command in the test's scratch folder,
 * stdout and stderr captured together (test_cli, test_hardening_io, test_report). */
#ifndef FT_TEST_CLI_RUN_H
#define FT_TEST_CLI_RUN_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Runs `fusedtune ARGS` as user nobody (root only: file modes do not bind root), its stdout in
 * nobody.out and its stderr in nobody.err of the scratch folder (the current folder). Returns
 * the exit status, or -1 when it could not run that way. */
static inline int run_as_nobody(char *const args[]) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int outf = open("nobody.out", O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int errf = open("nobody.err", O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (outf >= 0) dup2(outf, 1);
    if (errf >= 0) dup2(errf, 2);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(120);
    if (access(".", X_OK) != 0) _exit(121); /* nobody cannot reach the scratch folder */
    execv(cli, args);
    _exit(122);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) >= 120) return -1;
  return WEXITSTATUS(st);
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
