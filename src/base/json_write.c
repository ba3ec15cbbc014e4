/* The JSON string writer: output the reader accepts back, byte-for-byte stable. */
#include <string.h>

#include "json.h"
#include "json_internal.h"

void ft_json_write_string_n(FILE *f, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *u = (const unsigned char *)s;
  putc('"', f);
  size_t i = 0;
  while (i < len) {
    unsigned c = u[i];
    if (c == '"' || c == '\\') {
      putc('\\', f);
      putc((int)c, f);
    } else if (c < 0x20) {
      const char *short_esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r"
                            : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
      if (short_esc) {
        fputs(short_esc, f);
      } else {
        fputs("\\u00", f);
        putc(hex[c >> 4], f);
        putc(hex[c & 15], f);
      }
    } else if (c >= 0x80) {
      size_t n = ft__utf8_len(u + i, len - i);
      if (n == 0) {
        /* U+FFFD as raw UTF-8, not as an escape: re-exporting what was imported must give the
         * same bytes, and an imported U+FFFD is written raw. */
        fputs("\xEF\xBF\xBD", f);
        i++;
        continue;
      }
      fwrite(u + i, 1, n, f);
      i += n;
      continue;
    } else {
      putc((int)c, f);
    }
    i++;
  }
  putc('"', f);
}

void ft_json_write_string(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  ft_json_write_string_n(f, s, strlen(s));
}
