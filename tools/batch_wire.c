/* The text lines between `tune --problems` and its per-device children (batch.h), each one
 * message of the library's framing (ft_message_send / ft_message_parse, fusedtune_tool.h): the
 * text as its bytes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "batch.h"
#include "fusedtune_tool.h"

#define WIRE_LINE 0x46540101u /* a message that is one line of text */

int wire_send(int fd, const char *fmt, ...) {
  char line[20000];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line) return -1;
  return ft_message_send(fd, WIRE_LINE, line, (size_t)n);
}

void wire_hex(const char *s, char *out, size_t out_size) {
  static const char digits[] = "0123456789abcdef";
  size_t o = 0;
  if (!s[0] && out_size > 1) out[o++] = '-';
  for (const unsigned char *p = (const unsigned char *)s; *p && o + 2 < out_size; p++) {
    out[o++] = digits[*p >> 4];
    out[o++] = digits[*p & 15];
  }
  if (out_size) out[o] = '\0';
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int wire_unhex(const char *hex, char *out, size_t out_size) {
  size_t o = 0;
  if (!strcmp(hex, "-")) hex = "";
  for (; hex[0]; hex += 2) {
    int hi = hex_digit(hex[0]), lo = hex[1] ? hex_digit(hex[1]) : -1;
    if (hi < 0 || lo < 0) return -1;
    if (o + 1 < out_size) out[o++] = (char)(hi << 4 | lo);
  }
  if (out_size) out[o] = '\0';
  return 0;
}

char *wire_line(wire_reader *r, int block, int *eof) {
  char *line = r->line;
  *eof = 0;
  for (;;) {
    size_t at = 0, n = 0, whole = 0;
    const int st = ft_message_parse(r->buf, r->len, WIRE_LINE, sizeof r->line - 64, &at, &n, &whole); /* fits buf with its head */
    if (st < 0) { /* not our framing: nothing more can be read */
      *eof = 1;
      return NULL;
    }
    if (st > 0) {
      memcpy(line, r->buf + at, n);
      line[n] = '\0';
      memmove(r->buf, r->buf + whole, r->len - whole);
      r->len -= whole;
      return line;
    }
    ssize_t got = recv(r->fd, r->buf + r->len, sizeof r->buf - r->len, block ? 0 : MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) {
      if (block) continue;
      return NULL;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return NULL;
    if (got <= 0) {
      *eof = 1;
      return NULL;
    }
    r->len += (size_t)got;
  }
}
