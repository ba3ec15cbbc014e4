/* report: the stored results as one self-contained HTML file (tools/report.h). Reads the
 * database only; needs no GPU. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static const char *report_help =
    "usage: fusedtune [--db PATH] report [--shape MxNxK --epilogue E [--math M]] -o FILE.html\n"
    "Writes the stored results as one self-contained HTML file (inline SVG and CSS: no script, nothing\n"
    "loaded from anywhere), for every tuned problem of the database with an index, or for one problem\n"
    "(every math mode of it on every device, or only mode M). Per problem: the strategies side by side\n"
    "(eager-style chain, cuBLAS GEMM alone, cuBLASLt epilogue, cuBLAS + epilogue pass, the fastest fused\n"
    "kernel of each family) with times, TFLOP/s and speed-up against eager; every candidate sorted by\n"
    "time, failures shown; time against tile, stages and split; a roofline point against the fastest\n"
    "cuBLAS GEMM alone measured there (the database holds no device peaks: none is invented); the error\n"
    "against float64 per mode; the device, its driver and library versions, the runs, their dates and\n"
    "options.\n"
    "The database is opened read-only: a database imported from another machine works.\n"
    "  --shape MxNxK --epilogue E   one problem, as tune names it (default: every tuned problem)\n"
    "  --math M         with --shape: only that math mode (fp32, tf32, bf16, fp16, 3xtf32, fp8; default: every mode)\n"
    "  -o, --out FILE   the HTML file; replaced only when complete, keeping its mode; a FILE that is not\n"
    "                   a regular file (a device, FIFO, symbolic link) or is the database is refused\n"
    "Exit status 3 when nothing is stored (for the problem): FILE then says so, and no chart is drawn.\n"
    "See docs/REPORT.md for what each chart shows and where each number comes from.\n";

typedef struct report_args {
  const char *shape, *epilogue, *math, *out;
} report_args;

static int parse_args(int argc, char **argv, report_args *a) {
  static const char *const names[] = {"--shape", "--epilogue", "--math", "--out"};
  unsigned seen = 0;
  opt_iter it = {argc, argv, 0, "report"};
  const char *arg;
  int pos;
  memset(a, 0, sizeof *a);
  while ((arg = opt_next(&it, &pos))) {
    if (pos) return usage_error("report", "unexpected argument '%s'", arg);
    /* -o is --out: the two spellings are one option. */
    const int is_o = !strcmp(arg, "-o") || !strncmp(arg, "-o=", 3);
    if (opt_once("report", names, sizeof names / sizeof names[0], &seen, is_o ? "--out" : arg)) return EXIT_USAGE;
    const char **dst = NULL;
    const size_t nl = strcspn(arg, "=");
    if (is_o || (nl == 5 && !strncmp(arg, "--out", 5))) dst = &a->out;
    else if (nl == 7 && !strncmp(arg, "--shape", 7)) dst = &a->shape;
    else if (nl == 10 && !strncmp(arg, "--epilogue", 10)) dst = &a->epilogue;
    else if (nl == 6 && !strncmp(arg, "--math", 6)) dst = &a->math;
    else return unexpected_arg("report", arg, "unknown option");
    if (!(*dst = opt_value(&it, arg))) return EXIT_USAGE;
  }
  if (!a->out) return usage_error("report", "-o FILE is required (the HTML file to write)");
  if (!*a->out) return usage_error("report", "-o needs a file name");
  if (!a->shape != !a->epilogue) return usage_error("report", "--shape and --epilogue go together (or neither: every problem)");
  if (a->math && !a->shape) return usage_error("report", "--math needs --shape and --epilogue");
  return 0;
}

/* The problem of the arguments (p->epilogue points into a), its text for the page in filter. */
static int problem_of(const report_args *a, ft_problem *p, char *filter, size_t cap) {
  int rc = cli_problem("report", a->shape, a->epilogue, p);
  if (rc) return rc;
  if (a->math && !parse_math(a->math, &p->math))
    return usage_error("report", "unknown --math '%s' (fp32, tf32, bf16, fp16, 3xtf32, fp8)", a->math);
  if ((rc = cli_problem_math("report", p, p->math))) return rc;
  snprintf(filter, cap, "%lldx%lldx%lld %s%s%s", (long long)p->m, (long long)p->n, (long long)p->k, a->epilogue,
           a->math ? " " : "", a->math ? ft_math_name(p->math) : "");
  return 0;
}

/* Writes the page to a->out through a temporary file. */
static int write_out(const cli *c, const report_args *a, const ft_stored *s, const char *filter,
                     const unsigned char *stale) {
  ft_out *o = NULL;
  char msg[2048];
  ft_status st = ft_out_open(a->out, cli_db_path(c), "report", &o, msg, sizeof msg);
  if (st != FT_OK) return fail_status(st, msg);
  report_info info = {cli_db_path(c), filter[0] ? filter : NULL, stale};
  const int bad = report_write(ft_out_stream(o), s, &info) != 0;
  if (bad) {
    ft_out_close(o, 0, NULL, 0);
    return fail_msg("report: writing %s failed: out of memory", a->out);
  }
  if ((st = ft_out_close(o, 1, msg, sizeof msg)) != FT_OK) return fail_status(st, msg);
  return 0;
}

int cmd_report(cli *c, int argc, char **argv) {
  if (wants_help(argc, argv, report_help)) return 0;
  report_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  ft_problem p;
  char filter[4200] = "";
  if (a.shape && (rc = problem_of(&a, &p, filter, sizeof filter))) return rc;
  ft_ctx *ctx = NULL;
  if ((rc = cli_open(c, 0, &ctx))) return rc;
  ft_stored *s = NULL;
  ft_status st = ft_stored_load(ctx, a.shape ? &p : NULL, a.shape && !a.math ? FT_STORED_ANY_MATH : 0, &s);
  if (st != FT_OK) return fail_ctx(st, ctx);
  unsigned char *stale = calloc((size_t)s->n_problems + 1, 1);
  if (!stale) {
    ft_stored_free(s);
    ft_close(ctx);
    return fail_msg("out of memory");
  }
  int n_stale = 0;
  for (int i = 0; i < s->n_problems; i++) {
    const ft_stored_problem *sp = &s->problems[i];
    for (int j = 0; j < sp->n_results; j++) {
      const ft_stored_result *res = &sp->results[j];
      int current = 1;
      if (res->is_best) ft_source_current(ctx, sp->epilogue, res->config, res->source_hash, &current);
      stale[i] |= !current;
    }
    n_stale += stale[i];
  }
  ft_close(ctx);
  rc = write_out(c, &a, s, filter, stale);
  free(stale);
  if (!rc && !s->n_problems) {
    cli_line(stderr, "fusedtune: report: nothing is stored %s%s%sin %s: %s says so, with no charts",
            filter[0] ? "for " : "", filter, filter[0] ? " " : "", cli_db_path(c), a.out);
    rc = EXIT_NOT_TUNED;
  } else if (!rc) {
    int devices = s->n_devices;
    cli_line(stdout, "wrote %s: %d problem%s (by math mode) on %d device%s", a.out, s->n_problems,
           s->n_problems == 1 ? "" : "s", devices, devices == 1 ? "" : "s");
    if (n_stale)
      printf("%d of them stale (best measured with an older kernel source): marked on the page, each with the "
             "command that tunes it again\n", n_stale);
  }
  ft_stored_free(s);
  return rc;
}
