/* The runner (runner.h), on the tuner's side: a worker process started, supervised (a job past
 * its time is killed, a dead worker replaced) and spoken to (runner_msg.h), or the engine
 * (runner_engine.h) in this process. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
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

#include "runner_engine.h"
#include "runner_msg.h"

struct ft_runner {
  ft_engine *local;               /* in-process mode */
  const ft_tune_problem *problem; /* in-process mode: what prepare prepares */
  uint64_t seed;
  char *exe;                      /* worker mode */
  setup_msg setup;                /* what every worker of this runner is started with */
  double job_timeout_s;
  double deadline;                /* of the worker's start, DEVICE and HELLO both */
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
  int rc = ft_wire_send(r->fd, MSG_SETUP, &r->setup, sizeof r->setup, NULL, 0);
  if (!rc) rc = ft_wire_recv(r->fd, MSG_DEVICE, &d, sizeof d, NULL, NULL, r->deadline);
  if (rc || d.st.status != FT_OK) return start_failed(r, rc, &d.st, err);
  d.dev.arch[sizeof d.dev.arch - 1] = '\0';
  *dev = d.dev;
  return FT_OK;
}

/* Waits until the started worker's data is ready. */
static ft_status worker_ready(ft_runner *r, ft_runner_ready *ready, ft_err *err) {
  hello_msg h;
  const int rc = ft_wire_recv(r->fd, MSG_HELLO, &h, sizeof h, NULL, NULL, r->deadline);
  if (rc || h.st.status != FT_OK) return start_failed(r, rc, &h.st, err);
  *ready = h.ready;
  return FT_OK;
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
  if (o->worker_exe && access(o->worker_exe, X_OK) != 0) {
    /* Named, but not there: an error, never a quiet fall back to running candidates in here. */
    const int e = errno;
    st = ft__fail(err, FT_ERR_IO,
                  "worker executable %s cannot be run (%s); the worker is ft_tune_options.worker_exe, else "
                  "$FUSEDTUNE_WORKER, else fusedtune-worker found from the library's folder: %s",
                  o->worker_exe, strerror(e), ft_default_worker_where());
  } else if (o->worker_exe) {
    r->exe = ft__strdup(o->worker_exe);
    st = r->exe ? worker_spawn(r, dev, err) : ft__fail(err, FT_ERR_NOMEM, "out of memory");
  } else {
    st = ft_engine_open(o->device, o->flush_l2, &r->local, dev, err);
  }
  if (st != FT_OK) {
    ft_runner_stop(r);
    return st;
  }
  *out = r;
  return FT_OK;
}

ft_status ft_runner_prepare(ft_runner *r, ft_runner_ready *ready, ft_err *err) {
  if (r->local) return ft_engine_prepare(r->local, r->problem, r->seed, ready, err);
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
    ft_engine_run(r->local, job, res);
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
  int rc = ft_wire_send(r->fd, MSG_JOB, job, sizeof *job, job->cubin, job->type == FT_JOB_CANDIDATE ? job->cubin_size : 0);
  if (!rc) rc = ft_wire_recv(r->fd, MSG_RESULT, &m, sizeof m, NULL, NULL, ft__now_s() + r->job_timeout_s);
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
  ft_engine_close(r->local);
  worker_kill(r, 0);
  free(r->exe);
  free(r);
}
