/* GPU: `tune --problems` with --devices all (one device on a one-GPU machine) over five small
 * problems (and a line repeating one): every problem tuned and stored once; then the same file
 * on a fresh database, interrupted with SIGINT after the first progress line and run again: it
 * ends complete, and no candidate result is stored twice. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_run.h"
#include "ft_test.h"
#include "fusedtune_tool.h"

#define OPTS "--devices all --max-candidates 6 --budget 20 --repeats 20"

static const char *five =
    "shape,epilogue,math\n"
    "64x128x64,biasrelu,fp32\n"
    "96x256x128,minsub,fp32\n"
    "128x128x256,x,bf16\n"
    "64x64x128,\"gelu(x + bias)\",tf32\n"
    "32x96x64,biasrelu,fp16\n"
    "64x128x64,\"relu(x + bias)\",fp32\n"; /* the first line again: tuned once */

/* Every problem of db: 5 of them, each with a best, no candidate (variant, source) twice. Returns
 * the candidate results stored. */
static int check_db(const char *db) {
  ft_ctx *ctx = NULL;
  ft_stored *s = NULL;
  ASSERT_OK(ft_open(db, FT_OPEN_READONLY, &ctx));
  ASSERT_OK(ft_stored_load(ctx, NULL, 0, &s));
  int n = 0;
  if (!s) return ft_close(ctx), 0;
  ASSERT_EQ_INT(s->n_problems, 5);
  for (int i = 0; i < s->n_problems; i++) {
    const ft_stored_problem *p = &s->problems[i];
    int best = 0;
    for (int a = 0; a < p->n_results; a++) {
      const ft_stored_result *r = &p->results[a];
      best += r->is_best;
      if (r->strategy != FT_STRATEGY_FUSED && r->strategy != FT_STRATEGY_CUBLAS_EPILOGUE) continue; /* baselines: per run */
      n++;
      for (int b = 0; b < a; b++) {
        const ft_stored_result *q = &p->results[b];
        if (q->strategy == r->strategy && !strcmp(q->variant, r->variant) && !strcmp(q->source_hash, r->source_hash))
          FT_FAIL_AT_("%lldx%lldx%lld %s: %s measured twice", (long long)p->m, (long long)p->n, (long long)p->k,
                      ft_math_name(p->math), r->variant);
      }
    }
    if (best != 1) FT_FAIL_AT_("%lldx%lldx%lld: %d best result(s)", (long long)p->m, (long long)p->n, (long long)p->k, best);
  }
  ft_stored_free(s);
  ft_close(ctx);
  return n;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* Starts the tune on db in the background, sends SIGINT once its stderr shows a progress line,
 * and returns its exit code (-1 when no progress came within two minutes). */
static int interrupted_run(const char *db) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "exec env -u FUSEDTUNE_DB '%s' --db %s tune --problems five.csv " OPTS
           " > int_out.txt 2> int_err.txt", cli, db);
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  int seen = 0;
  for (int i = 0; i < 1200 && !seen; i++) {
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    FILE *f = fopen("int_err.txt", "r");
    if (!f) continue;
    size_t n = fread(R.out, 1, sizeof R.out - 1, f);
    R.out[n] = 0;
    fclose(f);
    seen = strstr(R.out, ", best ") != NULL; /* "[#0] 64x128x64 ...: safe 1/36, best ..." */
  }
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  /* What it wrote to the end (the polling above read stderr only up to the first progress). */
  size_t n = 0;
  const char *files[2] = {"int_err.txt", "int_out.txt"};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(files[i], "r");
    if (!f) continue;
    n += fread(R.out + n, 1, sizeof R.out - 1 - n, f);
    fclose(f);
  }
  R.out[n] = 0;
  if (!seen) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(void) {
  int n_dev = 0;
  char msg[512];
  (void)lines;
  if (ft_device_count(&n_dev, msg, sizeof msg) != FT_OK) RETURN_SKIP(msg);
  cli = getenv("FT_CLI");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  if (enter_scratch("gpu_batch")) RETURN_FAIL("cannot make the scratch folder %s", dir);
  FILE *f = fopen("five.csv", "w");
  fputs(five, f);
  fclose(f);

  /* the whole file at once */
  time_t t0 = time(NULL);
  int rc = run("--db one.db tune --problems five.csv " OPTS);
  fprintf(stderr, "%s\n-- one run: exit %d, %lds, %d device(s)\n", R.out, rc, (long)(time(NULL) - t0), n_dev);
  ASSERT_EQ_INT(rc, 0);
  ASSERT_EQ_INT(count(R.out, " ok "), 5);
  ASSERT_CONTAINS(R.out, "line 7 (fp32) repeats line 2: tuned once");
  ASSERT_CONTAINS(R.out, "vs eager");
  const int n_one = check_db("one.db");
  ASSERT_TRUE(n_one >= 5);

  /* interrupted after the first progress, then the same command again */
  t0 = time(NULL);
  rc = interrupted_run("two.db");
  fprintf(stderr, "%s\n-- interrupted run: exit %d, %lds\n", R.out, rc, (long)(time(NULL) - t0));
  ASSERT_EQ_INT(rc, 1);
  ASSERT_CONTAINS(R.out, "run the same command to continue");
  rc = run("--db two.db tune --problems five.csv " OPTS " --json");
  fprintf(stderr, "%s\n-- continued: exit %d, %lds\n", R.out, rc, (long)(time(NULL) - t0));
  ASSERT_EQ_INT(rc, 0);
  ASSERT_EQ_INT(count(R.out, "\"status\":\"ok\""), 5);
  const int n_two = check_db("two.db");
  fprintf(stderr, "candidate results: %d in one run, %d interrupted + continued\n", n_one, n_two);
  ASSERT_TRUE(n_two >= 5);

  if (!ft_test_failures) leave_scratch();
  return FT_TEST_DONE();
}
