/* NVRTC compilation to cubin, in parallel, with the database as cubin cache. GPU-free. */
#ifndef FT_COMPILE_H
#define FT_COMPILE_H

#include "db.h"

/* "major.minor" as an int: major * 1000 + minor * 10 (the cache key's NVRTC version). */
int ft_nvrtc_version(void);

/* The NVRTC options used for arch ("sm_90"), joined by spaces (the cache key's options).
 * fp32 math: no fast-math; precise division and sqrt; FMA contraction allowed. */
const char *ft_compile_options(const char *arch);

typedef struct ft_compile_job {
  const char *src;   /* in: NVRTC source */
  const char *hash;  /* in: its hash (cache key) */
  void *cubin;       /* out: malloc'd cubin, NULL on failure */
  size_t cubin_size;
  int cached;        /* out: 1 if it came from the cache */
  ft_status status;  /* out: FT_OK or FT_ERR_COMPILE */
  char *log;         /* out: malloc'd NVRTC log on failure (or warnings), may be NULL */
  const char *arch_suffix; /* in: appended to the call's arch as the target (ft_kernel_src's), or NULL */
  int ran;           /* out: NVRTC ran for it (ft_compile_job_run), whatever the outcome */
  double seconds;    /* out: NVRTC's wall time for it (ft_compile_job_run) */
} ft_compile_job;

/* Whether a successful compile's log says the code must not run: ptxas serialized wgmma
 * (C7515, C7511, C7508-C7510) or spilled registers; why gets the reason. Compiles whose log
 * does so fail with FT_ERR_COMPILE "rejected: ...". */
int ft__compile_rejection(const char *log, char *why, size_t whylen);

/* Compiles one source. */
ft_status ft_compile_one(const char *src, const char *arch, void **cubin, size_t *size, char **log,
                         ft_err *err);

/* Compiles n jobs on nthreads threads (0 = all cores), taking what db (may be NULL) has cached
 * and storing what it compiled when db is writable. Jobs with the same hash are compiled once
 * (each still gets its own copy of the cubin). The database is used only on the calling thread.
 * The jobs' outputs are overwritten. Per-job failures are in the jobs; the return value is
 * FT_OK unless something other than a compile error went wrong (FT_ERR_INVALID_ARG,
 * FT_ERR_NOMEM, a cache read error). */
ft_status ft_compile_many(ft_db *db, const char *arch, ft_compile_job *jobs, int n, int nthreads,
                          ft_err *err);
/* One job through the cache (db may be NULL): ft_compile_many of one, where a compile failure is
 * an error, FT_ERR_COMPILE "<what> does not compile: <NVRTC's log>". The way a plan or bench gets
 * its cubin. */
ft_status ft_compile_source(ft_db *db, const char *arch, ft_compile_job *job, const char *what, ft_err *err);
/* ft_compile_many that calls progress(user, done, total) after each compilation (total: the
 * distinct uncached sources), from the compiling threads but never two at once. */
typedef void (*ft_compile_progress_fn)(void *user, int done, int total);
ft_status ft_compile_many_progress(ft_db *db, const char *arch, ft_compile_job *jobs, int n, int nthreads,
                                   ft_compile_progress_fn progress, void *user, ft_err *err);
/* The cache halves of ft_compile_many, for a caller that compiles on a thread of its own
 * (ft_compile_many with db NULL there) while the calling thread keeps the database: get marks
 * the jobs db has (cached, status FT_OK, cubin set; the others are reset as ft_compile_many
 * resets them), put stores the jobs compiled fresh (a read-only database quietly takes none). */
ft_status ft_compile_cache_get(ft_db *db, const char *arch, ft_compile_job *jobs, int n, ft_err *err);
void ft_compile_cache_put(ft_db *db, const char *arch, ft_compile_job *jobs, int n);
void ft_compile_job_clear(ft_compile_job *job); /* frees cubin and log */
/* Compiles one job (no cache): sets its cubin, status and log, as ft_compile_many does. */
void ft_compile_job_run(ft_compile_job *job, const char *arch);

/* Resource usage of one kernel as ptxas reports it (a diagnostic compile with
 * --ptxas-options=-v; the options differ, so the cubin is not kept). */
typedef struct ft_kernel_usage {
  int regs;
  int stack, spill_stores, spill_loads; /* bytes */
} ft_kernel_usage;
ft_status ft_compile_usage(const char *src, const char *arch, const char *kernel,
                           ft_kernel_usage *out, ft_err *err);

#endif
