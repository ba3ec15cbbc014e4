/* Which device tunes which problem in `tune --problems`: GPU-free, so tests/cpu/test_schedule.c runs
 * it on a simulated device list. Jobs are taken longest expected first; a device takes the next
 * job when it finishes one (so the least-loaded device gets it, whatever the devices' speeds);
 * the job of a lost device goes back to the queue for another. */
#ifndef FT_BATCH_SCHEDULE_H
#define FT_BATCH_SCHEDULE_H

#include <stdint.h>

#include "fusedtune.h"

typedef enum bs_state { BS_QUEUED, BS_RUNNING, BS_DONE, BS_FAILED } bs_state;

typedef struct bs_job {
  double cost;    /* expected seconds (bs_cost); only the order matters */
  bs_state state;
  int device;     /* the device running it or that ran it last; -1 before */
  int lost;       /* devices lost while running it */
} bs_job;

typedef struct bs_device {
  int alive;      /* 0 once lost: it is given nothing more */
  int job;        /* the job it runs; -1 when idle */
  int n_done;     /* jobs it finished (BS_DONE or BS_FAILED) */
  double busy_s;  /* seconds spent on jobs, the lost one included */
} bs_device;

typedef struct batch_sched {
  int n_jobs, n_devices;
  bs_job *jobs;
  bs_device *devices;
  int *order;     /* job indices, longest expected first */
  int max_lost;   /* a job that lost this many devices fails instead of costing another */
} batch_sched;

/* The expected seconds of tuning one problem: a fixed part (compilation, baselines) plus the
 * timed calls at a rate of the mode's (2 m n k flops). A crude estimate: it orders the problems,
 * the dynamic assignment absorbs its error. */
double bs_cost(int64_t m, int64_t n, int64_t k, ft_math math);

/* n_jobs jobs of the costs given over n_devices idle devices, each alive. Returns 0, or -1 when
 * out of memory (then bs_free is still safe). */
int bs_init(batch_sched *s, const double *costs, int n_jobs, int n_devices);
void bs_free(batch_sched *s);

/* The job idle, alive device dev starts now (marked running on it), or -1 when none is queued
 * (or dev is lost or busy). */
int bs_next(batch_sched *s, int dev);
/* dev finished its job after seconds: done (ok) or failed for a reason of the problem's own. */
void bs_finish(batch_sched *s, int dev, double seconds, int ok);
/* dev's job did not finish and will not on dev (Ctrl-C): back to the queue, dev idle. */
void bs_requeue(batch_sched *s, int dev, double seconds);
/* dev is lost (its process died, its GPU failed): its job, if any, goes back to the queue
 * unless it has now lost max_lost devices (then it fails). Returns that job or -1. */
int bs_lose(batch_sched *s, int dev, double seconds);
/* Jobs queued or running; 0 when the schedule is over. */
int bs_pending(const batch_sched *s);
/* Whether any device is alive. */
int bs_any_alive(const batch_sched *s);

#endif
