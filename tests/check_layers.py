"""The layering rules of src/ and tools/, checked against the includes (docs/ARCHITECTURE.md,
"Layers"). Each file of src/ belongs to one layer; a file may include headers of its own layer and
of the layers below it, and the public headers (include/). tools/ includes the public headers and
its own only. Layers below `gpu` include no CUDA header (they are GPU-free: testable on CI, no
driver). The arrows that break a rule today are listed in DEBTS, each with its reason: the check
fails on any other, and on a debt that is gone (so the list only shrinks).

    python3 tests/check_layers.py [ROOT]      # exit 0: the rules hold; 1: what breaks them
    python3 tests/check_layers.py --self-test # a planted bad include must be caught
"""
import os
import re
import sys
import tempfile

# Lowest first. A file's layer is the first whose patterns match its name (without .c / .h).
LAYERS = [
    ("base", "strings, JSON, numbers, threads, the processes' framing, the CUDA/NVRTC/cuBLAS check "
             "macros (no calls), the kernel ABI and the embedded kernel text",
     ["common", "strbuf", "json*", "numbers", "parallel", "tolerance", "wire", "kernel_abi", "embedded", "checks"]),
    ("epilogue", "the expression language and its rules per mode",
     ["epilogue*", "fp8", "e4m3"]),
    ("family", "the variant space and the kernel families: GPU-free rules, costs, kernel text",
     ["space", "family*", "variant_json", "gated", "codegen", "code_digest"]),
    ("db", "the SQLite store: schema, records, import and export, the best",
     ["db*", "best"]),
    ("compile", "NVRTC and the compile cache", ["compile*"]),
    ("gpu", "the device: CUDA, cuBLAS(Lt), TMA maps, launches, verification, baselines, timing",
     ["device", "launch", "lt_gemm", "tensormap", "verify*", "baseline", "bench"]),
    ("tune", "the tuning loop: its worker processes, the search, the tuner",
     ["runner*", "worker", "tuner", "tune_problem", "search", "result_kinds"]),
    ("api", "the public functions on an ft_ctx", ["api*", "buckets", "out_file", "quantize"]),
]

# Arrows that break the rules today, each with why; fix one, then delete its line.
DEBTS = {
    ("codegen.c", "compile.h"): "the kernel text's hash covers NVRTC's options (ft_compile_options_digest)",
}

# The runtime, the driver and cuBLAS: NVRTC compiles without a GPU, so compile may use it.
CUDA_HEADERS = re.compile(r"^(cuda|cublas|driver_types)")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(name):
    stem = re.sub(r"\.(c|h)$", "", name)
    for i, (layer, _, patterns) in enumerate(LAYERS):
        for p in patterns:
            if (p.endswith("*") and stem.startswith(p[:-1])) or stem == p:
                return i
    return None


def includes(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [(kind, name) for kind, name in INCLUDE.findall(text)]


def check(root):
    src, tools, public = (os.path.join(root, d) for d in ("src", "tools", "include"))
    public_headers = set(os.listdir(public))
    problems, used_debts = [], set()
    for name in sorted(os.listdir(src)):
        if not name.endswith((".c", ".h")):
            continue
        mine = layer_of(name)
        if mine is None:
            problems.append(f"src/{name}: in no layer (add it to LAYERS in tests/check_layers.py)")
            continue
        for kind, inc in includes(os.path.join(src, name)):
            base = os.path.basename(inc)
            if kind == "<":
                if CUDA_HEADERS.match(base) and mine < layer_of("device.c") and name != "checks.h":
                    problems.append(f"src/{name} ({LAYERS[mine][0]}) includes <{inc}>: layers below gpu are GPU-free")
                continue
            if base in public_headers:
                continue
            theirs = layer_of(base)
            if theirs is None:
                continue  # a generated header (the build's), or one reported above
            if theirs > mine:
                if (name, base) in DEBTS:
                    used_debts.add((name, base))
                    continue
                problems.append(f"src/{name} ({LAYERS[mine][0]}) includes {base} ({LAYERS[theirs][0]}): "
                                f"a layer includes only its own and those below it")
    for key in sorted(set(DEBTS) - used_debts):
        problems.append(f"DEBTS lists {key[0]} -> {key[1]}, which no longer breaks a rule: delete the line")
    for name in sorted(os.listdir(tools)):
        if not name.endswith((".c", ".h")):
            continue
        for kind, inc in includes(os.path.join(tools, name)):
            if kind == '"' and inc not in public_headers and not os.path.exists(os.path.join(tools, inc)):
                problems.append(f"tools/{name} includes \"{inc}\": the CLI uses the public headers and its own")
    return problems


def self_test(root):
    """A copy of src/ and tools/ with one bad include planted: the check must name it."""
    import shutil
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("src", "tools", "include"):
            shutil.copytree(os.path.join(root, d), os.path.join(tmp, d))
        with open(os.path.join(tmp, "src", "strbuf.c"), "a", encoding="utf-8") as f:
            f.write('\n#include "tuner.h"\n')
        with open(os.path.join(tmp, "tools", "cli_util.c"), "a", encoding="utf-8") as f:
            f.write('\n#include "db.h"\n')
        found = check(tmp)
    want = ["src/strbuf.c (base) includes tuner.h (tune)", 'tools/cli_util.c includes "db.h"']
    missed = [w for w in want if not any(w in p for p in found)]
    if missed:
        print("self-test: the planted includes were not caught:", *missed, sep="\n  ")
        return 1
    print(f"self-test: both planted includes caught ({len(found)} problem(s) in the planted copy)")
    return 0


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if "--self-test" in argv:
        return self_test(root)
    problems = check(root)
    for p in problems:
        print(p)
    if not problems:
        print(f"layers hold: {len(LAYERS)} layers, {len(DEBTS)} listed debt(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
