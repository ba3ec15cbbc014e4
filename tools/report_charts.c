/* The report's five charts: strategies side by side, every candidate sorted by time, time
 * against the variants' main dimensions, the roofline point and the error per math mode. Each
 * is one SVG whose data-marks attribute counts its elements of class "mark" (the tests count
 * them); a chart with nothing to draw is a sentence saying so instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define W 960
#define LEFT 80
#define RIGHT 20

static void none(report *r, const char *what) {
  fputs("<p class=\"none\">", r->f);
  html_esc(r->f, what);
  fputs("</p>\n", r->f);
}

/* A tooltip line for a stored result. */
static void tip_of(const ft_stored_result *res, const report_mode *m, char *out, size_t cap) {
  char t[64] = "not timed", e[48] = "";
  if (report_timed(res))
    snprintf(t, sizeof t, "%.4g ms, %.3g TFLOP/s", res->median_ms, report_tflops(m->flops, res->median_ms));
  if (res->rel_err >= 0) snprintf(e, sizeof e, ", rel_err %.2g", res->rel_err);
  snprintf(out, cap, "%s (%s) %s, %s: %s%s%s%s", res->variant, res->family[0] ? res->family : ft_strategy_name(res->strategy),
           ft_math_name(m->p->math), ft_result_status_name(res->status), t, e, res->message[0] ? ": " : "",
           res->message);
}

/* ---- strategies ---- */

typedef struct bar {
  const report_mode *m;
  const ft_stored_result *res;
  const char *what;
} bar;

static int group_bars(const report_group *g, bar *out, int cap) {
  int n = 0;
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    const ft_stored_result *fixed[4] = {m->eager, m->gemm, m->lt, m->pass};
    for (int j = 0; j < 4; j++)
      if (fixed[j] && n < cap) out[n].m = m, out[n].res = fixed[j], out[n].what = report_result_label(fixed[j]), n++;
    for (int j = 0; j < m->n_fam && n < cap; j++) {
      out[n].m = m, out[n].res = m->fam_best[j], out[n].what = m->fam_best[j]->family, n++;
    }
  }
  return n;
}

void chart_strategies(report *r, const report_group *g) {
  bar bars[FT_MATH_COUNT * (4 + REPORT_MAX_FAMILIES)];
  const int n = group_bars(g, bars, (int)(sizeof bars / sizeof bars[0]));
  if (!n) return none(r, "Strategies: no correct timed result in any mode, nothing to compare.");
  double hi = 0;
  for (int i = 0; i < n; i++) hi = fmax(hi, bars[i].res->median_ms);
  const double label_w = 250, bar_h = 18, gap = 6, top = 10;
  const int h = (int)(top + n * (bar_h + gap) + 50);
  scale x = scale_linear(0, hi * 1.6, LEFT + label_w, W - RIGHT); /* room for the text after a bar */
  svg_begin(r, "strategies", W, h, n, "strategies side by side: median time of each");
  svg_axis_x(r, &x, h - 40, top, "median time (ms); bars end at the time, text: TFLOP/s and speed-up");
  for (int i = 0; i < n; i++) {
    const bar *b = &bars[i];
    const double y = top + i * (bar_h + gap), t = b->res->median_ms;
    const double x1 = scale_at(&x, t);
    svg_text(r, LEFT + label_w - 6, y + bar_h - 5, "end", NULL, "%s  %s", ft_math_name(b->m->p->math), b->what);
    char tip[1024];
    tip_of(b->res, b->m, tip, sizeof tip);
    fprintf(r->f, "<rect class=\"mark bar%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
            b->res->is_best ? " best" : "", x.r0, y, x1 - x.r0, bar_h, report_result_color(r, b->res));
    html_esc(r->f, tip);
    fputs("</title></rect>\n", r->f);
    char sp[64] = "";
    if (b->m->eager && b->res == b->m->eager) snprintf(sp, sizeof sp, " · 1.00× (reference)");
    else if (b->m->eager) snprintf(sp, sizeof sp, " · %.2f× eager", report_time_ratio(b->m->eager, b->res));
    svg_text(r, x1 + 6, y + bar_h - 5, "start", b->res->is_best ? "best" : NULL, "%.4g ms · %.3g TFLOP/s%s%s", t,
             report_tflops(b->m->flops, t), sp, b->res->is_best ? " · stored best" : "");
  }
  svg_end(r, "Per math mode: the eager-style chain (its latest correct measurement, as list and query compare "
             "to), the fastest correct cuBLAS GEMM alone, cuBLASLt epilogue and cuBLAS + epilogue pass, and the "
             "fastest correct fused kernel of each family (each chosen as the stored best is: by its time over the cuBLAS "
             "GEMM timed beside it). Speed-up is against the eager-style chain of the same mode, each ratio to cuBLAS "
             "against the other's where both have one.");
}

/* ---- every candidate ---- */

static int by_time(const void *a, const void *b) {
  const ft_stored_result *x = *(const ft_stored_result *const *)a, *y = *(const ft_stored_result *const *)b;
  int tx = report_timed(x), ty = report_timed(y);
  if (tx != ty) return ty - tx;
  if (tx && x->median_ms != y->median_ms) return x->median_ms < y->median_ms ? -1 : 1;
  return strcmp(x->variant, y->variant);
}

/* The legend of the families and statuses among list[0..n), from x at y; returns the next y. */
static double candidate_legend(report *r, const ft_stored_result *const *list, int n, double y) {
  double x = LEFT;
  for (int f = 0; f < r->n_families; f++) {
    const char *fam = r->families[f];
    int seen = 0;
    for (int i = 0; i < n && !seen; i++) seen = !strcmp(list[i]->family, fam);
    if (!seen) continue;
    svg_legend(r, x, y, report_family_color(r, fam), "disc", fam);
    x += 30 + 7.5 * (double)strlen(fam);
  }
  for (int st = 0; st < FT_RESULT_UNAVAILABLE; st++) {
    int seen = 0;
    for (int i = 0; i < n && !seen; i++) seen = (int)list[i]->status == st;
    if (!seen) continue;
    svg_legend(r, x, y, "#555", report_status_shape((ft_result_status)st), ft_result_status_name((ft_result_status)st));
    x += 30 + 7.5 * (double)strlen(ft_result_status_name((ft_result_status)st));
  }
  return y + 20;
}

/* A dashed reference line at time ms across the plot, labelled above it (above: 1) or below it
 * (0): the slower of two baselines is labelled above and the faster below, so that two lines
 * close together (eager and cuBLAS's GEMM often are) never put one label over the other. */
static void ref_line(report *r, const scale *y, double ms, const char *what, int above) {
  const double at = scale_at(y, ms);
  fprintf(r->f, "<line class=\"ref\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", LEFT, at, W - RIGHT, at);
  svg_text(r, W - RIGHT - 4, above ? at - 4 : at + 13, "end", "ref", "%s %.4g ms", what, ms);
}

void chart_candidates(report *r, const report_mode *m) {
  const ft_stored_problem *p = m->p;
  if (!m->n_candidates) return none(r, "Candidates: none stored in this mode (baselines only).");
  const ft_stored_result **list = malloc((size_t)m->n_candidates * sizeof *list);
  if (!list) return none(r, "Candidates: out of memory.");
  int n = 0, timed = 0;
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < p->n_results; i++)
    if (p->results[i].strategy == FT_STRATEGY_FUSED || p->results[i].strategy == FT_STRATEGY_CUBLAS_EPILOGUE) {
      const ft_stored_result *res = &p->results[i];
      list[n++] = res;
      if (report_timed(res)) timed++, lo = fmin(lo, res->median_ms), hi = fmax(hi, res->median_ms);
    }
  qsort(list, (size_t)n, sizeof *list, by_time);
  for (int i = 0; i < 2; i++) {
    const ft_stored_result *b = i ? m->gemm : m->eager;
    if (b && timed) lo = fmin(lo, b->median_ms), hi = fmax(hi, b->median_ms);
  }
  const double band = 26, top = 10 + band + 14, bottom = top + 240;
  const int h = (int)(bottom + 70);
  char label[160];
  snprintf(label, sizeof label, "every %s candidate sorted by median time", ft_math_name(p->math));
  svg_begin(r, "candidates", W, h, n, label);
  const scale x = {0, n, LEFT, W - RIGHT, 0};
  fprintf(r->f, "<rect class=\"band\" x=\"%d\" y=\"10\" width=\"%d\" height=\"%.0f\"/>\n", LEFT, W - RIGHT - LEFT, band);
  svg_text(r, LEFT - 4, 10 + band / 2 + 4, "end", "label", "not timed");
  scale y = scale_log(timed ? lo : 1, timed ? hi : 1, bottom, top);
  if (timed) {
    svg_axis_y(r, &y, LEFT, W - RIGHT, "median time (ms, log)");
    const int eager_slower = !m->gemm || !m->eager || m->eager->median_ms >= m->gemm->median_ms;
    if (m->eager) ref_line(r, &y, m->eager->median_ms, "eager-style chain", eager_slower);
    if (m->gemm) ref_line(r, &y, m->gemm->median_ms, "cuBLAS GEMM alone", !eager_slower);
  }
  svg_text(r, (LEFT + W - RIGHT) / 2.0, bottom + 18, "middle", "label",
           "rank by median time (%d timed; the %d not timed at the top band)", timed, n - timed);
  const double rad = n > 300 ? 2.5 : n > 100 ? 3.5 : 4.5;
  for (int i = 0; i < n; i++) {
    const ft_stored_result *res = list[i];
    const double cx = scale_at(&x, i + 0.5), cy = report_timed(res) ? scale_at(&y, res->median_ms) : 10 + band / 2;
    char tip[1024], cls[64];
    tip_of(res, m, tip, sizeof tip);
    snprintf(cls, sizeof cls, "st-%s%s", ft_result_status_name(res->status), res->is_best ? " best" : "");
    svg_mark(r, report_status_shape(res->status), cx, cy, rad, report_family_color(r, res->family), cls, tip);
  }
  candidate_legend(r, list, n, bottom + 44);
  free(list);
  svg_end(r, "Every fused and cuBLAS + epilogue candidate of this mode, fastest first; colour is the kernel family, "
             "shape the status. Candidates that were not timed (compile errors, launch errors, timeouts, wrong "
             "results) stand in the top band, not dropped; a failed one that was timed keeps its place with its "
             "status's shape. Dashed: the baselines.");
}

/* ---- time against the variants' dimensions ---- */

static int param(const ft_stored_result *res, const char *name, int *v) {
  for (int i = 0; i < res->n_params; i++)
    if (!strcmp(res->params[i].name, name)) return *v = res->params[i].value, 1;
  return 0;
}

/* The value of dimension d ("tile", "stages", "split") of res as text, from its JSON keys; 0
 * when res has no such key. */
static int dim_label(const ft_stored_result *res, int d, char *out, size_t cap) {
  int v, w;
  if (d == 0) {
    static const char *const keys[] = {"bm", "consumers", "pingpong", "bn", "bk"};
    static const char *const labels[] = {"bm", "c", "pp", "bn", "bk"};
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < 5; i++)
      if (param(res, keys[i], &v) && at < cap)
        at += (size_t)snprintf(out + at, cap - at, "%s%s%d", at ? " " : "", labels[i], v);
    return at > 0;
  }
  if (d == 1) return param(res, "stages", &v) && snprintf(out, cap, "%d", v) > 0;
  if (!param(res, "split_k", &v)) return 0;
  if (param(res, "streamk", &w)) snprintf(out, cap, "stream-K %d", w);
  else snprintf(out, cap, "split-K %d", v);
  return 1;
}

/* Text order with digit runs compared as numbers: "bm64" before "bm128". */
static int natural_cmp(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
      if (x != y) return x < y ? -1 : 1;
      continue;
    }
    if (*a != *b) return (unsigned char)*a - (unsigned char)*b;
    a++, b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

static int natural_q(const void *a, const void *b) { return natural_cmp(a, b); }

#define MAX_CATS 64
typedef char cat_name[40];

void chart_dims(report *r, const report_mode *m) {
  static const char *const dims[] = {"tile (JSON keys bm / c = consumers / pp = pingpong, bn, bk)", "stages", "split (split_k, streamk)"};
  const ft_stored_problem *p = m->p;
  cat_name *cats = malloc(3 * MAX_CATS * sizeof *cats);
  if (!cats) return;
  int ncat[3] = {0, 0, 0}, marks = 0;
  double lo = INFINITY, hi = 0;
  char lab[40];
  for (int i = 0; i < p->n_results; i++) {
    const ft_stored_result *res = &p->results[i];
    if (res->strategy != FT_STRATEGY_FUSED || res->status != FT_RESULT_OK || !report_timed(res)) continue;
    for (int d = 0; d < 3; d++) {
      if (!dim_label(res, d, lab, sizeof lab)) continue;
      int c = 0;
      while (c < ncat[d] && strcmp(cats[d * MAX_CATS + c], lab)) c++;
      if (c == ncat[d] && ncat[d] < MAX_CATS) snprintf(cats[d * MAX_CATS + ncat[d]++], sizeof lab, "%s", lab);
      if (c < ncat[d]) marks++, lo = fmin(lo, res->median_ms), hi = fmax(hi, res->median_ms);
    }
  }
  if (!marks) {
    free(cats);
    return none(r, "Dimensions: no correct timed fused GEMM kernel in this mode.");
  }
  /* One row per dimension, each the chart's whole width, so that the chart is never wider than
   * the page (up to 64 categories a row: 13 px each, labels turned upright, 11 px high); below
   * each plot, room for its longest label (about 7 px a character). */
  const double plot_h = 170, head = 30;
  double row_h[3] = {0, 0, 0}, h_all = 10;
  for (int d = 0; d < 3; d++) {
    qsort(&cats[d * MAX_CATS], (size_t)ncat[d], sizeof *cats, natural_q);
    size_t longest = 0;
    for (int c = 0; c < ncat[d]; c++) longest = strlen(cats[d * MAX_CATS + c]) > longest ? strlen(cats[d * MAX_CATS + c]) : longest;
    row_h[d] = ncat[d] ? head + plot_h + 20 + 7.0 * (double)longest : 0;
    h_all += row_h[d];
  }
  const int w = W, h = (int)h_all;
  char label[160];
  snprintf(label, sizeof label, "%s: median time against tile, stages and split", ft_math_name(p->math));
  svg_begin(r, "dims", w, h, marks, label);
  double row_top = 0;
  for (int d = 0; d < 3; d++) {
    if (!ncat[d]) continue;
    const double top = row_top + head, bottom = top + plot_h;
    scale y = scale_log(lo, hi, bottom, top);
    svg_axis_y(r, &y, LEFT, w - RIGHT, "median time (ms, log)");
    const double x0 = LEFT + 10, pw = w - RIGHT - x0;
    fprintf(r->f, "<rect class=\"panel\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", x0, top, pw,
            bottom - top);
    svg_text(r, x0 + pw / 2, top - 10, "middle", "label", "%s", dims[d]);
    for (int c = 0; c < ncat[d]; c++) {
      const double cx = x0 + (c + 0.5) * pw / ncat[d];
      fprintf(r->f, "<text class=\"cat\" transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"end\">", cx + 4,
              bottom + 8);
      html_esc(r->f, cats[d * MAX_CATS + c]);
      fputs("</text>\n", r->f);
    }
    row_top += row_h[d];
    for (int i = 0; i < p->n_results; i++) {
      const ft_stored_result *res = &p->results[i];
      if (res->strategy != FT_STRATEGY_FUSED || res->status != FT_RESULT_OK || !report_timed(res) ||
          !dim_label(res, d, lab, sizeof lab))
        continue;
      int c = 0;
      while (c < ncat[d] && strcmp(cats[d * MAX_CATS + c], lab)) c++;
      if (c == ncat[d]) continue;
      /* A fixed jitter from the result's place, so the same database draws the same picture. */
      const double slot = pw / ncat[d], jit = ((double)((i * 2654435761u) % 1000) / 1000 - 0.5) * slot * 0.6;
      char tip[1024];
      tip_of(res, m, tip, sizeof tip);
      svg_mark(r, "disc", x0 + (c + 0.5) * slot + jit, scale_at(&y, res->median_ms), 3.5,
               report_family_color(r, res->family), res->is_best ? "best" : NULL, tip);
    }
  }
  free(cats);
  svg_end(r, "Each correct timed fused GEMM kernel of this mode at the value of each main dimension of its "
             "configuration (read from its JSON keys), coloured by family: a column that sits low is a choice that "
             "mattered. The epilogue pass after cuBLAS has none of these keys and is not shown.");
}

/* ---- roofline ---- */

/* A colour per math mode, in FT_MATH_MAP's order; grey for a mode added since. */
static const char *mode_color(ft_math m) {
  static const char *const c[] = {"#444444", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"};
  return (int)m >= 0 && (size_t)m < sizeof c / sizeof c[0] ? c[m] : "#7f7f7f";
}

void chart_roofline(report *r, const report_group *g) {
  int marks = 0;
  double lo_x = INFINITY, hi_x = 0, lo_y = INFINITY, hi_y = 0;
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    const ft_stored_result *pts[3] = {m->best, m->eager, m->gemm};
    for (int j = 0; j < 3; j++)
      if (report_timed(pts[j])) {
        marks++;
        const double ai = m->flops / m->bytes, tf = report_tflops(m->flops, pts[j]->median_ms);
        lo_x = fmin(lo_x, ai), hi_x = fmax(hi_x, ai), lo_y = fmin(lo_y, tf), hi_y = fmax(hi_y, tf);
      }
  }
  if (!marks) return none(r, "Roofline: no correct timed result to place.");
  const double top = 20, bottom = 300;
  const int legend_h = (int)(top + 10 + (g->n + 3) * 18 + 64 + g->n * 34 + 10);
  const int h = legend_h > 350 ? legend_h : 350;
  svg_begin(r, "roofline", W, h, marks, "roofline: achieved FLOP/s against arithmetic intensity");
  scale x = scale_log(lo_x / 2, hi_x * 2, LEFT, W - RIGHT - 260);
  scale y = scale_log(lo_y / 2, hi_y * 2, bottom, top);
  svg_axis_y(r, &y, LEFT, W - RIGHT - 260, "TFLOP/s (log)");
  svg_axis_x(r, &x, bottom, top, "arithmetic intensity: FLOP per compulsory byte (log)");
  double ly = top + 10;
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    const char *mode = ft_math_name(m->p->math);
    if (m->gemm) {
      const double at = scale_at(&y, report_tflops(m->flops, m->gemm->median_ms));
      /* A style, not an attribute: the stylesheet's .ref stroke would win over an attribute. */
      fprintf(r->f, "<line class=\"ref\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" style=\"stroke:%s\"/>\n", LEFT,
              at, x.r1, at, mode_color(m->p->math));
    }
    const ft_stored_result *pts[3] = {m->best, m->eager, m->gemm};
    static const char *const shape[3] = {"disc", "square", "diamond"};
    for (int j = 0; j < 3; j++) {
      if (!report_timed(pts[j])) continue;
      const double t = pts[j]->median_ms, tf = report_tflops(m->flops, t);
      char tip[1200], base[1024];
      tip_of(pts[j], m, base, sizeof base);
      snprintf(tip, sizeof tip, "%s; %.1f GB/s of compulsory traffic (%.4g MB)", base, m->bytes / (t * 1e-3) / 1e9,
               m->bytes / 1e6);
      svg_mark(r, shape[j], scale_at(&x, m->flops / m->bytes), scale_at(&y, tf), 5.5, mode_color(m->p->math),
               j ? NULL : "best", tip);
    }
    svg_legend(r, W - RIGHT - 240, ly, mode_color(m->p->math), "disc", mode), ly += 18;
  }
  svg_legend(r, W - RIGHT - 240, ly + 6, "#555", "disc", "stored best"), ly += 18;
  svg_legend(r, W - RIGHT - 240, ly + 6, "#555", "square", "eager-style chain"), ly += 18;
  svg_legend(r, W - RIGHT - 240, ly + 6, "#555", "diamond", "cuBLAS GEMM alone"), ly += 18;
  svg_text(r, W - RIGHT - 240, ly + 24, "start", "legend", "dashed: cuBLAS GEMM alone's rate,");
  svg_text(r, W - RIGHT - 240, ly + 40, "start", "legend", "the reference (no measured peak)");
  /* The numbers a reader needs from a chart of few points: each mode's best as a share of the
   * reference, and the intensity it sits at. */
  ly += 64;
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    if (!report_timed(m->best)) continue;
    const double tf = report_tflops(m->flops, m->best->median_ms);
    if (report_timed(m->gemm))
      svg_text(r, W - RIGHT - 240, ly, "start", "legend", "%s: best %.3g TFLOP/s, %.0f %% of GEMM's", ft_math_name(m->p->math),
               tf, 100 * report_time_ratio(m->gemm, m->best));
    else
      svg_text(r, W - RIGHT - 240, ly, "start", "legend", "%s: best %.3g TFLOP/s", ft_math_name(m->p->math), tf);
    svg_text(r, W - RIGHT - 240, ly + 15, "start", "legend", "  at %.3g FLOP/byte", m->flops / m->bytes);
    ly += 34;
  }
  svg_end(r, "The database holds no measured device peaks (FLOP/s or memory bandwidth), so no roof is drawn from "
             "them: the dashed reference line of each mode is the rate of the fastest cuBLAS GEMM alone measured "
             "on this device in that mode, and no memory roof is drawn. Bytes are the compulsory traffic (x, W and the "
             "epilogue's vectors read once, y written once, in the mode's element type); the tooltips give the "
             "achieved bytes per second.");
}

/* ---- error against float64 per mode ---- */

void chart_errors(report *r, const report_group *g) {
  if (g->n < 2) return;
  int marks = 0;
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < g->n; i++) {
    const ft_stored_result *pts[2] = {g->modes[i].best, g->modes[i].eager};
    for (int j = 0; j < 2; j++)
      if (pts[j] && pts[j]->rel_err >= 0) {
        marks++;
        const double e = fmax(pts[j]->rel_err, 1e-12);
        lo = fmin(lo, e), hi = fmax(hi, e);
      }
  }
  if (!marks) return none(r, "Error against float64: no result of these modes was checked.");
  const double top = 20, bottom = 240, cw = 120;
  const int w = (int)(LEFT + RIGHT + 220 + g->n * cw), h = 290;
  svg_begin(r, "errors", w, h, marks, "relative error against the float64 reference per math mode");
  scale y = scale_log(lo, hi, bottom, top);
  svg_axis_y(r, &y, LEFT, LEFT + g->n * cw, "relative error ||y - ref|| / ||ref|| (log)");
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    const double cx = LEFT + (i + 0.5) * cw;
    svg_text(r, cx, bottom + 18, "middle", "label", "%s", ft_math_name(m->p->math));
    const ft_stored_result *pts[2] = {m->best, m->eager};
    static const char *const shape[2] = {"disc", "square"};
    static const char *const color[2] = {"#1f77b4", "#d62728"};
    for (int j = 0; j < 2; j++) {
      if (!pts[j] || pts[j]->rel_err < 0) continue;
      char tip[1024];
      tip_of(pts[j], m, tip, sizeof tip);
      svg_mark(r, shape[j], cx + (j ? 12 : -12), scale_at(&y, fmax(pts[j]->rel_err, 1e-12)), 5.5, color[j],
               j ? NULL : "best", tip);
    }
  }
  svg_legend(r, LEFT + g->n * cw + 20, top + 20, "#1f77b4", "disc", "stored best");
  svg_legend(r, LEFT + g->n * cw + 20, top + 40, "#d62728", "square", "eager-style chain");
  svg_end(r, "The relative error of the stored best and of the eager-style chain of each mode against the float64 "
             "reference, as measured when they were verified (an error of 0 is drawn at 1e-12).");
}
