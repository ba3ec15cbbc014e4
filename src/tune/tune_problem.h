/* The problem a tune runs, checked once where it enters the library (api.c's check_problem:
 * shape, math mode, the epilogue parsed) and handed down as it is: the tuner, the runner and its
 * engine read it and neither check nor parse it again. */
#ifndef FT_TUNE_PROBLEM_H
#define FT_TUNE_PROBLEM_H

#include "epilogue.h"
#include "fusedtune.h"

typedef struct ft_tune_problem {
  int64_t m, n, k;
  ft_math math;
  const ft_epilogue *ep; /* parsed; borrowed for the tune */
  const char *epilogue;  /* the text as given (<= FT_EP_MAX_TEXT), which a worker process parses in
                          * its own address space */
} ft_tune_problem;

#endif
