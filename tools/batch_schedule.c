/* The assignment of problems to devices for `tune --problems` (batch_schedule.h). */
#include "batch_schedule.h"

#include <stdlib.h>

double bs_cost(int64_t m, int64_t n, int64_t k, ft_math math) {
  /* Rough dense rates of one Hopper GPU per mode (flop/s); the same table for every device,
   * since only the order of the problems matters. */
  static const double rate[FT_MATH_COUNT] = {
      [FT_MATH_FP32] = 5e13, [FT_MATH_TF32] = 4e14, [FT_MATH_BF16] = 8e14, [FT_MATH_FP16] = 8e14,
      [FT_MATH_3XTF32] = 1.5e14, [FT_MATH_FP8] = 1.5e15};
  const double fixed_s = 8.0;    /* compilation, baselines, the worker's start */
  const double timed_calls = 2e3; /* candidates x repeats, screening included */
  const double r = (unsigned)math < FT_MATH_COUNT ? rate[math] : rate[FT_MATH_FP32];
  return fixed_s + timed_calls * 2.0 * (double)m * (double)n * (double)k / r;
}

typedef struct keyed {
  double cost;
  int job;
} keyed;

static int longest_first(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->cost != y->cost) return x->cost < y->cost ? 1 : -1;
  return (x->job > y->job) - (x->job < y->job); /* file order among equals */
}

int bs_init(batch_sched *s, const double *costs, int n_jobs, int n_devices) {
  s->n_jobs = n_jobs;
  s->n_devices = n_devices;
  s->max_lost = 2;
  s->jobs = calloc((size_t)n_jobs + 1, sizeof *s->jobs);
  s->devices = calloc((size_t)n_devices + 1, sizeof *s->devices);
  s->order = calloc((size_t)n_jobs + 1, sizeof *s->order);
  keyed *k = calloc((size_t)n_jobs + 1, sizeof *k);
  if (!s->jobs || !s->devices || !s->order || !k) return free(k), -1;
  for (int j = 0; j < n_jobs; j++) {
    s->jobs[j] = (bs_job){costs[j], BS_QUEUED, -1, 0};
    k[j] = (keyed){costs[j], j};
  }
  for (int d = 0; d < n_devices; d++) s->devices[d] = (bs_device){1, -1, 0, 0.0};
  qsort(k, (size_t)n_jobs, sizeof *k, longest_first);
  for (int j = 0; j < n_jobs; j++) s->order[j] = k[j].job;
  free(k);
  return 0;
}

void bs_free(batch_sched *s) {
  free(s->jobs);
  free(s->devices);
  free(s->order);
  s->jobs = NULL;
  s->devices = NULL;
  s->order = NULL;
}

int bs_next(batch_sched *s, int dev) {
  if (dev < 0 || dev >= s->n_devices) return -1;
  bs_device *d = &s->devices[dev];
  if (!d->alive || d->job >= 0) return -1;
  /* From the longest: a job put back by a lost device is taken again in its place. */
  for (int i = 0; i < s->n_jobs; i++) {
    const int j = s->order[i];
    if (s->jobs[j].state != BS_QUEUED) continue;
    s->jobs[j].state = BS_RUNNING;
    s->jobs[j].device = dev;
    d->job = j;
    return j;
  }
  return -1;
}

static int take_job(batch_sched *s, int dev, double seconds) {
  if (dev < 0 || dev >= s->n_devices) return -1;
  bs_device *d = &s->devices[dev];
  const int j = d->job;
  d->job = -1;
  if (seconds > 0) d->busy_s += seconds;
  return j;
}

void bs_finish(batch_sched *s, int dev, double seconds, int ok) {
  const int j = take_job(s, dev, seconds);
  if (j < 0) return;
  s->jobs[j].state = ok ? BS_DONE : BS_FAILED;
  s->devices[dev].n_done++;
}

void bs_requeue(batch_sched *s, int dev, double seconds) {
  const int j = take_job(s, dev, seconds);
  if (j >= 0) s->jobs[j].state = BS_QUEUED;
}

int bs_lose(batch_sched *s, int dev, double seconds) {
  const int j = take_job(s, dev, seconds);
  if (dev >= 0 && dev < s->n_devices) s->devices[dev].alive = 0;
  if (j < 0) return -1;
  s->jobs[j].state = ++s->jobs[j].lost >= s->max_lost ? BS_FAILED : BS_QUEUED;
  return j;
}

int bs_pending(const batch_sched *s) {
  int n = 0;
  for (int j = 0; j < s->n_jobs; j++) n += s->jobs[j].state == BS_QUEUED || s->jobs[j].state == BS_RUNNING;
  return n;
}

int bs_any_alive(const batch_sched *s) {
  for (int d = 0; d < s->n_devices; d++)
    if (s->devices[d].alive) return 1;
  return 0;
}
