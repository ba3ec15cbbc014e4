/* bench: times, in one run, the eager-style baseline, cuBLAS GEMM alone, cuBLAS SGEMM 8192^3
 * (the library's own FFMA peak on this GPU), the stored best and (when that is not a fused GEMM
 * kernel) the fastest fused GEMM stored, and prints the ratios. */
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "best.h"
#include "bench.h"
#include "cli.h"
#include "compile.h"
#include "launch.h"

typedef struct best_call {
  ft_gpu *g;
  ft_pdata *d;
  ft_launchable run;
} best_call;

static ft_status enqueue_best(void *user, cudaStream_t s, ft_err *err) {
  best_call *b = user;
  ft_pdata *d = b->d;
  return ft_launchable_enqueue(&b->run, d->dX, d->dW, d->dY, &d->args, s, err);
}

typedef struct bl_call {
  ft_baselines *bl;
  ft_baseline_kind kind;
} bl_call;

static ft_status enqueue_bl(void *user, cudaStream_t s, ft_err *err) {
  bl_call *c = user;
  return ft_baseline_enqueue(c->bl, c->kind, s, err);
}

static ft_status load_best(ft_db *db, ft_gpu *g, const ft_epilogue *ep, const ft_best *best, best_call *b,
                           ft_err *err) {
  ft_variant v;
  FT_TRY(ft_variant_from_json(best->config_json, &v, err));
  ft_kernel_src src;
  FT_TRY(ft_codegen_variant(&v, ep, &src, err));
  ft_compile_job job = {src.text, src.hash, NULL, 0, 0, FT_OK, NULL, src.arch_suffix};
  ft_status st = ft_compile_many(db, ft_gpu_arch(g), &job, 1, 1, err);
  if (st == FT_OK && job.status != FT_OK) st = ft__fail(err, FT_ERR_COMPILE, "best config does not compile: %.500s", job.log ? job.log : "");
  if (st == FT_OK)
    st = ft_launchable_init(&b->run, g, &v, b->d->m, b->d->n, b->d->k, job.cubin, job.cubin_size, src.kernel,
                            src.reduce, err);
  ft_compile_job_clear(&job);
  ft_kernel_src_free(&src);
  return st;
}

/* The fastest current result of the fused GEMM strategy, when the stored best is another one. */
typedef struct fused_scan {
  const ft_epilogue *ep;
  ft_best *out;
  int found;
} fused_scan;

static int take_fused(void *user, const ft_best *b) {
  fused_scan *f = user;
  if (strcmp(b->strategy, "fused") != 0 || !ft_best_source_is_current(b, f->ep)) return 0;
  *f->out = *b;
  f->found = 1;
  return 1;
}

/* Runs c once on poisoned output and checks it against the float64 reference. */
static ft_status check_call(best_call *c, ft_bench *bench, ft_check *chk, ft_err *err) {
  FT_TRY(ft_pdata_poison(c->d, ft_bench_stream(bench), err));
  FT_TRY(enqueue_best(c, ft_bench_stream(bench), err));
  if (cudaStreamSynchronize(ft_bench_stream(bench)) != cudaSuccess)
    return ft__fail(err, FT_ERR_CUDA, "configuration failed to run");
  return ft_pdata_check(c->d, chk, err);
}

static ft_status time_peak(ft_gpu *g, ft_bench *bench, const ft_bench_opts *o, ft_timing *t, ft_err *err) {
  ft_epilogue *none = NULL;
  FT_TRY(ft_ep_parse("none", &none, err));
  ft_pdata *d = NULL;
  ft_status st = ft_pdata_create(g, 8192, 8192, 8192, none, 1, &d, err);
  ft_baselines *bl = NULL;
  if (st == FT_OK) st = ft_baselines_create(g, NULL, none, d, &bl, err);
  bl_call c = {bl, FT_BL_CUBLAS_GEMM};
  if (st == FT_OK) st = ft_bench_run(bench, enqueue_bl, &c, o, t, err);
  ft_baselines_free(bl);
  ft_pdata_free(d);
  ft_ep_free(none);
  return st;
}

static int parse_bench_args(int argc, char **argv, const char **shape, const char **epi, int *repeats) {
  opt_iter it = {argc, argv, 0, "bench"};
  const char *a;
  int pos;
  while ((a = opt_next(&it, &pos))) {
    size_t nl = strcspn(a, "=");
    long l;
    if (pos) return usage_error("bench", "unexpected argument '%s'", a);
    if (nl == 7 && !strncmp(a, "--shape", 7)) {
      if (!(*shape = opt_value(&it, a))) return EXIT_USAGE;
    } else if (nl == 10 && !strncmp(a, "--epilogue", 10)) {
      if (!(*epi = opt_value(&it, a))) return EXIT_USAGE;
    } else if (nl == 9 && !strncmp(a, "--repeats", 9)) {
      const char *v = opt_value(&it, a);
      if (!v) return EXIT_USAGE;
      if (!parse_int(v, 20, 1000, &l)) return usage_error("bench", "--repeats '%s' must be an integer in 20..1000", v);
      *repeats = (int)l;
    } else {
      return usage_error("bench", "unknown option '%s'", a);
    }
  }
  return 0;
}

int cmd_bench(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv, "usage: fusedtune [--db PATH] bench --shape MxNxK --epilogue E [--repeats N]\n"
                   "Times in one run: the eager-style baseline, cuBLAS GEMM alone, cuBLAS SGEMM 8192^3 (this GPU's\n"
                   "cuBLAS FFMA peak) and the best configuration stored for the problem, and prints the ratios.\n"
                   "When the stored best is not a fused GEMM kernel, the fastest fused GEMM stored is timed too.\n"
                   "Every timed configuration is first checked against float64; exit 1 if one is out of tolerance.\n"
                   "Tune the problem first.\n"))
    return 0;
  const char *shape = NULL, *epi = "none";
  int repeats = 50;
  int rc = parse_bench_args(argc, argv, &shape, &epi, &repeats);
  if (rc) return rc;
  if (!shape) return usage_error("bench", "--shape MxNxK is required");
  ft_problem_key key;
  ft_epilogue *ep = NULL;
  ft_err err;
  rc = cli_problem_key("bench", shape, epi, &key, &ep, &err);
  if (rc) return rc;

  ft_gpu *g = NULL;
  ft_db *db = NULL;
  ft_bench *bench = NULL;
  ft_baselines *bl = NULL;
  best_call b, fb; /* the stored best; the fastest fused GEMM when that is another strategy */
  memset(&b, 0, sizeof b);
  memset(&fb, 0, sizeof fb);
  ft_best best, fbest;
  fused_scan fs = {ep, &fbest, 0};
  ft_device_info dev;
  int64_t dev_id = 0;
  ft_timing t_eager, t_gemm, t_best, t_peak, t_fused = {0};
  ft_check chk = {0, 0, 0}, fchk = {0, 0, 0};
  ft_bench_opts o = {3, repeats, 0, 0};
  ft_status st = ft_gpu_open(0, &g, &err);
  if (st == FT_OK && cli_open_db(c, 0, &db, &err) != FT_OK) { /* a missing database is a failure, not "not tuned" */
    rc = fail_err(&err);
    goto done;
  }
  if (st == FT_OK) st = ft_db_find_device(db, ft_gpu_info(g)->fingerprint, NULL, &dev, &dev_id, &err);
  int stale = 0;
  if (st == FT_OK) st = ft_best_current(db, dev_id, &key, ep, NULL, NULL, &best, &stale, &err);
  if (st == FT_ERR_NOT_FOUND) {
    fprintf(stderr, "fusedtune: nothing tuned for %s, epilogue '%s' on this GPU: run 'fusedtune tune' first\n", shape,
            key.epilogue);
    rc = EXIT_NOT_TUNED;
    goto done;
  }
  if (st == FT_OK) st = ft_pdata_create(g, (int)key.m, (int)key.n, (int)key.k, ep, 0, &b.d, &err);
  b.g = g;
  if (st == FT_OK) st = ft_bench_create(&bench, &err);
  if (st == FT_OK) st = ft_baselines_create(g, db, ep, b.d, &bl, &err);
  if (st == FT_OK) st = load_best(db, g, ep, &best, &b, &err);
  if (st == FT_OK) st = check_call(&b, bench, &chk, &err);
  if (st == FT_OK && strcmp(best.strategy, "fused") != 0) st = ft_db_each_candidate(db, &best, take_fused, &fs, &err);
  fb.g = g, fb.d = b.d;
  if (st == FT_OK && fs.found) {
    /* Best effort: the extra row must not cost the measurements asked for. A fault that breaks
     * the CUDA context still shows in those. */
    ft_err ferr;
    if (load_best(db, g, ep, &fbest, &fb, &ferr) != FT_OK || check_call(&fb, bench, &fchk, &ferr) != FT_OK) {
      fprintf(stderr, "fusedtune: warning: fastest fused GEMM %s skipped: %s\n", fbest.variant, ferr.msg);
      fs.found = 0;
    }
  }
  bl_call ce = {bl, FT_BL_EAGER}, cg = {bl, FT_BL_CUBLAS_GEMM};
  /* Interleave the measured strategies so drift of the shared machine hits them alike. */
  if (st == FT_OK) st = ft_bench_run(bench, enqueue_bl, &ce, &o, &t_eager, &err);
  if (st == FT_OK) st = ft_bench_run(bench, enqueue_bl, &cg, &o, &t_gemm, &err);
  if (st == FT_OK) st = ft_bench_run(bench, enqueue_best, &b, &o, &t_best, &err);
  if (st == FT_OK && fs.found) st = ft_bench_run(bench, enqueue_best, &fb, &o, &t_fused, &err);
  if (st == FT_OK) st = time_peak(g, bench, &o, &t_peak, &err);
  if (st != FT_OK) {
    rc = fail_err(&err);
    goto done;
  }
  double fl = 2.0 * (double)key.m * (double)key.n * (double)key.k, fp = 2.0 * 8192.0 * 8192.0 * 8192.0;
  printf("%s  %s  epilogue %s  fp32, medians of %d\n", ft_gpu_info(g)->name, shape, key.epilogue, repeats);
  printf("  %-48s %10s %9s %12s\n", "strategy", "median_ms", "TFLOP/s", "eager/this");
  printf("  %-48s %10.4f %9.1f %12s\n", "eager-style (cuBLAS + per-op kernels)", t_eager.median_ms,
         fl / t_eager.median_ms / 1e9, "1.000x");
  printf("  %-48s %10.4f %9.1f %11.3fx\n", "cuBLAS GEMM alone (no epilogue)", t_gemm.median_ms, fl / t_gemm.median_ms / 1e9,
         t_eager.median_ms / t_gemm.median_ms);
  printf("  %-48s %10.4f %9.1f %11.3fx\n", best.variant, t_best.median_ms, fl / t_best.median_ms / 1e9,
         t_eager.median_ms / t_best.median_ms);
  if (fs.found)
    printf("  %-48s %10.4f %9.1f %11.3fx  (fastest fused GEMM, rel_err %.2e, %s)\n", fbest.variant,
           t_fused.median_ms, fl / t_fused.median_ms / 1e9, t_eager.median_ms / t_fused.median_ms, fchk.rel_err,
           fchk.bad == 0 && fchk.rel_err <= FT_TOL_FP32 ? "within 1e-5" : "OUT OF TOLERANCE");
  printf("  %-48s %10.4f %9.1f\n", "cuBLAS SGEMM 8192^3 (peak reference)", t_peak.median_ms, fp / t_peak.median_ms / 1e9);
  printf("best vs cuBLAS GEMM alone: %.3fx; best reaches %.0f%% of cuBLAS's 8192^3 rate; rel_err %.2e (%s)\n",
         t_gemm.median_ms / t_best.median_ms, 100.0 * (fl / t_best.median_ms) / (fp / t_peak.median_ms), chk.rel_err,
         chk.bad == 0 && chk.rel_err <= FT_TOL_FP32 ? "within 1e-5" : "OUT OF TOLERANCE");
  if (fs.found)
    printf("fastest fused GEMM vs cuBLAS GEMM alone: %.3fx\n", t_gemm.median_ms / t_fused.median_ms);
  rc = chk.bad == 0 && chk.rel_err <= FT_TOL_FP32 && fchk.bad == 0 && fchk.rel_err <= FT_TOL_FP32 ? 0 : 1;
done:
  ft_launchable_free(&b.run);
  ft_launchable_free(&fb.run);
  ft_baselines_free(bl);
  ft_bench_free(bench);
  ft_pdata_free(b.d);
  ft_db_close(db);
  ft_gpu_close(g);
  ft_ep_free(ep);
  return rc;
}
