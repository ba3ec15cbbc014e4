/* Tuning: enumerate -> compile (cached) -> verify against float64 -> time -> store every result.
 * The baselines are timed in the same run so speedups are ratios measured side by side. */
#ifndef FT_TUNER_H
#define FT_TUNER_H

#include "db.h"
#include "device.h"
#include "runner.h"

/* What a tune runs (fill it by field name). */
typedef struct ft_tune_req {
  const ft_tune_problem *problem; /* checked, its epilogue parsed (tune_problem.h) */
  const char *search;   /* "fast", "exhaustive", "random", "halving" (src/tune/search.h) */
  double budget_s;      /* bound on the whole tune; what finished is stored */
  int repeats;          /* timed repeats per candidate (>= 20) */
  int retune;           /* measure again what was measured before */
  int flush_l2;
  ft_tune_progress_fn progress; /* NULL: no reports; the library itself never prints */
  void *progress_user;
  uint64_t seed;
  int max_candidates;   /* 0 = no limit (tests use small limits) */
  volatile int *stop;   /* set nonzero (e.g. from a SIGINT handler) to end after the candidate in flight */
  const char *worker_exe; /* runs candidates in `EXE __worker FD` processes; NULL: in this process */
  double job_timeout_s;   /* bound on one candidate in a worker (a hang is killed); 0 = 60 s */
  int device;             /* CUDA device ordinal */
  const struct ft_runner_device *device_known; /* that device as the caller opened it (NULL: unknown
                           * until the worker opens it); given, the candidates are planned before the
                           * worker starts, and a repeat with nothing to measure starts none */
  int prune_ffma;         /* fp32 at fp32 accuracy (ft_tune's default): leave out the FFMA kernels when
                           * the stored 3xtf32 best of the problem is faster than any can be */
} ft_tune_req;

#define FT_TUNE_DEFAULT_BUDGET_S 150.0
#define FT_TUNE_DEFAULT_REPEATS 30

/* One result of the run, as the tune report hands it out (fusedtune_tool.h). */
typedef ft_result_info ft_tune_entry;

#define FT_TUNE_MAX_ENTRIES 8192 /* summary rows kept; every result is stored regardless */

typedef struct ft_tune_summary {
  ft_tune_entry *entries; /* every result of this run, malloc'd */
  int nentries;
  int n_candidates;       /* fused + cublas+epilogue candidates enumerated */
  int n_measured, n_ok, n_wrong, n_compile_error, n_launch_error, n_timeout, n_skipped_known;
  int n_compiled, n_cached;
  double compile_s, total_s;
  ft_tune_phases phases;  /* where total_s went */
  int budget_exhausted;
  int n_early_stopped;    /* fast search: fused candidates left out because they cannot win */
  int n_error_pruned;     /* fast search: fused candidates left out by the error rule (search.h err_rank) */
  int worker_restarts;    /* workers replaced after a fault or a hang */
  double eager_ms;        /* eager baseline of this run */
  double flops;           /* 2 m n k */
  ft_best best;           /* the database's best after the run */
  int has_best;
  char device_name[256];
  char epilogue[4096];
} ft_tune_summary;


/* Runs a tune. The summary owns entries: ft_tune_summary_free(). */
/* Candidates run in worker processes when req->worker_exe is set (see runner.h). */
ft_status ft_tune_run(ft_db *db, const ft_tune_req *req, ft_tune_summary *out, ft_err *err);
void ft_tune_summary_free(ft_tune_summary *s);

/* Test-only hook, compiled into the tests' archive (fusedtune_internal) and into the installed
 * library only with -DFUSEDTUNE_TEST_HOOKS=ON (CMakeLists.txt): FUSEDTUNE_TEST_INJECT, a comma list of "wrong" (a fused
 * candidate whose epilogue is scaled by 1.01), "fault" (a kernel storing out of bounds) and
 * "hang" (a kernel that never returns), adds those candidates; each must be caught and never
 * chosen. Without the option the variable is ignored and ft_tune_test_hooks() is 0. */
#define FT_TEST_INJECT_ENV "FUSEDTUNE_TEST_INJECT"
int ft_tune_test_hooks(void);

#endif
