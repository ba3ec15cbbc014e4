/* tune --problems's scheduling (tools/batch_schedule.c) on simulated devices: longest expected
 * first, a device taking the next job when it finishes, devices of different speeds, a device
 * lost mid-way (its job back in the queue, done elsewhere), every job done exactly once. */
#include <math.h>

#include "../../tools/batch_schedule.h"
#include "ft_test.h"

#define MAXD 8
#define MAXJ 64

typedef struct sim {
  batch_sched s;
  double speed[MAXD];  /* cost units per second */
  double end[MAXD];    /* when the device's job ends (INFINITY: idle) */
  double start[MAXD];
  double lose_at[MAXD]; /* when the device is lost (INFINITY: never) */
  int finished_by[MAXJ];
  int n_finished[MAXJ];
  int start_order[MAXJ], n_started;
  double makespan;
} sim;

static void start_idle(sim *m, double now) {
  for (int d = 0; d < m->s.n_devices; d++) {
    if (m->end[d] < INFINITY || !m->s.devices[d].alive) continue;
    int j = bs_next(&m->s, d);
    if (j < 0) continue;
    m->start_order[m->n_started++] = j;
    m->start[d] = now;
    m->end[d] = now + m->s.jobs[j].cost / m->speed[d];
  }
}

/* Runs the schedule to its end: events in time order, a job finishing or a device lost. */
static void simulate(sim *m, const double *costs, int n_jobs, int n_dev) {
  ASSERT_EQ_INT(bs_init(&m->s, costs, n_jobs, n_dev), 0);
  for (int d = 0; d < n_dev; d++) m->end[d] = INFINITY;
  double now = 0;
  start_idle(m, now);
  for (int guard = 0; bs_pending(&m->s) && guard < 10000; guard++) {
    int dev = -1, lost = 0;
    double t = INFINITY;
    for (int d = 0; d < n_dev; d++) {
      if (!m->s.devices[d].alive) continue;
      if (m->lose_at[d] < t && m->lose_at[d] < m->end[d]) t = m->lose_at[d], dev = d, lost = 1;
      if (m->end[d] < t) t = m->end[d], dev = d, lost = 0;
    }
    if (dev < 0) break; /* nothing runs, nothing can: every device lost */
    now = t;
    if (lost) {
      bs_lose(&m->s, dev, now - m->start[dev]);
      m->lose_at[dev] = INFINITY;
    } else {
      const int j = m->s.devices[dev].job;
      m->finished_by[j] = dev;
      m->n_finished[j]++;
      bs_finish(&m->s, dev, now - m->start[dev], 1);
      if (now > m->makespan) m->makespan = now;
    }
    m->end[dev] = INFINITY;
    start_idle(m, now);
  }
}

static sim *new_sim(int n_dev) {
  static sim m;
  memset(&m, 0, sizeof m);
  for (int d = 0; d < n_dev; d++) m.speed[d] = 1, m.lose_at[d] = INFINITY;
  return &m;
}

static void test_cost(void) {
  /* more work costs more; the mode's rate counts; every estimate has the fixed part */
  ASSERT_TRUE(bs_cost(4096, 4096, 4096, FT_MATH_FP32) > bs_cost(1024, 4096, 4096, FT_MATH_FP32));
  ASSERT_TRUE(bs_cost(4096, 4096, 4096, FT_MATH_FP32) > bs_cost(4096, 4096, 4096, FT_MATH_BF16));
  ASSERT_TRUE(bs_cost(1, 1, 1, FT_MATH_BF16) > 1.0);
}

/* One device: every job in order of expected cost, longest first, each once. */
static void test_order(void) {
  const double costs[] = {3, 9, 1, 9, 5};
  sim *m = new_sim(1);
  simulate(m, costs, 5, 1);
  const int want[] = {1, 3, 4, 0, 2}; /* ties keep file order */
  for (int i = 0; i < 5; i++) ASSERT_EQ_INT(m->start_order[i], want[i]);
  for (int j = 0; j < 5; j++) ASSERT_EQ_INT(m->n_finished[j], 1);
  ASSERT_NEAR(m->makespan, 27.0, 1e-9);
  ASSERT_NEAR(m->s.devices[0].busy_s, 27.0, 1e-9);
  ASSERT_EQ_INT(m->s.devices[0].n_done, 5);
  ASSERT_EQ_INT(bs_next(&m->s, 0), -1);
  bs_free(&m->s);
}

/* Four devices of different speeds: dynamic assignment gives the fast ones more, the whole
 * stays within the list-scheduling bound (total / speed sum + the longest on the slowest). */
static void test_speeds(void) {
  double costs[40], total = 0, longest = 0;
  for (int j = 0; j < 40; j++) {
    costs[j] = 1 + (j * 37 % 17);
    total += costs[j];
    if (costs[j] > longest) longest = costs[j];
  }
  sim *m = new_sim(4);
  m->speed[0] = 4;
  m->speed[1] = 2;
  m->speed[2] = 1;
  m->speed[3] = 1;
  simulate(m, costs, 40, 4);
  for (int j = 0; j < 40; j++) ASSERT_EQ_INT(m->n_finished[j], 1);
  int total_done = 0;
  for (int d = 0; d < 4; d++) total_done += m->s.devices[d].n_done;
  ASSERT_EQ_INT(total_done, 40);
  ASSERT_TRUE(m->s.devices[0].n_done > m->s.devices[2].n_done);
  ASSERT_TRUE(m->s.devices[0].n_done > m->s.devices[3].n_done);
  const double bound = total / 8.0 + longest / 1.0;
  if (!(m->makespan <= bound)) FT_FAIL_AT_("makespan %.2f over the bound %.2f", m->makespan, bound);
  /* the first four started are the four longest: two of 17, two of 16 */
  for (int i = 0; i < 4; i++) ASSERT_NEAR(costs[m->start_order[i]], i < 2 ? 17.0 : 16.0, 1e-9);
  bs_free(&m->s);
}

/* A device lost mid-way: its job goes back to the queue and is done elsewhere, once; the lost
 * device is given nothing more and its time is counted. */
static void test_lost_device(void) {
  const double costs[] = {10, 8, 6, 4, 2, 1};
  sim *m = new_sim(3);
  m->lose_at[1] = 3.0; /* while it runs job 1 (cost 8) */
  simulate(m, costs, 6, 3);
  ASSERT_EQ_INT(m->s.devices[1].alive, 0);
  ASSERT_EQ_INT(m->s.devices[1].n_done, 0);
  ASSERT_NEAR(m->s.devices[1].busy_s, 3.0, 1e-9);
  for (int j = 0; j < 6; j++) {
    ASSERT_EQ_INT(m->n_finished[j], 1);
    ASSERT_TRUE(m->finished_by[j] != 1);
    ASSERT_EQ_INT(m->s.jobs[j].state, BS_DONE);
  }
  ASSERT_EQ_INT(m->s.jobs[1].lost, 1);
  /* the job put back is the longest queued: the next device free takes it first (device 2,
   * free at 6, before the shorter ones) */
  ASSERT_EQ_INT(m->start_order[3], 1);
  ASSERT_EQ_INT(bs_next(&m->s, 1), -1);
  ASSERT_EQ_INT(bs_pending(&m->s), 0);
  bs_free(&m->s);
}

/* A job that loses two devices fails rather than take a third; with every device lost the
 * rest stays queued, and bs_any_alive says so. */
static void test_poison_and_all_lost(void) {
  const double costs[] = {5, 5, 5};
  sim *m = new_sim(2);
  m->lose_at[0] = 1.0;
  m->lose_at[1] = 2.0;
  simulate(m, costs, 3, 2);
  ASSERT_EQ_INT(bs_any_alive(&m->s), 0);
  int queued = 0, failed = 0, done = 0;
  for (int j = 0; j < 3; j++) {
    queued += m->s.jobs[j].state == BS_QUEUED;
    failed += m->s.jobs[j].state == BS_FAILED;
    done += m->s.jobs[j].state == BS_DONE;
  }
  ASSERT_EQ_INT(done, 0);
  ASSERT_EQ_INT(failed + queued, 3);
  ASSERT_EQ_INT(bs_pending(&m->s), queued);
  bs_free(&m->s);

  /* job 0 kills each device it runs on: after two it fails; job 1 is done by the third */
  batch_sched s;
  const double c2[] = {9, 1};
  ASSERT_EQ_INT(bs_init(&s, c2, 2, 3), 0);
  ASSERT_EQ_INT(bs_next(&s, 0), 0);
  ASSERT_EQ_INT(bs_next(&s, 1), 1);
  ASSERT_EQ_INT(bs_lose(&s, 0, 1.0), 0);
  ASSERT_EQ_INT(s.jobs[0].state, BS_QUEUED);
  ASSERT_EQ_INT(bs_next(&s, 2), 0);
  ASSERT_EQ_INT(bs_lose(&s, 2, 1.0), 0);
  ASSERT_EQ_INT(s.jobs[0].state, BS_FAILED);
  bs_finish(&s, 1, 1.0, 1);
  ASSERT_EQ_INT(bs_next(&s, 1), -1);
  ASSERT_EQ_INT(bs_pending(&s), 0);
  ASSERT_EQ_INT(bs_any_alive(&s), 1);
  /* a busy device is given nothing; a lost one neither; out-of-range ones are ignored */
  ASSERT_EQ_INT(bs_next(&s, 0), -1);
  ASSERT_EQ_INT(bs_next(&s, 7), -1);
  bs_finish(&s, 7, 1.0, 1);
  bs_free(&s);
}

/* Ctrl-C: the job in flight goes back to the queue (not failed, not lost); the device stays. */
static void test_requeue(void) {
  batch_sched s;
  const double c[] = {2, 1};
  ASSERT_EQ_INT(bs_init(&s, c, 2, 1), 0);
  ASSERT_EQ_INT(bs_next(&s, 0), 0);
  bs_requeue(&s, 0, 0.5);
  ASSERT_EQ_INT(s.jobs[0].state, BS_QUEUED);
  ASSERT_EQ_INT(s.jobs[0].lost, 0);
  ASSERT_EQ_INT(s.devices[0].alive, 1);
  ASSERT_EQ_INT(bs_pending(&s), 2);
  ASSERT_EQ_INT(bs_next(&s, 0), 0); /* a continued run takes it first again */
  bs_finish(&s, 0, 1.0, 0);
  ASSERT_EQ_INT(s.jobs[0].state, BS_FAILED);
  ASSERT_NEAR(s.devices[0].busy_s, 1.5, 1e-9);
  bs_free(&s);
}

int main(void) {
  test_cost();
  test_order();
  test_speeds();
  test_lost_device();
  test_poison_and_all_lost();
  test_requeue();
  return FT_TEST_DONE();
}
