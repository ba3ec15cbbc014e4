/* `tune --problems FILE --devices LIST`: a problem list spread over devices, one child process
 * per device (`fusedtune --db PATH __batch FD ORDINAL [tune options]`, hidden), all tuning into
 * the one database. The parent (batch.c) schedules (batch_schedule.c) and summarizes; the child
 * (batch_child.c) tunes what it is sent on its device. They talk in text lines (batch_wire.c),
 * each a message of the library's framing (src/base/wire.h):
 *
 *   parent -> child  "run JOB M N K MATH EPILOGUE_HEX", "quit"
 *   child -> parent  "hello FINGERPRINT SM_COUNT NAME_HEX"
 *                    "progress JOB DONE TOTAL BEST_MS EAGER_MS PHASE"
 *                    "done JOB HAS_BEST MEDIAN_MS EAGER_MS TOTAL_S MEASURED KNOWN MATH STRATEGY NAME"
 *                    "fail JOB STATUS MESSAGE_HEX"
 *
 * Free text travels hex-encoded, so a line is always one line. */
#ifndef FT_BATCH_H
#define FT_BATCH_H

#include <stddef.h>

#include "cli.h"

/* The tune command's options (tools/cmd_tune.c parses them). */
typedef struct tune_cli {
  const char *shape, *epi;
  int epi_set, math_set; /* --epilogue, --math given */
  ft_problem p;
  ft_tune_options opt;
  int json, quiet;
  int auto_math;        /* --math auto: the modes of fp32 tensors in turn */
  const char *problems; /* --problems FILE */
  const char *devices;  /* --devices all|0,2,... */
} tune_cli;

void tune_cli_init(tune_cli *t);
/* Parses tune's options into t; returns 0 or the exit code after printing the usage error. */
int tune_parse_args(int argc, char **argv, tune_cli *t);

/* The parent: returns the exit code. exe is the executable the children run. */
int batch_run(cli *c, const tune_cli *t, const char *exe);
/* The child: argv = FD ORDINAL [tune options]. Returns its exit code. */
int batch_child(cli *c, int argc, char **argv);

/* ---- the wire ---- */

/* Sends one formatted line as one message on fd; 0, or -1 when the peer is gone. */
int wire_send(int fd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* Hex of s into out (2 * strlen(s) + 1 bytes; "-" for an empty s, so no field is empty). */
void wire_hex(const char *s, char *out, size_t out_size);
/* Decodes hex text into out (NUL-terminated, cut to out_size); 0, or -1 when it is not hex. */
int wire_unhex(const char *hex, char *out, size_t out_size);

/* Lines arriving on a stream socket, one a message. */
typedef struct wire_reader {
  int fd;
  size_t len;
  char buf[1 << 15];
  char line[1 << 15]; /* the line wire_line returned last */
} wire_reader;
/* The next complete line (NUL-terminated; valid until the next call), else NULL. *eof is set when
 * the peer closed (or failed, or sent what is not a line) and nothing complete is left; block 0 reads
 * only what is there now (after poll), block 1 waits for a line. */
char *wire_line(wire_reader *r, int block, int *eof);

#endif
