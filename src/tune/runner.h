/* Where candidates run. The tuner hands each one (a loaded cubin, its geometry) to a runner,
 * which verifies it against the float64 reference and times it. A runner is either a worker
 * process (isolated: a fault or a hang there costs one candidate and a restart, never the tune)
 * or, when no worker executable is available, this process itself. */
#ifndef FT_RUNNER_H
#define FT_RUNNER_H

#include "baseline.h"
#include "bench.h"
#include "launch.h"
#include "tune_problem.h"

/* How a runner runs: in a worker process of worker_exe (`EXE __worker FD`: fusedtune-worker, the
 * CLI, or any caller of ft_worker_serve) or, with NULL, in this process; on which CUDA device;
 * what seeds the problem's data. */
typedef struct ft_runner_opts {
  const char *worker_exe;
  double job_timeout_s; /* bound on one job of a worker (a hung kernel is killed with it); 0 = 60 s */
  int device;           /* CUDA device ordinal */
  uint64_t seed;
  int flush_l2;
} ft_runner_opts;

/* What the device is, as the runner found it on opening it. */
typedef struct ft_runner_device {
  ft_device_info info;
  ft_device_limits limits;
  char arch[16];
  double gpu_open_s; /* seconds: CUDA context and cuBLAS handles */
} ft_runner_device;

/* What a prepared runner judges results by, and what preparing it took. */
typedef struct ft_runner_ready {
  /* rel_err a result may have and be correct (FT_TOL_FP32 in fp32, else ft_tolerance_rule of
   * cublas_rel_err; in 3xtf32 raised to the fp32 eager chain's error where that is larger,
   * ft_tolerance_with_chain, or for a row sum, mean or logsumexp set from it,
   * ft_tolerance_rows_with_chain), and the error of cuBLAS's GEMM of the mode against x W^T. */
  double tol;
  double cublas_rel_err;
  /* Seconds: the inputs and the float64 references, the tolerance (cuBLAS's GEMM and its check;
   * in 3xtf32 the eager chain's run and check too), the baselines (cuBLASLt plans, the eager
   * chain's kernels compiled by NVRTC). */
  double data_s, tolerance_s, baselines_setup_s;
} ft_runner_ready;

typedef enum ft_job_type { FT_JOB_BASELINE = 1, FT_JOB_CANDIDATE = 2 } ft_job_type;

typedef struct ft_runner_job {
  ft_job_type type;
  int baseline;      /* ft_baseline_kind, FT_JOB_BASELINE */
  ft_variant v;      /* FT_JOB_CANDIDATE */
  ft_launch_geom geom;
  char kernel[32], reduce[32];
  int repeats;
  const void *cubin; /* not sent: follows the job on the wire */
  uint64_t cubin_size;
} ft_runner_job;

typedef struct ft_runner_result {
  ft_result_status status; /* OK, WRONG_RESULT, LAUNCH_ERROR, TIMEOUT, UNAVAILABLE */
  double median_ms, min_ms, iqr_ms;
  int repeats;
  double rel_err, max_abs_err;
  /* The median over the timed rounds of the job's time over cuBLAS's GEMM alone's in the same
   * round (for that GEMM, 1); < 0 where it was not timed so (--flush-l2, no cuBLAS): what the
   * tuner and the stored best rank by. */
  double gemm_ratio;
  int context_lost;  /* the CUDA context is unusable after this job */
  /* Where the job's time went in the worker (seconds): loading the cubin, the poisoned run and
   * its comparison with the float64 reference, the timed calls. */
  double load_s, verify_s, time_s;
  char describe[128];/* baselines: what was run */
  char message[512];
} ft_runner_result;

typedef struct ft_runner ft_runner;

/* A runner opens in two steps, so that work needing only the device (the tuner's compilation)
 * runs while the runner prepares its data:
 * - start opens the device (in a worker process, or here) and says what it is;
 * - prepare builds the inputs, the float64 references, the tolerance and the baselines
 *   (about a second) and says what results are judged by.
 * Jobs run only on a prepared runner. The problem (its epilogue included) must outlive the
 * runner. A failed start leaves *out NULL; after a failed prepare, only ft_runner_stop. */
ft_status ft_runner_start(const ft_tune_problem *p, const ft_runner_opts *o, ft_runner **out, ft_runner_device *dev,
                          ft_err *err);
ft_status ft_runner_prepare(ft_runner *r, ft_runner_ready *ready, ft_err *err);
/* Runs one job. A candidate's own failure is a result, not an error: the return value is
 * non-OK only when the runner itself cannot go on. */
ft_status ft_runner_run(ft_runner *r, const ft_runner_job *job, ft_runner_result *res, ft_err *err);
int ft_runner_isolated(const ft_runner *r);
int ft_runner_restarts(const ft_runner *r);
void ft_runner_stop(ft_runner *r); /* NULL is a no-op */

/* The worker side: serves jobs on socket fd until it closes. Returns the process exit code. */
int ft_worker_main(int fd);

/* The worker executable the library uses by default: $FUSEDTUNE_WORKER, else fusedtune-worker
 * found from the library's folder (installed: ../libexec/fusedtune/; a build tree: beside it),
 * else NULL (in-process). */
const char *ft_default_worker(void);
/* For messages: the fusedtune-worker found from the library's folder, else where it was looked
 * for ("none at PATH (installed) or PATH (build tree)"). */
const char *ft_default_worker_where(void);

#endif
