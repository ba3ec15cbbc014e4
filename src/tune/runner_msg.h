/* The runner's protocol over the wire (wire.h), between the tuner's process (src/tune/runner.c) and
 * a worker (src/tune/worker.c). */
#ifndef FT_RUNNER_MSG_H
#define FT_RUNNER_MSG_H

#include "runner.h"
#include "wire.h"

enum { MSG_SETUP = 0x46540001, MSG_HELLO, MSG_JOB, MSG_RESULT, MSG_DEVICE };

/* What travels back with a device, a hello or a result: the status and, on failure, its message. */
typedef struct msg_status {
  int32_t status;
  char msg[sizeof(((ft_err *)0)->msg)];
} msg_status;

/* What the tuner sends first: the problem (its epilogue as text) and the options the worker's
 * engine needs. */
typedef struct setup_msg {
  int32_t device;
  int32_t flush_l2;
  int64_t m, n, k;
  int32_t math;
  uint64_t seed;
  char epilogue[FT_EP_MAX_TEXT + 1];
} setup_msg;

typedef struct device_msg {
  msg_status st;
  ft_runner_device dev;
} device_msg;

typedef struct hello_msg {
  msg_status st;
  ft_runner_ready ready;
} hello_msg;

typedef struct result_msg {
  msg_status st;
  ft_runner_result res;
} result_msg;

#endif
