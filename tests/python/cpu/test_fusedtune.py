"""CPU tests of the Python package (no GPU, no torch): the library it loads, the struct layouts
against the C compiler's, databases from an import fixture, statuses as exceptions with the
library's message, and FusedLinear's argument checks on tensor-like fakes.

Run by ctest (test python_package): FUSEDTUNE_LIBRARY names the built library, FT_LAYOUT_DUMP
the layout helper (tests/python/cpu/layout_dump.c), FT_TEST_TMP a scratch folder.
    python3 -m unittest tests/python/cpu/test_fusedtune.py -v   (with those variables set)
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

import fusedtune  # noqa: E402
from fusedtune import _launch, _lib  # noqa: E402
from fusedtune._binding import Binding, check_no_grad, check_tensor  # noqa: E402

SCRATCH = tempfile.mkdtemp(prefix="ft_python_", dir=os.environ.get("FT_TEST_TMP") or None)


def tearDownModule():
    shutil.rmtree(SCRATCH, ignore_errors=True)


def scratch(name):
    path = os.path.join(SCRATCH, name)
    fusedtune.remove_database(path)
    return path


def have_gpu():
    try:
        return len(fusedtune.devices()) > 0
    except fusedtune.NoDeviceError:
        return False


# ---- an export with results whose kernel source is today's (so lookups take them as current) ----

DEVICE = "Fixture GPU"


def fixture_export(path, problem, n_results=2):
    """Writes a JSON export (docs/FORMAT.md) holding, for problem on DEVICE, the first fused GEMM
    and the first epilogue-pass variant that ft_variants lists, as measured ok results."""
    ep = fusedtune.inspect_epilogue(problem.epilogue)
    vs = fusedtune.variants(problem, "sm_90")
    pick = [next(v for v in vs if v.strategy == "fused"), next(v for v in vs if v.strategy == "cublas+epilogue")]
    key = {"m": problem.m, "n": problem.n, "k": problem.k, "layout": "xrow_wrow", "math": problem.math}
    run = "11111111-1111-4111-8111-111111111111"
    results = []
    for i, (v, ms) in enumerate(zip(pick[:n_results], (0.5, 0.4))):
        results.append({
            "uuid": "22222222-2222-4222-8222-%012d" % i, "run": run, "device": "00000000000000aa",
            "problem": dict(key, epilogue_hash=ep.hash), "strategy": v.strategy, "variant": v.name,
            "config": v.config, "status": "ok", "median_ms": ms, "min_ms": ms, "iqr_ms": None, "repeats": 30,
            "rel_err": 1e-7, "max_abs_err": None, "source_hash": v.source_hash, "fusedtune_version": "0.1.0",
            "message": "", "created": "2026-11-29T08:00:0%d.000Z" % i})
    doc = {"format": "fusedtune-export", "version": 1,
           "devices": [{"fingerprint": "00000000000000aa", "name": DEVICE, "cc_major": 9, "cc_minor": 0,
                        "sm_count": 132, "mem_bytes": 150011101184, "driver_version": 13000,
                        "runtime_version": 13000, "nvrtc_version": 13000, "cublas_version": 130000,
                        "first_seen": "2026-11-29T08:00:00.000Z", "last_seen": "2026-11-29T09:00:00.000Z"}],
           "problems": [dict(key, epilogue=ep.canonical, epilogue_hash=ep.hash)],
           "runs": [{"uuid": run, "device": "00000000000000aa", "started": "2026-11-29T08:00:00.000Z",
                     "ended": None, "tool_version": "0.1.0", "options": "{}", "budget_s": 170, "outcome": None}],
           "results": results, "best": []}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return pick


class LibraryTest(unittest.TestCase):
    def test_loads_the_named_library(self):
        want = os.environ.get("FUSEDTUNE_LIBRARY")
        lib = fusedtune.library
        if want:
            self.assertEqual(fusedtune.library_source, "FUSEDTUNE_LIBRARY")
            self.assertEqual(os.path.realpath(fusedtune.library_path), os.path.realpath(want))
        self.assertEqual(lib.version, fusedtune.__version__)
        self.assertEqual(lib.version_number, _lib.FUSEDTUNE_VERSION_NUMBER)
        self.assertIn(fusedtune.library_path, lib.describe())

    def test_search_order(self):
        pkg = os.path.join(SCRATCH, "site", "fusedtune")
        os.makedirs(pkg, exist_ok=True)
        self.assertNotIn("build tree", [s for s, _ in _lib.candidates(env={}, package_dir=pkg)])
        open(os.path.join(SCRATCH, "CMakeLists.txt"), "w").close()  # now SCRATCH looks like a checkout
        with open(os.path.join(pkg, _lib.INSTALL_RECORD), "w") as f:
            f.write("../../lib/libfusedtune.so.0\n")
        got = _lib.candidates(env={}, package_dir=pkg)
        self.assertEqual([s for s, _ in got], ["installed", "package folder", "build tree", "system loader"])
        self.assertEqual(got[0][1], os.path.normpath(os.path.join(SCRATCH, "lib", "libfusedtune.so.0")))
        self.assertEqual(got[2][1], os.path.normpath(os.path.join(SCRATCH, "build", "libfusedtune.so.0")))
        # The variable, when set, is the only place: a wrong one is an error, not a fallback.
        only = _lib.candidates(env={"FUSEDTUNE_LIBRARY": SCRATCH}, package_dir=pkg)
        self.assertEqual(only, [("FUSEDTUNE_LIBRARY", os.path.join(SCRATCH, "libfusedtune.so.0"))])
        with self.assertRaises(fusedtune.LibraryNotFound) as cm:
            _lib.load(env={"FUSEDTUNE_LIBRARY": os.path.join(SCRATCH, "nope.so")}, package_dir=pkg)
        self.assertIn("nope.so", str(cm.exception))
        self.assertIn("FUSEDTUNE_LIBRARY", str(cm.exception))

    def test_installed_record_is_used(self):
        lib = os.environ.get("FUSEDTUNE_LIBRARY")
        if not lib:
            self.skipTest("FUSEDTUNE_LIBRARY not set")
        pkg = os.path.join(SCRATCH, "inst", "fusedtune")
        os.makedirs(pkg, exist_ok=True)
        with open(os.path.join(pkg, _lib.INSTALL_RECORD), "w") as f:
            f.write(os.path.relpath(os.path.realpath(lib), pkg))
        loaded = _lib.load(env={}, package_dir=pkg)
        self.assertEqual(loaded.source, "installed")
        self.assertEqual(os.path.realpath(loaded.path), os.path.realpath(lib))


class LayoutTest(unittest.TestCase):
    """ctypes' view of every mirrored struct and constant equals the C compiler's."""

    @classmethod
    def setUpClass(cls):
        exe = os.environ.get("FT_LAYOUT_DUMP")
        if not exe:
            raise unittest.SkipTest("FT_LAYOUT_DUMP (the built tests/python/cpu/layout_dump) not set; run through ctest")
        cls.lines = [line.split() for line in subprocess.run([exe], check=True, capture_output=True,
                                                             text=True).stdout.splitlines()]

    def rows(self, kind):
        return {r[1]: r[2] for r in self.lines if r[0] == kind}

    def test_structs(self):
        sizes, fields = self.rows("struct"), self.rows("field")
        self.assertEqual(set(sizes), {s.__name__ for s in _lib.STRUCTS})
        for s in _lib.STRUCTS:
            self.assertEqual(ctypes.sizeof(s), int(sizes[s.__name__]), s.__name__)
            mine = {f"{s.__name__}.{name}": getattr(s, name).offset for name, *_ in s._fields_}
            theirs = {k: int(v) for k, v in fields.items() if k.startswith(s.__name__ + ".")}
            self.assertEqual(mine, theirs, s.__name__)

    def test_enums_and_constants(self):
        for name, size in self.rows("enum").items():
            self.assertEqual(int(size), ctypes.sizeof(_lib.c_enum), name)
        for name, value in self.rows("const").items():
            self.assertEqual(getattr(_lib, name), int(value), name)

    def test_statuses(self):
        c = {int(v): name for name, v in self.rows("status").items() if name != "FT_OK"}
        self.assertEqual(c, {v: n for v, (n, _) in fusedtune.errors.STATUSES.items()})

    def test_tune_options_init(self):
        o, init = _lib.tune_options_init(), self.rows("init")
        for name in ("struct_size", "repeats", "retune", "flush_l2", "quiet", "seed", "max_candidates"):
            self.assertEqual(getattr(o, name), int(init[name]), name)
        self.assertEqual(o.budget_s, float(init["budget_s"]))
        self.assertEqual(o.strategy.decode(), init["strategy"])
        self.assertFalse(o.progress or o.stop or o.worker_exe)


class ApiTest(unittest.TestCase):
    def test_every_library_status_has_an_exception(self):
        L = fusedtune.library
        for v in range(1, 64):
            text = L.ft_status_string(v).decode()
            if text == "unknown status":
                continue
            self.assertIn(v, fusedtune.errors.STATUSES, text)
            e = fusedtune.errors.error_for(v, "m")
            self.assertIsInstance(e, fusedtune.FusedtuneError)
            self.assertEqual((e.status, e.message, str(e)), (v, "m", "m"))

    def test_math_modes(self):
        modes = fusedtune.math_modes()
        self.assertEqual(list(modes)[:4], ["fp32", "tf32", "bf16", "fp16"])
        for m in modes.values():  # every mode's tensors have a type the package knows
            self.assertIn(m.dtype, fusedtune.core.DEFAULT_MODE if m.name != "fp8" else ["float8_e4m3fn"])
        for dtype, name in fusedtune.core.DEFAULT_MODE.items():
            self.assertEqual(modes[name].dtype, dtype)
        self.assertEqual(modes["tf32"].dtype, "float32")
        with self.assertRaises(fusedtune.UnsupportedError) as cm:
            fusedtune.math_mode("bf17")
        self.assertIn("fp32, tf32, bf16, fp16", str(cm.exception))

    def test_epilogue_inspection(self):
        e = fusedtune.inspect_epilogue("  (min((x+bias),c))-(c) where c=2e0")
        self.assertEqual(e.canonical, "min(x + bias, c) - c where c = 2")
        self.assertEqual(e.params, (fusedtune.Param("bias", "col"), fusedtune.Param("c", "scalar", 2.0)))
        e = fusedtune.inspect_epilogue("x * g + r * s where row r, col g, scalar s")
        self.assertEqual([(p.name, p.kind, p.default) for p in e.params],
                         [("g", "col", None), ("r", "row", None), ("s", "scalar", None)])
        self.assertEqual(fusedtune.presets()["minsub"], "min(x + bias, c) - c where c = 2")

    def test_bad_expression_is_a_parse_error_with_the_library_message(self):
        with self.assertRaises(fusedtune.ParseError) as cm:
            fusedtune.inspect_epilogue("sigmod(x)")
        self.assertEqual(str(cm.exception), "epilogue: col 1: unknown function 'sigmod' (did you mean 'sigmoid'?)")
        self.assertEqual(cm.exception.status_name, "FT_ERR_PARSE")
        self.assertIsInstance(cm.exception, ValueError)
        with self.assertRaises(fusedtune.ParseError) as cm:
            fusedtune.Problem(8, 8, 8, "x + cc where c = 1").check()
        self.assertEqual(str(cm.exception), "epilogue: col 5: unknown name 'cc' (did you mean 'c'?)")

    def test_output_shape_is_known_before_launch(self):
        self.assertEqual(fusedtune.Problem(64, 100, 32, "relu(x + bias)").output_shape, (64, 100))
        lm_head = fusedtune.Problem(8192, 128256, 4096, "logsumexp(x + bias)", "bf16")
        self.assertEqual(lm_head.output_shape, (8192,))
        self.assertEqual(fusedtune.Problem(4, 100, 8, "softmax(x)").output_shape, (4, 100))
        self.assertEqual(fusedtune.Problem(4, 100, 8, "gelu(maxpool(x, 16))").output_shape, (4, 6))
        lm_head.check()
        with self.assertRaises(fusedtune.UnsupportedError) as cm:
            fusedtune.Problem(4, 100, 8, "softmax(avgpool(x, 4))").check()  # the shape is known, a tune refuses
        self.assertIn("no kernel serves 'softmax' of 'avgpool' yet", str(cm.exception))
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fusedtune.Problem(4, 100, 8, "groupnorm(x, 3)").output_shape
        self.assertEqual(str(cm.exception), "epilogue: groupnorm(..., 3) needs N divisible by 3, N is 100")
        with self.assertRaises(fusedtune.ParseError) as cm:
            fusedtune.Problem(4, 100, 8, "x - rowmax(x)").output_shape
        self.assertEqual(str(cm.exception), "epilogue: col 1: x is used outside 'rowmax': its result combines only "
                                            "with constants, scalars and vectors")

    def test_problem_checks(self):
        fusedtune.Problem(128, 256, 512, "minsub", "bf16").check()
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fusedtune.Problem(0, 8, 8, "none").check()
        self.assertEqual(str(cm.exception), "shape 0x8x8: m, n and k must be positive")
        with self.assertRaises(fusedtune.InvalidArgumentError):
            fusedtune.Problem(8.0, 8, 8).check()
        p = fusedtune.Problem(128, 16384, 16384, "min(x + bias, c) - c where c = 2", "tf32")
        self.assertEqual(p.tune_command("my db.db"), "fusedtune --db 'my db.db' tune --shape 128x16384x16384 "
                         "--epilogue 'min(x + bias, c) - c where c = 2' --math tf32")

    def test_variants_need_no_gpu(self):
        vs = fusedtune.variants(fusedtune.Problem(128, 256, 512, "biasrelu"), "sm_90")
        self.assertTrue(any(v.strategy == "fused" for v in vs) and any(v.strategy == "cublas+epilogue" for v in vs))
        self.assertTrue(all(len(v.source_hash) == 16 for v in vs))
        with self.assertRaises(fusedtune.InvalidArgumentError):
            fusedtune.variants(fusedtune.Problem(128, 256, 512), "sm_1")
        # bf16 on sm_90: the full space holds the default one and the staged epilogue besides.
        p = fusedtune.Problem(1024, 8192, 8192, "biasrelu", "bf16")
        pruned, full = fusedtune.variants(p, "sm_90"), fusedtune.variants(p, "sm_90", full=True)
        self.assertTrue({v.name for v in pruned} < {v.name for v in full})
        self.assertTrue(any("_se_" in v.name for v in full) and not any("_se_" in v.name for v in pruned))


class CValuesTest(unittest.TestCase):
    """What C would read otherwise than Python holds it: integers past 64 bits, NUL bytes."""

    def test_out_of_range_integers(self):
        for dims in ((2**64 + 128, 16384, 16384), (128, 2**63, 16384), (128, 16384, -2**63 - 1)):
            bad = next(v for v in dims if v not in (128, 16384))
            with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
                fusedtune.Problem(*dims, "minsub").check()
            self.assertIn(str(bad), str(cm.exception))
            self.assertIn("out of range", str(cm.exception))
        with fusedtune.Database(scratch("range.db"), create=True) as db:
            with self.assertRaises(ValueError):
                db.lookup_entry(fusedtune.Problem(2**64 + 128, 16384, 16384, "minsub"), DEVICE)
            with self.assertRaises(ValueError):
                db.tune(fusedtune.Problem(8, 8, 8), repeats=2**32 + 5)

    def test_nul_bytes(self):
        path = os.path.join(SCRATCH, "a\x00.db")
        with self.assertRaises(ValueError) as cm:
            fusedtune.Database(path, create=True)
        self.assertIn("NUL", str(cm.exception))
        self.assertFalse(os.path.exists(os.path.join(SCRATCH, "a")))
        for call in (lambda: fusedtune.Problem(8, 8, 8, "minsub\x00junk").check(),
                     lambda: fusedtune.inspect_epilogue("x\x00;evil"),
                     lambda: fusedtune.variants(fusedtune.Problem(8, 8, 8), "sm_90\x00junk"),
                     lambda: fusedtune.remove_database(path)):
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("NUL", str(cm.exception))
        with fusedtune.Database(scratch("nul.db"), create=True) as db:
            with self.assertRaises(ValueError):
                db.lookup_entry(fusedtune.Problem(8, 8, 8), DEVICE + "\x00junk")
            with self.assertRaises(ValueError):
                db.lookup_entry_within(fusedtune.Problem(8, 8, 8), 1e-3, DEVICE + "\x00")
            with self.assertRaises(ValueError):
                db.import_file(os.path.join(SCRATCH, "x\x00.json"))


class DatabaseTest(unittest.TestCase):
    def test_open_create_close(self):
        path = scratch("created.db")
        with self.assertRaises(fusedtune.NotFoundError) as cm:
            fusedtune.Database(path)
        self.assertIn(path, str(cm.exception))
        self.assertFalse(os.path.exists(path))
        with fusedtune.Database(path, create=True) as db:
            self.assertFalse(db.closed)
            self.assertEqual(db.best_entries(), [])
        self.assertTrue(db.closed)
        db.close()  # twice is fine
        with self.assertRaises(fusedtune.InvalidArgumentError):
            db.best_entries()
        with fusedtune.Database(path, readonly=True) as ro:
            self.assertEqual(ro.best_entries(), [])
            with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
                ro.tune(fusedtune.Problem(8, 8, 8))
            self.assertIn("read-only", str(cm.exception))

    def test_bad_databases(self):
        junk = scratch("junk.db")
        with open(junk, "wb") as f:
            f.write(os.urandom(4096))
        with self.assertRaises(fusedtune.DatabaseError) as cm:
            fusedtune.Database(junk)
        self.assertIn("not an SQLite database", str(cm.exception))
        with self.assertRaises(fusedtune.InputOutputError):
            fusedtune.Database(SCRATCH)

    def test_import_and_lookup_without_a_gpu(self):
        problem = fusedtune.Problem(128, 256, 512, "minsub", "fp32")
        export = os.path.join(SCRATCH, "fixture.json")
        picked = fixture_export(export, problem)
        with fusedtune.Database(scratch("fixture.db"), create=True) as db:
            counts = db.import_file(export)
            self.assertEqual((counts["devices"], counts["problems"], counts["results"]), (1, 1, 2))
            entries = db.best_entries()
            self.assertEqual(len(entries), 1)
            e = db.lookup_entry(problem, DEVICE)
            self.assertEqual((e.device_name, e.math, e.epilogue), (DEVICE, "fp32", "min(x + bias, c) - c where c = 2"))
            self.assertEqual((e.config.name, e.config.strategy), (picked[1].name, "cublas+epilogue"))
            self.assertTrue(e.config.exact)
            self.assertEqual(e.config.tuned_shape, (128, 256, 512))
            self.assertEqual(e.config.config, picked[1].config)
            self.assertEqual((e.config.math, e.config.rel_err), ("fp32", 1e-7))
            # By tolerance: the fixture's results measured 1e-7 (ft_lookup_within by device name).
            w = db.lookup_entry_within(problem, 1e-6, DEVICE)
            self.assertEqual((w.config.name, w.config.math), (picked[1].name, "fp32"))
            with self.assertRaises(fusedtune.NotFoundError) as cm:
                db.lookup_entry_within(problem, 1e-9, DEVICE)
            self.assertIn("smallest measured error is 1e-07", str(cm.exception))
            with self.assertRaises(fusedtune.InvalidArgumentError):
                db.lookup_entry_within(problem, 0.0, DEVICE)
            # The same expression spelt otherwise is the same problem.
            self.assertEqual(db.lookup_entry(fusedtune.Problem(128, 256, 512, "min(x+bias,c)-c where c=2"),
                                             DEVICE).config.name, picked[1].name)
            # Another M of the same N, K: served by the M bucket 128 (below it and beyond it).
            for m in (1, 40, 127, 4096):
                b = db.lookup_entry(fusedtune.Problem(m, 256, 512, "minsub"), DEVICE)
                self.assertEqual((b.config.exact, b.config.bucket, b.config.tuned_m), (False, True, 128))
                self.assertEqual(b.config.name, picked[1].name)
            self.assertFalse(e.config.bucket)
            self.assertEqual(e.config.tuned_m, 128)
            with self.assertRaises(fusedtune.NotFoundError) as cm:
                db.lookup_entry(fusedtune.Problem(40, 256, 512, "minsub"), DEVICE, buckets=False)
            self.assertIn("nothing tuned for 40x256x512", str(cm.exception))
            with self.assertRaises(fusedtune.InvalidArgumentError):
                db.lookup_entry(fusedtune.Problem(40, 256, 512, "minsub"), DEVICE, nearest=True, buckets=False)
            near = db.lookup_entry(fusedtune.Problem(100, 250, 512, "minsub"), DEVICE, nearest=True)
            self.assertFalse(near.config.bucket)
            self.assertFalse(near.config.exact)
            self.assertEqual(near.config.tuned_shape, (128, 256, 512))
            with self.assertRaises(fusedtune.NotFoundError) as cm:
                db.lookup_entry(fusedtune.Problem(100, 250, 512, "minsub"), DEVICE)
            self.assertIn("nothing tuned for 100x250x512", str(cm.exception))
            with self.assertRaises(fusedtune.NotFoundError):
                db.lookup_entry(problem, "No Such GPU")
            with self.assertRaises(fusedtune.NotFoundError) as cm:  # another math mode is another problem
                db.lookup_entry(fusedtune.Problem(128, 256, 512, "minsub", "bf16"), DEVICE, nearest=True)
            self.assertIn("c = 2', bf16 on Fixture GPU (nor a nearby applicable shape)", str(cm.exception))
            with self.assertRaises(fusedtune.ParseError):
                db.lookup_entry(fusedtune.Problem(128, 256, 512, "min(x"), DEVICE)
            if not have_gpu():
                # A lookup on the current device needs one: the device is part of the key.
                with self.assertRaises(fusedtune.NoDeviceError) as cm:
                    db.lookup(problem)
                self.assertIn("no CUDA device", str(cm.exception))
                with self.assertRaises(fusedtune.NoDeviceError):
                    db.plan(problem, e.config)
            err = db.not_tuned(fusedtune.Problem(128, 256, 512, e.epilogue), "nothing tuned")
            self.assertIsInstance(err, fusedtune.NotFoundError)
            self.assertIn("fusedtune --db", err.command)
            # fp32 tunes without --math: fp32 accuracy, as a lookup serves it (3xtf32 and fp32)
            self.assertIn("--shape 128x256x512 --epilogue 'min(x + bias, c) - c where c = 2'", str(err))
            self.assertNotIn("--math", str(err))
            bf = db.not_tuned(fusedtune.Problem(128, 256, 512, e.epilogue, "bf16"), "nothing tuned")
            self.assertIn("--math bf16", str(bf))

    def test_launch_arguments(self):
        # What Plan.launch hands ft_plan_launch (built without a GPU: no plan handle needed).
        problem = fusedtune.Problem(4, 8, 16, "silu(x * g + bias) + r * s where col g, row r, scalar s", "bf16")
        plan = fusedtune.Plan.__new__(fusedtune.Plan)
        plan.mode = fusedtune.math_mode(problem.math)
        a = plan.make_args(0x1000, 0x2000, 0x3000, {"bias": 0x4000, "g": 0x5000}, {"s": 0.5})
        self.assertEqual((a.x, a.w, a.y, a.n_vecs, a.n_scalars, a.dtype), (0x1000, 0x2000, 0x3000, 2, 1,
                                                                          _lib.FT_DTYPE_BF16))
        self.assertEqual([(a.vecs[i].name, a.vecs[i].data) for i in range(2)], [(b"bias", 0x4000), (b"g", 0x5000)])
        self.assertEqual((a.scalars[0].name, a.scalars[0].value), (b"s", 0.5))
        self.assertEqual(plan.make_args(1, 2, 3, dtype=_lib.FT_DTYPE_F32).n_vecs, 0)

    def test_slot_arrays(self):
        # What Plan.launch_ptrs hands ft_plan_launch_ptrs: slot order bias, g, r, s.
        plan = fusedtune.Plan.__new__(fusedtune.Plan)
        plan.problem = fusedtune.Problem(4, 8, 16, "silu(x * g + bias) + r * s where col g, row r, scalar s = 2",
                                         "bf16")
        va, sa = plan.slot_arrays([0x4000, 0x5000, 0x6000], [0.5])
        self.assertEqual((list(va), sa[3]), ([0x4000, 0x5000, 0x6000, None], 0.5))
        self.assertEqual(plan.slot_arrays([1, 2, 3])[1][3], 2.0)  # the default
        with self.assertRaises(fusedtune.InvalidArgumentError):
            plan.slot_arrays([1, 2])
        with self.assertRaises(fusedtune.InvalidArgumentError):
            plan.slot_arrays([1, 2, 3, 4])

    def test_export_file_round_trip(self):
        problem = fusedtune.Problem(64, 256, 512, "relu(x + bias)", "fp32")
        export, again = os.path.join(SCRATCH, "rt.json"), os.path.join(SCRATCH, "rt_again.json")
        fixture_export(export, problem)
        with fusedtune.Database(scratch("rt.db"), create=True) as db:
            db.import_file(export)
            db.export_file(again)
            with self.assertRaises(fusedtune.InputOutputError) as cm:
                db.export_file(os.path.join(SCRATCH, "no", "such", "folder.json"))
            self.assertIn("cannot write", str(cm.exception))
        with open(export) as f, open(again) as g:
            self.assertEqual(sorted(r["uuid"] for r in json.load(f)["results"]),
                             sorted(r["uuid"] for r in json.load(g)["results"]))
        with fusedtune.Database(scratch("rt2.db"), create=True) as db:
            self.assertEqual(db.import_file(again)["results"], 2)
            self.assertEqual(db.import_file(again)["results"], 0)  # twice is once
            self.assertEqual(db.lookup_entry(problem, DEVICE).config.tuned_shape, (64, 256, 512))

    def test_problem_list(self):
        from fusedtune.problems import load_problems
        listed = os.path.join(SCRATCH, "layers.csv")
        with open(listed, "w") as f:
            f.write("shape,epilogue,math\n40..64x256x512,biasrelu,bf16\n8x16x16,,auto\n64x256x512,relu(x+bias),bf16\n")
        items = load_problems(listed)
        self.assertEqual([(i.problem.shape, i.problem.math, i.line, i.duplicate_of) for i in items],
                         [("40x256x512", "bf16", 2, -1), ("64x256x512", "bf16", 2, -1), ("8x16x16", "fp32", 3, -1),
                          ("8x16x16", "3xtf32", 3, -1), ("8x16x16", "tf32", 3, -1), ("64x256x512", "bf16", 4, 1)])
        self.assertEqual(items[0].problem.epilogue, "relu(x + bias)")  # canonical
        with open(listed, "w") as f:
            f.write("shape,epilogue,math\n8x16x16,none,fp32\n8x16,none,fp32\n")
        with self.assertRaises(fusedtune.FormatError) as cm:
            load_problems(listed)
        self.assertIn("layers.csv: line 3: shape", str(cm.exception))
        with self.assertRaises(fusedtune.InputOutputError):
            load_problems(os.path.join(SCRATCH, "missing.csv"))

    def test_malformed_import(self):
        bad = os.path.join(SCRATCH, "bad.json")
        with open(bad, "w") as f:
            f.write('{"format":"fusedtune-export","version":1,"devices":[')
        with fusedtune.Database(scratch("import.db"), create=True) as db:
            with self.assertRaises(fusedtune.FormatError) as cm:
                db.import_file(bad)
            self.assertTrue(str(cm.exception).startswith("import"), str(cm.exception))
            with self.assertRaises(fusedtune.InputOutputError):
                db.import_file(os.path.join(SCRATCH, "missing.json"))
            self.assertEqual(db.best_entries(), [])


class SafeOutputTest(unittest.TestCase):
    """export_file writes as the CLI's export --out does (one implementation: ft_export_file):
    issue 58 items 1 and 2 (d57500e truncated the database it exported into a 57-byte stub)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=SCRATCH)
        self.db_path = os.path.join(self.dir, "b.db")
        export = os.path.join(self.dir, "fixture.json")
        fixture_export(export, fusedtune.Problem(64, 256, 512, "relu(x + bias)", "fp32"))
        with fusedtune.Database(self.db_path, create=True) as db:
            db.import_file(export)

    def assert_database_intact(self):
        with open(self.db_path, "rb") as f:
            self.assertEqual(f.read(16), b"SQLite format 3\0")
        with fusedtune.Database(self.db_path, readonly=True) as db:
            self.assertEqual(len(db.best_entries()), 1)

    def test_the_database_itself_is_refused(self):
        link = os.path.join(self.dir, "link.db")
        os.symlink(self.db_path, link)
        hard = os.path.join(self.dir, "hard.db")
        os.link(self.db_path, hard)
        for readonly in (False, True):
            with fusedtune.Database(self.db_path, readonly=readonly) as db:
                for target, why in ((self.db_path, "is the database being exported"), (link, "symbolic link"),
                                    (hard, "is the database being exported")):
                    with self.assertRaises(fusedtune.InputOutputError) as cm:
                        db.export_file(target)
                    self.assertIn(why, str(cm.exception))
            self.assert_database_intact()

    def test_side_files_and_special_files_are_refused(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        with fusedtune.Database(self.db_path) as db:
            for suffix in ("-wal", "-shm", "-journal"):
                with self.assertRaises(fusedtune.InputOutputError) as cm:
                    db.export_file(self.db_path + suffix)
                self.assertIn("is a file SQLite keeps beside the database", str(cm.exception))
            # A FIFO is refused, not opened (opening it would wait for a reader forever).
            with self.assertRaises(fusedtune.InputOutputError) as cm:
                db.export_file(fifo)
            self.assertIn("not a regular file", str(cm.exception))
            with self.assertRaises(fusedtune.InputOutputError):
                db.export_file(self.dir)
        self.assertFalse(os.path.exists(self.db_path + "-journal"))
        self.assert_database_intact()

    def test_replaces_whole_keeping_the_mode(self):
        out = os.path.join(self.dir, "out.json")
        with open(out, "w") as f:
            f.write("old")
        os.chmod(out, 0o640)
        with fusedtune.Database(self.db_path) as db:
            db.export_file(out)
        self.assertEqual(os.stat(out).st_mode & 0o777, 0o640)
        with open(out) as f:
            self.assertEqual(len(json.load(f)["results"]), 2)
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if n.startswith(".fusedtune")), [])


class PrintableMessagesTest(unittest.TestCase):
    """The library's messages show control characters and bidi overrides as '?' (issue 58 item 3)."""

    def test_echoed_text_is_printable(self):
        evil = "x\x1b]0;pwned\x07\u202e\x1b[2J\n"
        with fusedtune.Database(scratch("printable.db"), create=True) as db:
            with self.assertRaises(fusedtune.NotFoundError) as cm:
                db.lookup_entry(fusedtune.Problem(8, 8, 8), evil)
        with self.assertRaises(fusedtune.ParseError) as pe:
            fusedtune.inspect_epilogue("relu(x) + " + evil)
        with self.assertRaises(fusedtune.NotFoundError) as nf:
            fusedtune.Database(os.path.join(SCRATCH, evil + ".db"))
        for e in (cm.exception, pe.exception, nf.exception):
            text = str(e)
            self.assertFalse(any(ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f or ch in "\u202a\u202b\u202c\u202d\u202e"
                                 for ch in text), repr(text))


class ArgumentTypesTest(unittest.TestCase):
    """An argument of the wrong type is a TypeError naming it and the type it needs (issue 58 item
    10: d57500e raised AttributeError "'str' object has no attribute '_c'" and took a dict's keys
    for device pointers)."""

    def test_wrong_types_name_the_argument(self):
        calls = [(lambda: fusedtune.variants("8x8x8"), "problem must be a fusedtune.Problem, not str")]
        with fusedtune.Database(scratch("types.db"), create=True) as db:
            p = fusedtune.Problem(8, 8, 8)
            calls += [(lambda: db.lookup_entry("8x8x8", "NVIDIA H200"), "problem must be a fusedtune.Problem, not str"),
                      (lambda: db.lookup_entry(p, 7), "device name must be a str, not int"),
                      (lambda: db.lookup((8, 8, 8)), "problem must be a fusedtune.Problem, not tuple"),
                      (lambda: db.lookup_within("p", 1e-3), "problem must be a fusedtune.Problem"),
                      (lambda: db.lookup_entry_within(None, 1e-3), "problem must be a fusedtune.Problem, not NoneType"),
                      (lambda: db.plan(p, config="tc_128x128"), "config must be a fusedtune.Config"),
                      (lambda: db.tune("8x8x8"), "problem must be a fusedtune.Problem"),
                      (lambda: db.tune_command("8x8x8"), "problem must be a fusedtune.Problem"),
                      (lambda: fusedtune.Problem("8", 8, 8).check(), "problem m must be an int, not str")]
            for call, text in calls:
                with self.assertRaises(TypeError) as cm:
                    call()
                self.assertIsInstance(cm.exception, fusedtune.InvalidArgumentError)
                self.assertIn(text, str(cm.exception))

    def test_slot_arrays_take_sequences_in_slot_order(self):
        slots = [("bias", "row", None), ("g", "col", None), ("s", "scalar", 2.0)]
        va, sa = fusedtune.slot_arrays(slots, (0x4000, 0x5000), [None])
        self.assertEqual((list(va), sa[2]), ([0x4000, 0x5000, None], 2.0))
        for vecs, scalars, text in (({"bias": 0x4000, "g": 0x5000}, (), "vecs must be a list or tuple"),
                                    ({0x4000, 0x5000}, (), "not set"), ("ab", (), "not str"),
                                    ([0x4000, 0x5000], {"s": 1.0}, "scalars must be a list or tuple"),
                                    (["0x4000", 0x5000], (), "row vector bias's pointer must be an int"),
                                    ([0x4000, 0x5000], ["1.5"], "scalar s must be a number, not str")):
            with self.assertRaises(TypeError) as cm:
                fusedtune.slot_arrays(slots, vecs, scalars)
            self.assertIn(text, str(cm.exception))


class NoTorchTest(unittest.TestCase):
    def test_fp8_without_torch_says_what_works(self):
        """Without PyTorch, fusedtune.fp8 says what needs it and what works without it (issue 58
        item 11: d57500e said only "No module named 'torch'")."""
        code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r); import fusedtune; "
                "import fusedtune.fp8" % os.path.join(HERE, "..", "..", "..", "python"))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError: fusedtune.fp8 needs PyTorch", r.stderr)
        self.assertIn("pip install torch", r.stderr)
        self.assertIn("works without it", r.stderr)


class RemoveDatabaseTest(unittest.TestCase):
    """remove_database deletes fusedtune databases only, and none this process has open (issue 58
    item 4: d57500e deleted a JSON export, a text file and an open database)."""

    def test_refuses_what_is_not_a_closed_fusedtune_database(self):
        d = tempfile.mkdtemp(dir=SCRATCH)
        export, text, db_path = (os.path.join(d, n) for n in ("e.json", "notes.txt", "r.db"))
        fixture_export(export, fusedtune.Problem(64, 256, 512, "relu(x + bias)", "fp32"))
        with open(text, "w") as f:
            f.write("keep me\n")
        other = os.path.join(d, "other.sqlite")
        import sqlite3
        con = sqlite3.connect(other)
        con.execute("create table t(x)")
        con.commit()
        con.close()
        for path, cls in ((export, fusedtune.DatabaseError), (text, fusedtune.DatabaseError),
                          (other, fusedtune.DatabaseError), (d, fusedtune.InputOutputError)):
            with self.assertRaises(cls) as cm:
                fusedtune.remove_database(path)
            self.assertIn("not removing", str(cm.exception))
            self.assertTrue(os.path.exists(path), path)
        db = fusedtune.Database(db_path, create=True)
        link = os.path.join(d, "link.db")
        os.link(db_path, link)
        for path in (db_path, link):
            with self.assertRaises(fusedtune.InputOutputError) as cm:
                fusedtune.remove_database(path)
            self.assertIn("open in this process", str(cm.exception))
        self.assertEqual(db.best_entries(), [])
        db.close()
        os.unlink(link)
        fusedtune.remove_database(db_path)
        self.assertFalse(os.path.exists(db_path))
        fusedtune.remove_database(db_path)  # a missing path: nothing to do


# ---- FusedLinear's checks, on fakes: what a torch tensor offers them ----

class LaunchPathTest(unittest.TestCase):
    """The per-call launch (fusedtune._launch): the compiled extension where the build made it
    (FT_EXPECT_EXT=1), and ctypes; both reach the library's ft_plan_launch_ptrs, and an fp8
    layer's ft_plan_launch_typed and ft_quantize_e4m3 (a NULL plan or quantizer:
    FT_ERR_INVALID_ARG, no GPU needed)."""

    def tearDown(self):
        _launch.use()

    def check_fp8_calls(self):
        """An fp8 layer's two calls reach the library: a NULL plan or quantizer is refused."""
        lock = threading.RLock()
        invalid = fusedtune.InvalidArgumentError.status
        self.assertEqual(_launch.typed_launcher(lock)(0, 0, 0), invalid)
        self.assertEqual(_launch.quantizer_call(lock)(0, 16, _lib.FT_DTYPE_BF16, 1, 16, _lib.FT_SCALE_ROW, 16, 16, 0),
                         invalid)

    def test_ctypes(self):
        self.assertEqual(_launch.use("ctypes"), "ctypes")
        launch = _launch.launcher(threading.RLock())
        self.assertEqual(launch(0, 16, 16, 16, 0, 0, 0), fusedtune.InvalidArgumentError.status)
        self.check_fp8_calls()

    def test_extension(self):
        if os.environ.get("FT_EXPECT_EXT") != "1":
            self.assertEqual(_launch.use(), "ctypes")
            self.skipTest(f"no compiled launch path in this build ({_launch.WHY})")
        self.assertEqual(_launch.use("extension"), "extension", _launch.WHY)
        launch = _launch.launcher(threading.RLock())
        self.assertEqual(launch(0, 16, 16, 16, 0, 0, 0), fusedtune.InvalidArgumentError.status)
        with self.assertRaisesRegex(TypeError, "takes 7 arguments"):
            launch(0, 16, 16, 16, 0, 0)
        with self.assertRaisesRegex(TypeError, "argument 2 must be an int address, not str"):
            launch(0, "x", 16, 16, 0, 0, 0)
        self.check_fp8_calls()
        with self.assertRaisesRegex(TypeError, "takes 9 arguments"):
            _launch.quantizer_call(threading.RLock())(0, 16)
        with self.assertRaisesRegex(TypeError, "launch_typed: argument 1 must be an int address, not NoneType"):
            _launch.typed_launcher(threading.RLock())(None, 0, 0)
        os.environ[_launch.ENV_NO_EXT] = "1"
        try:
            self.assertEqual(_launch.use(), "ctypes")
            self.assertIn(_launch.ENV_NO_EXT, _launch.WHY)
            with self.assertRaisesRegex(ImportError, "does not load"):
                _launch.use("extension")
        finally:
            del os.environ[_launch.ENV_NO_EXT]


class FakeDevice:
    def __init__(self, kind="cuda", index=0):
        self.type, self.index = kind, index


class FakeTensor:
    def __init__(self, shape, dtype="float32", device=None, contiguous=True, ptr=0x7f0000000000, grad=False):
        self.shape, self.dtype = tuple(shape), f"torch.{dtype}"
        self.device = device or FakeDevice()
        self._contiguous, self._ptr, self.requires_grad = contiguous, ptr, grad

    def is_contiguous(self):
        return self._contiguous

    def stride(self):
        return (1,) * len(self.shape)

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return 4 if self.dtype == "torch.float32" else 2

    def dim(self):
        return len(self.shape)


class CheckTest(unittest.TestCase):
    dev = FakeDevice()

    def check(self, t, **kw):
        args = dict(dtype="float32", device=self.dev, shape=(4, 8))
        args.update(kw)
        check_tensor("x", t, **args)

    def assertRejects(self, fragment, fn, *a, **kw):
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fn(*a, **kw)
        self.assertIn(fragment, str(cm.exception))
        return str(cm.exception)

    def test_tensor_checks_name_the_argument(self):
        self.check(FakeTensor((4, 8)))
        self.assertRejects("x is on cpu", self.check, FakeTensor((4, 8), device=FakeDevice("cpu", None)))
        self.assertRejects("x is on cuda:1, the layer's weight on cuda:0", self.check,
                           FakeTensor((4, 8), device=FakeDevice("cuda", 1)))
        self.assertRejects("x is bfloat16, expected float32", self.check, FakeTensor((4, 8), "bfloat16"))
        self.assertRejects("x has shape [4, 9], expected [4, 8]", self.check, FakeTensor((4, 9)))
        self.assertRejects("x has shape [4, 8], expected [*, 8, 1]", self.check, FakeTensor((4, 8)),
                           shape=(None, 8, 1))
        self.assertRejects("x is not contiguous", self.check, FakeTensor((4, 8), contiguous=False))
        self.assertRejects("not 4-byte aligned", self.check, FakeTensor((4, 8), ptr=0x7f0000000002))
        self.assertRejects("x must be a tensor, not list", self.check, [[1.0]])
        check_no_grad("x", FakeTensor((4, 8), grad=True), grad_enabled=False)
        msg = self.assertRejects("x requires grad", check_no_grad, "x", FakeTensor((4, 8), grad=True), True)
        self.assertIn("inference-only", msg)

    def binding(self, text, has_bias=True, scalars=None, buffers=()):
        return Binding(fusedtune.inspect_epilogue(text), has_bias, scalars, buffers)

    def test_binding(self):
        b = self.binding("silu(x * g + bias) + r * s where col g, row r, scalar s", scalars={"s": 0.5},
                         buffers=("g",))
        layer = {"bias": FakeTensor((8,)), "g": FakeTensor((8,))}
        kw = dict(dtype="float32", device=self.dev, grad_enabled=True)
        vecs, scalars = b.bind(4, 8, layer.get, {"r": FakeTensor((4,))}, **kw)
        self.assertEqual(sorted(vecs), ["bias", "g", "r"])
        self.assertEqual(scalars, {"s": 0.5})
        _, scalars = b.bind(4, 8, layer.get, {"r": FakeTensor((4,)), "s": 2}, **kw)
        self.assertEqual(scalars, {"s": 2.0})  # a forward argument wins
        self.assertRejects("row vector r has no value", b.bind, 4, 8, layer.get, {}, **kw)
        self.assertRejects("r has shape [8], expected [4] (a row vector: one per input row)", b.bind, 4, 8,
                           layer.get, {"r": FakeTensor((8,))}, **kw)
        self.assertRejects("g has shape [4], expected [8] (a col vector", b.bind, 4, 8,
                           {"bias": FakeTensor((8,)), "g": FakeTensor((4,))}.get, {"r": FakeTensor((4,))}, **kw)
        self.assertRejects("r is bfloat16", b.bind, 4, 8, layer.get, {"r": FakeTensor((4,), "bfloat16")}, **kw)
        self.assertRejects("r requires grad", b.bind, 4, 8, layer.get, {"r": FakeTensor((4,), grad=True)}, **kw)
        self.assertRejects("forward() argument for 'q'", b.bind, 4, 8, layer.get, {"q": 1.0}, **kw)
        self.assertRejects("bias is the layer's own parameter", b.bind, 4, 8, layer.get,
                           {"bias": FakeTensor((8,))}, **kw)
        self.assertRejects("scalar s must be a real number, not str", b.bind, 4, 8, layer.get,
                           {"r": FakeTensor((4,)), "s": "1"}, **kw)
        self.assertRejects("scalar s has no default", self.binding("x * s + bias where scalar s").bind, 4, 8,
                           layer.get, {}, **kw)
        # a default from the expression needs no value: the library applies it
        _, scalars = self.binding("minsub").bind(4, 8, layer.get, {}, **kw)
        self.assertEqual(scalars, {})

    def test_binding_matrix(self):
        b = self.binding("x + bias + r where mat r")
        self.assertEqual([p.kind for p in b.epilogue.params], ["col", "mat"])
        self.assertFalse(b.epilogue.uses_x2)
        self.assertTrue(fusedtune.inspect_epilogue("silu(x) * x2").uses_x2)
        layer = {"bias": FakeTensor((8,))}
        kw = dict(dtype="float32", device=self.dev, grad_enabled=True)
        vecs, _ = b.bind(6, 8, layer.get, {"r": FakeTensor((2, 3, 8))}, lead=(2, 3), **kw)
        self.assertEqual(sorted(vecs), ["bias", "r"])
        vecs, _ = b.bind(6, 8, layer.get, {"r": FakeTensor((6, 8))}, **kw)  # without lead: [m, n]
        self.assertRejects("matrix r has no value: give it as forward(r=...)", b.bind, 6, 8, layer.get, {}, **kw)
        self.assertRejects("r has shape [6, 8], expected [2, 3, 8] (a matrix: the output's shape)", b.bind, 6, 8,
                           layer.get, {"r": FakeTensor((6, 8))}, lead=(2, 3), **kw)
        self.assertRejects("r is not contiguous", b.bind, 6, 8, layer.get, {"r": FakeTensor((6, 8), contiguous=False)},
                           **kw)
        self.assertRejects("r is bfloat16", b.bind, 6, 8, layer.get, {"r": FakeTensor((6, 8), "bfloat16")}, **kw)
        self.assertRejects("r requires grad", b.bind, 6, 8, layer.get, {"r": FakeTensor((6, 8), grad=True)}, **kw)
        self.assertRejects("r is a matrix operand", self.binding, "x + bias + r where mat r", buffers=("r",))

    def test_binding_construction(self):
        self.assertRejects("uses bias, but the layer has none", self.binding, "relu(x + bias)", has_bias=False)
        self.assertRejects("does not use it", self.binding, "relu(x)", has_bias=True)
        self.binding("relu(x)", has_bias=False)
        self.assertRejects("the epilogue has no parameter of that name (its parameters besides bias: c)",
                           self.binding, "minsub", scalars={"d": 1.0})
        self.assertRejects("c is a scalar in the epilogue, not a vector", self.binding, "minsub", buffers=("c",))
        self.assertRejects("g is a col vector in the epilogue, not a scalar", self.binding,
                           "x * g + bias where col g", scalars={"g": 1.0})


if __name__ == "__main__":
    unittest.main(verbosity=2)
