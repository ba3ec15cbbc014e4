/* Shared pieces of the fusedtune command line: a client of the public API only. */
#ifndef FT_CLI_H
#define FT_CLI_H

#include <stdio.h>

#include "fusedtune.h"
#include "fusedtune_tool.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Exit codes: 0 success, 1 failure, 2 usage error, 3 nothing tuned for the key (query, report). */
enum { EXIT_USAGE = 2, EXIT_NOT_TUNED = 3 };

typedef struct cli {
  const char *db_path; /* --db, else $FUSEDTUNE_DB, else ./fusedtune.db */
  const char *prog;
} cli;

/* Option scanning: each command walks argv with these. */
typedef struct opt_iter {
  int argc;
  char **argv;
  int i;
  const char *cmd;
} opt_iter;

/* Returns the next option name ("--shape") or positional (kind 'p'); NULL at the end. */
const char *opt_next(opt_iter *it, int *positional);
/* The value of the option just returned (next argv, or after '='); NULL after a usage error. */
const char *opt_value(opt_iter *it, const char *name);

int usage_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* usage_error "WHAT 'a'" for an argument cmd does not take; for --db, that it goes before the
 * command. */
int unexpected_arg(const char *cmd, const char *a, const char *what);
/* Options are taken at most once: when a (an argument, "--name" or "--name=value") is one of
 * names[0..n) (at most 32) already marked in *seen, the usage error; else 0 (and it is marked). */
int opt_once(const char *cmd, const char *const *names, size_t n, unsigned *seen, const char *a);
/* s as exactly width terminal columns for a table: control characters (ESC, C1, bidi
 * overrides) and bytes that are not UTF-8 become '?', wide (East Asian) characters count two
 * columns, longer text is cut on a character boundary and ends in U+2026 (an ellipsis), shorter
 * text is padded with spaces. out needs 4 * width + 1 bytes. */
void cli_cell(char *out, size_t out_size, const char *s, int width);
/* The terminal columns s takes as cli_cell counts them. */
int cli_columns(const char *s);
/* Prints text and returns 1 when argv holds -h or --help. */
int wants_help(int argc, char **argv, const char *text);
/* Messages: each formats its text, makes it printable (ft_text_printable: control characters,
 * bidi overrides and bytes that are not UTF-8 echoed from argv or a file become '?') and ends it
 * with a newline. cli_line writes to f; fail_msg writes "fusedtune: text" to stderr and returns 1. */
int cli_line(FILE *f, const char *fmt, ...) CLI_PRINTF(2, 3);
int fail_msg(const char *fmt, ...) CLI_PRINTF(1, 2);
/* Prints "fusedtune: msg" and returns the exit code for status s (2 for bad input, else 1); for
 * FT_ERR_NO_DEVICE it adds what works without a GPU. */
int fail_status(ft_status s, const char *msg);
/* fail_status with ft_errmsg(ctx), then closes ctx. */
int fail_ctx(ft_status s, ft_ctx *ctx);

/* Parses "MxNxK" text into p's shape; the range is checked by the library (ft_check_problem).
 * Returns 0, or the exit code after printing the usage error. */
int parse_shape(const char *cmd, const char *s, ft_problem *p);
int parse_math(const char *s, ft_math *out);
int parse_double(const char *s, double *out);
int parse_int(const char *s, long lo, long hi, long *out);

/* Parses --shape and --epilogue into p (p->epilogue = epi) and checks it with the library.
 * Returns 0, or the exit code after printing the error. */
int cli_problem(const char *cmd, const char *shape, const char *epi, ft_problem *p);
/* p with its math set to math, checked again (a mode may have rules of its own: fp8). */
int cli_problem_math(const char *cmd, ft_problem *p, ft_math math);

/* This executable, through /proc/self/exe, in buf; NULL when that cannot be read. The tuner's
 * candidate workers and tune --problems's children run it. */
const char *cli_self_exe(char *buf, size_t size);

/* Opens the database for a command: read commands never create it. Returns 0 or the exit code
 * after printing the error. */
int cli_open(const cli *c, int write, ft_ctx **ctx);
const char *cli_db_path(const cli *c);

int cmd_init(cli *c, int argc, char **argv);
int cmd_list(cli *c, int argc, char **argv);
int cmd_query(cli *c, int argc, char **argv);
int cmd_export(cli *c, int argc, char **argv);
int cmd_import(cli *c, int argc, char **argv);
int cmd_tune(cli *c, int argc, char **argv);
int cmd_devices(cli *c, int argc, char **argv);
int cmd_variants(cli *c, int argc, char **argv);
int cmd_epilogue(cli *c, int argc, char **argv);
int cmd_bench(cli *c, int argc, char **argv);
int cmd_report(cli *c, int argc, char **argv);

#endif
