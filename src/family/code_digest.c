/* What of a kernel source reaches the compiler, for hashing: the text without comments and with
 * whitespace normalised. GPU-free. */
#include <string.h>

#include "codegen.h"

/* Appends ch once for a whitespace run: a newline if the run held one (preprocessor lines
 * end there), else one space; nothing at a line's start. */
static void flush_space(ft_strbuf *out, int *pending) {
  if (*pending && out->len && out->p[out->len - 1] != '\n') ft_sb_putn(out, *pending == 2 ? "\n" : " ", 1);
  *pending = 0;
}

void ft_code_digest(const char *src, ft_strbuf *out) {
  int pending = 0; /* 0 none, 1 blank, 2 newline */
  for (const char *p = src; *p;) {
    if (p[0] == '/' && p[1] == '/') { /* line comment: up to the newline (kept as whitespace) */
      while (*p && *p != '\n') p++;
      continue;
    }
    if (p[0] == '/' && p[1] == '*') { /* block comment: one blank, as the preprocessor sees it */
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
      if (pending < 1) pending = 1;
      continue;
    }
    if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v' || *p == '\n') {
      if (*p == '\n') pending = 2;
      else if (pending < 1) pending = 1;
      p++;
      continue;
    }
    if (*p == '\\' && p[1] == '\n') { /* a continued line joins the next */
      p += 2;
      if (pending < 1) pending = 1;
      continue;
    }
    flush_space(out, &pending);
    if (*p == '"' || *p == '\'') { /* literals verbatim, escapes included */
      const char q = *p;
      const char *s = p++;
      while (*p && *p != q && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
      if (*p == q) p++;
      ft_sb_putn(out, s, (size_t)(p - s));
      continue;
    }
    ft_sb_putn(out, p, 1);
    p++;
  }
  if (out->len && out->p[out->len - 1] != '\n') ft_sb_putn(out, "\n", 1);
}
