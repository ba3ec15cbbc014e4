"""CPU tests of fusedtune::linear's C++ implementation (python/fusedtune/torch/csrc/fusedtune_op.cpp,
loaded by fusedtune.torch._native) with torch but no GPU: that the build made it and the package
uses it (FT_EXPECT_TORCH_OP=1, set by CMake when it built it: then a missing one fails, not skips),
the schemas, meta shapes through it, FusedLinear's forward reaching it in one call, the checks it
makes before the launch (each failing call goes on to the Python implementation, which raises the
error, here always the device's first: test_torch_cpu.py tests its messages; fallback() says which
C++ check sent the call on), an fp8 layer's description, and the Python path when
forced (FUSEDTUNE_NO_TORCH_OP=1, in a subprocess; _native.use(False)). Exits 77 (skipped) without
torch, or without the build when FT_EXPECT_TORCH_OP is not 1.

    python3 tests/python/cpu/test_torch_native_cpu.py     (FUSEDTUNE_LIBRARY set, or a build in ./build)
"""
import os
import subprocess
import sys
import unittest

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed for this python3; the torch operator's tests need it")
    sys.exit(77)

PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python")
sys.path.insert(0, PY)
import fusedtune  # noqa: E402
from fusedtune.torch import FusedLinear, _native, op as torch_op  # noqa: E402

if not _native.active():
    if os.environ.get("FT_EXPECT_TORCH_OP") == "1":
        print(f"FAIL: the build made the C++ operator, yet the package does not use it: {_native.status()}")
        sys.exit(1)
    print(f"SKIP: no C++ operator in this build ({_native.status()})")
    sys.exit(77)

ROW = "silu(x * g + bias) + r * s where col g, row r, scalar s"
RESID = "x + bias + h where mat h"


class NativeOpCpuTest(unittest.TestCase):
    def refused(self, fragment, fn, *a, **kw):
        """fn(*a, **kw) raises InvalidArgumentError with fragment; returns the C++ check that sent
        the call to the Python implementation."""
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fn(*a, **kw)
        self.assertIn(fragment, str(cm.exception))
        return _native.fallback()

    def test_status_and_schemas(self):
        self.assertTrue(torch_op.native_op_status().startswith("native: "), torch_op.native_op_status())
        self.assertTrue(torch_op.native_op_status().endswith("_fusedtune_torchop.so"))
        self.assertEqual(str(torch.ops.fusedtune.linear.default._schema), "fusedtune::" + torch_op.SCHEMA)
        self.assertEqual(str(torch.ops.fusedtune._linear_py.default._schema),
                         "fusedtune::" + torch_op.SCHEMA.replace("linear(", "_linear_py("))
        # The CUDA and CPU kernels of fusedtune::linear are C++ (no Python kernel registered for them).
        dump = torch._C._dispatch_dump("fusedtune::linear")
        self.assertIn("CUDA: registered at", dump)
        self.assertIn("fusedtune_op.cpp", dump)
        self.assertIn("python", torch._C._dispatch_dump("fusedtune::_linear_py").lower())

    def test_meta_shapes(self):
        for dtype, epilogue, tail in ((torch.bfloat16, "x + bias", (8,)), (torch.float32, "logsumexp(x + bias)", ()),
                                      (torch.float16, "maxpool(x + bias, 4)", (2,))):
            layer = FusedLinear(16, 8, device="meta", dtype=dtype, epilogue=epilogue)
            with torch.no_grad():
                y = layer(torch.empty(2, 3, 16, device="meta", dtype=dtype))
            self.assertEqual((tuple(y.shape), y.dtype, y.device.type), ((2, 3) + tail, dtype, "meta"))
        with torch.no_grad():
            layer = FusedLinear(16, 8, device="meta", epilogue=RESID)
            y = layer(torch.empty(5, 16, device="meta"), h=torch.empty(5, 8, device="meta"))
        self.assertEqual(tuple(y.shape), (5, 8))

    def test_forward_reaches_the_op_in_one_call(self):
        layer = FusedLinear(16, 8, epilogue="relu(x + bias) * s where scalar s", params={"s": 2.0})
        x = torch.zeros(3, 16)
        with torch.no_grad():
            # Every check passes in C++ but the device's: CPU tensors go on to Python, which refuses them.
            self.assertEqual(self.refused("weight is on cpu", layer, x), "device")
            self.assertEqual(layer._native_args, ([layer.bias], [2.0], ["bias"]))
            calls = []
            saved = torch_op._call
            import fusedtune.torch.layer as lm
            lm._op_call = lambda *a: calls.append(a) or a[0]
            try:
                layer(x)
            finally:
                lm._op_call = saved
        self.assertEqual(len(calls), 1)
        self.assertIs(calls[0][0], x)
        self.assertIs(calls[0][1], layer.weight)
        self.assertEqual((calls[0][2], calls[0][3], calls[0][4]), ([layer.bias], [2.0], layer.op_handle))
        # functional_call swaps the bias in _parameters without __setattr__: the call gets the new one,
        # and the layer's own again after it.
        nb = torch.full((8,), 3.0)
        lm._op_call = lambda *a: calls.append(a) or a[0]
        try:
            with torch.no_grad():
                torch.func.functional_call(layer, {"bias": nb}, (x,))
                layer(x)
        finally:
            lm._op_call = saved
        self.assertIs(calls[1][2][0], nb)
        self.assertIs(calls[2][2][0], layer.bias)
        layer.bias = torch.nn.Parameter(torch.ones(8), requires_grad=False)  # a new bias: arguments made again
        self.assertIsNone(layer._native_args)
        # A buffer replaced without __setattr__ (.to() makes new buffers; register_buffer) drops them too.
        held = FusedLinear(16, 8, epilogue="x * g + bias where col g", params={"g": torch.ones(8)})
        self.assertIs(held._native_call_args()[0][1], held.g)
        held.double()
        self.assertIsNone(held._native_args)
        self.assertIs(held._native_call_args()[0][1], held.g)
        held.register_buffer("g", torch.zeros(8, dtype=torch.float64))
        self.assertIsNone(held._native_args)

    def test_checks_name_the_argument(self):
        layer = FusedLinear(16, 32, epilogue=ROW, params={"g": torch.ones(32), "s": 0.5})
        x, r = torch.zeros(4, 16), torch.zeros(4)
        with torch.no_grad():
            self.assertEqual(self.refused("weight is on cpu", layer, x, r=r), "device")
            self.assertEqual(self.refused("on cpu", layer, x.half(), r=r), "x")
            self.assertEqual(self.refused("x has shape [4, 15]", layer, torch.zeros(4, 15), r=r), "x")
            self.assertEqual(self.refused("on cpu", layer, torch.zeros(16, 4).t(), r=r), "x")
            self.assertEqual(self.refused("on cpu", layer, x, r=torch.zeros(3)), "operand")
            self.assertEqual(self.refused("on cpu", layer, x, r=r.half()), "operand")
            # What forward cannot hand the operator (a value missing, an unknown name): its checked path.
            self.refused("on cpu", torch.ops.fusedtune.linear, x, layer.weight, [], [], 0)
            self.refused("weight is on cpu", layer, x)
            self.refused("weight is on cpu", layer, x, r=r, q=1.0)
            self.assertEqual(_native.fallback(), "layer")  # the operator was not called
        plain = FusedLinear(16, 8)  # with grad on: the C++ check sends it to Python, which says why
        self.assertEqual(self.refused("x requires grad", plain, torch.zeros(4, 16, requires_grad=True)), "x")
        resid = FusedLinear(16, 8, epilogue=RESID)
        with torch.no_grad():
            x = torch.zeros(2, 3, 16)
            self.assertEqual(self.refused("weight is on cpu", resid, x, h=torch.zeros(2, 3, 8)), "device")
            self.assertEqual(self.refused("on cpu", resid, x, h=torch.zeros(6, 8)), "operand")
            self.refused("weight is on cpu", resid, x)
        # The operator called directly: operand counts, a handle that names no layer.
        with torch.no_grad():
            op = torch.ops.fusedtune.linear
            self.assertEqual(self.refused("weight is on cpu", op, x, resid.weight, [resid.bias], [],
                                          resid.op_handle), "operand count")
            self.assertEqual(self.refused("runs on CUDA tensors", op, x, resid.weight, [], [], 0), "layer")

    def test_fp8_description(self):
        # An fp8 layer (FP8Linear needs CUDA to be made) as the C++ operator knows it: bf16 x, e4m3
        # W, sx made by the call, sw fp32 and the bias bf16; every check passes on CPU but the device's.
        handle = 10 ** 9
        ft = _native.FT_DTYPES
        slots = [("sx", "own", ft["float32"]), ("sw", "col", ft["float32"]), ("bias", "col", ft["bfloat16"])]
        self.assertTrue(_native.layer(handle, typed=True, n=32, k=16, w_rows=32, w_dtypes=[ft["float8_e4m3fn"]],
                                      x_dtype=ft["bfloat16"], y_tail=(32,), slots=slots))
        try:
            x, w = torch.zeros(4, 16, dtype=torch.bfloat16), torch.zeros(32, 16, dtype=torch.float8_e4m3fn)
            sw, b = torch.ones(32), torch.zeros(32, dtype=torch.bfloat16)
            op = torch.ops.fusedtune.linear
            self.assertEqual(self.refused("CUDA tensors", op, x, w, [sw, b], [], handle), "device")
            self.assertEqual(self.refused("CUDA tensors", op, x, w, [sw, b.float()], [], handle), "operand")
            self.assertEqual(self.refused("CUDA tensors", op, x.float(), w, [sw, b], [], handle), "x")
            self.assertEqual(self.refused("CUDA tensors", op, x, w.view(torch.uint8), [sw, b], [], handle), "weight")
            # sx is the call's own: a description without it, or with one in a non-fp8 layer, is refused.
            self.assertFalse(_native.layer(handle + 1, typed=True, n=32, k=16, w_rows=32, w_dtypes=[3], x_dtype=1,
                                           y_tail=(32,), slots=slots[1:]))
        finally:
            _native.forget(handle)
        self.assertEqual(self.refused("CUDA tensors", op, x, w, [sw, b], [], handle), "layer")

    def test_python_path_when_turned_off(self):
        layer = FusedLinear(16, 8)
        with torch.no_grad():
            self.assertEqual(self.refused("weight is on cpu", layer, torch.zeros(2, 16)), "device")
            self.refused("CUDA tensors", torch.ops.fusedtune.linear, torch.zeros(2, 16), layer.weight, [], [], 0)
            self.assertEqual(_native.fallback(), "layer")
            self.assertTrue(_native.use(False).startswith("python: "))
            try:
                self.refused("weight is on cpu", layer, torch.zeros(2, 16))
                self.assertEqual(_native.fallback(), "layer")  # forward did not call the C++ operator
            finally:
                _native.use(True)

    def test_forced_off_by_the_environment(self):
        code = ("import torch, fusedtune.torch as t; from fusedtune.torch import op, _native; "
                "print(op.native_op_status()); l = t.FusedLinear(16, 8); "
                "print(torch._C._dispatch_dump('fusedtune::linear'))")
        env = dict(os.environ, FUSEDTUNE_NO_TORCH_OP="1", PYTHONPATH=PY)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("python: FUSEDTUNE_NO_TORCH_OP is set", out.stdout)
        self.assertNotIn("fusedtune_op.cpp", out.stdout)  # the Python kernels, not the C++ ones


if __name__ == "__main__":
    unittest.main(verbosity=2)
