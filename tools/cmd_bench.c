/* bench: times, in one run and one math mode, the eager-style baseline, cuBLAS GEMM alone,
 * cuBLAS's GEMM of the mode at 8192^3 (the mode's peak reference on this GPU), the stored best
 * and (when that is not a fused GEMM kernel) the fastest fused GEMM stored, and prints the
 * ratios. The measuring is the library's
 * (ft_bench_problem); this file parses and prints. */
#include <string.h>

#include "cli.h"

static int parse_bench_args(int argc, char **argv, const char **shape, const char **epi, const char **math,
                            int *repeats) {
  opt_iter it = {argc, argv, 0, "bench"};
  const char *a;
  int pos;
  static const char *const names[] = {"--shape", "--epilogue", "--math", "--repeats"};
  unsigned seen = 0;
  while ((a = opt_next(&it, &pos))) {
    size_t nl = strcspn(a, "=");
    long l;
    if (pos) return usage_error("bench", "unexpected argument '%s'", a);
    if (opt_once("bench", names, sizeof names / sizeof names[0], &seen, a)) return EXIT_USAGE;
    if (nl == 7 && !strncmp(a, "--shape", 7)) {
      if (!(*shape = opt_value(&it, a))) return EXIT_USAGE;
    } else if (nl == 10 && !strncmp(a, "--epilogue", 10)) {
      if (!(*epi = opt_value(&it, a))) return EXIT_USAGE;
    } else if (nl == 6 && !strncmp(a, "--math", 6)) {
      if (!(*math = opt_value(&it, a))) return EXIT_USAGE;
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
  if (wants_help(argc, argv, "usage: fusedtune [--db PATH] bench --shape MxNxK --epilogue E [--math M] [--repeats N]\n"
                   "Times in one run, in math mode M (fp32, tf32, bf16, fp16, 3xtf32, fp8; default fp32, served at fp32\n"
                   "accuracy: by 3xtf32 where its stored result is faster, as query): the eager-style\n"
                   "baseline, cuBLAS GEMM alone, cuBLAS's GEMM of that mode at 8192^3 (the mode's peak reference\n"
                   "on this GPU) and the best configuration stored for the problem, and prints the ratios.\n"
                   "When the stored best is not a fused GEMM kernel, the fastest fused GEMM stored is timed too.\n"
                   "Every timed configuration is first checked against float64; exit 1 if one is out of tolerance.\n"
                   "--repeats N: timed calls per configuration, 20..1000 (default 50); decode-sized problems\n"
                   "as replays of CUDA graphs of 10 calls unless FUSEDTUNE_GRAPH_TIMING=0 (as tune times them).\n"
                   "Runs on the current CUDA device. Tune the problem first.\n"))
    return 0;
  const char *shape = NULL, *epi = "none", *math = "fp32";
  int repeats = 50;
  int rc = parse_bench_args(argc, argv, &shape, &epi, &math, &repeats);
  if (rc) return rc;
  if (!shape) return usage_error("bench", "--shape MxNxK is required");
  ft_problem p;
  if ((rc = cli_problem("bench", shape, epi, &p))) return rc;
  if (!parse_math(math, &p.math)) return usage_error("bench", "unknown --math '%s' (fp32, tf32, bf16, fp16, 3xtf32, fp8)", math);
  if ((rc = cli_problem_math("bench", &p, p.math))) return rc;
  ft_ctx *ctx = NULL;
  if ((rc = cli_open(c, 0, &ctx))) return rc; /* a missing database is a failure, not "not tuned" */
  ft_bench_report r;
  ft_status st = ft_bench_problem(ctx, &p, repeats, &r);
  if (st == FT_ERR_NOT_FOUND) {
    fprintf(stderr, "fusedtune: %s: run 'fusedtune tune' first\n", ft_errmsg(ctx));
    ft_close(ctx);
    return EXIT_NOT_TUNED;
  }
  if (st != FT_OK) return fail_ctx(st, ctx);
  ft_close(ctx);
  if (r.warning[0]) fprintf(stderr, "fusedtune: warning: %s\n", r.warning);
  double fl = r.flops, fp = r.peak_flops;
  /* fp32 is served at fp32 accuracy, maybe by 3xtf32: name the mode that ran. */
  printf("%s  %s  epilogue %s  %s, medians of %d\n", r.device_name, shape, r.epilogue, ft_math_name(r.best.math),
         repeats);
  char tol[48];
  snprintf(tol, sizeof tol, "within %.2g", r.tolerance);
  printf("  %-48s %10s %9s %12s\n", "strategy", "median_ms", "TFLOP/s", "eager/this");
  printf("  %-48s %10.4f %9.1f %12s\n", "eager-style (cuBLAS + per-op kernels)", r.eager_ms, fl / r.eager_ms / 1e9,
         "1.000x");
  printf("  %-48s %10.4f %9.1f %11.3fx\n", "cuBLAS GEMM alone (no epilogue)", r.gemm_ms, fl / r.gemm_ms / 1e9,
         r.eager_ms / r.gemm_ms);
  printf("  %-48s %10.4f %9.1f %11.3fx\n", r.best.name, r.best_ms, fl / r.best_ms / 1e9, r.eager_ms / r.best_ms);
  if (r.has_fused)
    printf("  %-48s %10.4f %9.1f %11.3fx  (fastest fused GEMM, rel_err %.2e, %s)\n", r.fused.name, r.fused_ms,
           fl / r.fused_ms / 1e9, r.eager_ms / r.fused_ms, r.fused_rel_err,
           r.fused_ok ? tol : "OUT OF TOLERANCE");
  char peak[64];
  snprintf(peak, sizeof peak, "cuBLAS %s GEMM 8192^3 (peak reference)", math);
  printf("  %-48s %10.4f %9.1f\n", peak, r.peak_ms, fp / r.peak_ms / 1e9);
  printf("best vs cuBLAS GEMM alone: %.3fx; best reaches %.0f%% of cuBLAS's 8192^3 rate; rel_err %.2e (%s)\n",
         r.gemm_ms / r.best_ms, 100.0 * (fl / r.best_ms) / (fp / r.peak_ms), r.best_rel_err,
         r.best_ok ? tol : "OUT OF TOLERANCE");
  if (r.has_fused) printf("fastest fused GEMM vs cuBLAS GEMM alone: %.3fx\n", r.gemm_ms / r.fused_ms);
  return r.best_ok && r.fused_ok ? 0 : 1;
}
