"""Usage: python3 scripts/gpu/cluster_compare.py PROBLEMS REF.db CLUSTER.db WORKER_DB_DIR SUMMARY.json
The checks of scripts/gpu/cluster.sh after a cluster tune: every problem of PROBLEMS has a best
in CLUSTER.db; each best beside REF.db's (`fusedtune tune --problems` on the same file: another
tune, so near-equal candidates may trade places); the cluster database holds exactly the results
of the worker-local databases under WORKER_DB_DIR (none missing, none twice), the same best for
each problem, and importing those again adds nothing; the runs each problem took.
Prints a table; exit status 0 when every check holds, 1 otherwise.
"""
import collections
import glob
import json
import os
import sys
import tempfile

import fusedtune
from fusedtune.problems import load_problems


def export_to(db_path, path):
    with fusedtune.Database(db_path, readonly=True) as db:
        db.export_file(path)


def exported(db_path):
    """The JSON export of db_path, as a dict."""
    with tempfile.TemporaryDirectory() as d:
        export_to(db_path, os.path.join(d, "e.json"))
        with open(os.path.join(d, "e.json"), encoding="utf-8") as f:
            return json.load(f)


def best(db, problem, device):
    try:
        return db.lookup_entry(problem, device, nearest=False, buckets=False).config
    except fusedtune.FusedtuneError:
        return None


def show(c):
    return "-" if c is None else f"{c.strategy} {c.name} {c.median_ms:.4f} ms ({c.eager_ms / c.median_ms:.3f}x eager)"


def main(problems, ref_path, cluster_path, wdb, summary_path):
    ok = True
    device = fusedtune.devices()[0].name
    items = [i for i in load_problems(problems) if i.duplicate_of < 0]
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    print(f"cluster summary: {len(summary['problems'])} task(s), statuses "
          f"{dict(collections.Counter(p['status'] for p in summary['problems']))}, wall {summary['wall_s']:.1f} s, "
          f"{summary['results_added']} result(s) added")
    for w in summary["workers"]:
        print(f"  worker {w['name']}: {w['problems']} problem(s), {w['busy_s']:.1f} s tuning")
    same = 0
    print("| problem | math | tune --problems best | cluster best | same variant | cluster / ref ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    with fusedtune.Database(ref_path, readonly=True) as ref, fusedtune.Database(cluster_path, readonly=True) as cl:
        for it in items:
            p = it.problem
            a, b = best(ref, p, device), best(cl, p, device)
            if b is None:
                ok = False
            eq = a is not None and b is not None and (a.strategy, a.name) == (b.strategy, b.name)
            same += eq
            ratio = f"{b.median_ms / a.median_ms:.3f}" if a and b else "-"
            print(f"| {p.shape} {p.epilogue} | {p.math} | {show(a)} | {show(b)} | {'yes' if eq else 'no'} | {ratio} |")
    print(f"same best variant in both: {same} of {len(items)}")

    merged = exported(cluster_path)
    uuids = [r["uuid"] for r in merged["results"]]
    local_uuids, local_files = [], sorted(glob.glob(os.path.join(wdb, "fusedtune-cluster", "*.db")))
    for path in local_files:
        doc = exported(path)
        local_uuids += [r["uuid"] for r in doc["results"]]
    twice = len(uuids) - len(set(uuids))
    lost = set(local_uuids) - set(uuids)
    extra = set(uuids) - set(local_uuids)
    print(f"cluster db: {len(uuids)} results ({twice} twice); {len(local_files)} worker-local db(s): "
          f"{len(local_uuids)} results; missing from the cluster db: {len(lost)}; not from a worker db: {len(extra)}")
    ok &= not twice and not lost and not extra and len(local_uuids) == len(set(local_uuids))
    # The transfer keeps each best: the cluster database's equals the worker-local database's.
    kept = 0
    with fusedtune.Database(cluster_path, readonly=True) as cl:
        for path in local_files:
            with fusedtune.Database(path, readonly=True) as local:
                for e in local.best_entries():
                    m, n, k = e.config.tuned_shape
                    got = best(cl, fusedtune.Problem(m, n, k, e.epilogue, e.math), e.device_name)
                    kept += got is not None and (got.strategy, got.name, got.median_ms) == (
                        e.config.strategy, e.config.name, e.config.median_ms)
    print(f"cluster db best == worker-local db best: {kept} of {len(items)} problems")
    ok &= kept == len(items)
    added = 0
    with fusedtune.Database(cluster_path) as cl, tempfile.TemporaryDirectory() as d:
        for path in local_files:
            export_to(path, os.path.join(d, "e.json"))
            added += cl.import_file(os.path.join(d, "e.json"))["results"]
    print(f"importing every worker-local db again: {added} result(s) added")
    ok &= added == 0
    per_problem = collections.defaultdict(set)
    for r in merged["results"]:
        p = r["problem"]
        per_problem[f"{p['m']}x{p['n']}x{p['k']} {p['math']}"].add(r["run"])
    print("runs per problem in the cluster db: " + ", ".join(f"{k}: {len(v)}" for k, v in sorted(per_problem.items())))
    print("all checks hold" if ok else "CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
