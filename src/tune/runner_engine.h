/* The engine: one problem's data, float64 references, tolerance and baselines on the GPU of this
 * process, and the verification and timing of one job on them. A runner hosts it in a worker
 * process (src/tune/worker.c) or in this one (src/tune/runner.c). */
#ifndef FT_RUNNER_ENGINE_H
#define FT_RUNNER_ENGINE_H

#include "runner.h"

typedef struct ft_engine ft_engine;

/* Opens CUDA device `device` and says what it is. */
ft_status ft_engine_open(int device, int flush_l2, ft_engine **out, ft_runner_device *dev, ft_err *err);
/* The problem's data, references, tolerance and baselines on the open device; p->ep must outlive
 * the engine (ft_engine_keep_ep hands it one to own). */
ft_status ft_engine_prepare(ft_engine *e, const ft_tune_problem *p, uint64_t seed, ft_runner_ready *ready, ft_err *err);
/* The engine frees ep on closing. */
void ft_engine_keep_ep(ft_engine *e, ft_epilogue *ep);
/* Verifies and times one job on a prepared engine: its failures are the result's, never an error. */
void ft_engine_run(ft_engine *e, const ft_runner_job *job, ft_runner_result *res);
void ft_engine_close(ft_engine *e); /* NULL is a no-op */

#endif
