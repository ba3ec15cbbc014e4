/* GPU-side commands: tune, devices; and the GPU-free inspection commands variants, epilogue. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"

static const char *tune_help =
    "usage: fusedtune [--db PATH] tune --shape MxNxK|A..BxNxK --epilogue E [options]\n"
    "       fusedtune [--db PATH] tune --problems FILE [--devices all|0,2,...] [options]\n"
    "       fusedtune [--db PATH] --shape MxNxK --epilogue E [options]\n"
    "Tunes y = E(x W^T) on this GPU: runs every kernel variant on random inputs, checks it against a\n"
    "float64 reference, times the correct ones beside the cuBLAS baselines, stores every result.\n"
    "Each is timed in rounds with cuBLAS's GEMM alone, and the stored best is the one fastest\n"
    "against that GEMM (the table's 'vs GEMM'): the GPU's clock drifts within a tune by more than\n"
    "the candidates differ, the ratio of two kernels timed side by side does not.\n"
    "\n"
    "  --shape MxNxK        M rows of x, N output features, K input features (this or --problems)\n"
    "  --shape A..BxNxK     M buckets: tunes M = A, every power of two between A and B, and B (1..4096: the 13\n"
    "                       powers of two 1, 2, ..., 4096), one after the other. A lookup of an M not tuned then\n"
    "                       takes the smallest tuned M >= M of the same N, K, epilogue and math (beyond B, B's)\n"
    "  --epilogue E         expression or preset (default: none); see 'fusedtune epilogue --help'\n"
    "  --math M             math mode. Without it, fp32 tensors are tuned at fp32 accuracy: 3xtf32 (on\n"
    "                       compute capability 9.0+), then fp32, whose FFMA kernels are not compiled where the\n"
    "                       3xtf32 best is faster than FFMA can be; a lookup serves the faster of the two\n"
    "                       (3xtf32 is stored only within cuBLAS SGEMM's own error). Modes: fp32 (FFMA and\n"
    "                       cuBLAS SGEMM alone, error <= 1e-5 vs float64), tf32, bf16, fp16\n"
    "                       (tensor cores; correct = within 2x cuBLAS's own error in that mode), 3xtf32\n"
    "                       (fp32 tensors on tensor cores, held to cuBLAS SGEMM's own error, or the fp32\n"
    "                       eager chain's where the epilogue makes that larger; docs/MODES.md), fp8 (e4m3\n"
    "                       x and W quantized from a bf16 layer, bf16 y; E scales x by sx (scalar or row) and\n"
    "                       sw (scalar or col): 'relu(x * sx * sw + bias) where row sx, col sw'; K and N\n"
    "                       multiples of 16; the error stored is the layer's against its bf16 inputs), or\n"
    "                       auto: fp32, 3xtf32 and tf32 one after the other (the budget applies to each),\n"
    "                       all stored;\n"
    "                       then 'query --tolerance T' picks the fastest within an error T\n"
    "  --strategy S         search (every one measures and stores the safe candidates first, cuBLAS + an\n"
    "                       epilogue pass (the reduction pass for a reduction; in fp8, cuBLASLt's FP8 GEMM +\n"
    "                       a pass) and the eager chain as a plan (eager_...: the GEMM, then a kernel per\n"
    "                       op, as PyTorch eager runs E), so a tune stopped early never keeps a best slower\n"
    "                       than those):\n"
    "                         fast (default): fused kernels screened in the cost model's order with a few\n"
    "                           repeats, stopping when the rest cannot win by the model's error measured in\n"
    "                           this run; the best few timed in full\n"
    "                         exhaustive: every candidate of the full space (`variants --full`: also the\n"
    "                           forms the default space leaves out as measured slower, and 3xtf32 with\n"
    "                           x and W split before the kernel, not yet measured) timed in full\n"
    "                         random: the same candidates, the fused ones in random order\n"
    "                         halving: every candidate screened, the best quarter of each kind re-timed\n"
    "  --budget SECONDS     bound on the whole tune, compilation included (default 150); what finished is stored\n"
    "                       (the safe candidates are always measured in full, and fused candidates in the\n"
    "                       search's order until one gives a time, at most three, past the budget if need be)\n"
    "  --repeats N          timed repeats per candidate, 20..1000 (default 30)\n"
    "  --retune             measure again candidates already measured with the same kernel source\n"
    "  --flush-l2           overwrite L2 before every timed repeat\n"
    "  --seed N             input seed; 0, the default, is the fixed one (runs stay comparable;\n"
    "                       a run's options record the seed as given, 0 for the default)\n"
    "  --max-candidates N   measure at most N candidates (for quick checks)\n"
    "  --quiet              no progress output\n"
    "  --json               print the final result as JSON\n"
    "Timing: candidates run in rounds with cuBLAS's GEMM and are ranked by their time over it; a problem\n"
    "whose GEMM would take under 40 us at an H100's peak rate (decode-sized layers) is timed as CUDA-graph\n"
    "replays of 10 calls, as a model run as a graph sees it, unless the environment has\n"
    "FUSEDTUNE_GRAPH_TIMING=0; then, and with --flush-l2, on the stream\n"
    "\n"
    "A model's worth of problems:\n"
    "  --problems FILE      tune every problem of FILE: a JSON array of {\"shape\": \"MxNxK\" (or \"A..BxNxK\"), \"epilogue\": E,\n"
    "                       \"math\": M} or CSV with a header line shape,epilogue,math (epilogue defaults to none,\n"
    "                       math to fp32; auto as above); see docs/FORMAT.md. The whole file is checked first: a\n"
    "                       bad line is refused with its line number (exit 2), nothing tuned or written. Lines\n"
    "                       of the same shape, epilogue and math are tuned once. The options above apply to\n"
    "                       each problem (--budget bounds each). Ends with a summary: per problem the best, its\n"
    "                       time and speed-up against eager; per device the problems and time spent\n"
    "  --devices all|0,2    the devices to spread the problems over, one process each, longest problem first,\n"
    "                       each device taking the next when it is done (default: device 0, the one a plain tune\n"
    "                       uses). All write the one database. A device lost (its process dies, CUDA fails)\n"
    "                       costs the problem in flight, which goes to another device. Results are stored per\n"
    "                       GPU model: they do not carry over between devices of different models\n"
    "Ctrl-C stops after the candidates in flight, everything measured is stored, and the same command\n"
    "continues where it stopped (it skips what was measured; --retune measures again). A second Ctrl-C\n"
    "ends at once. Repeating a finished tune measures nothing and starts no GPU work when every candidate was\n"
    "measured before, or the fast search, given those results, would leave the rest out (--retune,\n"
    "--strategy exhaustive: measure them).\n";

void tune_cli_init(tune_cli *t) {
  memset(t, 0, sizeof *t);
  ft_tune_options init = FT_TUNE_OPTIONS_INIT;
  t->opt = init;
  t->epi = "none";
}

int tune_parse_args(int argc, char **argv, tune_cli *t) {
  opt_iter it = {argc, argv, 0, "tune"};
  const char *a;
  int pos;
  static const char *const names[] = {"--json", "--quiet", "--retune", "--flush-l2", "--shape", "--epilogue",
                                      "--math", "--strategy", "--budget", "--repeats", "--seed", "--max-candidates",
                                      "--problems", "--devices"};
  unsigned seen = 0;
  while ((a = opt_next(&it, &pos))) {
    if (pos) return unexpected_arg("tune", a, "unexpected argument");
    size_t nl = strcspn(a, "=");
    if (opt_once("tune", names, sizeof names / sizeof names[0], &seen, a)) return EXIT_USAGE;
#define IS(name) (nl == strlen(name) && !strncmp(a, name, nl))
    const int flag = IS("--json") || IS("--quiet") || IS("--retune") || IS("--flush-l2");
    if (flag && a[nl] == '=') return usage_error("tune", "option %.*s takes no value", (int)nl, a);
    if (IS("--json")) t->json = 1;
    else if (IS("--quiet")) t->quiet = 1;
    else if (IS("--retune")) t->opt.retune = 1;
    else if (IS("--flush-l2")) t->opt.flush_l2 = 1;
    else {
      const char *v = NULL;
      if (!IS("--shape") && !IS("--epilogue") && !IS("--math") && !IS("--strategy") && !IS("--budget") &&
          !IS("--repeats") && !IS("--seed") && !IS("--max-candidates") && !IS("--problems") && !IS("--devices"))
        return unexpected_arg("tune", a, "unknown option");
      if (!(v = opt_value(&it, a))) return EXIT_USAGE;
      long l;
      if (IS("--shape")) t->shape = v;
      else if (IS("--epilogue")) t->epi = v, t->epi_set = 1;
      else if (IS("--problems")) t->problems = v;
      else if (IS("--devices")) t->devices = v;
      else if (IS("--math")) {
        t->math_set = 1;
        if (!strcmp(v, "auto")) t->auto_math = 1;
        else if (!parse_math(v, &t->p.math))
          return usage_error("tune", "unknown --math '%s' (fp32, tf32, bf16, fp16, 3xtf32, fp8, auto)", v);
      } else if (IS("--strategy")) {
        if (strcmp(v, "fast") && strcmp(v, "exhaustive") && strcmp(v, "random") && strcmp(v, "halving"))
          return usage_error("tune", "unknown --strategy '%s' (fast, exhaustive, random, halving)", v);
        t->opt.strategy = v;
      } else if (IS("--budget")) {
        if (!parse_double(v, &t->opt.budget_s) || t->opt.budget_s <= 0)
          return usage_error("tune", "--budget '%s' is not a positive number of seconds", v);
      } else if (IS("--repeats")) {
        if (!parse_int(v, 20, 1000, &l)) return usage_error("tune", "--repeats '%s' must be an integer in 20..1000", v);
        t->opt.repeats = (int)l;
      } else if (IS("--seed")) {
        if (!parse_int(v, 0, 0x7fffffffL, &l))
          return usage_error("tune", "--seed '%s' must be an integer from 0 to 2147483647", v);
        t->opt.seed = (uint64_t)l;
      } else if (IS("--max-candidates")) {
        if (!parse_int(v, 1, 1000000, &l)) return usage_error("tune", "--max-candidates '%s' must be a positive integer", v);
        t->opt.max_candidates = (int)l;
      }
    }
#undef IS
  }
  return 0;
}

static double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0; }

/* Speed against cuBLAS's GEMM alone timed in the same rounds (> 1: faster); 0 where unknown. */
static double vs_gemm(const ft_result_info *e) {
  return e->status == FT_RESULT_OK && e->gemm_ratio > 0 ? 1 / e->gemm_ratio : 0;
}

/* Correct first, then as the stored best ranks them: by the median over cuBLAS's beside it
 * (fastest first), then results without that reference by median. */
static int cmp_entry(const void *a, const void *b) {
  const ft_result_info *x = a, *y = b;
  int xo = x->status == FT_RESULT_OK, yo = y->status == FT_RESULT_OK;
  if (xo != yo) return yo - xo;
  const double gx = vs_gemm(x), gy = vs_gemm(y);
  if ((gx > 0) != (gy > 0)) return gx > 0 ? -1 : 1;
  if (gx > 0 && gx != gy) return gx > gy ? -1 : 1;
  return (x->median_ms > y->median_ms) - (x->median_ms < y->median_ms);
}

static int is_candidate(const ft_result_info *e) {
  return e->strategy == FT_STRATEGY_FUSED || e->strategy == FT_STRATEGY_CUBLAS_EPILOGUE;
}

/* The run's eager-style baseline (NULL: none correct). */
static const ft_result_info *eager_of(const ft_tune_report *s) {
  for (int i = 0; i < s->n_results; i++)
    if (s->results[i].strategy == FT_STRATEGY_EAGER && s->results[i].status == FT_RESULT_OK) return &s->results[i];
  return NULL;
}

/* Speed-up over the eager chain: the ratio of the two speeds against the cuBLAS GEMM timed
 * beside each (the clock drifts between them), or of the medians where either lacks one. */
static double vs_eager(const ft_result_info *e, const ft_tune_report *s) {
  const ft_result_info *eg = eager_of(s);
  if (e->status != FT_RESULT_OK || !(e->median_ms > 0) || !eg || !(eg->median_ms > 0)) return 0;
  return vs_gemm(e) > 0 && vs_gemm(eg) > 0 ? vs_gemm(e) / vs_gemm(eg) : eg->median_ms / e->median_ms;
}

/* w: the variant column's width, the longest name shown (a tc_pass name, GEMM then pass, runs past
 * 48 characters and is printed whole). */
static void print_row(const ft_result_info *e, const ft_tune_report *s, int w) {
  char sp[16] = "-", tf[16] = "-", ms[16] = "-", vg[16] = "-";
  if (e->status == FT_RESULT_OK) {
    snprintf(ms, sizeof ms, "%.4f", e->median_ms);
    snprintf(tf, sizeof tf, "%.1f", tflops(s->flops, e->median_ms));
    if (vs_eager(e, s) > 0) snprintf(sp, sizeof sp, "%.3fx", vs_eager(e, s));
    if (vs_gemm(e) > 0) snprintf(vg, sizeof vg, "%.3fx", vs_gemm(e));
  }
  printf("  %-16s %-*s %-12s %10s %8s %10.2e %8s %8s\n", ft_strategy_name(e->strategy), w, e->variant,
         ft_result_status_name(e->status), ms, tf, e->rel_err, sp, vg);
}

static void print_summary(const tune_cli *t, const ft_tune_report *s) {
  printf("\n%s  %lldx%lldx%lld  epilogue %s  %s\n", s->device_name, (long long)t->p.m, (long long)t->p.n,
         (long long)t->p.k, s->epilogue, ft_math_name(t->p.math));
  ft_result_info *sorted = malloc((size_t)s->n_results * sizeof *sorted + 1);
  if (!sorted) return;
  if (s->n_results > 0) { /* results is NULL when there are none */
    memcpy(sorted, s->results, (size_t)s->n_results * sizeof *sorted);
    qsort(sorted, (size_t)s->n_results, sizeof *sorted, cmp_entry);
  }
  /* The rows shown: every baseline, then the ten fastest correct candidates. */
  int w = 48, shown = 0;
  for (int i = 0; i < s->n_results; i++) {
    const int row = !is_candidate(&sorted[i]) || (sorted[i].status == FT_RESULT_OK && shown++ < 10);
    const int len = (int)strnlen(sorted[i].variant, sizeof sorted[i].variant);
    if (row && len > w) w = len;
  }
  printf("  %-16s %-*s %-12s %10s %8s %10s %8s %8s\n", "strategy", w, "variant", "status", "median_ms", "TFLOP/s",
         "rel_err", "vs eager", "vs GEMM");
  for (int i = 0; i < s->n_results; i++)
    if (!is_candidate(&sorted[i])) print_row(&sorted[i], s, w);
  shown = 0;
  for (int i = 0; i < s->n_results && shown < 10; i++)
    if (is_candidate(&sorted[i]) && sorted[i].status == FT_RESULT_OK) print_row(&sorted[i], s, w), shown++;
  free(sorted);
  printf("\n%d candidates: %d measured now (%d ok, %d wrong_result, %d compile_error, %d launch_error, %d timeout), "
         "%d measured before (--retune to repeat)%s\n",
         s->n_candidates, s->n_measured, s->n_ok, s->n_wrong, s->n_compile_error, s->n_launch_error, s->n_timeout,
         s->n_known, s->budget_exhausted ? "; budget ran out" : "");
  if (s->n_early_stopped)
    printf("%d fused candidate(s) not measured: by the cost model and its error in this run they cannot win "
           "(--strategy exhaustive measures them)\n", s->n_early_stopped);
  if (s->n_error_pruned)
    printf("%d fused candidate(s) not measured: their tensor-core partial sums are at least as long as those of "
           "one just beyond the tolerance, whose error grows with them (--strategy exhaustive measures them)\n",
           s->n_error_pruned);
  printf("compile: %d compiled, %d from cache, %.1f s; total %.1f s", s->n_compiled, s->n_cached, s->compile_s,
         s->total_s);
  if (s->worker_restarts) printf("; worker restarted %d time(s) after a fault or hang", s->worker_restarts);
  const ft_tune_phases *ph = &s->phases;
  printf("\ntime: prepare %.1f s (candidates %.1f, data and references %.1f, baseline setup %.1f), baselines %.1f s, "
         "search %.1f s (%d measurements %.1f s: load %.1f, verify %.1f, timed calls %.1f; waiting for compilation "
         "%.1f s)\n",
         ph->prepare_s, ph->enumerate_s, ph->data_s, ph->baselines_setup_s, ph->baselines_s, ph->search_s, ph->measurements,
         ph->measure_s, ph->load_s, ph->verify_s, ph->timing_s, ph->compile_wait_s);
  if (s->has_best) {
    printf("best: %s %s  %.4f ms", s->best.strategy, s->best.name, s->best.median_ms);
    if (s->best.eager_ms > 0) printf("  (%.3fx vs eager %.4f ms)", s->best.eager_ms / s->best.median_ms, s->best.eager_ms);
    printf("\n");
    /* The floor fusedtune.torch.fuse keeps (python/fusedtune/torch/fuse.py, FLOOR_MARGIN). */
    if (s->best.eager_ms > 0 && s->best.median_ms > 1.01 * s->best.eager_ms)
      printf("note: the stored best is %.1f %% slower than the eager-style chain timed beside it; "
             "fusedtune.torch.fuse leaves such a layer to PyTorch\n",
             100.0 * (s->best.median_ms / s->best.eager_ms - 1.0));
  } else {
    printf("best: none (%s)\n", s->n_measured + s->n_known ? "no candidate was correct"
                                : s->budget_exhausted ? "the budget ran out before any candidate was measured: raise --budget"
                                                      : "no candidate was measured");
  }
}

/* A JSON number, or null where there is none (unmeasured: < 0; not finite). */
static void json_number(double v) {
  if (isfinite(v) && v >= 0) printf("%.17g", v);
  else printf("null");
}

static void print_summary_json(const tune_cli *t, const ft_tune_report *s) {
  printf("{\"shape\":\"%lldx%lldx%lld\",\"math\":\"%s\",\"device\":", (long long)t->p.m, (long long)t->p.n,
         (long long)t->p.k, ft_math_name(t->p.math));
  ft_write_json_string(stdout, s->device_name);
  printf(",\"epilogue\":");
  ft_write_json_string(stdout, s->epilogue);
  printf(",\"eager_ms\":%.17g,\"candidates\":%d,\"measured\":%d,\"ok\":%d,\"wrong_result\":%d,"
         "\"compile_error\":%d,\"launch_error\":%d,\"timeout\":%d,\"known\":%d,\"compiled\":%d,\"cached\":%d,"
         "\"compile_s\":%.3f,\"total_s\":%.3f,\"budget_exhausted\":%s,\"early_stopped\":%d,\"error_pruned\":%d,",
         s->eager_ms, s->n_candidates, s->n_measured, s->n_ok, s->n_wrong, s->n_compile_error, s->n_launch_error,
         s->n_timeout, s->n_known, s->n_compiled, s->n_cached, s->compile_s, s->total_s,
         s->budget_exhausted ? "true" : "false", s->n_early_stopped, s->n_error_pruned);
  const ft_tune_phases *ph = &s->phases;
  printf("\"phases\":{\"prepare_s\":%.3f,\"gpu_open_s\":%.3f,\"data_s\":%.3f,\"tolerance_s\":%.3f,"
         "\"baselines_setup_s\":%.3f,\"baselines_s\":%.3f,\"search_s\":%.3f,\"measurements\":%d,\"measure_s\":%.3f,"
         "\"load_s\":%.3f,\"verify_s\":%.3f,\"timing_s\":%.3f,\"compile_wait_s\":%.3f,\"nvrtc_s\":%.3f,"
         "\"enumerate_s\":%.3f,\"stop_s\":%.3f},\"best\":",
         ph->prepare_s, ph->gpu_open_s, ph->data_s, ph->tolerance_s, ph->baselines_setup_s, ph->baselines_s,
         ph->search_s, ph->measurements, ph->measure_s, ph->load_s, ph->verify_s, ph->timing_s, ph->compile_wait_s,
         ph->nvrtc_s, ph->enumerate_s, ph->stop_s);
  if (!s->has_best) {
    printf("null");
  } else {
    printf("{\"strategy\":");
    ft_write_json_string(stdout, s->best.strategy);
    printf(",\"variant\":");
    ft_write_json_string(stdout, s->best.name);
    printf(",\"config\":%s,\"math\":\"%s\",\"median_ms\":%.17g,\"eager_ms\":%.17g,\"rel_err\":", s->best.config,
           ft_math_name(s->best.math), s->best.median_ms, s->best.eager_ms);
    json_number(s->best.rel_err);
    printf("}");
  }
  printf(",\"results\":[");
  for (int i = 0; i < s->n_results; i++) {
    const ft_result_info *e = &s->results[i];
    printf("%s{\"strategy\":", i ? "," : "");
    ft_write_json_string(stdout, ft_strategy_name(e->strategy));
    printf(",\"variant\":");
    ft_write_json_string(stdout, e->variant);
    printf(",\"status\":");
    ft_write_json_string(stdout, ft_result_status_name(e->status));
    printf(",\"median_ms\":");
    json_number(e->median_ms);
    printf(",\"rel_err\":");
    json_number(e->rel_err);
    printf(",\"gemm_ratio\":");
    json_number(e->gemm_ratio);
    printf("}");
  }
  printf("]}\n");
}

static volatile int interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* How progress is shown: a bar redrawn in place on a terminal, else a line every 25. */
typedef struct progress_view {
  int tty;
} progress_view;

static void show_progress(void *user, const ft_tune_progress *u) {
  const progress_view *v = user;
  if (u->total <= 0) {
    cli_line(stderr, "%s", u->message);
    return;
  }
  /* The best so far against the eager-style chain timed first in the same run. */
  char best[64] = "-", eta[24] = "?";
  if (u->best_ms > 0 && u->eager_ms > 0)
    snprintf(best, sizeof best, "%.4f ms (%.3fx eager)", u->best_ms, u->eager_ms / u->best_ms);
  else if (u->best_ms >= 0)
    snprintf(best, sizeof best, "%.4f ms", u->best_ms);
  if (u->eta_s >= 0) snprintf(eta, sizeof eta, "%.0fs", u->eta_s);
  if (v->tty) {
    int w = 24, fill = u->done * w / u->total;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\r%-9s [%s] %d/%d best %s ETA %s   ", u->phase, bar, u->done, u->total, best, eta);
    if (u->done == u->total) fputc('\n', stderr);
  } else if (u->done == u->total || u->done % 25 == 0) {
    fprintf(stderr, "%s: %d/%d done, best %s, %.0fs elapsed, ETA %s\n", u->phase, u->done, u->total, best,
            u->elapsed_s, eta);
  }
}

/* After a tune at fp32 accuracy: what a lookup of the problem (fp32, the default) now serves. */
static void print_served(ft_ctx *ctx, const tune_cli *t, const int64_t *ms, int n_ms) {
  printf("\nserved at fp32 accuracy (fp32 FFMA and cuBLAS SGEMM, or 3xtf32 held to SGEMM's error; "
         "--math fp32 for FFMA alone):\n");
  for (int j = 0; j < n_ms; j++) {
    ft_problem q = t->p;
    q.m = ms[j];
    q.math = FT_MATH_FP32;
    ft_config cfg;
    if (ft_lookup(ctx, &q, FT_LOOKUP_EXACT, &cfg) != FT_OK) {
      printf("  M %-6lld nothing correct stored\n", (long long)ms[j]);
      continue;
    }
    printf("  M %-6lld %-7s %s %s  %.4f ms  rel_err %.3g", (long long)ms[j], ft_math_name(cfg.math), cfg.strategy,
           cfg.name, cfg.median_ms, cfg.rel_err);
    if (cfg.eager_ms > 0) printf("  (%.3fx vs fp32 eager)", cfg.eager_ms / cfg.median_ms);
    printf("\n");
  }
}

int cmd_tune(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv, tune_help)) return 0;
  char exe[4096];
  tune_cli t;
  tune_cli_init(&t);
  int rc = tune_parse_args(argc, argv, &t);
  if (rc) return rc;
  if (t.problems && (t.shape || t.epi_set || t.math_set))
    return usage_error("tune", "--problems FILE names shapes, epilogues and modes itself: no --shape, --epilogue "
                               "or --math with it");
  if (t.devices && !t.problems) return usage_error("tune", "--devices goes with --problems FILE");
  if (t.problems) return batch_run(c, &t, cli_self_exe(exe, sizeof exe));
  if (!t.shape) return usage_error("tune", "--shape MxNxK or --problems FILE is required");
  ft_math math = t.p.math;
  /* Shape (an M range: both ends) and expression are checked before any device or database. */
  int64_t lo = 0, hi = 0, n = 0, k = 0, ms[FT_SHAPE_RANGE_MAX];
  char msg[512];
  if (ft_shape_range_parse(t.shape, &lo, &hi, &n, &k, msg, sizeof msg) != FT_OK)
    return usage_error("tune", "%s", msg);
  for (int end = 0; end < 2; end++) {
    char one[96];
    snprintf(one, sizeof one, "%lldx%lldx%lld", (long long)(end ? hi : lo), (long long)n, (long long)k);
    if ((rc = cli_problem("tune", one, t.epi, &t.p))) return rc;
    if (!t.auto_math && (rc = cli_problem_math("tune", &t.p, math))) return rc;
  }
  const int n_ms = ft_shape_range_values(lo, hi, ms, FT_SHAPE_RANGE_MAX);
  t.p.math = math;
  progress_view view = {isatty(2)};
  t.opt.quiet = t.quiet;
  t.opt.progress = show_progress;
  t.opt.progress_user = &view;
  /* No GPU: say so before the database is created. */
  int count = 0;
  ft_status st = ft_device_count(&count, msg, sizeof msg);
  if (st != FT_OK) return fail_status(st, msg);
  ft_ctx *ctx = NULL;
  if ((rc = cli_open(c, 1, &ctx))) return rc;
  /* Ctrl-C ends the tune after the candidate in flight; everything measured is already stored. */
  t.opt.stop = &interrupted;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process at once */
  sigaction(SIGINT, &sa, NULL);
  /* Candidates run in worker processes of this same executable: a fault or a hang costs one
   * candidate and a restart. */
  t.opt.worker_exe = cli_self_exe(exe, sizeof exe);
  /* --math auto: the most accurate first, so a Ctrl-C leaves the fp32 results. No --math on fp32
   * tensors: fp32 accuracy (ft_tune_modes: 3xtf32, then fp32 without the FFMA kernels 3xtf32 has
   * outrun). An M range: the smallest M first. */
  ft_math modes[3] = {FT_MATH_FP32, FT_MATH_3XTF32, FT_MATH_TF32};
  int nmodes = 3;
  t.opt.mode_only = t.math_set;
  if (!t.auto_math && (st = ft_tune_modes(ctx, &t.p, t.math_set, modes, &nmodes)) != FT_OK) {
    rc = fail_ctx(st, ctx);
    ft_close(ctx);
    return rc;
  }
  const int accuracy = nmodes > 1 && !t.auto_math, many = nmodes > 1 || n_ms > 1;
  ft_config *best = calloc((size_t)n_ms * 3, sizeof *best);
  int *has_best = calloc((size_t)n_ms * 3, sizeof *has_best);
  if (!best || !has_best) {
    free(best), free(has_best), ft_close(ctx);
    return fail_msg("out of memory");
  }
  if (t.json && many) printf("[");
  for (int j = 0; j < n_ms && !rc; j++) {
    t.p.m = ms[j];
    for (int i = 0; i < nmodes; i++) {
      t.p.math = modes[i];
      ft_tune_report *r = NULL;
      st = ft_tune_ex(ctx, &t.p, &t.opt, &r);
      if (st != FT_OK) {
        if (t.json && many) printf("]\n");
        free(best), free(has_best);
        return fail_ctx(st, ctx);
      }
      if (t.json) printf("%s", j || i ? "," : ""), print_summary_json(&t, r);
      else print_summary(&t, r);
      best[j * 3 + i] = r->best;
      has_best[j * 3 + i] = r->has_best;
      ft_tune_report_free(r);
    }
  }
  if (t.json && many) printf("]\n");
  if (accuracy && !t.json) print_served(ctx, &t, ms, n_ms);
  if (t.auto_math && n_ms == 1 && !t.json) {
    printf("\nper mode (pick by error with 'fusedtune query --shape %s --epilogue '...' --tolerance T'):\n", t.shape);
    for (int i = 0; i < nmodes; i++)
      if (has_best[i])
        printf("  %-7s %10.4f ms  rel_err %.3g  max_abs_err %.3g  %s\n", ft_math_name(modes[i]), best[i].median_ms,
               best[i].rel_err, best[i].max_abs_err, best[i].name);
      else
        printf("  %-7s no correct configuration\n", ft_math_name(modes[i]));
  }
  if (n_ms > 1 && !t.json) {
    printf("\nM buckets of %lldx%lld (a lookup of M takes the smallest tuned M >= M; beyond %lld, %lld's):\n",
           (long long)n, (long long)k, (long long)hi, (long long)hi);
    for (int j = 0; j < n_ms; j++)
      for (int i = 0; i < nmodes; i++) {
        const ft_config *b = &best[j * 3 + i];
        if (has_best[j * 3 + i])
          printf("  M %-6lld %-7s %10.4f ms  %s\n", (long long)ms[j], ft_math_name(modes[i]),
                 b->median_ms, b->name);
        else
          printf("  M %-6lld %-7s no correct configuration\n", (long long)ms[j],
                 ft_math_name(modes[i]));
      }
  }
  free(best), free(has_best);
  ft_close(ctx);
  return 0;
}

int cmd_devices(cli *c, int argc, char **argv) {
  (void)c;
  int json = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
      return fputs("usage: fusedtune devices [--json]\nLists the visible CUDA devices with the fingerprint results "
                   "are stored under.\n", stdout), 0;
    if (!strcmp(argv[i], "--json") && json) return usage_error("devices", "option --json given twice (each option at most once)");
    if (!strcmp(argv[i], "--json")) json = 1;
    else return unexpected_arg("devices", argv[i], "unexpected argument");
  }
  char msg[512];
  int count = 0;
  ft_status st = ft_device_count(&count, msg, sizeof msg);
  if (st != FT_OK) return fail_status(st, msg);
  if (json) printf("[");
  for (int d = 0; d < count; d++) {
    ft_device_desc i;
    if ((st = ft_device_describe(d, &i, msg, sizeof msg)) != FT_OK) return fail_status(st, msg);
    if (json) {
      printf("%s{\"index\":%d,\"name\":", d ? "," : "", d);
      ft_write_json_string(stdout, i.name);
      printf(",\"fingerprint\":\"%s\",\"arch\":\"%s\",\"sm_count\":%d,\"mem_bytes\":%lld,\"driver\":%d,"
             "\"runtime\":%d,\"nvrtc\":%d,\"cublas\":%d}",
             i.fingerprint, i.arch, i.sm_count, (long long)i.mem_bytes, i.driver_version, i.runtime_version,
             i.nvrtc_version, i.cublas_version);
    } else {
      printf("#%d %s  %s  %d SMs  %.1f GiB  fingerprint %s  driver %d runtime %d nvrtc %d cublas %d\n", d, i.name,
             i.arch, i.sm_count, (double)i.mem_bytes / (1 << 30), i.fingerprint, i.driver_version, i.runtime_version,
             i.nvrtc_version, i.cublas_version);
    }
  }
  if (json) printf("]\n");
  return 0;
}

/* --compile: failures on stderr (unless --json), ptxas usage where the family reports it, then
 * the counts. */
static int print_compiled(const ft_variant_list *l, int json) {
  int shown = 0, worst_regs = -1, spilled = 0;
  for (int i = 0; i < l->count; i++) {
    const ft_variant_info *v = &l->items[i];
    if (v->compile_status != FT_OK && !json) fprintf(stderr, "compile failed: %s: %.300s\n", v->name, v->compile_log);
    if (v->regs < 0) continue;
    if (v->regs > worst_regs) worst_regs = v->regs;
    spilled += v->spill_bytes > 0;
    if (!json) printf("%-52s %3d registers, %d bytes spilled\n", v->name, v->regs, v->spill_bytes), shown++;
  }
  if (shown) printf("ptxas: %d variant(s) reported, at most %d registers, %d spilled; none serialized wgmma "
                    "(those are rejected as compile errors)\n", shown, worst_regs, spilled);
  int ok = l->n_compiled_ok, n = l->count;
  if (json) printf("{\"compiled_ok\":%d,\"failed\":%d,\"wall_s\":%.3f}\n", ok, n - ok, l->compile_s);
  else printf("compiled %d variant(s) for %s: %d ok, %d failed, %.1f s wall\n", n, l->arch, ok, n - ok, l->compile_s);
  return ok == n ? 0 : 1;
}

/* --compile on a terminal: "compiling 12/80" redrawn in place on stderr. */
static void show_compile_progress(void *user, int done, int total) {
  (void)user;
  fprintf(stderr, "\rcompiling %d/%d variant kernel(s)   ", done, total);
  if (done == total) fputc('\n', stderr);
}

/* Variants per family, the family read off the name's first word ("tc", "epi", "gemm", ...). */
typedef struct family_count {
  char name[16];
  int n;
} family_count;

static const char *count_family(family_count *f, int *nf, int cap, const char *variant) {
  char name[16];
  const size_t len = strcspn(variant, "_");
  snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), variant);
  for (int i = 0; i < *nf; i++)
    if (!strcmp(f[i].name, name)) return f[i].n++, f[i].name;
  if (*nf == cap) return "?";
  snprintf(f[*nf].name, sizeof f[*nf].name, "%s", name);
  f[*nf].n = 1;
  return f[(*nf)++].name;
}

int cmd_variants(cli *c, int argc, char **argv) {
  (void)c;
  const char *shape = NULL, *epi = "none", *arch = NULL, *math = "fp32";
  int json = 0, compile = 0, full = 0;
  opt_iter it = {argc, argv, 0, "variants"};
  const char *a;
  int pos;
  static const char *const names[] = {"--json", "--compile", "--shape", "--epilogue", "--arch", "--math", "--full"};
  unsigned seen = 0;
  while ((a = opt_next(&it, &pos))) {
    if (pos) return unexpected_arg("variants", a, "unexpected argument");
    size_t nl = strcspn(a, "=");
    if (opt_once("variants", names, sizeof names / sizeof names[0], &seen, a)) return EXIT_USAGE;
    if (!strcmp(a, "-h") || !strcmp(a, "--help"))
      return fputs("usage: fusedtune variants --shape MxNxK [--epilogue E] [--math M] [--arch sm_90] [--full]\n"
                   "                          [--compile] [--json]\n"
                   "Lists the kernel variants (fused GEMM and standalone epilogue) applicable to the problem in\n"
                   "math mode M (fp32, tf32, bf16, fp16, 3xtf32, fp8; default fp32) on the architecture (default: the current\n"
                   "GPU's, else sm_90; sm_90 and sm_90a both enable the Hopper tensor-core family), each with\n"
                   "the hash of its kernel source: the space the default (fast) search takes, or with --full the\n"
                   "larger one of `tune --strategy exhaustive` and `random` (the tensor-core family's forms the\n"
                   "default space leaves out as measured slower). --compile compiles them all with NVRTC (no GPU\n"
                   "needed) and reports ok/failed counts, wall time and, for the tensor-core family, ptxas\n"
                   "registers and spills (a spill or serialized wgmma makes a variant a compile error).\n", stdout), 0;
    if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--full")) full = 1;
    else if (!strcmp(a, "--compile")) compile = 1;
    else if (nl == 7 && !strncmp(a, "--shape", 7)) { if (!(shape = opt_value(&it, a))) return EXIT_USAGE; }
    else if (nl == 10 && !strncmp(a, "--epilogue", 10)) { if (!(epi = opt_value(&it, a))) return EXIT_USAGE; }
    else if (nl == 6 && !strncmp(a, "--arch", 6)) { if (!(arch = opt_value(&it, a))) return EXIT_USAGE; }
    else if (nl == 6 && !strncmp(a, "--math", 6)) { if (!(math = opt_value(&it, a))) return EXIT_USAGE; }
    else return unexpected_arg("variants", a, "unknown option");
  }
  if (!shape) return usage_error("variants", "--shape MxNxK is required");
  ft_problem p;
  int rc = cli_problem("variants", shape, epi, &p);
  if (rc) return rc;
  if (!parse_math(math, &p.math)) return usage_error("variants", "unknown --math '%s' (fp32, tf32, bf16, fp16, 3xtf32, fp8)", math);
  if ((rc = cli_problem_math("variants", &p, p.math))) return rc;
  char msg[2048];
  ft_variant_list *l = NULL;
  ft_variants_progress_fn progress = compile && isatty(2) ? show_compile_progress : NULL;
  const unsigned flags = (compile ? FT_VARIANTS_COMPILE : 0u) | (full ? FT_VARIANTS_FULL : 0u);
  ft_status st = ft_variants_v2(&p, arch, flags, progress, NULL, &l, msg, sizeof msg);
  if (st == FT_ERR_INVALID_ARG) return usage_error("variants", "%s", msg); /* the architecture */
  if (st != FT_OK) return fail_status(st, msg);
  if (compile) {
    rc = print_compiled(l, json);
  } else {
    if (json) printf("[");
    else printf("%-60s %-6s %s\n", "variant (its parameters in the name; --json: the configuration)", "family",
                "source hash");
    family_count fams[16];
    int nfam = 0;
    for (int i = 0; i < l->count; i++) {
      const ft_variant_info *v = &l->items[i];
      if (json) {
        printf("%s\n  {\"name\":\"%s\",\"config\":%s,\"source_hash\":\"%s\"}", i ? "," : "", v->name, v->config,
               v->source_hash);
        continue;
      }
      const char *fam = count_family(fams, &nfam, 16, v->name);
      printf("%-60s %-6s %s\n", v->name, fam, v->source_hash);
    }
    if (json) printf("\n]\n");
    else {
      printf("%d variant(s) for %s, epilogue '%s', %s, %s\n", l->count, shape, l->epilogue, ft_math_name(p.math),
             l->arch);
      printf("by family:");
      for (int f = 0; f < nfam; f++) printf("%s %s %d", f ? "," : "", fams[f].name, fams[f].n);
      printf("%s\n", full ? "" : " (the default search's space; --full: the exhaustive one's)");
    }
  }
  ft_variant_list_free(l);
  return rc;
}

int cmd_epilogue(cli *c, int argc, char **argv) {
  (void)c;
  const char *text = NULL;
  int json = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: fusedtune epilogue EXPR_OR_PRESET [--json]\n"
             "Parses an epilogue and prints its canonical form, parameters and generated CUDA expression.\n"
             "x is the GEMM accumulator; bias is a per-column vector; 'mat r' declares an [M, N]\n"
             "operand. See docs/EPILOGUE.md.\npresets:\n");
      int np = ft_epilogue_preset(0, NULL, NULL);
      for (int p = 0; p < np; p++) {
        const char *name = NULL, *body = NULL;
        ft_epilogue_preset(p, &name, &body);
        printf("  %-10s %s\n", name, body);
      }
      return 0;
    }
    if (!strcmp(argv[i], "--json") && json) return usage_error("epilogue", "option --json given twice (each option at most once)");
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--db") || !strncmp(argv[i], "--db=", 5)) return unexpected_arg("epilogue", argv[i], "");
    else if (!text) text = argv[i];
    else return usage_error("epilogue", "unexpected argument '%s' (quote the expression)", argv[i]);
  }
  if (!text) return usage_error("epilogue", "EXPR_OR_PRESET is required");
  char msg[2048];
  ft_epilogue_info *ep = NULL;
  if (ft_epilogue_inspect(text, &ep, msg, sizeof msg) != FT_OK) {
    cli_line(stderr, "fusedtune: %s", msg);
    return EXIT_USAGE;
  }
  static const char *kinds[] = {"scalar", "column vector", "row vector", "matrix [M, N]"};
  static const char *kinds_json[] = {"scalar", "colvec", "rowvec", "matrix"};
  if (json) {
    printf("{\"canonical\":");
    ft_write_json_string(stdout, ep->canonical);
    printf(",\"hash\":\"%s\",\"params\":[", ep->hash);
    for (int s = 0; s < ep->n_params; s++) {
      const ft_epilogue_param *p = &ep->params[s];
      printf("%s{\"slot\":%d,\"name\":", s ? "," : "", s);
      ft_write_json_string(stdout, p->name);
      printf(",\"kind\":\"%s\",\"default\":", kinds_json[p->type]);
      if (p->has_default) printf("%.17g}", p->default_value);
      else printf("null}");
    }
    printf("],\"cuda\":");
    ft_write_json_string(stdout, ep->cuda);
    printf("}\n");
  } else {
    printf("canonical  %s\nhash       %s\n", ep->canonical, ep->hash);
    for (int s = 0; s < ep->n_params; s++) {
      const ft_epilogue_param *p = &ep->params[s];
      printf("param %d    %s: %s", s, p->name, kinds[p->type]);
      if (p->has_default) printf(", default %.17g", p->default_value);
      printf("\n");
    }
    printf("cuda       %s\n", ep->cuda[0] ? ep->cuda : "(none: a reduction; docs/EPILOGUE.md, \"Reductions\")");
  }
  ft_epilogue_info_free(ep);
  return 0;
}
