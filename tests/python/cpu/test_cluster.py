"""CPU tests of fusedtune.cluster on a real Dask cluster on this host (a scheduler and worker
processes, python/fusedtune/cluster.py's spec_cluster): tasks on GPU-less workers fail with the
library's "no CUDA device" per problem and nothing is imported; a worker without the GPU
resources takes nothing; a real export (the committed fixture) delivered twice is imported once; a
task whose worker is killed is retried and imported once; a bad problem file is refused before
anything is submitted; `import fusedtune` needs no Dask and the cluster module says how to install
it. Exits 77 (skipped) without dask.distributed.

Run by ctest (test python_cluster): FUSEDTUNE_LIBRARY names the built library, FT_TEST_TMP a
scratch folder.
"""
import contextlib
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(HERE, "..", "..", "..", "python")
sys.path.insert(0, PYDIR)
FIXTURE = os.path.join(HERE, "..", "..", "..", "fuzz", "corpus", "import", "valid_export.json")

try:
    import distributed
except ImportError as e:
    print(f"SKIP: dask.distributed is not installed ({e}); .ci/run installs it")
    sys.exit(77)

import fusedtune  # noqa: E402
from fusedtune import cluster  # noqa: E402

SCRATCH = tempfile.mkdtemp(prefix="ft_cluster_", dir=os.environ.get("FT_TEST_TMP") or None)
MODEL = "GPU:Fake_GPU"  # two workers of this model
SOLO = "GPU:Solo_GPU"   # one worker of this one
CLUSTER = None


def setUpModule():
    global CLUSTER
    gpu = {"nthreads": 1, "resources": {"GPU": 1, MODEL: 1}, "silence_logs": logging.ERROR}
    CLUSTER = cluster.spec_cluster({
        "w0": {"cls": distributed.Nanny, "options": gpu},
        "w1": {"cls": distributed.Nanny, "options": gpu},
        "solo": {"cls": distributed.Nanny, "options": dict(gpu, resources={"GPU": 1, SOLO: 1})},
        "nogpu": {"cls": distributed.Nanny, "options": {"nthreads": 1, "silence_logs": logging.ERROR}}})


def tearDownModule():
    if CLUSTER is not None:
        CLUSTER.close()
    shutil.rmtree(SCRATCH, ignore_errors=True)


def path(name):
    return os.path.join(SCRATCH, name)


def write(name, text):
    with open(path(name), "w", encoding="utf-8") as f:
        f.write(text)
    return path(name)


def fixture_text():
    with open(FIXTURE, encoding="utf-8") as f:
        return f.read()


def fixture_results():
    return len(json.loads(fixture_text())["results"])


# The fixture's two problems, so that each task's export (the whole fixture) holds the other's too.
FIXTURE_PROBLEMS = ('shape,epilogue,math\n128x16384x16384,minsub,fp32\n1024x8192x8192,"relu(x + bias)",fp32\n')


def export_task(text, markers=None, victim=None, after=0):
    """A task body standing in for the tune: returns the fixture as a worker's export, leaving
    its pid in markers/<shape> each time it starts. The first attempt of the problem of shape
    victim kills its own worker process once `after` other problems have started, and a second
    more (the nanny restarts the worker; the scheduler gives the task to a worker of its model)."""
    def task(spec, model, opts):
        import os
        import signal
        import time
        from distributed import get_worker
        if markers is not None:
            mine = os.path.join(markers, "%dx%dx%d" % spec[:3])
            first = not os.path.exists(mine)
            with open(mine, "a") as f:
                f.write(f"{os.getpid()}\n")
            if first and os.path.basename(mine) == victim:
                t0 = time.monotonic()
                while len(os.listdir(markers)) < after + 1 and time.monotonic() < t0 + 20:
                    time.sleep(0.05)
                time.sleep(1.0)  # their results taken by the client meanwhile
                os.kill(os.getpid(), signal.SIGKILL)
        return {"worker": get_worker().name, "model": model, "device": "NVIDIA H200", "ok": True, "error": None,
                "export": text, "elapsed_s": 0.01}
    return task


def run(argv, task=None):
    """cluster.main / cluster.tune on the test cluster: (exit status, JSON summary or None, stderr)."""
    argv = ["tune", "--scheduler", CLUSTER.scheduler_address, "--json"] + argv
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cluster.main(argv) if task is None else cluster.tune(cluster.parser().parse_args(argv), task=task)
    text = out.getvalue().strip()
    return rc, (json.loads(text) if text else None), err.getvalue()


def stored_results(db_path):
    exported = path("check.json")
    with fusedtune.Database(db_path, readonly=True) as db:
        db.export_file(exported)
    with open(exported, encoding="utf-8") as f:
        return json.load(f)["results"]


class Cluster(unittest.TestCase):
    def test_gpuless_workers_fail_each_problem_and_import_nothing(self):
        problems = write("three.csv", "shape,epilogue,math\n64x256x256,biasrelu,bf16\n128x256x512,none,fp32\n"
                                      "64x256x256,relu(x + bias),bf16\n256x512x256,minsub,tf32\n")
        rc, s, err = run(["--problems", problems, "--db", path("gpuless.db"), "--budget", "5"])
        self.assertEqual(rc, 1, err)
        # One task per problem and GPU model; line 4 repeats line 2: tuned once.
        self.assertEqual(sorted((p["line"], p["gpu_model"]) for p in s["problems"]),
                         [(line, m) for line in (2, 3, 5) for m in ("Fake_GPU", "Solo_GPU")])
        self.assertEqual(s["duplicates"], [{"line": 4, "same_as_line": 2, "math": "bf16"}])
        try:
            fusedtune.devices()
            expected = "the task is for GPU:"  # a machine with a GPU of another model
        except fusedtune.NoDeviceError:
            expected = "no CUDA device: "
        for p in s["problems"]:
            self.assertEqual(p["status"], "failed")
            self.assertIn(expected, p["message"])
            self.assertIn(p["worker"], ("w0", "w1") if p["gpu_model"] == "Fake_GPU" else ("solo",))
            self.assertEqual(p["results_added"], 0)
        self.assertEqual(s["results_added"], 0)
        self.assertEqual(stored_results(path("gpuless.db")), [])
        taken = {w["name"]: w["problems"] for w in s["workers"]}
        self.assertEqual(taken["nogpu"], 0)  # no GPU resources: takes nothing
        self.assertEqual((taken["w0"] + taken["w1"], taken["solo"]), (3, 3))
        self.assertIn("no CUDA device" if "no CUDA" in expected else "the task is for", err)

    def test_export_delivered_twice_is_imported_once(self):
        problems = write("fixture.csv", FIXTURE_PROBLEMS)
        db = path("twice.db")
        rc, s, err = run(["--problems", problems, "--db", db], task=export_task(fixture_text()))
        self.assertEqual(rc, 0, err)
        n = fixture_results()
        self.assertGreater(n, 0)
        # 2 problems x 2 GPU models: each task's export holds the whole fixture, imported once.
        self.assertEqual(sorted(p["results_added"] for p in s["problems"]), [0, 0, 0, n])
        self.assertEqual(s["results_added"], n)
        self.assertEqual(len(stored_results(db)), n)
        # The whole run again (a retried client): nothing added.
        rc, s, err = run(["--problems", problems, "--db", db], task=export_task(fixture_text()))
        self.assertEqual((rc, s["results_added"]), (0, 0), err)
        self.assertEqual(len(stored_results(db)), n)

    def test_killed_workers_task_is_retried(self):
        problems = write("one.csv", "shape,epilogue,math\n128x16384x16384,minsub,fp32\n")
        markers, db = path("attempts"), path("killed.db")
        os.mkdir(markers)
        rc, s, err = run(["--problems", problems, "--db", db, "--gpu-models", MODEL[4:]],
                         task=export_task(fixture_text(), markers, "128x16384x16384"))
        self.assertEqual(rc, 0, err)
        with open(os.path.join(markers, "128x16384x16384")) as f:
            pids = f.read().split()
        self.assertEqual(len(pids), 2, "the task ran once more after its worker died")
        self.assertNotEqual(pids[0], pids[1])
        self.assertEqual(s["problems"][0]["status"], "ok")
        self.assertEqual(s["results_added"], fixture_results())
        self.assertEqual(len(stored_results(db)), fixture_results())

    def test_result_taken_is_not_computed_again_when_its_worker_dies(self):
        # Both problems on the one worker of SOLO: the first (the larger) finishes and is
        # imported, then the second kills that worker. Dask recomputes a lost result that a client still holds; the
        # client releases each result once imported, so the first runs once.
        problems = write("solo.csv", FIXTURE_PROBLEMS)
        markers, db = path("solo_attempts"), path("solo.db")
        os.mkdir(markers)
        rc, s, err = run(["--problems", problems, "--db", db, "--gpu-models", SOLO[4:]],
                         task=export_task(fixture_text(), markers, "128x16384x16384", after=1))
        self.assertEqual(rc, 0, err)
        runs = {}
        for name in os.listdir(markers):
            with open(os.path.join(markers, name)) as f:
                runs[name] = len(f.read().split())
        self.assertEqual(runs, {"1024x8192x8192": 1, "128x16384x16384": 2})
        self.assertEqual([w["problems"] for w in s["workers"] if w["name"] == "solo"], [2])
        self.assertEqual(len([w for w in s["workers"] if w["name"] == "solo"][0]["addresses"]), 2)
        self.assertEqual(s["results_added"], fixture_results())
        self.assertEqual(len(stored_results(db)), fixture_results())

    def test_bad_problem_file_refused_before_submission(self):
        bad = write("bad.csv", "shape,epilogue,math\n64x64x64,none,fp32\n0x8x8,none,fp32\n")
        db = path("bad.db")
        transitions = CLUSTER.scheduler.transition_counter  # every task state change the scheduler made
        rc, s, err = run(["--problems", bad, "--db", db])
        self.assertEqual(rc, 2)
        self.assertIsNone(s)
        self.assertIn("bad.csv: line 3: shape 0x8x8: m, n and k must be positive", err)
        self.assertFalse(os.path.exists(db), "the database is untouched")
        self.assertEqual(CLUSTER.scheduler.transition_counter, transitions, "a task reached the scheduler")
        # Refused before the scheduler is even reached: an address where none listens.
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cluster.main(["tune", "--problems", bad, "--scheduler", "tcp://127.0.0.1:1", "--db", db])
        self.assertEqual(rc, 2)
        self.assertIn("line 3", err.getvalue())
        # The file names each problem's mode: --math is refused, as by tune --problems.
        rc, s, err = run(["--problems", write("good.csv", FIXTURE_PROBLEMS), "--db", db, "--math", "bf16"])
        self.assertEqual(rc, 2)
        self.assertIn("no --math", err)
        self.assertFalse(os.path.exists(db))
        # An option outside what `fusedtune tune` takes: a usage error of one line, nothing submitted.
        for opt in (["--repeats", "5"], ["--budget", "0"], ["--max-candidates", "0"], ["--seed", "-1"]):
            rc, s, err = run(["--problems", write("good.csv", FIXTURE_PROBLEMS), "--db", db] + opt)
            self.assertEqual(rc, 2, opt)
            self.assertIn(opt[0], err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertFalse(os.path.exists(db))
        self.assertEqual(CLUSTER.scheduler.transition_counter, transitions, "a task reached the scheduler")
        # A good file and a scheduler that cannot be reached: exit 1, one line, no database made.
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cluster.main(["tune", "--problems", write("good.csv", FIXTURE_PROBLEMS), "--scheduler",
                               "tcp://127.0.0.1:1", "--connect-timeout", "1", "--db", db])
        self.assertEqual(rc, 1)
        self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())
        self.assertFalse(os.path.exists(db))

    def test_ctrl_c_cancels_what_is_queued_and_keeps_what_is_imported(self):
        # The client in a process of its own, interrupted (SIGINT) once the first result is in:
        # the fixture's larger problem returns at once, the other task sleeps on its worker.
        problems = write("ctrlc.csv", FIXTURE_PROBLEMS)
        db = path("ctrlc.db")
        script = write("ctrlc.py", f"""
import os, sys, time
sys.path.insert(0, {PYDIR!r})
from fusedtune import cluster
def task(spec, model, opts):
    if spec[0] != 1024:
        time.sleep(3)
    with open({FIXTURE!r}) as f:
        return {{"worker": "w", "model": model, "device": "NVIDIA H200", "ok": True, "error": None,
                "export": f.read(), "elapsed_s": 0.01}}
args = cluster.parser().parse_args(["tune", "--problems", {problems!r}, "--db", {db!r}, "--json",
                                    "--gpu-models", "Fake_GPU", "--scheduler", {CLUSTER.scheduler_address!r}])
sys.exit(cluster.tune(args, task=task))
""")
        p = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in p.stderr:
            lines.append(line)
            if line.startswith("fusedtune.cluster: [1/2]"):
                p.send_signal(signal.SIGINT)
                break
        out, err = p.communicate(timeout=60)
        err = "".join(lines) + err
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("interrupted: 1 task(s) cancelled", err)
        s = json.loads(out)
        self.assertTrue(s["interrupted"])
        self.assertEqual(sorted(r["status"] for r in s["problems"]), ["cancelled", "ok"])
        self.assertEqual(s["results_added"], fixture_results())
        self.assertEqual(len(stored_results(db)), fixture_results())

    def test_no_worker_of_the_asked_model(self):
        problems = write("model.csv", FIXTURE_PROBLEMS)
        rc, s, err = run(["--problems", problems, "--db", path("model.db"), "--gpu-models", "NVIDIA_A100"])
        self.assertEqual(rc, 1)
        self.assertIn("no worker has GPU model GPU:NVIDIA_A100; present: GPU:Fake_GPU, GPU:Solo_GPU", err)

    def test_dask_is_optional(self):
        env = dict(os.environ, PYTHONPATH=PYDIR)
        code = ("import sys, fusedtune, fusedtune.cluster; "
                "assert 'distributed' not in sys.modules and 'dask' not in sys.modules, 'dask imported'; "
                "sys.modules['distributed'] = None; "
                "sys.exit(fusedtune.cluster.main(['tune', '--problems', sys.argv[1], '--scheduler', 'tcp://x:1', "
                "'--db', sys.argv[2]]))")
        p = subprocess.run([sys.executable, "-c", code, write("ok.csv", FIXTURE_PROBLEMS), path("nodask.db")],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("fusedtune.cluster needs Dask's distributed scheduler", p.stderr)
        self.assertIn(f"pip install 'dask=={cluster.DASK_VERSION}' 'distributed=={cluster.DASK_VERSION}'", p.stderr)
        # The worker's --resources value, from this host's GPU; none here: the library's reason.
        p = subprocess.run([sys.executable, "-m", "fusedtune.cluster", "resources"], env=env, capture_output=True,
                           text=True, timeout=60)
        try:
            name = fusedtune.devices()[0].name
            self.assertEqual((p.returncode, p.stdout.strip()), (0, f"GPU=1 GPU:{name.replace(' ', '_')}=1"))
        except fusedtune.NoDeviceError:
            self.assertEqual(p.returncode, 1)
            self.assertIn("fusedtune.cluster: no CUDA device: ", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
