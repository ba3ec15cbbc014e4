/* The worker process (`fusedtune-worker __worker FD`, or any executable calling ft_worker_serve):
 * an engine (runner_engine.h) serving the runner's protocol (runner_msg.h) on a socket, so that a
 * faulting or hanging candidate costs the tune one result; and where the library finds the
 * executable that runs it. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner_engine.h"
#include "runner_msg.h"

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
  if (ft_wire_recv(fd, MSG_SETUP, &setup, sizeof setup, NULL, NULL, 0)) return 2;
  setup.epilogue[FT_EP_MAX_TEXT] = '\0';
  ft_err err;
  ft__err_clear(&err);
  device_msg d;
  memset(&d, 0, sizeof d);
  ft_engine *e = NULL;
  ft_status st = ft_engine_open(setup.device, setup.flush_l2, &e, &d.dev, &err);
  status_of(&d.st, st, &err);
  if (ft_wire_send(fd, MSG_DEVICE, &d, sizeof d, NULL, 0) || !e) {
    ft_engine_close(e);
    return st == FT_OK ? 2 : 1;
  }
  hello_msg h;
  memset(&h, 0, sizeof h);
  ft_epilogue *ep = NULL;
  st = ft_ep_parse(setup.epilogue, &ep, &err);
  ft_engine_keep_ep(e, ep);
  const ft_tune_problem p = {.m = setup.m, .n = setup.n, .k = setup.k, .math = (ft_math)setup.math, .ep = ep,
                             .epilogue = setup.epilogue};
  if (st == FT_OK) st = ft_engine_prepare(e, &p, setup.seed, &h.ready, &err);
  status_of(&h.st, st, &err);
  if (ft_wire_send(fd, MSG_HELLO, &h, sizeof h, NULL, 0) || st != FT_OK) {
    ft_engine_close(e);
    return st == FT_OK ? 2 : 1;
  }
  for (;;) {
    ft_runner_job job;
    void *cubin = NULL;
    uint64_t size = 0;
    if (ft_wire_recv(fd, MSG_JOB, &job, sizeof job, &cubin, &size, 0)) break; /* the tuner is done */
    job.cubin = cubin;
    job.cubin_size = size;
    job.kernel[sizeof job.kernel - 1] = job.reduce[sizeof job.reduce - 1] = '\0';
    result_msg m;
    memset(&m, 0, sizeof m);
    ft_engine_run(e, &job, &m.res);
    free(cubin);
    if (ft_wire_send(fd, MSG_RESULT, &m, sizeof m, NULL, 0) || m.res.context_lost) break;
  }
  ft_engine_close(e);
  return 0;
}

/* The worker executable, found from where this library was loaded: the install's
 * (lib/ -> ../libexec/fusedtune/fusedtune-worker, FUSEDTUNE_LIB_TO_WORKER), else a build tree's
 * (beside the library), so an installed tree still finds it after it is moved. worker_path is ""
 * when there is none; worker_looked says where it was looked for (for messages). A name without
 * a slash is a program found on $PATH (the library linked into it): not a place to start from. */
static char worker_path[PATH_MAX];
static char worker_looked[2 * PATH_MAX + 64];

/* dir (absolute, no symbolic links) joined with rel, "." and ".." resolved by name. */
static int join_path(char *out, size_t size, const char *dir, const char *rel) {
  if (snprintf(out, size, "%s", dir) >= (int)size) return 0;
  while (*rel) {
    const size_t n = strcspn(rel, "/");
    if (n == 2 && rel[0] == '.' && rel[1] == '.') {
      char *slash = strrchr(out, '/');
      if (slash) *slash = '\0';
    } else if (n > 0 && !(n == 1 && rel[0] == '.')) {
      size_t len = strlen(out);
      if (len > 0 && out[len - 1] == '/') len--; /* dir "/" */
      if (len + 1 + n >= size) return 0;
      out[len] = '/';
      memcpy(out + len + 1, rel, n);
      out[len + 1 + n] = '\0';
    }
    rel += n;
    if (*rel == '/') rel++;
  }
  if (!out[0]) snprintf(out, size, "/");
  return 1;
}

static void find_worker(void) {
  snprintf(worker_looked, sizeof worker_looked, "none (the library's folder is unknown)");
#if defined(FUSEDTUNE_LIB_TO_WORKER) && defined(FUSEDTUNE_WORKER_NAME)
  Dl_info info;
  char lib[PATH_MAX];
  if (!dladdr(worker_path, &info) || !info.dli_fname || !strchr(info.dli_fname, '/') ||
      !realpath(info.dli_fname, lib))
    return;
  char *slash = strrchr(lib, '/');
  if (!slash) return;
  *slash = '\0';
  static const char *const rel[] = {FUSEDTUNE_LIB_TO_WORKER, FUSEDTUNE_WORKER_NAME};
  char cand[2][PATH_MAX];
  for (int i = 0; i < 2; i++) {
    if (!join_path(cand[i], sizeof cand[i], lib[0] ? lib : "/", rel[i])) {
      cand[i][0] = '\0';
      continue;
    }
    if (access(cand[i], X_OK) == 0) {
      memcpy(worker_path, cand[i], sizeof worker_path);
      return;
    }
  }
  snprintf(worker_looked, sizeof worker_looked, "none at %s (installed) or %s (build tree)", cand[0], cand[1]);
#endif
}

static pthread_once_t worker_once = PTHREAD_ONCE_INIT;

const char *ft_default_worker(void) {
  const char *env = getenv("FUSEDTUNE_WORKER");
  if (env && env[0]) return env;
  pthread_once(&worker_once, find_worker);
  return worker_path[0] ? worker_path : NULL;
}

const char *ft_default_worker_where(void) {
  pthread_once(&worker_once, find_worker);
  return worker_path[0] ? worker_path : worker_looked;
}
