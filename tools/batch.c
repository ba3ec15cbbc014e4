/* `tune --problems FILE [--devices LIST]`, the parent (batch.h): checks the whole list, starts one
 * child per device, hands out problems (batch_schedule.c), forwards Ctrl-C and prints the summary. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "batch_schedule.h"

#define MAX_DEVICES 64

typedef enum job_end { END_NONE, END_OK, END_FAILED, END_INTERRUPTED } job_end;

/* A unique problem of the list and how its tune ended. */
typedef struct job {
  int item;             /* in the list */
  job_end end;
  int device;           /* the child that ran it last; -1 */
  int has_best, measured, known;
  double best_ms, eager_ms, tune_s;
  char math[16], strategy[32], variant[FT_NAME_MAX];
  ft_status status;
  char msg[1100];
} job;

/* A device and its child process. */
typedef struct child {
  int ordinal;
  pid_t pid;
  int fd;           /* -1 once closed */
  int ready;        /* its hello came */
  int quit_sent;
  int lost;         /* lost: nothing more is given to it */
  char name[256], fingerprint[17];
  char why[600];    /* why it was lost */
  double t0;        /* when its job started */
  char phase[16];   /* the phase of its last progress line */
  wire_reader rd;
} child;

typedef struct batch {
  const tune_cli *t;
  ft_problem_list *list;
  job *jobs;
  int n_jobs;
  child *kids;
  int n_kids;
  batch_sched sched;
  int stopping;     /* Ctrl-C forwarded: nothing new starts */
  int n_lost_jobs;  /* problems a lost device cost (each re-queued or failed) */
} batch;

static volatile sig_atomic_t n_sigint;

static void on_sigint(int sig) {
  (void)sig;
  n_sigint++;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void shape_text(const ft_problem *p, char *out, size_t size) {
  snprintf(out, size, "%" PRId64 "x%" PRId64 "x%" PRId64, p->m, p->n, p->k);
}

/* "64x256x128 relu(x + bias) fp32" for progress lines, the epilogue made safe for a terminal. */
static void job_label(const batch *b, int j, char *out, size_t size) {
  const ft_problem *p = &b->list->items[b->jobs[j].item].problem;
  char shape[80], epi[4 * 40 + 1];
  shape_text(p, shape, sizeof shape);
  cli_cell(epi, sizeof epi, p->epilogue, 40);
  size_t n = strlen(epi);
  while (n && epi[n - 1] == ' ') epi[--n] = '\0';
  snprintf(out, size, "%s %s %s", shape, epi, ft_math_name(p->math));
}

/* ---- devices ---- */

/* --devices: "all" or distinct ordinals "0,2"; checked for form before any device is asked. */
static int parse_devices(const char *text, int count, int *out, int *n_out) {
  *n_out = 0;
  if (!text) {
    out[(*n_out)++] = 0; /* the device a plain tune uses */
    return count > 0 ? 0 : -1;
  }
  if (!*text) return usage_error("tune", "--devices is empty: give 'all' or ordinals like 0,2");
  if (!strcmp(text, "all")) {
    for (int d = 0; d < count && d < MAX_DEVICES; d++) out[(*n_out)++] = d;
    return 0;
  }
  for (const char *p = text; *p;) {
    long v;
    char num[16];
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= sizeof num) return usage_error("tune", "--devices '%s' is not 'all' or ordinals like 0,2", text);
    memcpy(num, p, len);
    num[len] = '\0';
    if (!parse_int(num, 0, MAX_DEVICES - 1, &v))
      return usage_error("tune", "--devices '%s': '%s' is not a device ordinal (0..%d)", text, num, MAX_DEVICES - 1);
    for (int i = 0; i < *n_out; i++)
      if (out[i] == (int)v) return usage_error("tune", "--devices '%s' names device %ld twice", text, v);
    if (count >= 0 && v >= count)
      return usage_error("tune", "--devices '%s': no device %ld (%d visible; see 'fusedtune devices')", text, v, count);
    out[(*n_out)++] = (int)v;
    p += len;
    if (*p == ',' && !*++p) return usage_error("tune", "--devices '%s' ends with a comma", text);
  }
  return 0;
}

/* The child's command line: the global --db, the hidden command, then the tune options. */
static int start_child(batch *b, child *k, const char *exe, const char *db_path) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  if (pid == 0) {
    /* A process group of its own: a terminal's Ctrl-C reaches the parent only, which forwards
     * it once; and if the parent dies, the child stops as on Ctrl-C. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGINT);
    if (getppid() != parent) _exit(1);
    signal(SIGINT, SIG_DFL);
    int fd = dup(sv[1]); /* without close-on-exec */
    char fd_s[16], ord_s[16], budget[40], repeats[40], seed[40], maxc[40], strategy[64];
    snprintf(fd_s, sizeof fd_s, "%d", fd);
    snprintf(ord_s, sizeof ord_s, "%d", k->ordinal);
    const ft_tune_options *o = &b->t->opt;
    char *argv[20];
    int a = 0;
    argv[a++] = (char *)exe;
    argv[a++] = "--db";
    argv[a++] = (char *)db_path;
    argv[a++] = "__batch";
    argv[a++] = fd_s;
    argv[a++] = ord_s;
    snprintf(strategy, sizeof strategy, "--strategy=%s", o->strategy ? o->strategy : "fast");
    argv[a++] = strategy;
    if (o->budget_s > 0) snprintf(budget, sizeof budget, "--budget=%.17g", o->budget_s), argv[a++] = budget;
    if (o->repeats) snprintf(repeats, sizeof repeats, "--repeats=%d", o->repeats), argv[a++] = repeats;
    if (o->seed) snprintf(seed, sizeof seed, "--seed=%llu", (unsigned long long)o->seed), argv[a++] = seed;
    if (o->max_candidates) snprintf(maxc, sizeof maxc, "--max-candidates=%d", o->max_candidates), argv[a++] = maxc;
    if (o->retune) argv[a++] = "--retune";
    if (o->flush_l2) argv[a++] = "--flush-l2";
    argv[a] = NULL;
    execv(exe, argv);
    _exit(127);
  }
  close(sv[1]);
  setpgid(pid, pid); /* as the child does: whichever runs first */
  k->pid = pid;
  k->fd = sv[0];
  k->rd.fd = sv[0];
  return 0;
}

/* The child is gone or useless: nothing more goes to it, its problem goes back to the queue. */
static void lose_child(batch *b, int c, const char *why, int kill_it) {
  child *k = &b->kids[c];
  if (k->lost) return;
  k->lost = 1;
  snprintf(k->why, sizeof k->why, "%s", why);
  const int running = b->sched.devices[c].job;
  const int j = bs_lose(&b->sched, c, running >= 0 ? now_s() - k->t0 : 0);
  if (j >= 0) {
    char label[256];
    job_label(b, j, label, sizeof label);
    b->n_lost_jobs++;
    const int failed = b->sched.jobs[j].state == BS_FAILED;
    if (failed) {
      b->jobs[j].end = END_FAILED;
      b->jobs[j].status = FT_ERR_NO_DEVICE;
      snprintf(b->jobs[j].msg, sizeof b->jobs[j].msg, "lost %d devices; not tried again", b->sched.jobs[j].lost);
    }
    size_t n = strlen(k->why);
    snprintf(k->why + n, sizeof k->why - n, " while tuning %s: %s", label,
             failed ? "that problem failed" : "it went back to the queue");
  }
  cli_line(stderr, "fusedtune: device #%d lost: %s", k->ordinal, k->why);
  /* A child that exits on its own (a device error) is already going; one that talks nonsense is
   * ended here, with its candidate workers. */
  if (kill_it && k->pid > 0) kill(-k->pid, SIGKILL);
}

static void send_quit(child *k) {
  if (k->fd >= 0 && !k->quit_sent) wire_send(k->fd, "quit");
  k->quit_sent = 1;
}

/* ---- messages from a child ---- */

static void on_progress(batch *b, int c, const char *line) {
  int j, done, total;
  double best, eager;
  char phase[16];
  child *k = &b->kids[c];
  if (sscanf(line, "progress %d %d %d %lf %lf %15s", &j, &done, &total, &best, &eager, phase) != 6) return;
  if (j < 0 || j >= b->n_jobs || b->t->quiet) return;
  const int new_phase = strcmp(phase, k->phase) != 0;
  snprintf(k->phase, sizeof k->phase, "%s", phase);
  if (!new_phase && done != total && done % 25) return;
  char label[256], best_s[64] = "-";
  job_label(b, j, label, sizeof label);
  if (best > 0 && eager > 0) snprintf(best_s, sizeof best_s, "%.4f ms (%.3fx eager)", best, eager / best);
  else if (best > 0) snprintf(best_s, sizeof best_s, "%.4f ms", best);
  fprintf(stderr, "[#%d] %s: %s %d/%d, best %s\n", k->ordinal, label, phase, done, total, best_s);
}

static void on_done(batch *b, int c, const char *line) {
  child *k = &b->kids[c];
  const int j = b->sched.devices[c].job;
  job tmp;
  int jj;
  memset(&tmp, 0, sizeof tmp);
  if (j < 0 || sscanf(line, "done %d %d %lf %lf %lf %d %d %15s %31s %127s", &jj, &tmp.has_best, &tmp.best_ms,
                      &tmp.eager_ms, &tmp.tune_s, &tmp.measured, &tmp.known, tmp.math, tmp.strategy, tmp.variant) != 10 ||
      jj != j) {
    lose_child(b, c, "it answered out of turn", 1);
    return;
  }
  tmp.item = b->jobs[j].item;
  tmp.device = c;
  tmp.end = END_OK;
  tmp.status = FT_OK;
  b->jobs[j] = tmp;
  bs_finish(&b->sched, c, now_s() - k->t0, 1);
  if (!b->t->quiet) {
    char label[256];
    job_label(b, j, label, sizeof label);
    if (tmp.has_best && tmp.eager_ms > 0)
      fprintf(stderr, "[#%d] %s: done, best %.4f ms (%.3fx eager), %d measured, %d known, %.1f s\n", k->ordinal, label,
              tmp.best_ms, tmp.eager_ms / tmp.best_ms, tmp.measured, tmp.known, tmp.tune_s);
    else
      fprintf(stderr, "[#%d] %s: done, %s, %.1f s\n", k->ordinal, label,
              tmp.has_best                 ? "best found"
              : tmp.measured + tmp.known ? "no candidate was correct"
                                         : "no candidate was measured (budget?)",
              tmp.tune_s);
  }
}

static void on_fail(batch *b, int c, const char *line) {
  child *k = &b->kids[c];
  int jj, st;
  char hex[2100], msg[1100];
  if (sscanf(line, "fail %d %d %2099s", &jj, &st, hex) != 3 || wire_unhex(hex, msg, sizeof msg)) {
    lose_child(b, c, "malformed message", 1);
    return;
  }
  const int j = b->sched.devices[c].job;
  if (st == FT_ERR_NO_DEVICE || st == FT_ERR_CUDA || j < 0 || jj != j) {
    lose_child(b, c, msg, 0); /* the device's failure (or its start's): the problem goes elsewhere */
    return;
  }
  job *o = &b->jobs[j];
  o->device = c;
  o->status = (ft_status)st;
  snprintf(o->msg, sizeof o->msg, "%s", msg);
  if (st == FT_ERR_INTERRUPTED) {
    o->end = END_INTERRUPTED;
    bs_requeue(&b->sched, c, now_s() - k->t0);
    send_quit(k); /* it stops after an interruption anyway */
  } else {
    o->end = END_FAILED;
    bs_finish(&b->sched, c, now_s() - k->t0, 0);
    char label[256];
    job_label(b, j, label, sizeof label);
    cli_line(stderr, "[#%d] %s: failed: %s", k->ordinal, label, msg);
  }
}

static void on_line(batch *b, int c, const char *line) {
  child *k = &b->kids[c];
  if (!strncmp(line, "progress ", 9)) {
    on_progress(b, c, line);
  } else if (!strncmp(line, "done ", 5)) {
    on_done(b, c, line);
  } else if (!strncmp(line, "fail ", 5)) {
    on_fail(b, c, line);
  } else if (!strncmp(line, "hello ", 6) && !k->ready) {
    char hex[600];
    int sms;
    if (sscanf(line, "hello %16s %d %599s", k->fingerprint, &sms, hex) != 3 || wire_unhex(hex, k->name, sizeof k->name))
      lose_child(b, c, "malformed hello", 1);
    else
      k->ready = 1;
  }
}

/* The child closed its end: reap it; a child that did not finish its problem lost its device. */
static void on_eof(batch *b, int c) {
  child *k = &b->kids[c];
  close(k->fd);
  k->fd = -1;
  int status = 0;
  while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR) {}
  k->pid = 0;
  char why[128];
  if (WIFSIGNALED(status)) snprintf(why, sizeof why, "its process died of signal %d", WTERMSIG(status));
  else snprintf(why, sizeof why, "its process exited with status %d", WEXITSTATUS(status));
  /* Gone while tuning, or before it was told to quit (a child forwarded Ctrl-C before its start
   * ends by it: that is no lost device). */
  if (!k->lost && (b->sched.devices[c].job >= 0 || (!k->quit_sent && !b->stopping))) lose_child(b, c, why, 0);
}

/* ---- the loop ---- */

static void hand_out(batch *b) {
  const int pending = bs_pending(&b->sched);
  for (int c = 0; c < b->n_kids; c++) {
    child *k = &b->kids[c];
    if (k->fd < 0 || k->lost || !k->ready || b->sched.devices[c].job >= 0 || k->quit_sent) continue;
    int j = b->stopping ? -1 : bs_next(&b->sched, c);
    if (j >= 0) {
      const ft_problem *p = &b->list->items[b->jobs[j].item].problem;
      static char hex[2 * 4096 + 8];
      wire_hex(p->epilogue, hex, sizeof hex);
      k->t0 = now_s();
      k->phase[0] = '\0';
      if (wire_send(k->fd, "run %d %" PRId64 " %" PRId64 " %" PRId64 " %s %s", j, p->m, p->n, p->k,
                    ft_math_name(p->math), hex))
        lose_child(b, c, "its process does not answer", 1);
      else if (!b->t->quiet) {
        char label[256];
        job_label(b, j, label, sizeof label);
        fprintf(stderr, "[#%d] %s: started\n", k->ordinal, label);
      }
    } else if (b->stopping || pending == 0) {
      /* Idle children stay while problems run elsewhere: a lost device's problem needs a taker. */
      send_quit(k);
    }
  }
}

static void forward_sigint(batch *b, int sig) {
  for (int c = 0; c < b->n_kids; c++)
    if (b->kids[c].pid > 0) kill(sig == SIGKILL ? -b->kids[c].pid : b->kids[c].pid, sig);
}

static void run_loop(batch *b) {
  int forwarded = 0;
  for (;;) {
    if (n_sigint > forwarded) {
      forwarded = n_sigint;
      b->stopping = 1;
      /* The first Ctrl-C: each child stops after its candidate in flight. The second: at once
       * (its process group, candidate workers included). */
      forward_sigint(b, forwarded >= 2 ? SIGKILL : SIGINT);
      if (forwarded == 1)
        fprintf(stderr, "fusedtune: interrupted: stopping after the candidates in flight (Ctrl-C again to "
                        "end at once)\n");
    }
    hand_out(b);
    struct pollfd pfd[MAX_DEVICES];
    int idx[MAX_DEVICES], n = 0;
    for (int c = 0; c < b->n_kids; c++)
      if (b->kids[c].fd >= 0) pfd[n] = (struct pollfd){b->kids[c].fd, POLLIN, 0}, idx[n++] = c;
    if (n == 0) break;
    if (poll(pfd, (nfds_t)n, 250) <= 0) continue; /* a timeout or a signal: look at the flags again */
    for (int i = 0; i < n; i++) {
      if (!pfd[i].revents) continue;
      const int c = idx[i];
      int eof = 0;
      const char *line;
      while ((line = wire_line(&b->kids[c].rd, 0, &eof))) on_line(b, c, line);
      if (eof) on_eof(b, c);
    }
  }
}

/* ---- the summary ---- */

static void json_num(double v) {
  if (isfinite(v) && v >= 0) printf("%.9g", v);
  else printf("null");
}

static const char *end_name(const job *o) {
  switch (o->end) {
    case END_OK: return o->has_best ? "ok" : "no_correct_candidate";
    case END_FAILED: return "failed";
    case END_INTERRUPTED: return "interrupted";
    default: return "not_run";
  }
}

static void print_json(const batch *b, double wall_s) {
  printf("{\"wall_s\":%.3f,\"interrupted\":%s,\"lost_problems\":%d,\"problems\":[", wall_s,
         b->stopping ? "true" : "false", b->n_lost_jobs);
  for (int j = 0; j < b->n_jobs; j++) {
    const job *o = &b->jobs[j];
    const ft_problem_item *it = &b->list->items[o->item];
    char shape[80];
    shape_text(&it->problem, shape, sizeof shape);
    printf("%s{\"line\":%d,\"shape\":\"%s\",\"epilogue\":", j ? "," : "", it->line, shape);
    ft_write_json_string(stdout, it->problem.epilogue);
    printf(",\"math\":\"%s\",\"status\":\"%s\",\"device\":", ft_math_name(it->problem.math), end_name(o));
    if (o->device >= 0) printf("%d", b->kids[o->device].ordinal);
    else printf("null");
    printf(",\"best_ms\":");
    json_num(o->has_best ? o->best_ms : -1);
    printf(",\"eager_ms\":");
    json_num(o->eager_ms > 0 ? o->eager_ms : -1);
    printf(",\"speedup_vs_eager\":");
    json_num(o->has_best && o->eager_ms > 0 ? o->eager_ms / o->best_ms : -1);
    printf(",\"best_math\":");
    ft_write_json_string(stdout, o->has_best ? o->math : NULL);
    printf(",\"strategy\":");
    ft_write_json_string(stdout, o->has_best ? o->strategy : NULL);
    printf(",\"variant\":");
    ft_write_json_string(stdout, o->has_best ? o->variant : NULL);
    printf(",\"measured\":%d,\"known\":%d,\"tune_s\":%.3f,\"lost_devices\":%d,\"message\":", o->measured, o->known,
           o->tune_s, b->sched.jobs[j].lost);
    ft_write_json_string(stdout, o->msg[0] ? o->msg : NULL);
    printf("}");
  }
  printf("],\"duplicates\":[");
  int first = 1;
  for (int i = 0; i < b->list->count; i++) {
    const ft_problem_item *it = &b->list->items[i];
    if (it->duplicate_of < 0) continue;
    printf("%s{\"line\":%d,\"same_as_line\":%d,\"math\":\"%s\"}", first ? "" : ",", it->line,
           b->list->items[it->duplicate_of].line, ft_math_name(it->problem.math));
    first = 0;
  }
  printf("],\"devices\":[");
  for (int c = 0; c < b->n_kids; c++) {
    const child *k = &b->kids[c];
    printf("%s{\"ordinal\":%d,\"name\":", c ? "," : "", k->ordinal);
    ft_write_json_string(stdout, k->name[0] ? k->name : NULL);
    printf(",\"fingerprint\":");
    ft_write_json_string(stdout, k->fingerprint[0] ? k->fingerprint : NULL);
    printf(",\"problems\":%d,\"busy_s\":%.3f,\"lost\":%s,\"why\":", b->sched.devices[c].n_done,
           b->sched.devices[c].busy_s, k->lost ? "true" : "false");
    ft_write_json_string(stdout, k->lost ? k->why : NULL);
    printf("}");
  }
  printf("]}\n");
}

static void print_text(const batch *b, double wall_s) {
  int dups = b->list->count - b->list->n_unique;
  printf("\n%d problem(s)", b->n_jobs);
  if (dups) printf(" (%d more line(s) of the file repeat one: tuned once)", dups);
  printf("\n  %-20s %-7s %-28s %4s %-14s %10s %9s  %s\n", "shape", "math", "epilogue", "dev", "status", "best_ms",
         "vs eager", "best (math strategy variant)");
  for (int j = 0; j < b->n_jobs; j++) {
    const job *o = &b->jobs[j];
    const ft_problem *p = &b->list->items[o->item].problem;
    char shape[80], epi[4 * 28 + 1], dev[8] = "-", ms[24] = "-", sp[24] = "-";
    shape_text(p, shape, sizeof shape);
    cli_cell(epi, sizeof epi, p->epilogue, 28);
    if (o->device >= 0) snprintf(dev, sizeof dev, "#%d", b->kids[o->device].ordinal);
    if (o->has_best) snprintf(ms, sizeof ms, "%.4f", o->best_ms);
    if (o->has_best && o->eager_ms > 0) snprintf(sp, sizeof sp, "%.3fx", o->eager_ms / o->best_ms);
    printf("  %-20s %-7s %s %4s %-14s %10s %9s  ", shape, ft_math_name(p->math), epi, dev, end_name(o), ms, sp);
    if (o->has_best) printf("%s %s %s\n", o->math, o->strategy, o->variant);
    else printf("%.200s\n", o->msg);
  }
  for (int i = 0; i < b->list->count; i++) {
    const ft_problem_item *it = &b->list->items[i];
    if (it->duplicate_of >= 0)
      printf("  line %d (%s) repeats line %d: tuned once\n", it->line, ft_math_name(it->problem.math),
             b->list->items[it->duplicate_of].line);
  }
  printf("devices:\n");
  for (int c = 0; c < b->n_kids; c++) {
    const child *k = &b->kids[c];
    printf("  #%d %s  %d problem(s), %.1f s tuning", k->ordinal, k->name[0] ? k->name : "(did not start)",
           b->sched.devices[c].n_done, b->sched.devices[c].busy_s);
    if (k->lost) printf("; lost: %s", k->why);
    printf("\n");
  }
  printf("wall %.1f s", wall_s);
  if (b->n_lost_jobs) printf("; %d problem(s) were in flight on a lost device", b->n_lost_jobs);
  printf("\n");
}

/* ---- the command ---- */

int batch_run(cli *c, const tune_cli *t, const char *exe) {
  char msg[4096];
  if (!exe) return fail_msg("tune --problems: cannot name this executable (/proc/self/exe) for its device processes");
  ft_problem_list *list = NULL;
  /* The whole file is checked before any device or database is touched. */
  ft_status st = ft_problem_list_load(t->problems, &list, msg, sizeof msg);
  if (st != FT_OK) {
    cli_line(stderr, "fusedtune tune: %s", msg);
    return st == FT_ERR_FORMAT ? EXIT_USAGE : 1;
  }
  int devs[MAX_DEVICES], n_devs = 0, rc;
  if (t->devices && (rc = parse_devices(t->devices, -1, devs, &n_devs))) return ft_problem_list_free(list), rc;
  int count = 0;
  st = ft_device_count(&count, msg, sizeof msg);
#ifdef FT_TEST_HOOKS
  if (getenv("FT_TEST_BATCH_DEVICES")) st = FT_OK, count = atoi(getenv("FT_TEST_BATCH_DEVICES"));
#endif
  if (st != FT_OK) return ft_problem_list_free(list), fail_status(st, msg);
  if ((rc = parse_devices(t->devices, count, devs, &n_devs))) return ft_problem_list_free(list), rc;
  /* The children open the database that the parent has created (or migrated) first. */
  ft_ctx *ctx = NULL;
  if ((rc = cli_open(c, 1, &ctx))) return ft_problem_list_free(list), rc;
  ft_close(ctx);

  batch b;
  memset(&b, 0, sizeof b);
  b.t = t;
  b.list = list;
  b.n_jobs = list->n_unique;
  b.n_kids = n_devs;
  b.jobs = calloc((size_t)b.n_jobs + 1, sizeof *b.jobs);
  b.kids = calloc((size_t)n_devs + 1, sizeof *b.kids);
  double *costs = calloc((size_t)b.n_jobs + 1, sizeof *costs);
  rc = !b.jobs || !b.kids || !costs;
  for (int i = 0, j = 0; !rc && i < list->count; i++) {
    const ft_problem_item *it = &list->items[i];
    if (it->duplicate_of >= 0) continue;
    b.jobs[j] = (job){.item = i, .device = -1, .best_ms = -1, .eager_ms = -1};
    costs[j++] = bs_cost(it->problem.m, it->problem.n, it->problem.k, it->problem.math);
  }
  if (!rc) rc = bs_init(&b.sched, costs, b.n_jobs, n_devs) != 0;
  free(costs);
  if (rc) {
    bs_free(&b.sched);
    free(b.jobs);
    free(b.kids);
    ft_problem_list_free(list);
    return fail_msg("out of memory");
  }
  if (!t->quiet) {
    char path[1024];
    snprintf(path, sizeof path, "%s", t->problems);
    ft_text_printable(path);
    fprintf(stderr, "%d problem(s) from %s", b.n_jobs, path);
    if (list->count > b.n_jobs) fprintf(stderr, " (%d repeated line(s) tuned once)", list->count - b.n_jobs);
    fprintf(stderr, " on %d device(s):", n_devs);
    for (int d = 0; d < n_devs; d++) fprintf(stderr, " #%d", devs[d]);
    fprintf(stderr, "\n");
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  const double t0 = now_s();
  for (int d = 0; d < n_devs; d++) {
    b.kids[d].ordinal = devs[d];
    b.kids[d].fd = -1;
    if (start_child(&b, &b.kids[d], exe, cli_db_path(c))) {
      b.kids[d].lost = 1;
      snprintf(b.kids[d].why, sizeof b.kids[d].why, "its process could not be started: %s", strerror(errno));
      b.sched.devices[d].alive = 0;
    }
  }
  run_loop(&b);
  const double wall = now_s() - t0;
  if (t->json) print_json(&b, wall);
  else print_text(&b, wall);
  int all_ok = 1, n_done = 0;
  for (int j = 0; j < b.n_jobs; j++) {
    all_ok &= b.jobs[j].end == END_OK;
    n_done += b.jobs[j].end == END_OK;
  }
  if (b.stopping)
    fprintf(stderr, "fusedtune: interrupted: %d of %d problem(s) finished; what was measured is stored: run the "
                    "same command to continue (it skips what was measured)\n", n_done, b.n_jobs);
  else if (!all_ok)
    fprintf(stderr, "fusedtune: %d of %d problem(s) finished%s\n", n_done, b.n_jobs,
            bs_any_alive(&b.sched) ? "" : "; no device is left");
  bs_free(&b.sched);
  free(b.jobs);
  free(b.kids);
  ft_problem_list_free(list);
  return all_ok ? 0 : 1;
}
