/* GPU, through the command line: Ctrl-C in the middle of a tune keeps what was measured and the
 * same tune continues; two tunes on one database at once both finish and lose nothing; the
 * random and halving searches complete. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "ft_test.h"

static const char *cli;
static char db[512];

/* Runs the CLI through the shell; returns its exit status, output in out (may be NULL). */
static int sh(const char *args, char *out, size_t outlen) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' --db '%s' %s 2>&1", cli, db, args);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = 0;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0)
    if (out && n + 1 < outlen) {
      size_t take = got < outlen - 1 - n ? got : outlen - 1 - n;
      memcpy(out + n, buf, take);
      n += take;
    }
  if (out) out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static long rows(void) {
  char out[256];
  if (sh("export --format csv | tail -n +2 | wc -l", out, sizeof out) != 0) return -1;
  return atol(out);
}

/* Starts a tune with plain progress lines on a pipe, waits until it is measuring candidates,
 * then sends SIGINT. */
static void test_interrupt(void) {
  int fds[2];
  ASSERT_OK(pipe(fds));
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execl(cli, cli, "--db", db, "tune", "--shape", "512x4096x4096", "--epilogue", "minsub", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char line[1024];
  int sent = 0;
  while (f && fgets(line, sizeof line, f)) {
    /* The first progress line of the safe phase (the default search's first; without a
     * terminal it comes every 25 candidates and at the phase's end, here 9 of 9): interrupt */
    if (!sent && !strncmp(line, "safe: ", 6)) {
      kill(pid, SIGINT);
      sent = 1;
    }
    if (strstr(line, "interrupted")) fprintf(stderr, "tune said: %s", line);
  }
  if (f) fclose(f);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(sent);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1);
  long after_int = rows();
  fprintf(stderr, "rows after Ctrl-C: %ld\n", after_int);
  ASSERT_TRUE(after_int >= 11 && after_int < 420); /* the 2 baselines and the 9 passes at least */
  char out[1 << 15];
  ASSERT_EQ_INT(sh("tune --shape 512x4096x4096 --epilogue minsub --quiet", out, sizeof out), 0);
  /* It continued where it stopped: what was measured (rows less the 2 baselines) is skipped. */
  char expect[64];
  snprintf(expect, sizeof expect, " %ld measured before", after_int - 2);
  ASSERT_CONTAINS(out, expect);
}

static void test_two_at_once(void) {
  long before = rows();
  char a[1536], b[1536];
  snprintf(a, sizeof a, "'%s' --db '%s' tune --shape 96x1024x512 --epilogue biasrelu --quiet --max-candidates 60 --strategy exhaustive >/dev/null 2>&1", cli, db);
  snprintf(b, sizeof b, "'%s' --db '%s' tune --shape 80x700x333 --epilogue 'x + 2*sigmoid(x)' --quiet --max-candidates 60 --strategy exhaustive >/dev/null 2>&1", cli, db);
  pid_t pa = fork();
  if (pa == 0) _exit(system(a) == 0 ? 0 : 1);
  pid_t pb = fork();
  if (pb == 0) _exit(system(b) == 0 ? 0 : 1);
  int sa = 0, sb = 0;
  waitpid(pa, &sa, 0);
  waitpid(pb, &sb, 0);
  ASSERT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
  ASSERT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
  /* 60 candidates each + 3 baselines (biasrelu) + 2 (no cuBLASLt form for the other) */
  ASSERT_EQ_INT(rows() - before, 60 + 3 + 60 + 2);
}

static void test_searches(void) {
  char out[1 << 15];
  ASSERT_EQ_INT(sh("tune --shape 64x512x256 --epilogue relu --strategy random --quiet --max-candidates 40 --json", out,
                   sizeof out), 0);
  ASSERT_CONTAINS(out, "\"best\":{");
  ASSERT_EQ_INT(sh("tune --shape 64x512x320 --epilogue relu --strategy halving --quiet --max-candidates 40", out,
                   sizeof out), 0);
  ASSERT_CONTAINS(out, "best: ");
  ASSERT_EQ_INT(sh("tune --shape 64x512x384 --epilogue relu --strategy exhaustive --quiet --max-candidates 40", out,
                   sizeof out), 0);
  ASSERT_CONTAINS(out, "40 measured now");
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) RETURN_SKIP("no CUDA device");
  cli = getenv("FT_CLI");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(db, sizeof db, "%s/gpu_robust_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  unlink(db);
  test_interrupt();
  test_two_at_once();
  test_searches();
  unlink(db);
  return FT_TEST_DONE();
}
