"""Tune: every problem a model holds (fusedtune.torch.problems) into a database, skipping what it
already holds (docs/PYTHON.md, "Whole models").

    from fusedtune.torch import tune
    tune(model, x, db="fusedtune.db", budget_s=60)     # on the current CUDA device
"""
import sys
import time

from .. import core
from ..errors import NotFoundError
from .capture import problems as capture


def _m_values(m_range):
    """M = lo, every power of two between lo and hi, and hi (tune --shape lo..hixNxK's buckets)."""
    lo, hi = m_range
    ms, p = [lo], 1
    while p <= hi:
        if lo < p < hi:
            ms.append(p)
        p *= 2
    if hi != lo:
        ms.append(hi)
    return ms


def tune(model, *example_inputs, db=None, math=None, m_range=None, budget_s=None, out=sys.stdout, scheduler=None,
         **options):
    """Tunes each problem of model (problems(model, *example_inputs, math=, m_range=)) not yet in
    db (a path, default $FUSEDTUNE_DB else ./fusedtune.db, created if missing; or a Database),
    printing a line per problem to out (None: silent). math="auto" tunes fp32, 3xtf32 and tf32 of
    a float32 model. budget_s and the other options go to Database.tune (strategy, max_candidates,
    repeats, ...). Returns [(CapturedProblem, fusedtune.Problem, Config, tuned)] in order, tuned
    False for what the database already held.

    scheduler: a Dask scheduler's address ("tcp://HOST:8786", or "local": one worker per GPU of this
    host) tunes the problem file on the cluster's GPUs instead (python3 -m fusedtune.cluster tune,
    docs/CLUSTER.md; db a path; options max_candidates, strategy, repeats, seed); returns its exit
    status, FusedtuneError when not 0."""
    found = capture(model, *example_inputs, math=math, m_range=m_range)
    if scheduler is not None:
        return _on_cluster(found, db, scheduler, budget_s, options)
    work = []
    for p in found.unique():
        modes = ("fp32", "3xtf32", "tf32") if p.mode == "auto" else (p.mode,)
        ms = _m_values(p.m_range) if p.m_range else [p.m]
        work += [(p, core.Problem(m, p.n, p.k, p.epilogue, mode)) for mode in modes for m in ms]
    own = not isinstance(db, core.Database)
    database = core.Database(db, create=True) if own else db
    say = (lambda s: print(s, file=out, flush=True)) if out is not None else (lambda s: None)
    say(f"fusedtune.torch.tune: {len(work)} problem{'s' if len(work) != 1 else ''} of {len(found)} layer"
        f"{'s' if len(found) != 1 else ''} into {database.path or 'the default database'}")
    results = []
    try:
        for i, (p, problem) in enumerate(work, 1):
            head = f"[{i}/{len(work)}] {problem.shape} {problem.math} '{problem.epilogue}' ({p.where or 'model'})"
            try:
                config = database.lookup(problem, buckets=False)
                say(f"{head}: already tuned ({config.name}, {config.median_ms:.4g} ms)")
                results.append((p, problem, config, False))
                continue
            except NotFoundError:
                pass
            t0 = time.monotonic()
            kw = dict(options)
            if budget_s is not None:
                kw["budget_s"] = budget_s
            config = database.tune(problem, **kw)
            speed = f", {config.eager_ms / config.median_ms:.2f}x eager" if config.eager_ms and config.median_ms else ""
            say(f"{head}: {config.name} {config.median_ms:.4g} ms{speed} ({time.monotonic() - t0:.0f} s)")
            results.append((p, problem, config, True))
    finally:
        if own:
            database.close()
    return results


def _on_cluster(found, db, scheduler, budget_s, options):
    import os
    import tempfile
    from .. import cluster
    from ..errors import FusedtuneError, InvalidArgumentError
    if db is None or isinstance(db, core.Database):
        raise InvalidArgumentError("tune(scheduler=...): db must be the path the cluster's results are imported into")
    flags = {"max_candidates": "--max-candidates", "strategy": "--strategy", "repeats": "--repeats",
             "seed": "--seed"}
    unknown = sorted(set(options) - set(flags))
    if unknown:
        raise InvalidArgumentError(f"tune(scheduler=...): option {unknown[0]!r} is not one fusedtune.cluster takes "
                                   f"({', '.join(sorted(flags))}, budget_s)")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "problems.csv")
        found.to_problems_file(path)
        argv = ["tune", "--problems", path, "--db", os.fspath(db)]
        argv += ["--local"] if scheduler == "local" else ["--scheduler", scheduler]
        if budget_s is not None:
            argv += ["--budget", str(budget_s)]
        for k, v in options.items():
            argv += [flags[k], str(v)]
        status = cluster.main(argv)
    if status:
        raise FusedtuneError(f"tune(scheduler={scheduler!r}): python3 -m fusedtune.cluster {' '.join(argv)} "
                             f"exited with {status}")
    return status


__all__ = ["tune"]
