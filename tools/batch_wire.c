/* The text lines between `tune --problems` and its per-device children (batch.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "batch.h"

int wire_send(int fd, const char *fmt, ...) {
  char line[20000];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line - 1) return -1;
  line[n++] = '\n';
  for (int off = 0; off < n;) {
    ssize_t w = send(fd, line + off, (size_t)(n - off), MSG_NOSIGNAL); /* a gone peer is no SIGPIPE */
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    off += (int)w;
  }
  return 0;
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
    char *nl = memchr(r->buf, '\n', r->len);
    if (nl) {
      size_t n = (size_t)(nl - r->buf);
      memcpy(line, r->buf, n);
      line[n] = '\0';
      memmove(r->buf, nl + 1, r->len - n - 1);
      r->len -= n + 1;
      return line;
    }
    if (r->len == sizeof r->buf) r->len = 0; /* a line longer than any message: drop it */
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
