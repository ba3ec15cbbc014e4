/* Base64 (RFC 4648, padded) for cubins in an export. Decoding accepts only the canonical
 * encoding, so export -> import -> export is byte-identical. */
#include <stdlib.h>
#include <string.h>

#include "db_internal.h"

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void ft__db_base64_write(FILE *f, const unsigned char *p, size_t n) {
  putc('"', f);
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16;
    if (i + 1 < n) v |= (unsigned)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    char q[4] = {k_b64[v >> 18], k_b64[(v >> 12) & 63], i + 1 < n ? k_b64[(v >> 6) & 63] : '=',
                 i + 2 < n ? k_b64[v & 63] : '='};
    fwrite(q, 1, 4, f);
  }
  putc('"', f);
}

static int b64_value(char c) {
  const char *hit = c ? strchr(k_b64, c) : NULL;
  return hit ? (int)(hit - k_b64) : -1;
}

int ft__db_base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len,
                         int *nomem) {
  *nomem = 0;
  if (len % 4) return 0;
  size_t pad = (len && s[len - 1] == '=') + (len > 1 && s[len - 2] == '=');
  size_t n = len / 4 * 3 - pad;
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf) {
    *nomem = 1;
    return 0;
  }
  size_t o = 0;
  for (size_t i = 0; i < len; i += 4) {
    int last = i + 4 == len;
    int d[4];
    for (int j = 0; j < 4; j++) {
      int is_pad = last && s[i + j] == '=' && (size_t)j >= 4 - pad;
      d[j] = is_pad ? 0 : b64_value(s[i + j]);
      if (d[j] < 0) goto bad;
    }
    unsigned v = (unsigned)d[0] << 18 | (unsigned)d[1] << 12 | (unsigned)d[2] << 6 | (unsigned)d[3];
    /* Non-canonical: bits the padding discards must be zero. */
    if (last && ((pad == 1 && (v & 0xFF)) || (pad == 2 && (v & 0xFFFF)))) goto bad;
    unsigned char b[3] = {(unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v};
    size_t take = last ? 3 - pad : 3;
    memcpy(buf + o, b, take);
    o += take;
  }
  *out = buf;
  *out_len = n;
  return 1;
bad:
  free(buf);
  return 0;
}
