/* The HTML report of stored results (`fusedtune report`): one self-contained file, inline SVG and
 * CSS, no script, no reference outside itself. Made of the public API's ft_stored only (no GPU,
 * no database): report_model.c derives the numbers, report_charts.c draws them on the primitives
 * of report_svg.c, report_html.c writes the page around them. docs/REPORT.md says what each part
 * shows and where each number comes from. */
#ifndef FT_REPORT_H
#define FT_REPORT_H

#include <stdio.h>

#include "cli.h"

#define REPORT_MAX_FAMILIES 16

/* One math mode of a problem: the stored results and what is derived from them. */
typedef struct report_mode {
  const ft_stored_problem *p;
  double flops;                    /* 2 m n k */
  double bytes;                    /* compulsory traffic: x, W and vectors read once, y written once */
  const ft_stored_result *eager;   /* the latest correct eager-style chain (what list compares to) */
  const ft_stored_result *gemm;    /* the fastest correct cuBLAS GEMM alone (the roofline's reference) */
  const ft_stored_result *lt;      /* the fastest correct cuBLASLt epilogue */
  const ft_stored_result *pass;    /* the fastest correct cuBLAS + epilogue pass */
  const ft_stored_result *best;    /* the stored best (the best view's rule) */
  int n_fam;                       /* the fastest correct fused GEMM of each family, by family name */
  const ft_stored_result *fam_best[REPORT_MAX_FAMILIES];
  int n_candidates;                /* fused and cublas+epilogue results, every status */
  int n_status[FT_RESULT_STATUS_COUNT]; /* of those */
} report_mode;

/* A problem on a device in every mode the database holds: the problems [first, first + n) of the
 * ft_stored (same device, shape and epilogue; sorted by mode). */
typedef struct report_group {
  int first, n;
  report_mode modes[FT_MATH_COUNT];
} report_group;

typedef struct report {
  FILE *f;
  const ft_stored *s;
  const unsigned char *stale; /* per problem of s: its best was measured with an older kernel source */
  const char *db_path;        /* named in the command that tunes a stale best again */
  int n_families; /* every family the results name, sorted: the colour of a family is its place */
  char families[REPORT_MAX_FAMILIES][32];
} report;

/* ---- report_model.c ---- */

/* The groups of s (*out malloc'd, the caller frees; *n may be 0). Returns 0, -1 out of memory. */
int report_groups(const ft_stored *s, report_group **out, int *n);
/* Collects r->families from r->s. */
void report_families(report *r);
/* The colour of family ("#rrggbb"), and of a result: its family's, or its baseline's own. */
const char *report_family_color(const report *r, const char *family);
const char *report_result_color(const report *r, const ft_stored_result *res);
/* What a stored result is called in a chart: "eager-style chain", "cuBLAS GEMM alone", a family. */
const char *report_result_label(const ft_stored_result *res);
/* TFLOP/s of time ms for flops (0 when not measured). */
double report_tflops(double flops, double ms);
/* Whether res was timed. */
int report_timed(const ft_stored_result *res);
/* How many times b's time a's is, both timed results (report_timed): at one clock, by their
 * gemm_ratio (time over the cuBLAS GEMM timed beside each), where both have one; else by their
 * medians. */
double report_time_ratio(const ft_stored_result *a, const ft_stored_result *b);
/* The mark shape of a status: ok a disc, wrong_result a cross, compile_error a square,
 * launch_error a triangle, timeout a diamond. */
const char *report_status_shape(ft_result_status st);

/* ---- report_html.c ---- */

/* s as HTML text (element content or a quoted attribute value): & < > " ' escaped, control
 * characters and bytes that are not UTF-8 as U+FFFD. */
void html_esc(FILE *f, const char *s);
void html_escf(FILE *f, const char *fmt, ...) CLI_PRINTF(2, 3);

typedef struct report_info {
  const char *db_path;
  const char *filter; /* "128x4096x4096 relu(x + bias) fp32" when the report is of one problem, else NULL */
  const unsigned char *stale; /* per problem of the ft_stored (NULL: none stale) */
} report_info;

/* Writes the whole page. Returns 0, -1 out of memory (write errors show in ferror(r->f)). */
int report_write(FILE *f, const ft_stored *s, const report_info *info);

/* ---- report_charts.c: each chart is one <svg class="chart" data-chart=KIND data-marks=N>, with
 * N elements of class "mark" ---- */

void chart_strategies(report *r, const report_group *g);
void chart_candidates(report *r, const report_mode *m);
void chart_dims(report *r, const report_mode *m);
void chart_roofline(report *r, const report_group *g);
void chart_errors(report *r, const report_group *g);

/* ---- report_svg.c ---- */

typedef struct scale {
  double d0, d1; /* the domain */
  double r0, r1; /* the range, in pixels */
  int log;
} scale;

/* A linear scale from 0 (or lo) to a rounded-up hi, or a log scale over whole decades around
 * [lo, hi] (lo > 0). */
scale scale_linear(double lo, double hi, double r0, double r1);
scale scale_log(double lo, double hi, double r0, double r1);
double scale_at(const scale *s, double v);

void svg_begin(report *r, const char *kind, int w, int h, int marks, const char *label);
void svg_end(report *r, const char *caption);
/* A vertical axis at x from the scale's range, ticks and grid lines to x_end, and a label. */
void svg_axis_y(report *r, const scale *s, double x, double x_end, const char *label);
/* A horizontal axis at y, ticks and grid lines up to y_end, and a label. */
void svg_axis_x(report *r, const scale *s, double y, double y_end, const char *label);
/* Text at (x, y) (anchor "start", "middle", "end"), escaped. */
void svg_text(report *r, double x, double y, const char *anchor, const char *cls, const char *fmt, ...)
    CLI_PRINTF(6, 7);
/* A legend entry at (x, y): a swatch in colour with the shape of a status ("ok": a disc), text. */
void svg_legend(report *r, double x, double y, const char *color, const char *shape, const char *text);
/* A mark: shape "disc", "square", "triangle", "diamond", "cross" or "ring" of radius rad at (x, y),
 * class "mark" plus cls, a tooltip (escaped). */
void svg_mark(report *r, const char *shape, double x, double y, double rad, const char *color, const char *cls,
              const char *tip);

#endif
