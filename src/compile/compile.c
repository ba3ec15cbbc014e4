/* NVRTC compilation to cubin: one source, or many on a pthread pool with the database as cubin
 * cache and identical sources compiled once. GPU-free. */
/* sysconf(_SC_NPROCESSORS_ONLN) and pthreads are POSIX. */
#define _POSIX_C_SOURCE 200809L

#include "compile.h"

#include "checks.h"
#include "kernel_abi.h"
#include "parallel.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fp32 math as the float64 reference expects: contraction to FMA allowed, IEEE division and
 * square root, denormals kept. -default-device lets ft_math.cuh helpers omit __device__. */
#define FT_OPTS_TAIL FT_NVRTC_OPTIONS
#define FT_OPTS(sm) {sm, "--gpu-architecture=" sm FT_OPTS_TAIL}

/* Static strings so the options can serve as a cache key from any thread. */
/* sm_90a (wgmma, TMA: the tensor-core family) compiles with ptxas -v, so that spills and
 * serialized wgmma show in the log and reject the candidate (ft__compile_rejection). */
static const char *const k_options[][2] = {
    FT_OPTS("sm_70"),  FT_OPTS("sm_75"),   FT_OPTS("sm_80"),  FT_OPTS("sm_86"),
    FT_OPTS("sm_87"),  FT_OPTS("sm_89"),   FT_OPTS("sm_90"),
    {"sm_90a", "--gpu-architecture=sm_90a" FT_OPTS_TAIL " --ptxas-options=-v"},
    FT_OPTS("sm_100"), FT_OPTS("sm_100a"), FT_OPTS("sm_120"), FT_OPTS("sm_120a"),
};

#define FT_MAX_OPTS 16
#define FT_LOG_HEAD 1500 /* log bytes quoted in an error message */

int ft_nvrtc_version(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 0;
  return major * 1000 + minor * 10;
}

const char *ft_compile_options(const char *arch) {
  if (!arch) return NULL;
  for (size_t i = 0; i < sizeof k_options / sizeof k_options[0]; i++)
    if (strcmp(arch, k_options[i][0]) == 0) return k_options[i][1];
  return NULL;
}

/* Splits the space-separated options (none contains a space) into argv form in buf. */
static int split_options(const char *opts, const char *extra, char *buf, size_t cap,
                         const char *argv[FT_MAX_OPTS]) {
  const int n = snprintf(buf, cap, "%s%s%s", opts, extra ? " " : "", extra ? extra : "");
  if (n < 0 || (size_t)n >= cap) return -1;
  int argc = 0;
  for (char *tok = strtok(buf, " "); tok && argc < FT_MAX_OPTS; tok = strtok(NULL, " "))
    argv[argc++] = tok;
  return argc;
}

/* The program log, malloc'd, or NULL when empty (NVRTC reports a lone NUL then). */
static char *program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return NULL;
  char *log = malloc(size);
  if (!log) return NULL;
  if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
    free(log);
    return NULL;
  }
  return log;
}

static ft_status take_cubin(nvrtcProgram prog, void **cubin, size_t *size, ft_err *err) {
  size_t n = 0;
  nvrtcResult r = nvrtcGetCUBINSize(prog, &n);
  if (r != NVRTC_SUCCESS) return ft_nvrtc_fail(err, r, "nvrtcGetCUBINSize");
  if (n == 0) return ft__fail(err, FT_ERR_COMPILE, "NVRTC produced no cubin (virtual architecture?)");
  char *buf = malloc(n);
  if (!buf) return ft__fail(err, FT_ERR_NOMEM, "compile: out of memory for a %zu-byte cubin", n);
  r = nvrtcGetCUBIN(prog, buf);
  if (r != NVRTC_SUCCESS) {
    free(buf);
    return ft_nvrtc_fail(err, r, "nvrtcGetCUBIN");
  }
  *cubin = buf;
  *size = n;
  return FT_OK;
}

/* Compiles src with the options of arch plus extra (may be NULL). The log is returned whether
 * the compile succeeded (warnings, ptxas -v) or not. */
static ft_status compile_with(const char *src, const char *arch, const char *extra, void **cubin,
                              size_t *size, char **log, ft_err *err) {
  const char *opts = ft_compile_options(arch);
  if (!opts) return ft__fail(err, FT_ERR_INVALID_ARG, "compile: unknown architecture \"%.32s\"", arch ? arch : "(null)");
  char buf[512];
  const char *argv[FT_MAX_OPTS];
  const int argc = split_options(opts, extra, buf, sizeof buf, argv);
  if (argc < 0) return ft__fail(err, FT_ERR_INVALID_ARG, "compile: options too long");

  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, "fusedtune.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return ft_nvrtc_fail(err, r, "nvrtcCreateProgram");
  ft_status s = FT_OK;
  r = nvrtcCompileProgram(prog, argc, argv);
  char *text = program_log(prog);
  if (r != NVRTC_SUCCESS) {
    /* One line: a message shows no control character (ft__printable would make each a '?'). */
    for (char *c = text; c && *c; c++)
      if (*c == '\n' || *c == '\t') *c = ' ';
    s = ft__fail(err, FT_ERR_COMPILE, "NVRTC compile failed (%s): %.*s", nvrtcGetErrorString(r),
                 FT_LOG_HEAD, text ? text : "(no log)");
  } else if (cubin) {
    char why[256];
    s = ft__compile_rejection(text, why, sizeof why) ? ft__fail(err, FT_ERR_COMPILE, "rejected: %s", why)
                                                      : take_cubin(prog, cubin, size, err);
  }
  r = nvrtcDestroyProgram(&prog);
  if (s == FT_OK && r != NVRTC_SUCCESS) s = ft_nvrtc_fail(err, r, "nvrtcDestroyProgram");
  if (s != FT_OK && cubin && *cubin) {
    free(*cubin);
    *cubin = NULL;
    *size = 0;
  }
  if (log)
    *log = text;
  else
    free(text);
  return s;
}

int ft__compile_rejection(const char *log, char *why, size_t whylen) {
  if (!log) return 0;
  /* C7514 comes as "ptxas info", not as a warning: accumulator registers read while their wgmma
   * may still run (the code of a run-time branch inside a k loop). */
  static const char *const serialized[] = {"C7515", "C7514", "C7511", "C7508", "C7509", "C7510"};
  for (size_t i = 0; i < sizeof serialized / sizeof serialized[0]; i++) {
    const char *w = strstr(log, serialized[i]);
    if (w) {
      const char *e = strchr(w, '\n');
      snprintf(why, whylen, "ptxas serialized wgmma (%.*s)", (int)(e ? e - w : 160), w);
      return 1;
    }
  }
  for (const char *p = strstr(log, "bytes spill stores"); p; p = strstr(p + 1, "bytes spill stores")) {
    /* "N bytes stack frame, S bytes spill stores, L bytes spill loads" */
    const char *q = p;
    while (q > log && q[-1] == ' ') q--;
    while (q > log && q[-1] >= '0' && q[-1] <= '9') q--;
    const long stores = strtol(q, NULL, 10);
    const char *l = strstr(p, "bytes spill loads");
    const char *ql = l;
    while (ql && ql > p && ql[-1] == ' ') ql--;
    while (ql && ql > p && ql[-1] >= '0' && ql[-1] <= '9') ql--;
    const long loads = ql ? strtol(ql, NULL, 10) : 0;
    if (stores > 0 || loads > 0) {
      snprintf(why, whylen, "ptxas spilled %ld bytes (stores) and %ld bytes (loads) to local memory", stores, loads);
      return 1;
    }
  }
  return 0;
}

ft_status ft_compile_one(const char *src, const char *arch, void **cubin, size_t *size, char **log,
                         ft_err *err) {
  if (log) *log = NULL;
  if (!src || !arch || !cubin || !size) return ft__fail(err, FT_ERR_INVALID_ARG, "compile: NULL argument");
  *cubin = NULL;
  *size = 0;
  return compile_with(src, arch, NULL, cubin, size, log, err);
}

/* ptxas reports, per entry: "Compiling entry function 'K' for 'sm_90'", "Function properties
 * for K", "S bytes stack frame, SS bytes spill stores, SL bytes spill loads", "Used R registers". */
static int parse_usage(const char *log, const char *kernel, ft_kernel_usage *u) {
  char marker[96];
  snprintf(marker, sizeof marker, "Compiling entry function '%s'", kernel);
  const char *p = log ? strstr(log, marker) : NULL;
  if (!p) return 0;
  const char *frame = strstr(p, "bytes stack frame");
  const char *used = strstr(p, "Used ");
  if (!frame || !used) return 0;
  while (frame > p && frame[-1] != '.' && frame[-1] != '\n') frame--;
  if (sscanf(frame, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &u->stack,
             &u->spill_stores, &u->spill_loads) != 3)
    return 0;
  return sscanf(used, "Used %d registers", &u->regs) == 1;
}

ft_status ft_compile_usage(const char *src, const char *arch, const char *kernel,
                           ft_kernel_usage *out, ft_err *err) {
  if (!src || !arch || !kernel || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "compile: NULL argument");
  memset(out, 0, sizeof *out);
  char *log = NULL;
  ft_status s = compile_with(src, arch, "--ptxas-options=-v", NULL, NULL, &log, err);
  if (s == FT_OK && !parse_usage(log, kernel, out))
    s = ft__fail(err, FT_ERR_COMPILE, "compile: no ptxas usage line for %s", kernel);
  free(log);
  return s;
}

/* ------------------------------------------------------------------------------------------ */
/* The pool. Each worker takes the next job index under a mutex; jobs are independent, and
 * NVRTC is thread-safe for distinct programs. */

typedef struct pool {
  ft_compile_job *jobs;
  const int *todo; /* indices of the jobs to compile */
  int ntodo;
  const char *arch;
  pthread_mutex_t mu;
  int done;
  ft_compile_progress_fn progress; /* may be NULL */
  void *user;
} pool;

/* The job's compile target: the call's architecture plus the job's suffix ("sm_90" + "a"),
 * unless the architecture names it already. */
static const char *job_arch(const ft_compile_job *job, const char *arch, char buf[24]) {
  const size_t n = arch ? strlen(arch) : 0, sn = job->arch_suffix ? strlen(job->arch_suffix) : 0;
  if (sn == 0 || (n >= sn && strcmp(arch + n - sn, job->arch_suffix) == 0)) return arch;
  snprintf(buf, 24, "%.15s%.7s", arch, job->arch_suffix);
  return buf;
}


void ft_compile_job_run(ft_compile_job *job, const char *arch) {
  ft_err e;
  ft__err_clear(&e);
  char *log = NULL, tb[24];
  const double t0 = ft__now_s();
  job->status = compile_with(job->src, job_arch(job, arch, tb), NULL, &job->cubin, &job->cubin_size, &log, &e);
  if (job->status != FT_OK && job->status != FT_ERR_COMPILE) {
    /* Out of memory and the like still mark the job failed, with the reason as its log. */
    free(log);
    log = ft__strdup(e.msg);
    job->status = FT_ERR_COMPILE;
  } else if (job->status != FT_OK && log && !strncmp(e.msg, "rejected: ", 10)) {
    /* A rejected compile's reason first ("rejected: ptxas spilled ..."), then ptxas's log:
     * whoever prints the log's head shows why, not ptxas's first info lines. */
    char *both = malloc(strlen(e.msg) + strlen(log) + 2);
    if (both) sprintf(both, "%s\n%s", e.msg, log);
    free(log);
    log = both ? both : ft__strdup(e.msg);
  }
  job->log = log;
  job->ran = 1;
  job->seconds = ft__now_s() - t0;
}

/* Job todo[chunk] (one chunk per job of the pool). */
static void compile_chunk(void *user, int chunk, size_t begin, size_t end) {
  (void)begin, (void)end;
  pool *p = user;
  ft_compile_job_run(&p->jobs[p->todo[chunk]], p->arch);
  /* Under the mutex: the callback is never entered by two threads at once. */
  pthread_mutex_lock(&p->mu);
  p->done++;
  if (p->progress) p->progress(p->user, p->done, p->ntodo);
  pthread_mutex_unlock(&p->mu);
}

/* Compile threads: as asked, else one per online core. */
static int worker_count(int nthreads) {
  if (nthreads > 0) return nthreads; /* ft_parallel_chunks caps it at the jobs and its maximum */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (int)cores : 1;
}

typedef struct hash_idx {
  const char *hash;
  int idx;
} hash_idx;

static int cmp_hash_idx(const void *a, const void *b) {
  const hash_idx *x = a, *y = b;
  const int c = strcmp(x->hash, y->hash);
  return c ? c : x->idx - y->idx;
}

/* primary[i]: the job whose compilation job i shares (itself when first of its hash), so
 * identical sources (the same variant and epilogue for several shapes) compile once. */
static ft_status find_duplicates(const ft_compile_job *jobs, int n, int *primary, ft_err *err) {
  hash_idx *order = malloc((size_t)n * sizeof *order);
  if (!order) return ft__fail(err, FT_ERR_NOMEM, "compile: out of memory");
  for (int i = 0; i < n; i++) order[i] = (hash_idx){jobs[i].hash, i};
  qsort(order, (size_t)n, sizeof *order, cmp_hash_idx);
  for (int i = 0; i < n; i++) {
    const int j = order[i].idx;
    primary[j] = (i > 0 && strcmp(order[i - 1].hash, order[i].hash) == 0) ? primary[order[i - 1].idx] : j;
  }
  free(order);
  return FT_OK;
}

static ft_status copy_result(ft_compile_job *dst, const ft_compile_job *src, ft_err *err) {
  dst->status = src->status;
  dst->cached = src->cached;
  if (src->cubin) {
    dst->cubin = malloc(src->cubin_size);
    if (!dst->cubin) return ft__fail(err, FT_ERR_NOMEM, "compile: out of memory");
    memcpy(dst->cubin, src->cubin, src->cubin_size);
    dst->cubin_size = src->cubin_size;
  }
  if (src->log && !(dst->log = ft__strdup(src->log))) return ft__fail(err, FT_ERR_NOMEM, "compile: out of memory");
  return FT_OK;
}

/* Cache lookups on the calling thread (the database handle is not shared across threads). */
static ft_status lookup_cached(ft_db *db, const char *arch, ft_compile_job *jobs, const int *primary,
                               int n, ft_err *err) {
  const int ver = ft_nvrtc_version();
  for (int i = 0; i < n; i++) {
    if (primary[i] != i) continue;
    char tb[24];
    const char *target = job_arch(&jobs[i], arch, tb);
    ft_status s = ft_db_cubin_get(db, jobs[i].hash, target, ver, ft_compile_options(target), &jobs[i].cubin,
                                  &jobs[i].cubin_size, err);
    if (s == FT_OK) {
      jobs[i].cached = 1;
      jobs[i].status = FT_OK;
    } else if (s != FT_ERR_NOT_FOUND) {
      return s;
    }
  }
  ft__err_clear(err);
  return FT_OK;
}

/* Stores fresh cubins. A read-only database refuses the write, which is no error of the
 * compile (the cubins in the jobs are good), so the first refusal ends the stores quietly. */
static void store_compiled(ft_db *db, const char *arch, ft_compile_job *jobs, const int *primary,
                           int n) {
  const int ver = ft_nvrtc_version();
  for (int i = 0; i < n; i++) {
    if (primary[i] != i || jobs[i].cached || jobs[i].status != FT_OK) continue;
    ft_err e;
    char tb[24];
    const char *target = job_arch(&jobs[i], arch, tb);
    if (ft_db_cubin_put(db, jobs[i].hash, target, ver, ft_compile_options(target), jobs[i].cubin, jobs[i].cubin_size,
                        &e) != FT_OK)
      return; /* read-only or failing database: the rest would fail the same way */
  }
}

static ft_status check_jobs(const char *arch, ft_compile_job *jobs, int n, ft_err *err) {
  if ((n > 0 && !jobs) || n < 0) return ft__fail(err, FT_ERR_INVALID_ARG, "compile: bad job list");
  if (!ft_compile_options(arch))
    return ft__fail(err, FT_ERR_INVALID_ARG, "compile: unknown architecture \"%.32s\"", arch ? arch : "(null)");
  for (int i = 0; i < n; i++) {
    if (!jobs[i].src || !jobs[i].hash) return ft__fail(err, FT_ERR_INVALID_ARG, "compile: job %d lacks src or hash", i);
    char tb[24];
    if (!ft_compile_options(job_arch(&jobs[i], arch, tb)))
      return ft__fail(err, FT_ERR_INVALID_ARG, "compile: job %d: unknown architecture \"%.32s%.7s\"", i, arch,
                      jobs[i].arch_suffix);
    jobs[i].cubin = NULL;
    jobs[i].cubin_size = 0;
    jobs[i].cached = 0;
    jobs[i].ran = 0;
    jobs[i].status = FT_ERR_COMPILE;
    jobs[i].log = NULL;
  }
  return FT_OK;
}

ft_status ft_compile_many(ft_db *db, const char *arch, ft_compile_job *jobs, int n, int nthreads,
                          ft_err *err) {
  return ft_compile_many_progress(db, arch, jobs, n, nthreads, NULL, NULL, err);
}

ft_status ft_compile_source(ft_db *db, const char *arch, ft_compile_job *job, const char *what, ft_err *err) {
  FT_TRY(ft_compile_many(db, arch, job, 1, 1, err));
  if (job->status != FT_OK)
    return ft__fail(err, FT_ERR_COMPILE, "%s does not compile: %.500s", what, job->log ? job->log : "");
  return FT_OK;
}

ft_status ft_compile_many_progress(ft_db *db, const char *arch, ft_compile_job *jobs, int n, int nthreads,
                                   ft_compile_progress_fn progress, void *user, ft_err *err) {
  FT_TRY(check_jobs(arch, jobs, n, err));
  if (n == 0) return FT_OK;
  int *primary = malloc((size_t)n * 2 * sizeof *primary);
  if (!primary) return ft__fail(err, FT_ERR_NOMEM, "compile: out of memory");
  int *todo = primary + n;
  ft_status s = find_duplicates(jobs, n, primary, err);
  if (s == FT_OK && db) s = lookup_cached(db, arch, jobs, primary, n, err);
  if (s == FT_OK) {
    int ntodo = 0;
    for (int i = 0; i < n; i++)
      if (primary[i] == i && !jobs[i].cached) todo[ntodo++] = i;
    pool p = {jobs, todo, ntodo, arch, PTHREAD_MUTEX_INITIALIZER, 0, progress, user};
    /* Where threads cannot be started, the calling thread compiles the rest. */
    if (ntodo > 0) ft_parallel_chunks((size_t)ntodo, ntodo, worker_count(nthreads), compile_chunk, &p);
    pthread_mutex_destroy(&p.mu);
    if (db) store_compiled(db, arch, jobs, primary, n);
    for (int i = 0; i < n && s == FT_OK; i++)
      if (primary[i] != i) s = copy_result(&jobs[i], &jobs[primary[i]], err);
  }
  free(primary);
  return s;
}

/* Every job its own primary: the cache halves below take distinct jobs. */
static int *identity(int n) {
  int *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  for (int i = 0; p && i < n; i++) p[i] = i;
  return p;
}

ft_status ft_compile_cache_get(ft_db *db, const char *arch, ft_compile_job *jobs, int n, ft_err *err) {
  FT_TRY(check_jobs(arch, jobs, n, err));
  if (n == 0 || !db) return FT_OK;
  int *primary = identity(n);
  if (!primary) return ft__fail(err, FT_ERR_NOMEM, "compile: out of memory");
  ft_status s = lookup_cached(db, arch, jobs, primary, n, err);
  free(primary);
  return s;
}

void ft_compile_cache_put(ft_db *db, const char *arch, ft_compile_job *jobs, int n) {
  int *primary = db && n > 0 ? identity(n) : NULL;
  if (primary) store_compiled(db, arch, jobs, primary, n);
  free(primary);
}

void ft_compile_job_clear(ft_compile_job *job) {
  if (!job) return;
  free(job->cubin);
  free(job->log);
  job->cubin = NULL;
  job->cubin_size = 0;
  job->log = NULL;
}
