/* Runners: the engine that verifies and times one job on the GPU, and the worker process that
 * hosts it so a faulting or hanging candidate cannot end the tune. */
#define _GNU_SOURCE /* dladdr */
#include "runner.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* The engine: problem data, reference and baselines on the GPU of this process. */

typedef struct engine {
  ft_gpu *g;
  ft_epilogue *own_ep;   /* a worker's, parsed from the wire */
  const ft_epilogue *ep; /* own_ep or the caller's */
  ft_pdata *d;
  ft_baselines *bl;
  ft_bench *bench;
  int flush_l2;
  int warm;   /* the GPU has run FT_WARM_S of this problem's work: timings may start */
  double tol; /* on rel_err: ft_pdata_tolerance's, in 3xtf32 raised by ft_baseline_chain_tolerance */
} engine;

/* Seconds of back-to-back work before the first timing. A GPU's clock climbs from idle while it
 * works; the first baseline, timed at once, read a cuBLAS GEMM 14 % slower than the same GEMM
 * timed seconds later (8192^3 bf16, H200, BENCHMARKS.md session 16), and every speed-up "vs
 * eager" is against that first baseline. */
#define FT_WARM_S 0.3


static void engine_close(engine *e) {
  if (!e) return;
  ft_baselines_free(e->bl);
  ft_bench_free(e->bench);
  ft_pdata_free(e->d);
  ft_ep_free(e->own_ep);
  ft_gpu_close(e->g);
  free(e);
}

/* Opens the device and says what it is. */
static ft_status engine_open(int device, int flush_l2, engine **out, ft_runner_device *dev, ft_err *err) {
  *out = NULL;
  memset(dev, 0, sizeof *dev);
  engine *e = calloc(1, sizeof *e);
  if (!e) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  e->flush_l2 = flush_l2;
  const double t0 = ft__now_s();
  ft_status st = ft_gpu_open(device, &e->g, err);
  dev->gpu_open_s = ft__now_s() - t0;
  if (st != FT_OK) {
    engine_close(e);
    return st;
  }
  dev->info = *ft_gpu_info(e->g);
  dev->limits = *ft_gpu_limits(e->g);
  snprintf(dev->arch, sizeof dev->arch, "%s", ft_gpu_arch(e->g));
  *out = e;
  return FT_OK;
}

/* The problem's data, references, tolerance and baselines on the open device; ep must outlive e
 * (a worker hands over its own: own_ep). */
static ft_status engine_prepare(engine *e, const ft_tune_problem *p, uint64_t seed, ft_runner_ready *ready,
                                ft_err *err) {
  memset(ready, 0, sizeof *ready);
  e->ep = p->ep;
  double t0 = ft__now_s();
  ft_status st = ft_pdata_create(e->g, (int)p->m, (int)p->n, (int)p->k, e->ep, p->math, seed, &e->d, err);
  ready->data_s = ft__now_s() - t0;
  /* The tolerance of the mode, from cuBLAS's own GEMM of that mode on this very problem. */
  t0 = ft__now_s();
  if (st == FT_OK) st = ft_pdata_tolerance(e->g, e->d, &ready->tol, &ready->cublas_rel_err, err);
  if (st == FT_OK) e->tol = ready->tol;
  ready->tolerance_s = ft__now_s() - t0;
  t0 = ft__now_s();
  if (st == FT_OK) st = ft_bench_create(&e->bench, err);
  if (st == FT_OK) st = ft_baselines_create(e->g, NULL, e->ep, e->d, &e->bl, err);
  ready->baselines_setup_s = ft__now_s() - t0;
  /* 3xtf32: the fp32 chain's error may raise the tolerance. Its failure keeps the rule's (stricter)
   * tolerance rather than ending the tune: the eager baseline then reports it as its own result,
   * and an error that breaks the context shows at the next job. */
  t0 = ft__now_s();
  if (st == FT_OK) {
    ft_err cerr;
    ft__err_clear(&cerr);
    double tol = ready->tol;
    if (ft_baseline_chain_tolerance(e->bl, &tol, &cerr) == FT_OK) ready->tol = e->tol = tol;
  }
  ready->tolerance_s += ft__now_s() - t0;
  return st;
}

typedef struct call {
  engine *e;
  const ft_runner_job *job;
  ft_launchable *run;
} call;

static ft_status enqueue(void *user, cudaStream_t s, ft_err *err) {
  call *c = user;
  ft_pdata *d = c->e->d;
  if (c->job->type == FT_JOB_BASELINE) return ft_baseline_enqueue(c->e->bl, (ft_baseline_kind)c->job->baseline, s, err);
  return ft_launchable_enqueue(c->run, d->dX, d->dW, d->dY, &d->args, s, err);
}

/* A CUDA error that poisons the context (illegal address, trap, ...): nothing after it counts. */
static int is_sticky(cudaError_t e) {
  return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
         e == cudaErrorHardwareStackError || e == cudaErrorIllegalInstruction || e == cudaErrorAssert ||
         e == cudaErrorInvalidPc || e == cudaErrorLaunchTimeout || e == cudaErrorInvalidAddressSpace;
}

/* Runs the job back to back for FT_WARM_S (synchronizing every few calls, so the host never
 * queues far ahead), once per engine. */
static ft_status warm_up(engine *e, call *c, ft_err *err) {
  cudaStream_t s = ft_bench_stream(e->bench);
  const double t0 = ft__now_s();
  for (int i = 0; ft__now_s() - t0 < FT_WARM_S; i++) {
    FT_TRY(enqueue(c, s, err));
    if (i % 4 == 3) FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  }
  FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  e->warm = 1;
  return FT_OK;
}

/* Verifies the job on poisoned output, then times it; fills res. */
static ft_status verify_and_time(engine *e, call *c, ft_runner_result *res, ft_err *err) {
  cudaStream_t s = ft_bench_stream(e->bench);
  ft_check chk = {0, 0, 0};
  const double t0 = ft__now_s();
  FT_TRY(ft_pdata_poison(e->d, s, err));
  FT_TRY(enqueue(c, s, err));
  FT_CUDA_TRY(err, cudaStreamSynchronize(s));
  /* cuBLAS GEMM alone computes no epilogue: it is judged against x W^T. */
  const int gemm_only = c->job->type == FT_JOB_BASELINE && c->job->baseline == FT_BL_CUBLAS_GEMM;
  FT_TRY(gemm_only ? ft_pdata_check_gemm(e->d, &chk, err) : ft_pdata_check(e->d, &chk, err));
  res->rel_err = chk.rel_err;
  res->max_abs_err = chk.max_abs_err;
  const double t1 = ft__now_s();
  res->verify_s = t1 - t0;
  if (chk.bad || !(chk.rel_err <= e->tol)) {
    res->status = FT_RESULT_WRONG_RESULT;
    snprintf(res->message, sizeof res->message, "rel_err %.3g > %.3g (%s) or %lld non-finite element(s)%s",
             chk.rel_err, e->tol, ft_math_name(e->d->math), (long long)chk.bad, gemm_only ? " (vs x W^T)" : "");
    return FT_OK;
  }
  ft_bench_opts o = {2, c->job->repeats, e->flush_l2, 0.5};
  if (!e->warm) FT_TRY(warm_up(e, c, err));
  ft_timing tm;
  /* In rounds with cuBLAS's GEMM alone (that GEMM itself with the eager-style chain), as
   * fusedtune bench times them: back to back, a kernel finds its own code and data in the
   * caches, and a fused gelu kernel timed so measured 8 % faster than between other kernels
   * (H200, 2026-12-01), where a model runs it. Back to back still with an L2 flush (which
   * already separates the calls) and where the partner is unavailable. A failure of the
   * partner's call fails the timing (LAUNCH_ERROR): cuBLAS then no longer works in this context.
   * The median of the per-round ratios to cuBLAS's GEMM is kept (gemm_ratio): the clock drifts
   * between jobs, and changes state even within one, by more than candidates differ
   * (BENCHMARKS.md, sessions 16 and 17), so the tuner ranks by it. */
  const int alone = c->job->type == FT_JOB_BASELINE && c->job->baseline == FT_BL_CUBLAS_GEMM;
  const ft_baseline_kind pk = alone ? FT_BL_EAGER : FT_BL_CUBLAS_GEMM;
  if (!e->flush_l2 && ft_baseline_available(e->bl, pk)) {
    const ft_runner_job gemm = {.type = FT_JOB_BASELINE, .baseline = (int)pk};
    call partner = {e, &gemm, NULL};
    const ft_enqueue_fn fns[2] = {enqueue, enqueue};
    void *const users[2] = {c, &partner};
    ft_timing both[2];
    double ratios[2];
    FT_TRY(ft_bench_run_interleaved(e->bench, 2, fns, users, &o, both, alone ? 0 : 1, ratios, err));
    tm = both[0];
    res->gemm_ratio = ratios[0]; /* 1 for cuBLAS's GEMM itself */
  } else {
    FT_TRY(ft_bench_run(e->bench, enqueue, c, &o, &tm, err));
  }
  res->time_s = ft__now_s() - t1;
  res->status = FT_RESULT_OK;
  res->median_ms = tm.median_ms;
  res->min_ms = tm.min_ms;
  res->iqr_ms = tm.iqr_ms;
  res->repeats = tm.repeats;
  return FT_OK;
}

static void engine_run(engine *e, const ft_runner_job *job, ft_runner_result *res) {
  memset(res, 0, sizeof *res);
  res->median_ms = res->min_ms = res->iqr_ms = res->gemm_ratio = -1;
  res->rel_err = res->max_abs_err = -1;
  ft_launchable run;
  memset(&run, 0, sizeof run);
  call c = {e, job, &run};
  ft_err err;
  ft__err_clear(&err);
  ft_status st = FT_OK;
  if (job->type == FT_JOB_BASELINE) {
    snprintf(res->describe, sizeof res->describe, "%s", ft_baseline_describe(e->bl, (ft_baseline_kind)job->baseline));
    if (!ft_baseline_available(e->bl, (ft_baseline_kind)job->baseline)) {
      res->status = FT_RESULT_UNAVAILABLE;
      return;
    }
  } else {
    const ft_pdata *d = e->d;
    const double t0 = ft__now_s();
    st = ft_launchable_init(&run, e->g, &job->v, d->m, d->n, d->k, job->cubin, (size_t)job->cubin_size, job->kernel,
                            job->reduce, &err);
    res->load_s = ft__now_s() - t0;
  }
  if (st == FT_OK) st = verify_and_time(e, &c, res, &err);
  ft_launchable_free(&run);
  if (st != FT_OK) {
    res->status = FT_RESULT_LAUNCH_ERROR;
    snprintf(res->message, sizeof res->message, "%.500s", err.msg);
  }
  cudaError_t last = cudaGetLastError();
  res->context_lost = is_sticky(last) || is_sticky(cudaDeviceSynchronize());
}

/* ---------------------------------------------------------------------------------------- */
/* The wire: [u32 type][u32 size of the fixed part][u64 bytes that follow][fixed][bytes]. */

/* Start: SETUP ->, <- DEVICE (the device open, or why not), <- HELLO (data, references and
 * baselines ready, or why not); then JOB ->, <- RESULT per job. */
enum { MSG_SETUP = 0x46540001, MSG_HELLO, MSG_JOB, MSG_RESULT, MSG_DEVICE };

typedef struct msg_head {
  uint32_t type, fixed;
  uint64_t extra;
} msg_head;

/* What travels back with a hello or a result: the status and, on failure, its message. */
typedef struct msg_status {
  int32_t status;
  char msg[sizeof(((ft_err *)0)->msg)];
} msg_status;

static int send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL); /* a dead peer is an error, never SIGPIPE */
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads n bytes before deadline (CLOCK_MONOTONIC seconds, <= 0: none). 0 ok, -1 closed/error,
 * -2 timed out. */
static int recv_all(int fd, void *p, size_t n, double deadline) {
  char *c = p;
  while (n > 0) {
    if (deadline > 0) {
      double left = deadline - ft__now_s();
      if (left <= 0) return -2;
      struct pollfd pfd = {fd, POLLIN, 0};
      int r = poll(&pfd, 1, (int)(left * 1000) + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return -1;
      if (r == 0) return -2;
    }
    ssize_t got = recv(fd, c, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    c += got;
    n -= (size_t)got;
  }
  return 0;
}

static int send_msg(int fd, uint32_t type, const void *fixed, uint32_t fixed_size, const void *extra,
                    uint64_t extra_size) {
  msg_head h = {type, fixed_size, extra_size};
  if (send_all(fd, &h, sizeof h) || send_all(fd, fixed, fixed_size)) return -1;
  return extra_size ? send_all(fd, extra, (size_t)extra_size) : 0;
}

/* Receives a message of type (or alt, the type then in *got) and the expected fixed size;
 * *extra is malloc'd when present. */
static int recv_msg_of(int fd, uint32_t type, uint32_t alt, uint32_t *got, void *fixed, uint32_t fixed_size,
                       void **extra, uint64_t *extra_size, double deadline) {
  msg_head h;
  int r = recv_all(fd, &h, sizeof h, deadline);
  if (r) return r;
  if ((h.type != type && h.type != alt) || h.fixed != fixed_size || (!extra && h.extra) ||
      h.extra > ((uint64_t)1 << 30))
    return -3;
  if (got) *got = h.type;
  if ((r = recv_all(fd, fixed, fixed_size, deadline))) return r;
  if (extra) {
    *extra = NULL;
    *extra_size = h.extra;
    if (h.extra) {
      if (!(*extra = malloc((size_t)h.extra))) return -1;
      if ((r = recv_all(fd, *extra, (size_t)h.extra, deadline))) {
        free(*extra);
        *extra = NULL;
        return r;
      }
    }
  }
  return 0;
}

static int recv_msg(int fd, uint32_t type, void *fixed, uint32_t fixed_size, void **extra, uint64_t *extra_size,
                    double deadline) {
  return recv_msg_of(fd, type, type, NULL, fixed, fixed_size, extra, extra_size, deadline);
}

/* ---------------------------------------------------------------------------------------- */
/* The worker process. */

/* What the tuner sends first: the problem (its epilogue as text) and the options the worker's
 * engine needs. */
typedef struct setup_msg {
  int32_t device;
  int32_t flush_l2;
  int64_t m, n, k;
  int32_t math;
  uint64_t seed;
  char epilogue[FT_EP_MAX_TEXT + 1];
} setup_msg;

typedef struct device_msg {
  msg_status st;
  ft_runner_device dev;
} device_msg;

typedef struct hello_msg {
  msg_status st;
  ft_runner_ready ready;
} hello_msg;

typedef struct result_msg {
  msg_status st;
  ft_runner_result res;
} result_msg;

static void status_of(msg_status *m, ft_status st, const ft_err *err) {
  m->status = st;
  snprintf(m->msg, sizeof m->msg, "%s", st == FT_OK ? "" : err->msg);
}

int ft_worker_main(int fd) {
  /* Ctrl-C is for the tuner: it stops after the job in flight and then closes this worker. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGINT, &sa, NULL);
  setup_msg setup;
  if (recv_msg(fd, MSG_SETUP, &setup, sizeof setup, NULL, NULL, 0)) return 2;
  setup.epilogue[FT_EP_MAX_TEXT] = '\0';
  ft_err err;
  ft__err_clear(&err);
  device_msg d;
  memset(&d, 0, sizeof d);
  engine *e = NULL;
  ft_status st = engine_open(setup.device, setup.flush_l2, &e, &d.dev, &err);
  status_of(&d.st, st, &err);
  if (send_msg(fd, MSG_DEVICE, &d, sizeof d, NULL, 0) || !e) {
    engine_close(e);
    return st == FT_OK ? 2 : 1;
  }
  hello_msg h;
  memset(&h, 0, sizeof h);
  st = ft_ep_parse(setup.epilogue, &e->own_ep, &err);
  const ft_tune_problem p = {setup.m, setup.n, setup.k, (ft_math)setup.math, e->own_ep, setup.epilogue};
  if (st == FT_OK) st = engine_prepare(e, &p, setup.seed, &h.ready, &err);
  status_of(&h.st, st, &err);
  if (send_msg(fd, MSG_HELLO, &h, sizeof h, NULL, 0) || st != FT_OK) {
    engine_close(e);
    return st == FT_OK ? 2 : 1;
  }
  for (;;) {
    ft_runner_job job;
    void *cubin = NULL;
    uint64_t size = 0;
    if (recv_msg(fd, MSG_JOB, &job, sizeof job, &cubin, &size, 0)) break; /* the tuner is done */
    job.cubin = cubin;
    job.cubin_size = size;
    job.kernel[sizeof job.kernel - 1] = job.reduce[sizeof job.reduce - 1] = '\0';
    result_msg m;
    memset(&m, 0, sizeof m);
    engine_run(e, &job, &m.res);
    free(cubin);
    if (send_msg(fd, MSG_RESULT, &m, sizeof m, NULL, 0) || m.res.context_lost) break;
  }
  engine_close(e);
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The tuner's side. */

struct ft_runner {
  engine *local;          /* in-process mode */
  const ft_tune_problem *problem; /* in-process mode: what prepare prepares */
  uint64_t seed;
  char *exe;              /* worker mode */
  setup_msg setup;
  double job_timeout_s;
  double deadline;        /* of the worker's start, DEVICE and HELLO both */
  pid_t pid;
  int fd;
  int restarts;
};

/* Closes the socket and reaps the worker: a healthy one ends within moments of the close, a hung
 * one (or one told to go with `now`) gets SIGKILL. Returns its wait status (0 if none). */
static int worker_kill(ft_runner *r, int now) {
  int status = 0;
  if (r->fd >= 0) close(r->fd);
  r->fd = -1;
  if (r->pid > 0) {
    pid_t got = 0;
    if (now) kill(r->pid, SIGKILL);
    for (int i = 0; i < 200 && (got = waitpid(r->pid, &status, WNOHANG)) == 0; i++) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (got == 0) {
      kill(r->pid, SIGKILL);
      waitpid(r->pid, &status, 0);
    }
  }
  r->pid = 0;
  return status;
}

/* Fails the worker's start: a message received (rc 0) with its status, or none. */
static ft_status start_failed(ft_runner *r, int rc, const msg_status *m, ft_err *err) {
  worker_kill(r, rc != 0);
  if (rc)
    return ft__fail(err, FT_ERR_IO, "worker %s did not start (%s)", r->exe,
                    rc == -2 ? "no answer in 900 s" : "it exited or spoke another protocol version");
  char msg[sizeof m->msg];
  snprintf(msg, sizeof msg, "%.*s", (int)sizeof msg - 1, m->msg);
  return ft__fail(err, (ft_status)m->status, "%s", msg);
}

/* Starts a worker and waits until it has opened its device. */
static ft_status worker_spawn(ft_runner *r, ft_runner_device *dev, ft_err *err) {
  int sv[2];
  /* Close-on-exec from the start: no other child of this process inherits the socket. */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return ft__fail(err, FT_ERR_IO, "cannot create the worker socket: %s", strerror(errno));
  const pid_t parent = getpid();
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
  char *argv[] = {r->exe, "__worker", fdarg, NULL};
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return ft__fail(err, FT_ERR_IO, "cannot start a worker process: %s", strerror(errno));
  }
  if (pid == 0) {
    /* The worker's end survives exec; the worker dies with the tuner even if it hangs in a
     * kernel and never reads the socket again. */
    fcntl(sv[1], F_SETFD, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    execv(r->exe, argv);
    _exit(127);
  }
  close(sv[1]);
  r->pid = pid;
  r->fd = sv[0];
  /* Setting up builds the inputs and the float64 reference: minutes at most. */
  r->deadline = ft__now_s() + 900;
  device_msg d;
  int rc = send_msg(r->fd, MSG_SETUP, &r->setup, sizeof r->setup, NULL, 0);
  if (!rc) rc = recv_msg(r->fd, MSG_DEVICE, &d, sizeof d, NULL, NULL, r->deadline);
  if (rc || d.st.status != FT_OK) return start_failed(r, rc, &d.st, err);
  d.dev.arch[sizeof d.dev.arch - 1] = '\0';
  *dev = d.dev;
  return FT_OK;
}

/* Waits until the started worker's data is ready. */
static ft_status worker_ready(ft_runner *r, ft_runner_ready *ready, ft_err *err) {
  hello_msg h;
  const int rc = recv_msg(r->fd, MSG_HELLO, &h, sizeof h, NULL, NULL, r->deadline);
  if (rc || h.st.status != FT_OK) return start_failed(r, rc, &h.st, err);
  *ready = h.ready;
  return FT_OK;
}

/* The installed CLI, found from where this library was loaded (lib/ -> ../bin/fusedtune), so
 * an installed tree still finds it after it is moved; "" when there is none. A name without a
 * slash is a program found on $PATH (the library linked into it): not a place to start from. */
static char installed_cli[PATH_MAX];

static void find_installed_cli(void) {
#ifdef FUSEDTUNE_LIB_TO_CLI
  Dl_info info;
  char lib[PATH_MAX], cli[PATH_MAX + sizeof FUSEDTUNE_LIB_TO_CLI + 1];
  if (!dladdr(installed_cli, &info) || !info.dli_fname || !strchr(info.dli_fname, '/') ||
      !realpath(info.dli_fname, lib))
    return;
  char *slash = strrchr(lib, '/');
  if (!slash) return;
  *slash = '\0';
  snprintf(cli, sizeof cli, "%s/%s", lib, FUSEDTUNE_LIB_TO_CLI);
  if (!realpath(cli, installed_cli) || access(installed_cli, X_OK) != 0) installed_cli[0] = '\0';
#endif
}

const char *ft_default_worker(void) {
  const char *env = getenv("FUSEDTUNE_WORKER");
  if (env && env[0]) return env;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_installed_cli);
  return installed_cli[0] ? installed_cli : NULL;
}

ft_status ft_runner_start(const ft_tune_problem *p, const ft_runner_opts *o, ft_runner **out, ft_runner_device *dev,
                          ft_err *err) {
  *out = NULL;
  ft_runner *r = calloc(1, sizeof *r);
  if (!r) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  r->problem = p;
  r->seed = o->seed;
  r->job_timeout_s = o->job_timeout_s > 0 ? o->job_timeout_s : 60;
  r->fd = -1;
  r->setup = (setup_msg){.device = o->device, .flush_l2 = o->flush_l2, .m = p->m, .n = p->n, .k = p->k,
                         .math = (int32_t)p->math, .seed = o->seed};
  /* The text as given (<= FT_EP_MAX_TEXT): the canonical form can be longer. */
  snprintf(r->setup.epilogue, sizeof r->setup.epilogue, "%s", p->epilogue);
  ft_status st;
  if (o->worker_exe) {
    r->exe = ft__strdup(o->worker_exe);
    st = r->exe ? worker_spawn(r, dev, err) : ft__fail(err, FT_ERR_NOMEM, "out of memory");
  } else {
    st = engine_open(o->device, o->flush_l2, &r->local, dev, err);
  }
  if (st != FT_OK) {
    ft_runner_stop(r);
    return st;
  }
  *out = r;
  return FT_OK;
}

ft_status ft_runner_prepare(ft_runner *r, ft_runner_ready *ready, ft_err *err) {
  if (r->local) return engine_prepare(r->local, r->problem, r->seed, ready, err);
  return worker_ready(r, ready, err);
}

static void died(ft_runner *r, int why, ft_runner_result *res) {
  /* -2: hung; -3: it spoke another protocol; both are still alive and must be killed. */
  int status = worker_kill(r, why == -2 || why == -3);
  memset(res, 0, sizeof *res);
  res->median_ms = res->min_ms = res->iqr_ms = res->rel_err = res->max_abs_err = res->gemm_ratio = -1;
  if (why == -2) {
    res->status = FT_RESULT_TIMEOUT;
    snprintf(res->message, sizeof res->message, "no result within %.0f s: worker killed and restarted",
             r->job_timeout_s);
  } else {
    res->status = FT_RESULT_LAUNCH_ERROR;
    if (why == -3)
      snprintf(res->message, sizeof res->message, "worker answered in another protocol version; restarted");
    else if (WIFSIGNALED(status))
      snprintf(res->message, sizeof res->message, "worker died of signal %d; restarted", WTERMSIG(status));
    else
      snprintf(res->message, sizeof res->message, "worker exited (status %d); restarted", WEXITSTATUS(status));
  }
  res->context_lost = 1;
}

ft_status ft_runner_run(ft_runner *r, const ft_runner_job *job, ft_runner_result *res, ft_err *err) {
  if (r->local) {
    engine_run(r->local, job, res);
    if (res->context_lost)
      return ft__fail(err, FT_ERR_CUDA, "%s (%s) and the CUDA context is lost; without a worker process the tune "
                      "cannot go on: results so far are stored, run tune again to continue", res->message,
                      job->type == FT_JOB_CANDIDATE ? "candidate" : "baseline");
    return FT_OK;
  }
  if (r->fd < 0) { /* the last job killed the worker: a fresh one, same data */
    ft_runner_device dev;
    ft_runner_ready ready;
    FT_TRY(worker_spawn(r, &dev, err)); /* the device is known already */
    FT_TRY(worker_ready(r, &ready, err));
    r->restarts++;
  }
  result_msg m;
  int rc = send_msg(r->fd, MSG_JOB, job, sizeof *job, job->cubin, job->type == FT_JOB_CANDIDATE ? job->cubin_size : 0);
  if (!rc) rc = recv_msg(r->fd, MSG_RESULT, &m, sizeof m, NULL, NULL, ft__now_s() + r->job_timeout_s);
  if (rc) {
    died(r, rc, res);
    return FT_OK;
  }
  *res = m.res;
  res->message[sizeof res->message - 1] = '\0';
  if ((unsigned)res->status >= FT_RESULT_STATUS_COUNT) { /* never from our worker; kept out of the database */
    res->status = FT_RESULT_LAUNCH_ERROR;
    snprintf(res->message, sizeof res->message, "worker sent an unknown result status");
  }
  res->describe[sizeof res->describe - 1] = '\0';
  if (res->context_lost) worker_kill(r, 0); /* it exits by itself; reap it */
  return FT_OK;
}

int ft_runner_isolated(const ft_runner *r) { return r->local == NULL; }
int ft_runner_restarts(const ft_runner *r) { return r->restarts; }

void ft_runner_stop(ft_runner *r) {
  if (!r) return;
  engine_close(r->local);
  worker_kill(r, 0);
  free(r->exe);
  free(r);
}
