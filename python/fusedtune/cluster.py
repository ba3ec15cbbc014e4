"""python3 -m fusedtune.cluster: a problem file tuned over the GPUs of many hosts, on Dask.

One task per (problem, GPU model present among the workers), each on a worker started with the
resources GPU=1 and GPU:<model> (`python3 -m fusedtune.cluster resources` prints them), tuning
into a database local to that worker and returning its JSON export; the client imports each
export into one database as it arrives (the library's import: checked like any file, and
importing the same results twice adds nothing). docs/CLUSTER.md is the manual.

Dask is optional for fusedtune: `import fusedtune` never loads it, and this module only once a
command runs, saying how to install it when it is missing.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import uuid

from . import core
from ._cluster_task import GPU, MODEL_PREFIX, model_resource, tune_task, worker_resources
from ._lib import LibraryNotFound
from .errors import FormatError, FusedtuneError
from .problems import load_problems

DASK_VERSION = "2026.8.0"  # the version CI tests with (.ci/run)
INSTALL = (f"pip install 'dask=={DASK_VERSION}' 'distributed=={DASK_VERSION}'  (or Debian's "
           "python3-distributed), on the client and on every worker host")
STRATEGIES = ("fast", "exhaustive", "random", "halving")  # ft_tune_options.strategy


class ClusterError(Exception):
    """A cluster run that cannot start: the message says what to do."""


def distributed():
    """The distributed package, or ClusterError saying how to install it."""
    try:
        import distributed as d
    except ImportError as e:
        raise ClusterError(f"fusedtune.cluster needs Dask's distributed scheduler ({e}): {INSTALL}") from None
    return d


def local_cluster(devices, env=None):
    """A SpecCluster on this host: one worker process (nanny) per device of `devices` (core.Device),
    that device alone visible to it, with the resources the tasks ask for."""
    d = distributed()
    env = os.environ if env is None else env
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    workers = {}
    for dev in devices:
        ident = visible[dev.ordinal] if dev.ordinal < len(visible) else str(dev.ordinal)
        workers[f"gpu{dev.ordinal}"] = {"cls": d.Nanny, "options": {
            "nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": ident},
            "resources": {GPU: 1, model_resource(dev.name): 1}}}
    return spec_cluster(workers)


def spec_cluster(workers):
    """A SpecCluster of the given worker specs ({name: {"cls": ..., "options": ...}}) and a
    scheduler on a free loopback port, no dashboard."""
    d = distributed()
    return d.SpecCluster(workers=workers, scheduler={"cls": d.Scheduler, "options": {
        "host": "127.0.0.1", "port": 0, "dashboard_address": None}}, silence_logs=40)


def gpu_models(client):
    """{model resource: [worker addresses]} of the workers that have GPU and a model resource,
    and {address: (name, resources)} of every worker."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    models, every = {}, {}
    for addr, w in sorted(workers.items()):
        res = w.get("resources") or {}
        every[addr] = (str(w.get("name", addr)), res)
        if res.get(GPU, 0) >= 1:
            for r, n in res.items():
                if r.startswith(MODEL_PREFIX) and n >= 1:
                    models.setdefault(r, []).append(addr)
    return models, every


def _spec(p):
    return (p.m, p.n, p.k, p.epilogue, p.math)


class Run:
    """One cluster tune: submits, imports as results arrive, keeps what the summary needs."""

    def __init__(self, client, db, items, models, opts, task=tune_task, out=None):
        self.client, self.db, self.items, self.models, self.opts = client, db, items, models, opts
        self.task, self.out = task, out
        self.unique = [i for i, it in enumerate(items) if it.duplicate_of < 0]
        self.rows = {}  # future key -> the row the summary prints
        self.added = 0
        self.interrupted = False

    def submit(self):
        d, run_id = distributed(), uuid.uuid4().hex[:8]
        # Longest first (as tune --problems): Dask runs higher priorities first.
        order = sorted(self.unique, key=lambda i: -self._flops(i))
        futures = []
        for rank, i in enumerate(order):
            p = self.items[i].problem
            for model in self.models:
                key = f"fusedtune-{p.shape}-{p.math}-{model[len(MODEL_PREFIX):]}-{run_id}-{i}"
                f = self.client.submit(self.task, _spec(p), model, self.opts, key=key, pure=False,
                                       resources={GPU: 1, model: 1}, priority=len(order) - rank)
                self.rows[f.key] = {"item": i, "model": model, "status": "not_run", "worker": None, "device": None,
                                    "message": None, "best": None, "added": 0, "elapsed_s": 0.0}
                futures.append(f)
        self.log(f"submitted {len(futures)} task(s): {len(self.unique)} problem(s) x {len(self.models)} GPU "
                 f"model(s) ({', '.join(m[len(MODEL_PREFIX):] for m in self.models)})")
        return d.as_completed(futures), {f.key: f for f in futures}

    def _flops(self, i):
        p = self.items[i].problem
        return p.m * p.n * p.k

    def log(self, text):
        print(f"fusedtune.cluster: {text}", file=self.out or sys.stderr, flush=True)

    def collect(self, done, pending):
        """Imports each result as it arrives; Ctrl-C cancels what has not finished. pending:
        {key: future} of the tasks not yet taken."""
        n, total = 0, len(pending)
        try:
            for f in done:
                n += 1
                self.take(f, n, total)
                # Released once imported: a result still held would be computed again if its
                # worker died later (Dask recomputes lost results that a client holds).
                pending.pop(f.key, None)
                f.release()
        except KeyboardInterrupt:
            self.interrupted = True
            left = [f for f in pending.values() if not f.done()]
            self.client.cancel(left)
            for f in left:
                self.rows[f.key]["status"] = "cancelled"
            self.log(f"interrupted: {len(left)} task(s) cancelled (a tune already running on a worker ends "
                     f"within its --budget; its result is not imported); what was imported stays in {self.db.path}")

    def take(self, f, n, total):
        row = self.rows[f.key]
        p = self.items[row["item"]].problem
        label = f"{p.shape} {p.math} {p.epilogue} on {row['model'][len(MODEL_PREFIX):]}"
        if f.status != "finished":
            err = f.exception() if f.status == "error" else f.status
            row.update(status="failed", message=f"{type(err).__name__}: {err}")
            self.log(f"[{n}/{total}] {label}: failed: {row['message']}")
            return
        r = f.result()
        if not isinstance(r, dict):
            row.update(status="failed", message=f"the task returned {type(r).__name__}, not a result")
            return
        row.update(worker=str(r.get("worker")), device=r.get("device"), message=r.get("error"),
                   elapsed_s=float(r.get("elapsed_s") or 0.0), status="ok" if r.get("ok") else "failed")
        export = r.get("export")
        if export is not None:
            try:
                row["added"] = self.import_export(export)
            except (FusedtuneError, OSError, TypeError) as e:
                row.update(status="failed", message=f"its export was refused: {e}")
        if row["status"] == "ok":
            row["best"] = self.best(p, row["device"])
        best = row["best"]
        what = (f"best {best.median_ms:.4f} ms ({_speedup(best)} eager)" if best else
                f"failed: {row['message']}" if row["status"] == "failed" else "no best stored")
        self.log(f"[{n}/{total}] {label} (worker {row['worker']}, {row['elapsed_s']:.1f} s): {what}; "
                 f"{row['added']} result(s) added")

    def import_export(self, export):
        """The export (text from a worker: untrusted) through the library's import; rows added."""
        if not isinstance(export, str):
            raise TypeError(f"the export is {type(export).__name__}, not text")
        fd, tmp = tempfile.mkstemp(prefix="fusedtune-cluster-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(export)
            counts = self.db.import_file(tmp)
        finally:
            os.unlink(tmp)
        self.added += counts["results"]
        return counts["results"]

    def best(self, problem, device):
        """The stored best for problem on device (the merged database's, after the import)."""
        if not device:
            return None
        try:
            return self.db.lookup_entry(problem, device, nearest=False, buckets=False).config
        except FusedtuneError:
            return None


def _speedup(best):
    return f"{best.eager_ms / best.median_ms:.3f}x" if best.eager_ms > 0 and best.median_ms > 0 else "-"


def summary(run, every, wall_s):
    """The summary as a dict (the --json form); print_summary prints it as text."""
    problems = []
    for row in run.rows.values():
        it, best = run.items[row["item"]], row["best"]
        p = it.problem
        problems.append({
            "line": it.line, "shape": p.shape, "epilogue": p.epilogue, "math": p.math,
            "gpu_model": row["model"][len(MODEL_PREFIX):], "device": row["device"], "status": row["status"],
            "worker": row["worker"], "best_ms": best.median_ms if best else None,
            "eager_ms": best.eager_ms if best and best.eager_ms > 0 else None,
            "speedup_vs_eager": best.eager_ms / best.median_ms if best and best.eager_ms > 0 else None,
            "best_math": best.math if best else None, "strategy": best.strategy if best else None,
            "variant": best.name if best else None, "results_added": row["added"], "tune_s": row["elapsed_s"],
            "message": row["message"]})
    problems.sort(key=lambda r: (r["line"], r["math"], r["shape"], r["gpu_model"]))
    by_name = {}  # a worker restarted (by its nanny, or by hand) comes back under its name
    for addr, (name, res) in every.items():
        by_name.setdefault(name, {"addresses": [], "name": name, "resources": res})["addresses"].append(addr)
    workers = []
    for w in by_name.values():
        mine = [r for r in run.rows.values() if r["worker"] in [w["name"]] + w["addresses"]]
        workers.append(dict(w, problems=len(mine), busy_s=sum(r["elapsed_s"] for r in mine)))
    dups = [{"line": it.line, "same_as_line": run.items[it.duplicate_of].line, "math": it.problem.math}
            for it in run.items if it.duplicate_of >= 0]
    return {"wall_s": wall_s, "interrupted": run.interrupted, "database": run.db.path, "results_added": run.added,
            "n_problems": len(run.unique), "gpu_models": [m[len(MODEL_PREFIX):] for m in run.models],
            "problems": problems, "duplicates": dups, "workers": workers}


def print_summary(s, out=None):
    out = out or sys.stdout
    print(f"\n{s['n_problems']} problem(s) x {len(s['gpu_models'])} GPU model(s) ({', '.join(s['gpu_models'])}): "
          f"{len(s['problems'])} task(s)", file=out)
    print(f"  {'shape':<20} {'math':<7} {'epilogue':<28} {'gpu model':<16} {'status':<10} {'best_ms':>10} "
          f"{'vs eager':>9}  best (math strategy variant)", file=out)
    for r in s["problems"]:
        ms = f"{r['best_ms']:.4f}" if r["best_ms"] is not None else "-"
        sp = f"{r['speedup_vs_eager']:.3f}x" if r["speedup_vs_eager"] is not None else "-"
        tail = (f"{r['best_math']} {r['strategy']} {r['variant']}" if r["best_ms"] is not None
                else (r["message"] or "")[:200])
        epi = r["epilogue"] if len(r["epilogue"]) <= 28 else r["epilogue"][:27] + "\u2026"
        print(f"  {r['shape']:<20} {r['math']:<7} {epi:<28} {r['gpu_model'][:16]:<16} "
              f"{r['status']:<10} {ms:>10} {sp:>9}  {tail}", file=out)
    for d in s["duplicates"]:
        print(f"  line {d['line']} ({d['math']}) repeats line {d['same_as_line']}: tuned once", file=out)
    print("workers:", file=out)
    for w in s["workers"]:
        models = [r[len(MODEL_PREFIX):] for r in w["resources"] if r.startswith(MODEL_PREFIX)]
        kind = ", ".join(models) if w["resources"].get(GPU, 0) >= 1 and models else "no GPU resources: takes nothing"
        print(f"  {w['name']} ({', '.join(w['addresses'])}; {kind})  {w['problems']} problem(s), {w['busy_s']:.1f} s tuning",
              file=out)
    print(f"wall {s['wall_s']:.1f} s; {s['results_added']} result(s) added to {s['database']}"
          f"{'; interrupted' if s['interrupted'] else ''}", file=out)


def tune(args, task=tune_task):
    """The `tune` command; returns the exit status."""
    try:
        items = load_problems(args.problems)  # the whole file, checked before anything else
    except FormatError as e:
        print(f"fusedtune.cluster tune: {e}", file=sys.stderr)
        return 2
    opts = {"budget_s": args.budget, "strategy": args.strategy, "repeats": args.repeats, "retune": args.retune,
            "flush_l2": args.flush_l2, "seed": args.seed, "max_candidates": args.max_candidates,
            "db_dir": args.worker_db_dir}
    d = distributed()
    t0 = time.monotonic()
    cluster = None
    if args.local:
        try:
            cluster = local_cluster(core.devices())
        except FusedtuneError as e:
            raise ClusterError(f"--local starts one worker per GPU of this host: {e}") from None
    try:
        # The database is made only once the scheduler answers: one that cannot be reached leaves none.
        with d.Client(cluster if cluster else args.scheduler, timeout=args.connect_timeout) as client, \
                core.Database(args.db, create=True) as db:
            return _tune_on(client, db, items, opts, args, task, t0)
    finally:
        if cluster:
            cluster.close()


def _tune_on(client, db, items, opts, args, task, t0):
    try:
        client.wait_for_workers(1, timeout=args.connect_timeout)
    except TimeoutError:
        raise ClusterError(f"no worker joined the scheduler {client.scheduler.address} within "
                           f"{args.connect_timeout} s") from None
    present, every = gpu_models(client)
    if not present:
        raise ClusterError("no worker has the resources GPU=1 and GPU:<model>: start one per GPU with "
                           "dask worker SCHEDULER --nthreads 1 --resources \"$(python3 -m fusedtune.cluster "
                           "resources)\" (docs/CLUSTER.md)")
    models = sorted(present)
    if args.gpu_models:
        asked = [model_resource(m) if not m.startswith(MODEL_PREFIX) else m for m in args.gpu_models.split(",")]
        missing = [m for m in asked if m not in present]
        if missing:
            raise ClusterError(f"no worker has GPU model {', '.join(missing)}; present: {', '.join(models)}")
        models = sorted(set(asked))
    run = Run(client, db, items, models, opts, task)
    run.collect(*run.submit())
    try:  # workers that joined (or came back under a new address) meanwhile
        every = {**every, **gpu_models(client)[1]}
    except OSError:
        pass
    s = summary(run, every, time.monotonic() - t0)
    if args.json:
        print(json.dumps(s))
    else:
        print_summary(s)
    if run.interrupted:
        return 130
    return 0 if all(r["status"] == "ok" for r in s["problems"]) else 1


def parser():
    ap = argparse.ArgumentParser(prog="python3 -m fusedtune.cluster", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tune", help="tune a problem file over the GPUs of a Dask cluster into one database",
                       description="Tunes every problem of FILE once per GPU model present among the workers, "
                       "each on a worker of that model, and imports each result into --db as it arrives. Ends "
                       "with the summary of `fusedtune tune --problems`: per problem and GPU model the best "
                       "and its speed-up against eager; per worker the problems and time spent.")
    t.add_argument("--problems", required=True, metavar="FILE",
                   help="CSV (shape,epilogue,math) or JSON array, as `fusedtune tune --problems` (docs/FORMAT.md); "
                   "checked whole before anything is submitted")
    where = t.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="tcp://HOST:8786", help="the Dask scheduler's address")
    where.add_argument("--local", action="store_true", help="a scheduler and one worker per GPU of this host")
    t.add_argument("--db", required=True, metavar="OUT.db", help="the database the results are imported into")
    t.add_argument("--gpu-models", metavar="M1,M2", help="tune for these GPU models only (e.g. NVIDIA_H200); "
                   "default: every model among the workers")
    t.add_argument("--budget", type=float, metavar="SECONDS", help="bound on each problem's tune (default 150)")
    t.add_argument("--strategy", choices=STRATEGIES, help="search strategy (default fast); `fusedtune tune --help`")
    t.add_argument("--math", help=argparse.SUPPRESS)
    t.add_argument("--repeats", type=int, metavar="N", help="timed repeats per candidate, >= 20 (default 30)")
    t.add_argument("--retune", action="store_true", help="measure again what the worker's database holds")
    t.add_argument("--flush-l2", action="store_true", help="overwrite L2 before every timed repeat")
    t.add_argument("--seed", type=int, metavar="N", help="input seed (0, the default, is the fixed one)")
    t.add_argument("--max-candidates", type=int, metavar="N", help="measure at most N candidates per problem")
    t.add_argument("--worker-db-dir", metavar="DIR", help="folder on the workers for their local databases "
                   "(default: the Dask worker's local directory)")
    t.add_argument("--connect-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="wait this long for the scheduler and a first worker (default 30)")
    t.add_argument("--json", action="store_true", help="print the summary as JSON")
    r = sub.add_parser("resources", help="print the `dask worker --resources` value for a GPU of this host")
    r.add_argument("--device", type=int, default=0, metavar="N", help="the visible CUDA device (default 0)")
    return ap


def _bad_option(args):
    """The first tune option outside what `fusedtune tune` takes, as one line; None when all fit."""
    if args.budget is not None and not args.budget > 0:
        return f"--budget {args.budget:g} is not a positive number of seconds"
    if args.repeats is not None and not 20 <= args.repeats <= 1000:
        return f"--repeats {args.repeats} must be an integer in 20..1000"
    if args.seed is not None and not 0 <= args.seed <= 0x7fffffff:
        return f"--seed {args.seed} must be an integer from 0 to 2147483647"
    if args.max_candidates is not None and not 1 <= args.max_candidates <= 1000000:
        return f"--max-candidates {args.max_candidates} must be a positive integer"
    if not args.connect_timeout > 0:
        return f"--connect-timeout {args.connect_timeout:g} is not a positive number of seconds"
    return None


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        if args.command == "resources":
            devs = core.devices()
            if not 0 <= args.device < len(devs):
                raise ClusterError(f"device {args.device}: {len(devs)} device(s) visible")
            print(worker_resources(devs[args.device].name))
            return 0
        if args.math is not None:
            print("fusedtune.cluster tune: --problems FILE names each problem's math mode (its math column; auto "
                  "for fp32, 3xtf32 and tf32): no --math", file=sys.stderr)
            return 2
        bad = _bad_option(args)
        if bad:  # refused here, before any worker is given a problem it would refuse
            print(f"fusedtune.cluster tune: {bad}", file=sys.stderr)
            return 2
        return tune(args)
    except (ClusterError, FusedtuneError, LibraryNotFound) as e:
        print(f"fusedtune.cluster: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # the scheduler cannot be reached, or a file cannot be written
        print(f"fusedtune.cluster: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
