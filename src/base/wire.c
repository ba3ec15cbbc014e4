/* The framing between processes (wire.h). */
#include "wire.h"

#include <string.h>

#include "fusedtune_tool.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

double ft_wire_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ft_wire_send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL); /* a dead peer is an error, never SIGPIPE */
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int ft_wire_recv_all(int fd, void *p, size_t n, double deadline) {
  char *c = p;
  while (n > 0) {
    if (deadline > 0) {
      double left = deadline - ft_wire_now();
      if (left <= 0) return -2;
      struct pollfd pfd = {fd, POLLIN, 0};
      int r = poll(&pfd, 1, (int)(left * 1000) + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return -1;
      if (r == 0) return -2;
    }
    ssize_t got = recv(fd, c, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    c += got;
    n -= (size_t)got;
  }
  return 0;
}

int ft_wire_send(int fd, uint32_t type, const void *fixed, uint32_t fixed_size, const void *extra,
                 uint64_t extra_size) {
  ft_wire_head h = {type, fixed_size, extra_size};
  if (ft_wire_send_all(fd, &h, sizeof h) || ft_wire_send_all(fd, fixed, fixed_size)) return -1;
  return extra_size ? ft_wire_send_all(fd, extra, (size_t)extra_size) : 0;
}

int ft_wire_recv(int fd, uint32_t type, void *fixed, uint32_t fixed_size, void **extra, uint64_t *extra_size,
                 double deadline) {
  ft_wire_head h;
  int r = ft_wire_recv_all(fd, &h, sizeof h, deadline);
  if (r) return r;
  if (h.type != type || h.fixed != fixed_size || (!extra && h.extra) || h.extra > FT_WIRE_MAX_EXTRA) return -3;
  if ((r = ft_wire_recv_all(fd, fixed, fixed_size, deadline))) return r;
  if (extra) {
    *extra = NULL;
    *extra_size = h.extra;
    if (h.extra) {
      if (!(*extra = malloc((size_t)h.extra))) return -1;
      if ((r = ft_wire_recv_all(fd, *extra, (size_t)h.extra, deadline))) {
        free(*extra);
        *extra = NULL;
        return r;
      }
    }
  }
  return 0;
}

int ft_message_send(int fd, uint32_t type, const void *bytes, size_t n) {
  /* One send: head and bytes together, so that a reader never waits between them. */
  const ft_wire_head h = {type, 0, (uint64_t)n};
  if ((uint64_t)n > FT_WIRE_MAX_EXTRA || (n && !bytes)) return -1;
  char *msg = malloc(sizeof h + n);
  if (!msg) return -1;
  memcpy(msg, &h, sizeof h);
  if (n) memcpy(msg + sizeof h, bytes, n);
  const int r = ft_wire_send_all(fd, msg, sizeof h + n);
  free(msg);
  return r;
}

int ft_message_parse(const void *buf, size_t len, uint32_t type, size_t max, size_t *at, size_t *n, size_t *size) {
  ft_wire_head h;
  if (!buf || len < sizeof h) return 0;
  memcpy(&h, buf, sizeof h);
  if (h.type != type || h.fixed != 0 || h.extra > max) return -1;
  const size_t whole = sizeof h + (size_t)h.extra;
  if (len < whole) return 0;
  *at = sizeof h;
  *n = (size_t)h.extra;
  *size = whole;
  return 1;
}
