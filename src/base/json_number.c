/* JSON numbers: the C library's strtod and printf follow LC_NUMERIC, which a host program may
 * have set to a locale whose decimal point is ','. These wrappers always speak '.'. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_internal.h"

size_t ft__json_scan_number(const char *s, size_t avail, int *integral) {
  size_t i = 0;
  *integral = 1;
  if (i < avail && s[i] == '-') i++;
  if (i >= avail) return 0;
  if (s[i] == '0') {
    i++;
  } else if (s[i] >= '1' && s[i] <= '9') {
    while (i < avail && s[i] >= '0' && s[i] <= '9') i++;
  } else {
    return 0;
  }
  if (i < avail && s[i] == '.') {
    *integral = 0;
    i++;
    size_t d = i;
    while (i < avail && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0;
  }
  if (i < avail && (s[i] == 'e' || s[i] == 'E')) {
    *integral = 0;
    i++;
    if (i < avail && (s[i] == '+' || s[i] == '-')) i++;
    size_t d = i;
    while (i < avail && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0;
  }
  return i;
}

int ft_json_parse_double(const char *text, size_t len, double *out) {
  int integral;
  if (len == 0 || ft__json_scan_number(text, len, &integral) != len) return 0;
  const char *dp = localeconv()->decimal_point;
  size_t dpl = (dp && dp[0]) ? strlen(dp) : 1;
  if (!dp || !dp[0]) dp = ".";
  char small[128];
  size_t need = len * dpl + 1;
  char *buf = need <= sizeof small ? small : malloc(need);
  if (!buf) return 0;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '.') {
      memcpy(buf + o, dp, dpl);
      o += dpl;
    } else {
      buf[o++] = text[i];
    }
  }
  buf[o] = '\0';
  errno = 0;
  char *end;
  double v = strtod(buf, &end);
  int ok = (size_t)(end - buf) == o && !(errno == ERANGE && isinf(v));
  if (buf != small) free(buf);
  if (ok) *out = v;
  return ok;
}

/* Replaces the locale's decimal point in buf by '.', in place. */
static void normalize_decimal_point(char *buf) {
  const char *dp = localeconv()->decimal_point;
  if (!dp || !dp[0] || (dp[0] == '.' && dp[1] == '\0')) return;
  char *hit = strstr(buf, dp);
  if (!hit) return;
  size_t dpl = strlen(dp);
  *hit = '.';
  memmove(hit + 1, hit + dpl, strlen(hit + dpl) + 1);
}

size_t ft_json_format_double(double v, char buf[32]) {
  if (!isfinite(v)) {
    memcpy(buf, "null", 5);
    return 4;
  }
  /* The shortest of 15, 16, 17 significant digits that reads back exactly: 17 always does. */
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, v);
    normalize_decimal_point(buf);
    double back;
    if (prec == 17 || (ft_json_parse_double(buf, strlen(buf), &back) && back == v)) break;
  }
  return strlen(buf);
}

void ft_json_write_double(FILE *f, double v) {
  char buf[32];
  size_t n = ft_json_format_double(v, buf);
  fwrite(buf, 1, n, f);
}
