/* The per-device child of `tune --problems` (batch.h): makes its device current, then tunes each
 * problem the parent sends, reporting progress and the outcome, until told to quit. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"

static volatile int stop_flag;

static void on_stop(int sig) {
  (void)sig;
  stop_flag = 1;
}

typedef struct child_ctx {
  int fd;
  int job;
} child_ctx;

static void send_progress(void *user, const ft_tune_progress *u) {
  const child_ctx *c = user;
  if (u->total <= 0) return; /* steps ("compiling ...") are not worth a line of the parent's */
  wire_send(c->fd, "progress %d %d %d %.6g %.6g %s", c->job, u->done, u->total, u->best_ms, u->eager_ms, u->phase);
}

static void send_fail(int fd, int job, ft_status st, const char *msg) {
  char hex[2 * 1024 + 1];
  char cut[1024];
  snprintf(cut, sizeof cut, "%s", msg && msg[0] ? msg : ft_status_string(st));
  wire_hex(cut, hex, sizeof hex);
  wire_send(fd, "fail %d %d %s", job, (int)st, hex);
}

/* Whether a failure is the device's rather than the problem's: the parent then counts the device
 * lost and gives the problem to another. */
static int device_lost(ft_status st) { return st == FT_ERR_NO_DEVICE || st == FT_ERR_CUDA; }

/* "run JOB M N K MATH EPILOGUE_HEX": tunes it and answers "done" or "fail". Returns 1 when this
 * child must stop (interrupted, device lost). */
static int run_one(ft_ctx *ctx, const tune_cli *t, int fd, const char *line) {
  int job = -1;
  int64_t m, n, k;
  char math[16], hex[8256];
  static char epi[4096 + 1];
  if (sscanf(line, "run %d %" SCNd64 " %" SCNd64 " %" SCNd64 " %15s %8250s", &job, &m, &n, &k, math, hex) != 6 ||
      wire_unhex(hex, epi, sizeof epi)) {
    send_fail(fd, job, FT_ERR_INTERNAL, "batch child: malformed request");
    return 1;
  }
  ft_problem p = {m, n, k, epi, FT_MATH_FP32};
  if (!ft_math_from_name(math, &p.math)) {
    send_fail(fd, job, FT_ERR_INTERNAL, "batch child: unknown math mode");
    return 1;
  }
  if (stop_flag) {
    send_fail(fd, job, FT_ERR_INTERRUPTED, "interrupted before it started");
    return 1;
  }
  child_ctx cc = {fd, job};
  ft_tune_options opt = t->opt;
  char exe[4096];
  opt.worker_exe = cli_self_exe(exe, sizeof exe);
  opt.quiet = 0;
  opt.progress = send_progress;
  opt.progress_user = &cc;
  opt.stop = &stop_flag;
  ft_tune_report *r = NULL;
  ft_status st = ft_tune_ex(ctx, &p, &opt, &r);
  if (st != FT_OK) {
    send_fail(fd, job, st, ft_errmsg(ctx));
    return st == FT_ERR_INTERRUPTED || device_lost(st);
  }
  const ft_config *b = &r->best;
  wire_send(fd, "done %d %d %.9g %.9g %.3f %d %d %s %s %s", job, r->has_best, r->has_best ? b->median_ms : -1.0,
            r->has_best ? b->eager_ms : r->eager_ms, r->total_s, r->n_measured, r->n_known,
            ft_math_name(r->has_best ? b->math : p.math), r->has_best && b->strategy[0] ? b->strategy : "-",
            r->has_best && b->name[0] ? b->name : "-");
  ft_tune_report_free(r);
  return 0;
}

#ifdef FT_TEST_HOOKS
/* Test builds: with FT_TEST_BATCH_DEVICES set, a pretended device that "tunes" each problem in
 * 0.6 s without CUDA or a database; FT_TEST_BATCH_DIE=ORDINAL makes that device's process die
 * during its first problem. For the CPU tests of the parent's processes, lost devices, Ctrl-C. */
static int fake_child(int fd, int ordinal) {
  wire_send(fd, "hello %016x 132 %s", ordinal, "66616b65"); /* "fake" */
  const char *die = getenv("FT_TEST_BATCH_DIE");
  static wire_reader rd;
  rd.fd = fd;
  for (;;) {
    int eof = 0, job = -1;
    const char *line = wire_line(&rd, 1, &eof);
    if (!line || !strcmp(line, "quit") || sscanf(line, "run %d", &job) != 1) break;
    for (int i = 1; i <= 6; i++) {
      if (die && atoi(die) == ordinal) _exit(3);
      struct timespec ts = {0, 100000000};
      nanosleep(&ts, NULL);
      wire_send(fd, "progress %d %d 6 0.5 1 safe", job, i);
      if (stop_flag) return send_fail(fd, job, FT_ERR_INTERRUPTED, "interrupted"), 1;
    }
    wire_send(fd, "done %d 1 0.5 1 0.6 6 0 fp32 fused fake_variant", job);
  }
  return 0;
}
#endif

int batch_child(cli *c, int argc, char **argv) {
  if (argc < 2) return EXIT_USAGE;
  const int fd = atoi(argv[0]), ordinal = atoi(argv[1]);
  tune_cli t;
  tune_cli_init(&t);
  int rc = tune_parse_args(argc - 2, argv + 2, &t);
  if (rc) return rc;
  /* Ctrl-C reaches this child from the parent only (it is in a process group of its own): stop
   * after the candidate in flight; a second one ends it at once. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* The device: made current before anything else touches CUDA, so this process (and the
   * candidate workers the tuner starts, which take the tuner's current device) creates a
   * context on it alone. Its fingerprint does not depend on the ordinal. */
#ifdef FT_TEST_HOOKS
  if (getenv("FT_TEST_BATCH_DEVICES")) return fake_child(fd, ordinal);
#endif
  char msg[512];
  ft_device_desc d;
  cudaError_t ce = cudaSetDevice(ordinal);
  ft_status st = ce == cudaSuccess ? ft_device_describe(-1, &d, msg, sizeof msg) : FT_ERR_NO_DEVICE;
  if (ce != cudaSuccess) snprintf(msg, sizeof msg, "device #%d: %s", ordinal, cudaGetErrorString(ce));
  if (st != FT_OK) {
    send_fail(fd, -1, st == FT_ERR_CUDA ? st : FT_ERR_NO_DEVICE, msg);
    return 1;
  }
  ft_ctx *ctx = NULL;
  st = ft_open(cli_db_path(c), FT_OPEN_CREATE, &ctx);
  if (st != FT_OK) {
    send_fail(fd, -1, st, ctx ? ft_errmsg(ctx) : ft_status_string(st));
    ft_close(ctx);
    return 1;
  }
  char name[2 * sizeof d.name + 1];
  wire_hex(d.name, name, sizeof name);
  wire_send(fd, "hello %s %d %s", d.fingerprint, d.sm_count, name);
  static wire_reader rd;
  rd.fd = fd;
  for (;;) {
    int eof = 0;
    const char *line = wire_line(&rd, 1, &eof);
    if (!line || !strcmp(line, "quit")) break; /* the parent is done, or gone */
    if (run_one(ctx, &t, fd, line)) break;
  }
  ft_close(ctx);
  close(fd);
  return stop_flag ? 1 : 0;
}
