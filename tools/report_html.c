/* The report's page: head and style, the index of problems, each problem's summary, charts and
 * tables, and where its numbers come from (device, versions, runs, options). Every text that
 * came from the database is escaped here or in the charts (html_esc). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"

/* ---- escaping ---- */

/* The length of the well-formed UTF-8 sequence at s, or 0 (overlong forms, surrogates, > U+10FFFF). */
static int utf8_len(const unsigned char *s) {
  int n = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
        : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

void html_esc(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  while (*p) {
    const int n = utf8_len(p);
    if (!n || (*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7F) {
      fputs("\xEF\xBF\xBD", f); /* U+FFFD: HTML allows no control characters, and no broken UTF-8 */
      p++;
      continue;
    }
    switch (*p) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      default: fwrite(p, 1, (size_t)n, f); break;
    }
    p += n;
  }
}

void html_escf(FILE *f, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  html_esc(f, buf);
}

/* ---- the page ---- */

static const char k_style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1040px;color:#222;background:#fff}"
    "h1{font-size:24px}h2{font-size:19px;margin-top:40px;border-top:2px solid #ccc;padding-top:14px}"
    "h3{font-size:16px;margin-top:26px}table{border-collapse:collapse;margin:8px 0}"
    "td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;overflow-wrap:normal}code{font-size:12px}"
    ".fig{margin:12px 0}figcaption{font-size:12px;color:#555;max-width:960px}"
    /* A chart never runs past the column (nor off a printed page): it scales down instead. */
    "svg.chart{background:#fff;font-size:11px;max-width:100%;height:auto}"
    /* Long run options wrap inside their cell rather than push the table off the page. */
    "td,td code{overflow-wrap:anywhere}table{max-width:100%}p.stale{font-weight:normal}"
    "svg .axis line{stroke:#888}svg .grid{stroke:#eee}"
    "svg .label{fill:#444;font-size:12px}svg .legend{fill:#333}svg .ref{stroke:#999;stroke-dasharray:5 4}"
    "svg text.ref{fill:#666;stroke:none}svg .band{fill:#fbeaea}svg .panel{fill:#fafafa;stroke:#e4e4e4}"
    ".stale{color:#a00;font-weight:bold}svg .best{font-weight:bold}svg rect.best,svg circle.best{stroke:#000;stroke-width:1.5}"
    "p.none{color:#666;font-style:italic}p.empty{font-size:16px;padding:20px;background:#fff6dd}"
    "details{margin:8px 0}summary{cursor:pointer}.small{font-size:12px;color:#555}";

static void begin_page(FILE *f, const report_info *info) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        /* Nothing may load from anywhere: the file is the whole report. */
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>fusedtune report",
        f);
  if (info->filter) fputs(": ", f), html_esc(f, info->filter);
  fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<header><h1>fusedtune report</h1>\n<p>Database <code>", k_style);
  html_esc(f, info->db_path);
  char when[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fprintf(f, "</code>, read-only; written %s by fusedtune %s.", when, ft_version_string());
  if (info->filter) fputs(" Problem: <code>", f), html_esc(f, info->filter), fputs("</code>.", f);
  fputs(" Every number below is a stored measurement or derived from one (docs/REPORT.md); nothing is measured "
        "while the report is written.</p></header>\n",
        f);
}

static void shape_text(const ft_stored_problem *p, char *out, size_t cap) {
  snprintf(out, cap, "%lldx%lldx%lld", (long long)p->m, (long long)p->n, (long long)p->k);
}

static void ms_cell(FILE *f, double ms) {
  if (ms >= 0) fprintf(f, "<td class=\"num\">%.4g</td>", ms);
  else fputs("<td class=\"num\">-</td>", f);
}

static void err_cell(FILE *f, double e) {
  if (e >= 0) fprintf(f, "<td class=\"num\">%.2g</td>", e);
  else fputs("<td class=\"num\">-</td>", f);
}

/* Whether the mode's stored best was measured with an older kernel source. */
static int stale_best(const report *r, const report_mode *m) {
  return r->stale && m->best && r->stale[m->p - r->s->problems];
}

/* ---- index ---- */

static void index_table(report *r, const report_group *g, int ng) {
  FILE *f = r->f;
  fputs("<nav id=\"index\"><h2>Problems</h2>\n<table><tr><th>device</th><th>shape MxNxK</th><th>epilogue</th>"
        "<th>math modes (best vs eager)</th></tr>\n",
        f);
  for (int i = 0; i < ng; i++) {
    const ft_stored_problem *p = g[i].modes[0].p;
    char shape[96];
    shape_text(p, shape, sizeof shape);
    fputs("<tr><td>", f);
    html_esc(f, r->s->devices[p->device].name);
    fprintf(f, "</td><td><a href=\"#g%d\">%s</a></td><td><code>", i, shape);
    html_esc(f, p->epilogue);
    fputs("</code></td><td>", f);
    for (int j = 0; j < g[i].n; j++) {
      const report_mode *m = &g[i].modes[j];
      const char *mode = ft_math_name(m->p->math);
      fprintf(f, "%s<a href=\"#g%d-%s\">%s</a>", j ? ", " : "", i, mode, mode);
      if (m->best && m->eager) fprintf(f, " %.2f×", report_time_ratio(m->eager, m->best));
      else if (!m->best) fputs(" (no correct candidate)", f);
      if (stale_best(r, m)) fputs(" <span class=\"stale\">stale</span>", f);
    }
    fputs("</td></tr>\n", f);
  }
  fputs("</table></nav>\n", f);
}

/* ---- a problem ---- */

static void summary_table(report *r, const report_group *g) {
  FILE *f = r->f;
  fputs("<table class=\"summary\"><tr><th>mode</th><th>stored best</th><th>median ms</th><th>TFLOP/s</th>"
        "<th>GB/s</th><th>vs eager</th><th>vs cuBLAS GEMM alone</th><th>candidates: ok / wrong / compile error / "
        "launch error / timeout</th></tr>\n",
        f);
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    fprintf(f, "<tr><td>%s</td><td>", ft_math_name(m->p->math));
    if (m->best) {
      html_esc(f, ft_strategy_name(m->best->strategy));
      fputs(" <code>", f);
      html_esc(f, m->best->variant);
      fputs("</code>", f);
      if (stale_best(r, m)) fputs(" <span class=\"stale\">stale</span>", f);
      fputs("</td>", f);
      const double t = m->best->median_ms;
      fprintf(f, "<td class=\"num\">%.4g</td><td class=\"num\">%.3g</td><td class=\"num\">%.4g</td>", t,
              report_tflops(m->flops, t), m->bytes / (t * 1e-3) / 1e9);
      if (m->eager) fprintf(f, "<td class=\"num\">%.2f×</td>", report_time_ratio(m->eager, m->best));
      else fputs("<td class=\"num\">-</td>", f);
      if (m->gemm) fprintf(f, "<td class=\"num\">%.0f %%</td>", 100 * report_time_ratio(m->gemm, m->best));
      else fputs("<td class=\"num\">-</td>", f);
    } else {
      fputs("no correct candidate</td><td></td><td></td><td></td><td></td><td></td>", f);
    }
    fprintf(f, "<td class=\"num\">%d / %d / %d / %d / %d</td></tr>\n", m->n_status[FT_RESULT_OK],
            m->n_status[FT_RESULT_WRONG_RESULT], m->n_status[FT_RESULT_COMPILE_ERROR],
            m->n_status[FT_RESULT_LAUNCH_ERROR], m->n_status[FT_RESULT_TIMEOUT]);
  }
  fputs("</table>\n<p class=\"small\">vs cuBLAS GEMM alone: the GEMM without any epilogue as a share of the best's "
        "time (100 % = as fast as cuBLAS's bare GEMM). GB/s: the compulsory bytes over the time.</p>\n",
        f);
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    if (!stale_best(r, m)) continue;
    fprintf(f, "<p class=\"stale\"><b>stale</b> (%s): this best was measured with an older kernel source, so "
               "<code>query</code> and <code>ft_lookup</code> skip it and its time is not today's kernel's. "
               "Tune it again: <code>",
            ft_math_name(m->p->math));
    char cmd[8800];
    ft_tune_command(r->db_path, m->p->m, m->p->n, m->p->k, m->p->epilogue, ft_math_name(m->p->math), cmd, sizeof cmd);
    html_esc(f, cmd);
    fputs("</code></p>\n", f);
  }
}

static void results_table(report *r, const report_mode *m) {
  FILE *f = r->f;
  const ft_stored_problem *p = m->p;
  fprintf(f, "<details><summary>All %d stored results of this mode</summary>\n<table><tr><th>strategy</th>"
             "<th>family</th><th>variant</th><th>status</th><th>median ms</th><th>min ms</th><th>IQR ms</th>"
             "<th>repeats</th><th>rel_err</th><th>max_abs_err</th><th>measured</th><th>run</th><th>message</th></tr>\n",
          p->n_results);
  for (int i = 0; i < p->n_results; i++) {
    const ft_stored_result *res = &p->results[i];
    fputs(res->is_best ? "<tr class=\"best\"><td>" : "<tr><td>", f);
    html_esc(f, ft_strategy_name(res->strategy));
    fputs("</td><td>", f);
    html_esc(f, res->family);
    fputs("</td><td><code>", f);
    html_esc(f, res->variant);
    fputs("</code></td><td>", f);
    html_esc(f, ft_result_status_name(res->status));
    fputs("</td>", f);
    ms_cell(f, res->median_ms);
    ms_cell(f, res->min_ms);
    ms_cell(f, res->iqr_ms);
    fprintf(f, "<td class=\"num\">%d</td>", res->repeats);
    err_cell(f, res->rel_err);
    err_cell(f, res->max_abs_err);
    fputs("<td>", f);
    html_esc(f, res->created);
    fputs("</td><td><code>", f);
    if (res->run >= 0) html_escf(f, "%.8s", p->runs[res->run].uuid);
    fputs("</code></td><td>", f);
    html_esc(f, res->message);
    fputs("</td></tr>\n", f);
  }
  fputs("</table></details>\n", f);
}

/* "13.0" from major * 1000 + minor * 10 (driver, runtime, NVRTC). */
static void cuda_version(char *out, size_t cap, int v) { snprintf(out, cap, "%d.%d (%d)", v / 1000, v % 1000 / 10, v); }

static void device_table(report *r, const ft_stored_device *d) {
  FILE *f = r->f;
  char drv[48], rt[48], nv[48];
  cuda_version(drv, sizeof drv, d->driver_version);
  cuda_version(rt, sizeof rt, d->runtime_version);
  cuda_version(nv, sizeof nv, d->nvrtc_version);
  fputs("<table class=\"device\"><tr><th>device</th><td>", f);
  html_esc(f, d->name);
  fputs("</td></tr><tr><th>fingerprint</th><td><code>", f);
  html_esc(f, d->fingerprint);
  fprintf(f, "</code></td></tr><tr><th>compute capability, SMs, memory</th><td>%d.%d, %d SMs, %.1f GiB</td></tr>"
             "<tr><th>driver (CUDA version it supports)</th><td>%s</td></tr><tr><th>CUDA runtime</th><td>%s</td></tr>"
             "<tr><th>NVRTC</th><td>%s</td></tr><tr><th>cuBLAS</th><td>%d.%d.%d (%d)</td></tr>"
             "<tr><th>first seen, last seen</th><td>",
          d->cc_major, d->cc_minor, d->sm_count, (double)d->mem_bytes / (1024.0 * 1024 * 1024), drv, rt, nv,
          d->cublas_version / 10000, d->cublas_version % 10000 / 100, d->cublas_version % 100, d->cublas_version);
  html_escf(f, "%s, %s", d->first_seen, d->last_seen);
  fputs("</td></tr></table>\n<p class=\"small\">The versions are those of the last run on this device (the database "
        "keeps one set per device).</p>\n",
        f);
}

static void runs_table(report *r, const report_group *g) {
  FILE *f = r->f;
  fputs("<table class=\"runs\"><tr><th>mode</th><th>run</th><th>started</th><th>ended</th><th>outcome</th>"
        "<th>fusedtune</th><th>budget s</th><th>options</th><th>results</th></tr>\n",
        f);
  for (int i = 0; i < g->n; i++) {
    const ft_stored_problem *p = g->modes[i].p;
    int loose = 0;
    for (int j = 0; j < p->n_results; j++) loose += p->results[j].run < 0;
    for (int j = 0; j < p->n_runs; j++) {
      const ft_stored_run *ru = &p->runs[j];
      int n = 0;
      for (int k = 0; k < p->n_results; k++) n += p->results[k].run == j;
      fprintf(f, "<tr><td>%s</td><td><code>", ft_math_name(p->math));
      html_esc(f, ru->uuid);
      fputs("</code></td><td>", f);
      html_esc(f, ru->started);
      fputs("</td><td>", f);
      html_esc(f, ru->ended[0] ? ru->ended : "(did not finish)");
      fputs("</td><td>", f);
      html_esc(f, ru->outcome);
      fputs("</td><td>", f);
      html_esc(f, ru->tool_version);
      fprintf(f, "</td><td class=\"num\">%g</td><td><code>", ru->budget_s);
      html_esc(f, ru->options);
      fprintf(f, "</code></td><td class=\"num\">%d</td></tr>\n", n);
    }
    if (loose)
      fprintf(f, "<tr><td>%s</td><td colspan=\"7\">recorded outside a run</td><td class=\"num\">%d</td></tr>\n",
              ft_math_name(p->math), loose);
  }
  fputs("</table>\n", f);
}

/* The fusedtune versions that measured the results, and the span of their dates. */
static void provenance(report *r, const report_group *g) {
  FILE *f = r->f;
  const char *first = NULL, *last = NULL;
  const char *versions[16];
  int nv = 0;
  for (int i = 0; i < g->n; i++)
    for (int j = 0; j < g->modes[i].p->n_results; j++) {
      const ft_stored_result *res = &g->modes[i].p->results[j];
      if (!first || strcmp(res->created, first) < 0) first = res->created;
      if (!last || strcmp(res->created, last) > 0) last = res->created;
      int k = 0;
      while (k < nv && strcmp(versions[k], res->fusedtune_version)) k++;
      if (k == nv && nv < 16) versions[nv++] = res->fusedtune_version;
    }
  fputs("<p>Results measured from ", f);
  html_escf(f, "%s to %s", first ? first : "?", last ? last : "?");
  fputs(" by fusedtune ", f);
  for (int k = 0; k < nv; k++) fputs(k ? ", " : "", f), html_esc(f, versions[k]);
  fputs(".</p>\n", f);
}

static void group_section(report *r, const report_group *g, int gi) {
  FILE *f = r->f;
  const ft_stored_problem *p0 = g->modes[0].p;
  const ft_stored_device *d = &r->s->devices[p0->device];
  char shape[96];
  shape_text(p0, shape, sizeof shape);
  fprintf(f, "<section class=\"problem\" id=\"g%d\" data-shape=\"%s\" data-epilogue=\"", gi, shape);
  html_esc(f, p0->epilogue);
  fputs("\" data-device=\"", f);
  html_esc(f, d->fingerprint);
  fprintf(f, "\" data-modes=\"%d\">\n<h2>%s · <code>", g->n, shape);
  html_esc(f, p0->epilogue);
  fputs("</code> · ", f);
  html_esc(f, d->name);
  fprintf(f, "</h2>\n<p class=\"small\">y = E(x W<sup>T</sup>), x [%lld, %lld], W [%lld, %lld] row-major; "
             "%.4g GFLOP per call.</p>\n",
          (long long)p0->m, (long long)p0->k, (long long)p0->n, (long long)p0->k, g->modes[0].flops / 1e9);
  summary_table(r, g);
  fputs("<h3>Strategies</h3>\n", f);
  chart_strategies(r, g);
  fputs("<h3>Against the device</h3>\n", f);
  chart_roofline(r, g);
  if (g->n > 1) {
    fputs("<h3>Error against float64 per math mode</h3>\n", f);
    chart_errors(r, g);
  }
  for (int i = 0; i < g->n; i++) {
    const report_mode *m = &g->modes[i];
    const char *mode = ft_math_name(m->p->math);
    fprintf(f, "<section class=\"mode\" id=\"g%d-%s\" data-math=\"%s\">\n<h3>%s: every candidate</h3>\n", gi, mode,
            mode, mode);
    chart_candidates(r, m);
    fprintf(f, "<h3>%s: what mattered</h3>\n", mode);
    chart_dims(r, m);
    results_table(r, m);
    fputs("</section>\n", f);
  }
  fputs("<h3>Where the numbers come from</h3>\n", f);
  device_table(r, d);
  runs_table(r, g);
  provenance(r, g);
  fputs("</section>\n", f);
}

int report_write(FILE *f, const ft_stored *s, const report_info *info) {
  report r = {f, s, info->stale, info->db_path, 0, {{0}}};
  report_group *groups = NULL;
  int ng = 0;
  if (report_groups(s, &groups, &ng) != 0) return -1;
  report_families(&r);
  begin_page(f, info);
  if (!ng) {
    fputs("<p class=\"empty\">", f);
    if (info->filter) html_escf(f, "Nothing is stored for %s in this database: no results, so no charts.", info->filter);
    else fputs("This database holds no results yet: nothing has been tuned, so there is nothing to chart. Run "
               "<code>fusedtune tune</code> (or import an export) first.",
               f);
    fputs("</p>\n", f);
  } else {
    index_table(&r, groups, ng);
    for (int i = 0; i < ng; i++) group_section(&r, &groups[i], i);
  }
  fputs("</body></html>\n", f);
  free(groups);
  return 0;
}
