/* The tuner's compile pool (src/compile/compile_pool.c) with NVRTC, no GPU: jobs compile in their order
 * up to the limit and no further, a wait past the limit raises it, failures keep their log, and
 * stopping waits for what runs and leaves the rest untouched. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <stdio.h>
#include <time.h>

#include "compile_pool.h"
#include "ft_test.h"

#define ARCH "sm_90"
#define NJOBS 8

static char g_src[NJOBS][160], g_hash[NJOBS][17];

static void make_jobs(ft_compile_job *jobs, int broken) {
  for (int i = 0; i < NJOBS; i++) {
    snprintf(g_src[i], sizeof g_src[i], "extern \"C\" __global__ void k%d(float *p) { p[threadIdx.x] = %d.0f%s; }\n", i,
             i, i == broken ? " +" : "");
    snprintf(g_hash[i], sizeof g_hash[i], "%016x", (unsigned)(0x1000 + i));
    memset(&jobs[i], 0, sizeof jobs[i]);
    jobs[i].src = g_src[i], jobs[i].hash = g_hash[i], jobs[i].status = FT_ERR_COMPILE;
  }
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_limit_and_order(void) {
  ft_compile_job jobs[NJOBS];
  make_jobs(jobs, -1);
  ft_err e;
  ft_compile_pool *p = NULL;
  ASSERT_OK(ft_compile_pool_start(jobs, NJOBS, ARCH, 2, 3, &p, &e));
  ASSERT_TRUE(p != NULL);
  if (!p) return;
  ASSERT_EQ_INT(ft_compile_pool_threads(p), 2);
  for (int i = 0; i <= 2; i++) ft_compile_pool_wait(p, i);
  for (int i = 0; i <= 2; i++) ASSERT_TRUE(ft_compile_pool_done(p, i) && jobs[i].status == FT_OK && jobs[i].cubin);
  sleep_ms(300); /* the threads are idle now: nothing at or past the limit may have started */
  ASSERT_EQ_INT(ft_compile_pool_started(p), 3);
  ft_compile_pool_wait(p, 4); /* past the limit: raised, 3 and 4 (in order) compile */
  ASSERT_TRUE(jobs[4].status == FT_OK && jobs[4].cubin && jobs[4].ran);
  ft_compile_pool_wait(p, 3); /* started before 4: done or about to be */
  ASSERT_TRUE(jobs[3].status == FT_OK && jobs[3].cubin);
  sleep_ms(300);
  ASSERT_EQ_INT(ft_compile_pool_started(p), 5); /* 3 and 4, in order, and no further */
  ft_compile_pool_set_limit(p, NJOBS);
  ft_compile_pool_wait(p, NJOBS - 1);
  const double span = ft_compile_pool_stop(p);
  ASSERT_TRUE(span > 0);
  for (int i = 0; i < NJOBS; i++) {
    ASSERT_TRUE(jobs[i].ran && jobs[i].status == FT_OK && jobs[i].cubin && jobs[i].cubin_size > 0);
    ft_compile_job_clear(&jobs[i]);
  }
}

static void test_failure_and_stop(void) {
  ft_compile_job jobs[NJOBS];
  make_jobs(jobs, 1);
  ft_err e;
  ft_compile_pool *p = NULL;
  ASSERT_OK(ft_compile_pool_start(jobs, NJOBS, ARCH, 3, 2, &p, &e));
  if (!p) return;
  ft_compile_pool_wait(p, 1);
  ft_compile_pool_wait(p, 0);
  ASSERT_EQ_INT(jobs[1].status, FT_ERR_COMPILE);
  ASSERT_TRUE(jobs[1].cubin == NULL && jobs[1].log != NULL && jobs[1].ran);
  ASSERT_EQ_INT(jobs[0].status, FT_OK);
  ASSERT_EQ_INT(ft_compile_pool_started(p), 2);
  ASSERT_TRUE(ft_compile_pool_stop(p) > 0);
  for (int i = 2; i < NJOBS; i++) ASSERT_TRUE(!jobs[i].ran && jobs[i].cubin == NULL); /* never started */
  for (int i = 0; i < NJOBS; i++) ft_compile_job_clear(&jobs[i]);
  ASSERT_TRUE(ft_compile_pool_stop(NULL) == 0);
}

static void test_bad_arguments(void) {
  ft_compile_job jobs[NJOBS]; /* make_jobs fills NJOBS (one job here wrote past its end) */
  make_jobs(jobs, -1);
  ft_err e;
  ft_compile_pool *p = (ft_compile_pool *)1;
  ASSERT_EQ_INT(ft_compile_pool_start(jobs, 1, ARCH, 0, 1, &p, &e), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(p == NULL);
  ASSERT_EQ_INT(ft_compile_pool_start(NULL, 2, ARCH, 1, 1, &p, &e), FT_ERR_INVALID_ARG);
  /* No job: a pool that has nothing to do stops at once. */
  ASSERT_OK(ft_compile_pool_start(jobs, 0, ARCH, 4, 0, &p, &e));
  ASSERT_EQ_INT(ft_compile_pool_threads(p), 0);
  ASSERT_TRUE(ft_compile_pool_stop(p) == 0);
}

/* The plan (no database): the listed jobs compile ahead in the plan's order, an unlisted one
 * when taken; every take leaves the job's outputs in the caller's array; the end counts them. */
static void test_plan(void) {
  ft_compile_job jobs[NJOBS];
  make_jobs(jobs, 5);
  ft_err e;
  ft__err_clear(&e);
  const int order[] = {3, 1, 5, 3, 0, 2}; /* 3 twice: compiled once; 4, 6 and 7 unlisted */
  ft_compile_plan *p = NULL;
  ASSERT_OK(ft_compile_plan_start(NULL, ARCH, jobs, NJOBS, order, 6, &p, &e));
  ASSERT_TRUE(p != NULL && ft_compile_plan_threads(p) >= 1);
  ft_compile_plan_expect(p, 2);
  for (int q = 0; q < 4; q++) {
    const int i = (int[]){3, 1, 5, 6}[q];
    ASSERT_OK(ft_compile_plan_take(p, i, &e));
    ASSERT_TRUE(jobs[i].ran);
    ASSERT_EQ_INT(jobs[i].status, i == 5 ? FT_ERR_COMPILE : FT_OK);
    ASSERT_TRUE((jobs[i].cubin != NULL) == (i != 5));
  }
  ASSERT_OK(ft_compile_plan_take(p, 3, &e)); /* taken again: nothing new */
  ASSERT_EQ_INT(ft_compile_plan_take(p, NJOBS, &e), FT_ERR_INTERNAL);
  ft_compile_stats st = {0};
  ft_compile_plan_end(p, &st);
  ASSERT_TRUE(st.n_compiled >= 3 && st.n_compiled <= 5); /* 3, 1, 6 and what ran ahead of 0, 2 */
  ASSERT_EQ_INT(st.n_cached, 0);
  ASSERT_TRUE(st.compile_s > 0 && st.nvrtc_s > 0);
  ASSERT_TRUE(jobs[4].cubin == NULL && !jobs[4].ran && !jobs[7].ran);
  for (int i = 0; i < NJOBS; i++) ft_compile_job_clear(&jobs[i]);
  ft_compile_plan_end(NULL, &st);
}

int main(void) {
  test_plan();
  test_limit_and_order();
  test_failure_and_stop();
  test_bad_arguments();
  return FT_TEST_DONE();
}
