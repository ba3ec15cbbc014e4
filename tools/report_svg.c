/* The drawing primitives of the report's charts: scales, axes with ticks, text, legend entries
 * and marks, written as inline SVG. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* A step of 1, 2 or 5 times a power of ten near span / 5. */
static double nice_step(double span) {
  double raw = span / 5, p = pow(10, floor(log10(raw))), r = raw / p;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * p;
}

scale scale_linear(double lo, double hi, double r0, double r1) {
  if (!(hi > lo)) hi = lo + 1;
  double step = nice_step(hi - lo);
  scale s = {floor(lo / step) * step, ceil(hi / step) * step, r0, r1, 0};
  return s;
}

scale scale_log(double lo, double hi, double r0, double r1) {
  if (!(lo > 0)) lo = hi > 0 ? hi / 10 : 1;
  if (!(hi >= lo)) hi = lo;
  scale s = {pow(10, floor(log10(lo))), pow(10, ceil(log10(hi))), r0, r1, 1};
  if (s.d1 <= s.d0) s.d1 = s.d0 * 10;
  return s;
}

double scale_at(const scale *s, double v) {
  double t = s->log ? (log10(v) - log10(s->d0)) / (log10(s->d1) - log10(s->d0)) : (v - s->d0) / (s->d1 - s->d0);
  if (!isfinite(t)) t = 0;
  return s->r0 + t * (s->r1 - s->r0);
}

/* The ticks of s: whole decades of a log scale (with 2 and 5 between when it spans fewer than
 * three), steps of a linear one. Returns their count (at most cap). */
static int ticks(const scale *s, double *out, int cap) {
  int n = 0;
  if (s->log) {
    const int decades = (int)lround(log10(s->d1 / s->d0));
    for (double d = s->d0; d <= s->d1 * 1.0001 && n < cap; d *= 10) {
      out[n++] = d;
      if (decades < 3 && d * 10 <= s->d1 * 1.0001)
        for (int f = 2; f <= 5 && n < cap; f += 3) out[n++] = d * f;
    }
    return n;
  }
  double step = nice_step(s->d1 - s->d0);
  for (double v = s->d0; v <= s->d1 + step * 1e-6 && n < cap; v += step) out[n++] = fabs(v) < step * 1e-9 ? 0 : v;
  return n;
}

void svg_text(report *r, double x, double y, const char *anchor, const char *cls, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(r->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", x, y, anchor, cls ? " class=\"" : "",
          cls ? cls : "", cls ? "\"" : "");
  html_esc(r->f, buf);
  fputs("</text>\n", r->f);
}

void svg_axis_y(report *r, const scale *s, double x, double x_end, const char *label) {
  double t[40];
  int n = ticks(s, t, 40);
  fprintf(r->f, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, s->r0, x, s->r1);
  for (int i = 0; i < n; i++) {
    double y = scale_at(s, t[i]);
    fprintf(r->f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, y, x_end, y);
    svg_text(r, x - 4, y + 4, "end", NULL, "%g", t[i]);
  }
  double mid = (s->r0 + s->r1) / 2;
  fprintf(r->f, "<text class=\"label\" transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">",
          x - 46, mid);
  html_esc(r->f, label);
  fputs("</text></g>\n", r->f);
}

void svg_axis_x(report *r, const scale *s, double y, double y_end, const char *label) {
  double t[40];
  int n = ticks(s, t, 40);
  fprintf(r->f, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", s->r0, y, s->r1, y);
  for (int i = 0; i < n; i++) {
    double x = scale_at(s, t[i]);
    fprintf(r->f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, y, x, y_end);
    svg_text(r, x, y + 16, "middle", NULL, "%g", t[i]);
  }
  svg_text(r, (s->r0 + s->r1) / 2, y + 34, "middle", "label", "%s", label);
  fputs("</g>\n", r->f);
}

void svg_begin(report *r, const char *kind, int w, int h, int marks, const char *label) {
  fprintf(r->f,
          "<figure class=\"fig\"><svg class=\"chart\" data-chart=\"%s\" data-marks=\"%d\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
          "aria-label=\"",
          kind, marks, w, h, w, h);
  html_esc(r->f, label);
  fputs("\">\n", r->f);
}

void svg_end(report *r, const char *caption) {
  fputs("</svg><figcaption>", r->f);
  html_esc(r->f, caption);
  fputs("</figcaption></figure>\n", r->f);
}

/* The outline of shape at (x, y), radius rad, with the given attributes. */
static void shape_at(report *r, const char *shape, double x, double y, double rad, const char *attrs) {
  FILE *f = r->f;
  if (!strcmp(shape, "square"))
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" %s>", x - rad, y - rad, 2 * rad, 2 * rad,
            attrs);
  else if (!strcmp(shape, "triangle"))
    fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" %s>", x, y - rad, x + rad, y + rad, x - rad, y + rad,
            attrs);
  else if (!strcmp(shape, "diamond"))
    fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" %s>", x, y - rad, x + rad, y, x, y + rad,
            x - rad, y, attrs);
  else if (!strcmp(shape, "cross"))
    fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" %s>", x - rad, y - rad, x + rad,
            y + rad, x - rad, y + rad, x + rad, y - rad, attrs);
  else
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" %s>", x, y, rad, attrs);
}

static const char *shape_tag(const char *shape) {
  return !strcmp(shape, "square") ? "rect" : !strcmp(shape, "disc") || !strcmp(shape, "ring") ? "circle" : "path";
}

void svg_mark(report *r, const char *shape, double x, double y, double rad, const char *color, const char *cls,
              const char *tip) {
  char attrs[256];
  const int stroke_only = !strcmp(shape, "cross") || !strcmp(shape, "ring");
  snprintf(attrs, sizeof attrs, "class=\"mark%s%s\" %s=\"%s\"%s", cls ? " " : "", cls ? cls : "",
           stroke_only ? "stroke" : "fill", color, stroke_only ? " fill=\"none\" stroke-width=\"2\"" : "");
  shape_at(r, shape, x, y, rad, attrs);
  fputs("<title>", r->f);
  html_esc(r->f, tip);
  fprintf(r->f, "</title></%s>\n", shape_tag(shape));
}

void svg_legend(report *r, double x, double y, const char *color, const char *shape, const char *text) {
  char attrs[128];
  const int stroke_only = !strcmp(shape, "cross") || !strcmp(shape, "ring");
  snprintf(attrs, sizeof attrs, "class=\"key\" %s=\"%s\"%s", stroke_only ? "stroke" : "fill", color,
           stroke_only ? " fill=\"none\" stroke-width=\"2\"" : "");
  shape_at(r, shape, x, y - 4, 5, attrs);
  fprintf(r->f, "</%s>\n", shape_tag(shape));
  svg_text(r, x + 10, y, "start", "legend", "%s", text);
}
