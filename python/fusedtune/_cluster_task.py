"""The worker side of fusedtune.cluster: one problem tuned on the Dask worker's GPU into a
database local to that worker, handed back as the JSON export of that database.

Imported on the workers by reference (pickled by name), so fusedtune must be installed there;
it imports nothing of Dask at module level. What travels: the problem as text in, an export out
(no cubin: the client's import checks and drops any, docs/FORMAT.md).
"""
import hashlib
import os
import re
import socket
import tempfile
import time

from . import core
from ._lib import LibraryNotFound
from .errors import FusedtuneError, UnsupportedError

GPU = "GPU"            # the resource every task asks one of: one task per GPU at a time
MODEL_PREFIX = "GPU:"  # then "GPU:NVIDIA_H200": the GPU model the worker's device is


def model_label(device_name):
    """A device name as a Dask resource name allows it ("NVIDIA H200" -> "NVIDIA_H200"): Dask
    splits `--resources` at blanks, commas and '='."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", device_name) or "unnamed"


def model_resource(device_name):
    return MODEL_PREFIX + model_label(device_name)


def worker_resources(device_name):
    """The `dask worker --resources` value for a worker on a device of that name."""
    return f"{GPU}=1 {model_resource(device_name)}=1"


def _worker():
    """(name, local directory) of the Dask worker running this task; outside one, the host's."""
    try:
        from distributed import get_worker
        w = get_worker()
        return str(w.name if w.name is not None else w.address), w.local_directory
    except (ImportError, ValueError):
        return socket.gethostname(), tempfile.gettempdir()


def tune_task(spec, model, opts):
    """Tunes spec = (m, n, k, canonical epilogue, math) on this worker's GPU (its current CUDA
    device, the one CUDA_VISIBLE_DEVICES leaves first) if that GPU is of model (a "GPU:..."
    resource name). opts: tune options for Database.tune, plus "db_dir" (None: the worker's
    local directory). Returns a dict: worker, host, model, device, ok, error (the library's
    message), export (the JSON text, or None when no database was written), elapsed_s."""
    t0 = time.monotonic()
    name, local_dir = _worker()
    out = {"worker": name, "host": socket.gethostname(), "model": model, "device": None, "ok": False,
           "error": None, "export": None, "elapsed_s": 0.0}
    try:
        dev = core.devices()[0]  # NoDeviceError ("no CUDA device: ...") on a worker without one
        out["device"] = dev.name
        if model_resource(dev.name) != model:
            raise UnsupportedError(
                f"this worker's GPU is {dev.name} ({model_resource(dev.name)}), the task is for {model}: start "
                f"the worker with --resources \"{worker_resources(dev.name)}\"")
        problem = core.Problem(*spec)
        key = "|".join(map(str, spec)) + "|" + dev.fingerprint
        folder = os.path.join(opts.get("db_dir") or local_dir, "fusedtune-cluster")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:20] + ".db")
        tune_opts = {k: v for k, v in opts.items() if k != "db_dir" and v is not None}
        with core.Database(path, create=True) as db:
            try:
                db.tune(problem, **tune_opts)
                out["ok"] = True
            except FusedtuneError as e:  # what was measured is stored: it goes back too
                out["error"] = str(e)
            out["export"] = _export(db, folder)
    except (FusedtuneError, OSError) as e:
        out["error"] = str(e)
    except LibraryNotFound as e:
        out["error"] = f"libfusedtune cannot be loaded on this worker: {e}"
    out["elapsed_s"] = time.monotonic() - t0
    return out


def _export(db, folder):
    fd, tmp = tempfile.mkstemp(prefix="export-", suffix=".json", dir=folder)
    os.close(fd)
    try:
        db.export_file(tmp)
        with open(tmp, encoding="utf-8") as f:
            return f.read()
    finally:
        os.unlink(tmp)
