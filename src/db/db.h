/* The SQLite results database: schema (db/schema.sql, embedded) and migrations, devices,
 * problems, runs, results, derived best, cubin cache, export/import. GPU-free. */
#ifndef FT_DB_H
#define FT_DB_H

#include <stdio.h>

#include "common.h"

typedef struct ft_db ft_db;

#define FT_DB_READONLY 0x1u /* open read-only; never creates, migrates or writes */
#define FT_DB_CREATE 0x2u   /* create the file if missing (otherwise FT_ERR_NOT_FOUND) */

/* The schema version this build writes (PRAGMA user_version). */
int ft_db_schema_version(void);

/* Opens path. A missing file without FT_DB_CREATE -> FT_ERR_NOT_FOUND ("database PATH does not
 * exist") and nothing is created. A file that is not SQLite or not a fusedtune database ->
 * FT_ERR_DB; a newer user_version -> FT_ERR_VERSION, file untouched. A writable open migrates
 * older schemas forward. WAL mode and a busy timeout are set so concurrent writers wait instead
 * of failing. ":memory:" opens a private in-memory database (tests, fuzzing).
 * FT_DB_READONLY on a WAL database whose directory is not writable (no -shm can be made) falls
 * back to reading the file as immutable when its -wal is empty, and refuses otherwise. A
 * FT_DB_READONLY open of a file it may write leaves no -wal or -shm behind once closed (it is
 * opened read-write with PRAGMA query_only; the last connection to close removes them). */
ft_status ft_db_open(const char *path, unsigned flags, ft_db **out, ft_err *err);
void ft_db_close(ft_db *db); /* NULL is a no-op */
/* The path db was opened with (NULL for NULL). */
const char *ft_db_path(const ft_db *db);

/* Deletes the database file at path and its -wal and -shm side files, where they exist (a closed
 * database only; errors ignored: what is missing needs no removing). */
void ft_db_remove_files(const char *path);

/* 1 when the file at path (by identity: any name, a hard or symbolic link) is open through an
 * ft_db of this process, else 0. Thread-safe. */
int ft_db_is_open(const char *path);

/* 1 when db was opened with FT_DB_READONLY (every write function then fails with FT_ERR_DB
 * without touching the file), else 0. NULL counts as read-only. */
int ft_db_readonly(const ft_db *db);

/* The device: fingerprint identifies the silicon; the rest are validators stored with it. */
typedef struct ft_device_info {
  char fingerprint[17];  /* hash of name, compute capability, SM count, memory */
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  int64_t mem_bytes;
  int driver_version;    /* cudaDriverGetVersion */
  int runtime_version;   /* cudaRuntimeGetVersion */
  int nvrtc_version;     /* major * 1000 + minor * 10 */
  int cublas_version;    /* cublasGetProperty, major*10000+minor*100+patch */
} ft_device_info;

ft_status ft_db_upsert_device(ft_db *db, const ft_device_info *dev, int64_t *device_id, ft_err *err);
/* Finds a device by fingerprint, or (when fingerprint is NULL) by exact name. */
ft_status ft_db_find_device(ft_db *db, const char *fingerprint, const char *name,
                            ft_device_info *out, int64_t *device_id, ft_err *err);

/* The one operand layout stored problems have: x row-major, W row-major as nn.Linear keeps it. */
#define FT_DB_LAYOUT "xrow_wrow"

/* The problem key. */
typedef struct ft_problem_key {
  int64_t m, n, k;
  char layout[16];         /* FT_DB_LAYOUT */
  char math[16];           /* ft_math_name: "fp32", "tf32", "bf16", "fp16" */
  char epilogue[4096];     /* canonical epilogue text */
  char epilogue_hash[17];
} ft_problem_key;

/* Fills key for an nn.Linear-layout problem in mode math with the given canonical epilogue and
 * hash. */
void ft_problem_key_set(ft_problem_key *key, int64_t m, int64_t n, int64_t k, ft_math math, const char *epilogue,
                        const char *epilogue_hash);

ft_status ft_db_upsert_problem(ft_db *db, const ft_problem_key *key, int64_t *problem_id, ft_err *err);

/* A tuning session. options_json is free-form JSON of the options used. */
ft_status ft_db_begin_run(ft_db *db, int64_t device_id, const char *options_json, double budget_s,
                          int64_t *run_id, ft_err *err);
ft_status ft_db_end_run(ft_db *db, int64_t run_id, const char *outcome, ft_err *err);

/* One measured candidate. Status strings: "ok", "compile_error", "wrong_result",
 * "launch_error", "timeout". Strategies: "fused", "cublas+epilogue", "eager", "cublas_gemm",
 * "cublaslt". Times in ms; unmeasured values are negative. */
typedef struct ft_result_row {
  int64_t run_id, device_id, problem_id;
  const char *strategy;
  const char *variant;     /* variant name */
  const char *config_json; /* variant config; "{}" for baselines */
  const char *status;
  double median_ms, min_ms, iqr_ms;
  int repeats;
  double rel_err, max_abs_err;
  const char *source_hash; /* "" for baselines */
  const char *message;     /* "" when none */
  /* The median over the timed rounds of this result's time over cuBLAS's GEMM alone's in the
   * same round (for that GEMM itself, 1); <= 0 when it was not timed so: the best ranks by it
   * (FT_DB_RANK). */
  double gemm_ratio;
} ft_result_row;

/* Inserts one result in its own transaction (so a crash loses at most the candidate in flight).
 * best is derived from results and needs no separate update. */
ft_status ft_db_insert_result(ft_db *db, const ft_result_row *row, ft_err *err);

/* The best launchable result (strategy "fused" or "cublas+epilogue", status "ok", lowest rank:
 * median over the cuBLAS GEMM timed beside it, FT_DB_RANK) for a device and problem, plus the
 * eager baseline of the most recent run that measured one (0 if none), at the best's clock
 * (FT_DB_EAGER_AT_BEST). */
typedef struct ft_best {
  int64_t device_id, problem_id;
  ft_problem_key key;
  char device_name[256];
  char strategy[32];
  char variant[128];
  char config_json[512];
  char source_hash[17];
  double median_ms;
  double eager_ms;
  double rel_err, max_abs_err; /* measured against float64 when tuned */
  double gemm_ratio;           /* the best's results.gemm_ratio; 0 when none */
} ft_best;

/* Exact key on device -> FT_OK / FT_ERR_NOT_FOUND. */
ft_status ft_db_best(ft_db *db, int64_t device_id, const ft_problem_key *key, ft_best *out, ft_err *err);

/* Every best for this device and same epilogue hash + math, any shape; the callback returns
 * nonzero to stop. Used by nearest-shape lookup. */
typedef int (*ft_best_cb)(void *user, const ft_best *b);
ft_status ft_db_each_best_for_epilogue(ft_db *db, int64_t device_id, const char *epilogue_hash,
                                       const char *math, ft_best_cb cb, void *user, ft_err *err);
/* Every (device, problem) best in the database, ordered by device fingerprint, then m, n, k.
 * The callbacks may call other ft_db functions but not ft_db_each_best* again (the iteration
 * statement is shared). */
ft_status ft_db_each_best(ft_db *db, ft_best_cb cb, void *user, ft_err *err);

/* Every launchable correct result of best's device and problem, best first (by rank), as ft_best rows
 * (key copied from best, eager_ms at each one's clock as ft_db_best has it); the callback returns nonzero to stop. Used to skip
 * results measured with an older kernel source. */
ft_status ft_db_each_candidate(ft_db *db, const ft_best *best, ft_best_cb cb, void *user, ft_err *err);

/* Whether results already exist for (device, problem, source_hash, config_json, strategy);
 * used by tune to skip what was measured unless --retune. */
ft_status ft_db_has_result(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                           const char *config_json, const char *source_hash, int *found, ft_err *err);
/* The same among the results of runs that timed with graph_calls (runs.options; a run without
 * the key: 0; graph_calls < 0: any), and *best_ms the fastest correct median among them, *best_rank
 * their lowest rank (FT_DB_RANK) (INFINITY: none correct, or none ranked: no gemm_ratio; either may
 * be NULL): a later search counts what an earlier one measured the same way. */
ft_status ft_db_prior_result(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                             const char *config_json, const char *source_hash, int graph_calls, int *found,
                             double *best_ms, double *best_rank, ft_err *err);
/* ft_db_prior_result with *wrong_err (may be NULL): the lowest rel_err of its wrong_result results
 * (INFINITY: none, or none finite), which the search's error rule counts (src/tune/search.h). */
ft_status ft_db_prior_result_ex(ft_db *db, int64_t device_id, int64_t problem_id, const char *strategy,
                                const char *config_json, const char *source_hash, int graph_calls, int *found,
                                double *best_ms, double *best_rank, double *wrong_err, ft_err *err);

/* The cubin cache, keyed by (source hash, arch, nvrtc version, options). get: *data malloc'd,
 * caller frees; FT_ERR_NOT_FOUND on a miss. put: idempotent. */
ft_status ft_db_cubin_get(ft_db *db, const char *source_hash, const char *arch, int nvrtc_version,
                          const char *options, void **data, size_t *size, ft_err *err);
ft_status ft_db_cubin_put(ft_db *db, const char *source_hash, const char *arch, int nvrtc_version,
                          const char *options, const void *data, size_t size, ft_err *err);

/* Every result of the (device, problem) pairs matching filter (NULL: all of them; any_math:
 * filter's math mode ignored), failures included, with their devices and runs, read in one read
 * transaction into *out (the caller's: ft_db_stored_free). Families and params are left empty:
 * the database knows no variants. Problems and devices in ft_stored_load's order. */
struct ft_stored;
ft_status ft_db_load_stored(ft_db *db, const ft_problem_key *filter, int any_math, struct ft_stored **out,
                            ft_err *err);
void ft_db_stored_free(struct ft_stored *s); /* NULL is a no-op */

/* Export the whole database (deterministic order, no local row ids, see docs/FORMAT.md). */
ft_status ft_db_export_json(ft_db *db, FILE *out, int with_cubins, ft_err *err);
ft_status ft_db_export_csv(ft_db *db, FILE *out, ft_err *err);

/* Merge an export (JSON text of len bytes) in one transaction: idempotent (importing twice =
 * once), every measurement kept. A malformed file -> FT_ERR_FORMAT naming the place
 * ("import: results[3].median_ms: expected a number"), database unchanged. */
ft_status ft_db_import_json(ft_db *db, const char *text, size_t len, ft_err *err);

/* Rows an import added (those already present are not counted) and rows the file held. */
typedef struct ft_import_stats {
  int64_t devices, problems, runs, results, cubins;             /* added */
  int64_t devices_in, problems_in, runs_in, results_in, cubins_in; /* in the file */
} ft_import_stats;

/* ft_db_import_json that also reports what was added; stats may be NULL. */
ft_status ft_db_import_json_stats(ft_db *db, const char *text, size_t len, ft_import_stats *stats,
                                  ft_err *err);

#endif
