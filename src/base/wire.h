/* The one framing between fusedtune's processes (the runner and its worker, the batch driver
 * and its children): [u32 type][u32 size of the fixed part][u64 bytes that follow][fixed][bytes]
 * on a stream socket, every call restarted after EINTR, a gone peer an error and never SIGPIPE.
 * Needs nothing else of the library, so the CLI (a client of the public API) compiles it too. */
#ifndef FT_WIRE_H
#define FT_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* A message's head, as it travels (in the byte order of the host: both ends are one machine). */
typedef struct ft_wire_head {
  uint32_t type, fixed;
  uint64_t extra;
} ft_wire_head;

/* The largest `extra` a message may carry. */
#define FT_WIRE_MAX_EXTRA ((uint64_t)1 << 30)

/* Sends n bytes. 0 ok, -1 closed or error. */
int ft_wire_send_all(int fd, const void *p, size_t n);
/* Seconds on CLOCK_MONOTONIC (ft__now_s's clock): what deadlines are given in. */
double ft_wire_now(void);
/* Reads n bytes before deadline (ft_wire_now seconds, <= 0: none). 0 ok, -1 closed or error,
 * -2 timed out. */
int ft_wire_recv_all(int fd, void *p, size_t n, double deadline);
/* Sends one message. 0 ok, -1 closed or error. */
int ft_wire_send(int fd, uint32_t type, const void *fixed, uint32_t fixed_size, const void *extra,
                 uint64_t extra_size);
/* Receives one message of `type` whose fixed part has fixed_size bytes; the bytes that follow
 * (at most FT_WIRE_MAX_EXTRA) in a malloc'd *extra when extra is not NULL (a message with any is refused
 * otherwise). 0 ok, -1 closed or error, -2 timed out, -3 another message (another protocol). */
int ft_wire_recv(int fd, uint32_t type, void *fixed, uint32_t fixed_size, void **extra, uint64_t *extra_size,
                 double deadline);

#endif
