"""CPU tests of fusedtune.torch.FusedLinear with torch but no GPU: construction, from_linear,
and every check that must fail before any launch. Exits 77 (skipped, for ctest) without torch.

    python3 tests/python/cpu/test_torch_cpu.py     (FUSEDTUNE_LIBRARY set, or a build in ./build)
"""
import ctypes
import os
import sys
import types
import unittest

try:
    import torch
    from torch import nn
except ImportError:
    print("SKIP: torch is not installed for this python3; the FusedLinear CPU tests need it")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import fusedtune  # noqa: E402
from fusedtune._lib import lib  # noqa: E402
from fusedtune.torch import FusedLinear, interleave_gated  # noqa: E402


class _FakeCudaTensor:
    """What the fp8 binding tests hand the layer for a CUDA tensor: shape, dtype, device, address."""

    def __init__(self, shape, dtype, ptr, index=0):
        self.shape, self.dtype, self._ptr = tuple(shape), f"torch.{dtype}", ptr
        self.device, self.requires_grad = types.SimpleNamespace(type="cuda", index=index), False

    def is_contiguous(self):
        return True

    def detach(self):
        return self

    contiguous = detach

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return {"torch.float32": 4, "torch.float8_e4m3fn": 1}.get(self.dtype, 2)


class FusedLinearCpuTest(unittest.TestCase):
    def assertRejects(self, fragment, fn, *a, **kw):
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            fn(*a, **kw)
        self.assertIn(fragment, str(cm.exception))

    def test_like_nn_linear(self):
        layer = FusedLinear(16, 8)
        self.assertEqual(tuple(layer.weight.shape), (8, 16))
        self.assertEqual(tuple(layer.bias.shape), (8,))
        self.assertFalse(layer.weight.requires_grad or layer.bias.requires_grad)
        self.assertEqual(layer.epilogue.canonical, "x + bias")
        bound = 1 / 16 ** 0.5  # nn.Linear's initialization
        self.assertLessEqual(float(layer.weight.abs().max()), bound)
        self.assertLessEqual(float(layer.bias.abs().max()), bound)
        self.assertEqual(FusedLinear(16, 8, bias=False).epilogue.canonical, "x")
        self.assertIn("epilogue='x + bias'", repr(layer))
        self.assertEqual(sorted(layer.state_dict()), ["bias", "weight"])
        self.assertEqual(FusedLinear(16, 8, dtype=torch.bfloat16).weight.dtype, torch.bfloat16)

    def test_from_linear_shares_storage(self):
        lin = nn.Linear(16, 8)
        layer = FusedLinear.from_linear(lin, "min(x + bias, c) - c where c = 2")
        self.assertEqual(layer.weight.data_ptr(), lin.weight.data_ptr())
        self.assertEqual(layer.bias.data_ptr(), lin.bias.data_ptr())
        self.assertFalse(layer.weight.requires_grad)
        self.assertTrue(lin.weight.requires_grad)  # the original is left as it was
        self.assertEqual(layer.epilogue.canonical, "min(x + bias, c) - c where c = 2")
        self.assertRejects("does not use it", FusedLinear.from_linear, lin, "relu(x)")
        self.assertRejects("uses bias, but the layer has none", FusedLinear.from_linear, nn.Linear(4, 4, bias=False),
                           "relu(x + bias)")
        self.assertRejects("takes an nn.Linear", FusedLinear.from_linear, nn.Conv1d(1, 1, 1))

    def test_params(self):
        g = torch.ones(8)
        layer = FusedLinear(16, 8, epilogue="silu(x * g + bias) + r * s where col g, row r, scalar s",
                            params={"g": g, "s": 0.5})
        self.assertIs(layer.g, g)
        self.assertIn("g", layer.state_dict())
        self.assertRejects("would hide the module's attribute", FusedLinear, 16, 8, epilogue="x * training + bias "
                           "where col training", params={"training": torch.ones(8)})
        with self.assertRaises(fusedtune.ParseError):
            FusedLinear(16, 8, epilogue="sigmod(x + bias)")

    def test_matrix_and_gated(self):
        layer = FusedLinear(16, 8, epilogue="x + bias + r where mat r")
        self.assertEqual(layer.epilogue.canonical, "x + bias + r where mat r")
        self.assertNotIn("r", layer.state_dict())  # a matrix is per call, not a buffer
        self.assertRejects("is a matrix operand", FusedLinear, 16, 8, epilogue="x + bias + r where mat r",
                           params={"r": torch.ones(4, 8)})
        self.assertRejects("uses x2, the product with a second weight", FusedLinear, 16, 8, bias=False,
                           epilogue="silu(x) * x2")
        # through the torch op on meta tensors: the matrix is one of its operands, the output's shape comes back
        meta = FusedLinear(16, 8, epilogue="x + bias + r where mat r", device="meta")
        with torch.no_grad():
            y = meta(torch.empty(3, 2, 16, device="meta"), r=torch.empty(3, 2, 8, device="meta"))
        self.assertEqual(tuple(y.shape), (3, 2, 8))

    def test_gated(self):
        # interleave_gated: rows 16j .. 16j + 7 from w1's 8j .., the next 8 from w2's, as the C helper writes them
        w1, w2 = torch.randn(24, 5), torch.randn(24, 5)
        w = interleave_gated(w1, w2)
        self.assertEqual(tuple(w.shape), (48, 5))
        for r in range(48):
            j, i = divmod(r, 16)
            self.assertTrue(torch.equal(w[r], (w1 if i < 8 else w2)[8 * j + i % 8]))
        out = (ctypes.c_float * (48 * 5))()
        msg = ctypes.create_string_buffer(200)
        st = lib().ft_gated_interleave(ctypes.c_void_p(w1.data_ptr()), ctypes.c_void_p(w2.data_ptr()), out, 24, 5, 4,
                                       None, msg, 200)
        self.assertEqual(st, 0, msg.value)
        self.assertTrue(torch.equal(torch.tensor(list(out)).reshape(48, 5), w))
        self.assertRejects("N = 12 must be a positive multiple of 8", interleave_gated, torch.ones(12, 4),
                           torch.ones(12, 4))
        self.assertRejects("must match", interleave_gated, torch.ones(16, 4), torch.ones(16, 8))
        # from_gated: out_features N, the weight [2N, K] interleaved once; SwiGLU halves without biases
        gate, up = nn.Linear(16, 24, bias=False), nn.Linear(16, 24, bias=False)
        layer = FusedLinear.from_gated(gate, up)
        self.assertEqual((layer.in_features, layer.out_features), (16, 24))
        self.assertEqual(layer.epilogue.canonical, "silu(x) * x2")
        self.assertTrue(torch.equal(layer.weight, interleave_gated(gate.weight, up.weight)))
        self.assertFalse(layer.weight.requires_grad)
        self.assertRejects("gate or up has a bias", FusedLinear.from_gated, nn.Linear(16, 24), up)
        self.assertRejects("does not use x2", FusedLinear.from_gated, gate, up, "silu(x)")
        self.assertRejects("N = 20 must be a positive multiple of 8", FusedLinear.from_gated, nn.Linear(16, 20, bias=False),
                           nn.Linear(16, 20, bias=False))
        with_b = FusedLinear.from_gated(nn.Linear(16, 24), nn.Linear(16, 24), "silu(x + b1) * (x2 + b2) where col b1, col b2",
                                        params={"b1": torch.zeros(24), "b2": torch.zeros(24)})
        self.assertIn("b1", with_b.state_dict())
        # through the torch op on meta tensors: y is [..., N]
        meta = FusedLinear.from_gated(nn.Linear(16, 24, bias=False, device="meta"), nn.Linear(16, 24, bias=False,
                                                                                               device="meta"))
        with torch.no_grad():
            y = meta(torch.empty(3, 16, device="meta"))
        self.assertEqual(tuple(y.shape), (3, 24))

    def test_output_shape_of_reductions(self):
        # y's trailing dimensions come from ft_output_shape before any launch.
        self.assertEqual(FusedLinear(16, 8)._y_tail, (8,))
        self.assertEqual(FusedLinear(16, 8, epilogue="logsumexp(x + bias)")._y_tail, ())
        self.assertEqual(FusedLinear(16, 8, epilogue="gelu(softmax(x + bias))")._y_tail, (8,))
        self.assertEqual(FusedLinear(16, 8, epilogue="maxpool(x + bias, 3)")._y_tail, (2,))
        self.assertRejects("groupnorm(..., 3) needs N divisible by 3, N is 8", FusedLinear, 16, 8,
                           epilogue="groupnorm(x + bias, 3)")

    def test_math_modes(self):
        self.assertEqual(FusedLinear(16, 8, math="tf32").math, "tf32")
        self.assertRejects("computes on bfloat16 tensors, but weight is float32", FusedLinear, 16, 8, math="bf16")
        with self.assertRaises(fusedtune.UnsupportedError):
            FusedLinear(16, 8, math="fp9")
        self.assertRaisesRegex(fusedtune.UnsupportedError, "math fp8 takes quantized weights", FusedLinear, 16, 8,
                               math="fp8")
        self.assertRejects("fp8 from_linear takes a bf16 CUDA layer", FusedLinear.from_linear, nn.Linear(16, 8),
                           math="fp8")
        from fusedtune.fp8 import fp8_epilogue
        self.assertEqual(fp8_epilogue("relu(x + bias)"), "relu(x * sx * sw + bias) where col sw, row sx")
        self.assertRaises(fusedtune.ParseError, fp8_epilogue, "x * sx where row sx")
        for text in ("x * sigmoid(x)", "rowsum(x)", "x * x2 + x2"):  # no fp8 form
            self.assertRaises(fusedtune.UnsupportedError, fp8_epilogue, text)
        # a residual keeps its matrix; a gated pair's x2 takes its own weight's scales, sw2
        self.assertEqual(fp8_epilogue("x + bias + r where mat r"), "x * sx * sw + bias + r where mat r, col sw, row sx")
        self.assertEqual(fp8_epilogue("silu(x) * x2"),
                         "silu(x * sx * sw) * (x2 * sx * sw2) where col sw, col sw2, row sx")
        layer = FusedLinear(16, 8, dtype=torch.float64)
        self.assertRejects("weight is float64", layer, torch.zeros(2, 16, dtype=torch.float64))
        layer = FusedLinear(16, 8, math="tf32").to(torch.float16)
        self.assertRejects("math mode tf32 computes on float32 tensors, but weight is float16", layer,
                           torch.zeros(2, 16, dtype=torch.float16))

    def test_fp8_launch_args(self):
        """FP8Linear's per-call launch: the typed arguments built once, every address of a call in
        its place with its element type; a destroyed plan refused before the library is called."""
        import threading
        import types
        from fusedtune import _lib
        from fusedtune.fp8 import _Launch
        db = types.SimpleNamespace(_lock=threading.Lock(), _check=lambda st: self.fail("launched a destroyed plan"))
        plan = types.SimpleNamespace(db=db, _handle=None)
        extra = [("bias", _lib.FT_DTYPE_BF16), ("v", _lib.FT_DTYPE_F32)]
        for n_extra in (0, 1, 2):
            launch = _Launch(plan, extra[:n_extra], ["c"] if n_extra == 2 else [])
            self.assertRejects("the plan was destroyed", launch, 0x100, 0x200, 0x300, 0x400, 0x500,
                               [0x600, 0x700][:n_extra], [1.5] if n_extra == 2 else [], 0)
            a = launch._args
            self.assertEqual((a.x.data, a.w.data, a.y.data), (0x100, 0x200, 0x300))
            self.assertEqual((a.x.dtype, a.w.dtype, a.y.dtype),
                             (_lib.FT_DTYPE_E4M3, _lib.FT_DTYPE_E4M3, _lib.FT_DTYPE_BF16))
            want = [(b"sx", 0x400, _lib.FT_DTYPE_F32), (b"sw", 0x500, _lib.FT_DTYPE_F32),
                    (b"bias", 0x600, _lib.FT_DTYPE_BF16), (b"v", 0x700, _lib.FT_DTYPE_F32)][:2 + n_extra]
            self.assertEqual(a.n_vecs, len(want))
            self.assertEqual([(a.vecs[i].name, a.vecs[i].data, a.vecs[i].dtype) for i in range(a.n_vecs)], want)
            self.assertEqual(a.struct_size, ctypes.sizeof(_lib.ft_typed_args))
            self.assertEqual([(a.scalars[i].name, a.scalars[i].value) for i in range(a.n_scalars)],
                             [(b"c", 1.5)] if n_extra == 2 else [])

    def test_fp8_binds_the_epilogues_own_vectors(self):
        """An fp8 layer whose E reads a vector of its own besides the bias (issue 58 item 9:
        d57500e bound only sx, sw and the bias, so every call failed "epilogue vector 'v' is not
        bound"): v given at construction (a buffer) or per call reaches the launch as fp32, a
        scalar as its value; sx and sw stay the layer's own. Built around the GPU parts: a fake
        plan, CUDA-looking fake tensors; the GPU test (gpu_test_torch) is the launch itself."""
        import threading
        import types
        from fusedtune import _lib
        from fusedtune._binding import Binding
        from fusedtune.fp8 import FP8Linear, _bf16_operands, fp8_epilogue

        Fake = _FakeCudaTensor
        ep = fusedtune.inspect_epilogue(fp8_epilogue("relu(x * v + bias) * c where col v, scalar c"))
        layer = FP8Linear.__new__(FP8Linear)
        nn.Module.__init__(layer)
        layer.out_features, layer.in_features, layer.epilogue = 32, 16, ep
        layer._binding = Binding(ep, True, {"c": 0.5}, ("v",), own=("sx", "sw"))
        layer._own, layer._bf16 = ("sx", "sw"), _bf16_operands(ep)
        _vector_dtype = layer._vector_dtype
        db = types.SimpleNamespace(_lock=threading.Lock(), _check=lambda st: None)
        layer._plans, layer._launches = {8: types.SimpleNamespace(db=db, _handle=None)}, {}
        buffers = {"bias": Fake((32,), "bfloat16", 0x600), "v": Fake((32,), "float32", 0x700)}
        dev = types.SimpleNamespace(type="cuda", index=0)
        vecs, scalars = layer._binding.bind(8, 32, buffers.get, {}, dtype=_vector_dtype, device=dev,
                                            grad_enabled=False)
        self.assertEqual((list(vecs), scalars), (["v", "bias"] if ep.params[0].name == "v" else ["bias", "v"],
                                                 {"c": 0.5}))
        launch = layer._launch_for(8, vecs, scalars)
        self.assertRejects("the plan was destroyed", launch, 0x100, 0x200, 0x300, 0x400, 0x500,
                           [t.data_ptr() for t in vecs.values()], list(scalars.values()), 0)
        a = launch._args
        bound = {a.vecs[i].name: (a.vecs[i].data, a.vecs[i].dtype) for i in range(a.n_vecs)}
        self.assertEqual(bound, {b"sx": (0x400, _lib.FT_DTYPE_F32), b"sw": (0x500, _lib.FT_DTYPE_F32),
                                 b"bias": (0x600, _lib.FT_DTYPE_BF16), b"v": (0x700, _lib.FT_DTYPE_F32)})
        self.assertEqual([(a.scalars[i].name, a.scalars[i].value) for i in range(a.n_scalars)], [(b"c", 0.5)])
        # Per call: v overridden, c too; a v of the wrong type or length named; sx is the layer's.
        vecs, scalars = layer._binding.bind(8, 32, buffers.get, {"v": Fake((32,), "float32", 0x800), "c": 2},
                                            dtype=_vector_dtype, device=dev, grad_enabled=False)
        self.assertEqual((vecs["v"].data_ptr(), scalars), (0x800, {"c": 2.0}))
        self.assertRejects("v is bfloat16, expected float32", layer._binding.bind, 8, 32, buffers.get,
                           {"v": Fake((32,), "bfloat16", 0x800)}, dtype=_vector_dtype, device=dev, grad_enabled=False)
        self.assertRejects("'sx': sx is the layer's own parameter", layer._binding.bind, 8, 32, buffers.get,
                           {"sx": Fake((8,), "float32", 0x900)}, dtype=_vector_dtype, device=dev, grad_enabled=False)
        without = Binding(ep, True, {"c": 1.0}, (), own=("sx", "sw"))
        self.assertRejects("col vector v has no value", without.bind, 8, 32, buffers.get, {}, dtype=_vector_dtype,
                           device=dev, grad_enabled=False)

    def test_fp8_e4m3_output_arguments(self):
        """output="e4m3": refused outside fp8 and for another name, before anything is held; the
        launch's ft_typed_args say an e4m3 y with the layer's quantizer, and each call sets y_work
        and y_scales (None for a bf16 y)."""
        import threading
        import types
        from fusedtune import _lib
        from fusedtune.fp8 import E4M3Rows, FP8Linear, _Launch

        lin = nn.Linear(16, 32)
        self.assertRejects("only fp8 layers (math='fp8') take output=", FusedLinear.from_linear, lin, "relu(x)",
                           output="e4m3")
        self.assertRejects("'bf16' (y) or 'e4m3'", FP8Linear, None, None, None, None, None, output="fp16")
        db = types.SimpleNamespace(_lock=threading.Lock(), _check=lambda st: None)
        plan = types.SimpleNamespace(db=db, _handle=None)
        quantizer = types.SimpleNamespace(_q=ctypes.c_void_p(0x4242))
        launch = _Launch(plan, quantizer=quantizer)
        self.assertEqual((launch._args.y.dtype, launch._args.quantizer), (_lib.FT_DTYPE_E4M3, 0x4242))
        self.assertRejects("the plan was destroyed", launch, 0x100, 0x200, 0x300, 0x400, 0x500, y_work=0x900,
                           y_scales=0xa00)
        self.assertEqual((launch._args.y_work, launch._args.y_scales), (0x900, 0xa00))
        plain = _Launch(plan)
        self.assertEqual((plain._args.y.dtype, plain._args.quantizer), (_lib.FT_DTYPE_BF16, None))
        rows = E4M3Rows(torch.tensor([[[448.0, -224.0]], [[1.0, 2.0]]]).to(torch.float8_e4m3fn), torch.tensor([0.5, 2.0]))
        self.assertEqual(rows.dequantize().float().tolist(), [[[224.0, -112.0]], [[2.0, 4.0]]])
        empty = E4M3Rows(torch.zeros(0, 4).to(torch.float8_e4m3fn), torch.zeros(0))
        self.assertEqual(tuple(empty.dequantize().shape), (0, 4))
        # output is checked when set too (a launch is chosen by it)
        layer = FP8Linear.__new__(FP8Linear)
        nn.Module.__init__(layer)
        self.assertEqual(layer.output, "bf16")
        layer.output = "e4m3"
        with self.assertRaises(fusedtune.InvalidArgumentError):
            layer.output = "fp16"
        self.assertEqual(layer.output, "e4m3")
        self.assertRejects("layer with output='e4m3' is called directly", layer._run_op, None, None, (), ())

    def test_fp8_gated_and_residual_binding(self):
        """A gated pair's fp8 layer with a residual: sw2 (the second weight's scales) is the layer's
        own and bound first after sx and sw, as fp32; the matrix r is bf16 shaped like the output;
        the bias bf16. Built around the GPU parts as the test above."""
        import threading
        import types
        from fusedtune import _lib
        from fusedtune._binding import Binding
        from fusedtune.fp8 import FP8Linear, _bf16_operands, fp8_epilogue

        Fake = _FakeCudaTensor
        text = fp8_epilogue("silu(x + bias) * x2 + r where mat r")
        self.assertEqual(text, "silu(x * sx * sw + bias) * (x2 * sx * sw2) + r where mat r, col sw, col sw2, row sx")
        ep = fusedtune.inspect_epilogue(text)
        layer = FP8Linear.__new__(FP8Linear)
        nn.Module.__init__(layer)
        layer.out_features, layer.in_features, layer.epilogue = 32, 16, ep
        layer._own, layer._bf16 = ("sx", "sw", "sw2"), _bf16_operands(ep)
        self.assertEqual(layer._bf16, frozenset({"bias", "r"}))
        layer._binding = Binding(ep, True, {}, (), own=layer._own)
        db = types.SimpleNamespace(_lock=threading.Lock(), _check=lambda st: None)
        layer._plans, layer._launches = {8: types.SimpleNamespace(db=db, _handle=None)}, {}
        buffers = {"bias": Fake((32,), "bfloat16", 0x600)}
        dev = types.SimpleNamespace(type="cuda", index=0)
        vecs, scalars = layer._binding.bind(8, 32, buffers.get, {"r": Fake((8, 32), "bfloat16", 0x700)},
                                            dtype=layer._vector_dtype, device=dev, grad_enabled=False)
        self.assertEqual(sorted(vecs), ["bias", "r"])
        self.assertRejects("r is float32, expected bfloat16", layer._binding.bind, 8, 32, buffers.get,
                           {"r": Fake((8, 32), "float32", 0x700)}, dtype=layer._vector_dtype, device=dev,
                           grad_enabled=False)
        self.assertRejects("'sw2': sw2 is the layer's own parameter", layer._binding.bind, 8, 32, buffers.get,
                           {"sw2": Fake((32,), "float32", 0x900)}, dtype=layer._vector_dtype, device=dev,
                           grad_enabled=False)
        launch = layer._launch_for(8, vecs, scalars)
        self.assertRejects("the plan was destroyed", launch, 0x100, 0x200, 0x300, 0x400, 0x500,
                           [0x580] + [t.data_ptr() for t in vecs.values()], [], 0)
        a = launch._args
        bound = [(a.vecs[i].name, a.vecs[i].data, a.vecs[i].dtype) for i in range(a.n_vecs)]
        self.assertEqual(bound[:3], [(b"sx", 0x400, _lib.FT_DTYPE_F32), (b"sw", 0x500, _lib.FT_DTYPE_F32),
                                     (b"sw2", 0x580, _lib.FT_DTYPE_F32)])
        self.assertEqual(sorted(bound[3:]), [(b"bias", 0x600, _lib.FT_DTYPE_BF16), (b"r", 0x700, _lib.FT_DTYPE_BF16)])

    def test_fp8_layer_checks(self):
        """FP8Linear's checks (_check_layer, run first by __init__) of a gated pair's tensors and E,
        on CUDA-looking fakes: sw2 [N] fp32 on the weight's device, 2N rows, E with x2 exactly when
        the layer has two weights; weight_scale always required (review of d40d225: None passed
        every check and failed at the first call). __init__ itself on CPU tensors: the same checks
        come before the device's."""
        from fusedtune.fp8 import FP8Linear, _check_layer

        Fake = _FakeCudaTensor
        w, sw = Fake((64, 32), "float8_e4m3fn", 0x100), Fake((32,), "float32", 0x200)
        sw2 = Fake((32,), "float32", 0x300)
        n, k, ep = _check_layer(w, sw, None, "silu(x + b1) * x2 where col b1", sw2)
        self.assertEqual((n, k), (32, 32))
        self.assertEqual(ep.canonical, "silu(x * sx * sw + b1) * (x2 * sx * sw2) where col b1, col sw, col sw2, row sx")
        self.assertEqual(_check_layer(Fake((32, 32), "float8_e4m3fn", 0x100), sw, Fake((32,), "bfloat16", 0x400),
                                      None)[2].canonical, "x * sx * sw + bias where col sw, row sx")
        for fragment, args in (
                ("weight_scale is None: the layer dequantizes with its weight's fp32 per-channel scales, [32]",
                 (w, None, None, "silu(x) * x2", sw2)),
                ("weight_scale is None", (Fake((32, 32), "float8_e4m3fn", 0x100), None, None, "relu(x)")),
                ("weight_scale2 has shape [64], expected [32]", (w, sw, None, "silu(x) * x2",
                                                                 Fake((64,), "float32", 0x300))),
                ("weight_scale2 is bfloat16, expected float32", (w, sw, None, "silu(x) * x2",
                                                                 Fake((32,), "bfloat16", 0x300))),
                ("weight_scale2 is on cuda:1, the layer's weight on cuda:0", (w, sw, None, "silu(x) * x2",
                                                                              Fake((32,), "float32", 0x300, 1))),
                ("fp8 gated weight has 24 rows", (Fake((24, 32), "float8_e4m3fn", 0x100), Fake((12,), "float32", 0x200),
                                                  None, "silu(x) * x2", Fake((12,), "float32", 0x300))),
                ("epilogue 'silu(x)' does not use x2, and the layer has two weights", (w, sw, None, "silu(x)", sw2)),
                ("epilogue 'silu(x) * x2' uses x2, and the layer has one weight",
                 (Fake((32, 32), "float8_e4m3fn", 0x100), sw, None, "silu(x) * x2")),
                ("fp8 weight must be a 2-D float8_e4m3fn tensor, not bfloat16", (Fake((64, 32), "bfloat16", 0x100), sw,
                                                                                 None, "silu(x) * x2", sw2))):
            with self.subTest(fragment):
                self.assertRejects(fragment, _check_layer, *args)
        # E is the layer's, before its scales: the fp8 form itself is refused (fp8_epilogue's ParseError)
        self.assertRaises(fusedtune.ParseError, _check_layer, w, sw, None,
                          "silu(x * sx * sw) * (x2 * sx * sw2) where col sw, col sw2, row sx", sw2)
        codes = torch.zeros(64, 32, dtype=torch.float8_e4m3fn)
        self.assertRejects("weight_scale is None", FP8Linear, codes, None, None, "silu(x) * x2", None,
                           weight_scale2=torch.ones(32))
        self.assertRejects("fp8 gated weight has 40 rows", FP8Linear, torch.zeros(40, 32, dtype=torch.float8_e4m3fn),
                           torch.ones(20), None, "silu(x) * x2", None, weight_scale2=torch.ones(20))
        self.assertRejects("weight is on cpu", FP8Linear, codes, torch.ones(32), None, "silu(x) * x2", None,
                           weight_scale2=torch.ones(32))

    def test_fp8_from_gated_checks(self):
        """FP8Linear.from_gated checks both layers before quantizing (the quantizer runs on gate's
        device and reads up's memory): bf16, CUDA, one shape, one device; a layer's bias E does
        not name (params with no vector) refused rather than dropped."""
        from fusedtune.fp8 import FP8Linear, _bf16_weights

        Fake, lin = _FakeCudaTensor, types.SimpleNamespace
        gate = lin(weight=Fake((32, 16), "bfloat16", 0x100), bias=None)
        self.assertEqual(len(_bf16_weights("fp8 from_gated", {"gate": gate, "up": gate})), 2)
        for fragment, up in (
                ("fp8 from_gated: up.weight is on cuda:1 and gate.weight on cuda:0: both must be on one device",
                 lin(weight=Fake((32, 16), "bfloat16", 0x200, 1), bias=None)),
                ("fp8 from_gated: up.weight has shape [32, 8] and gate.weight [32, 16]",
                 lin(weight=Fake((32, 8), "bfloat16", 0x200), bias=None)),
                ("fp8 from_gated takes bf16 CUDA layers (up.weight is float32 on cuda:0)",
                 lin(weight=Fake((32, 16), "float32", 0x200), bias=None)),
                ("fp8 from_gated takes bf16 CUDA layers (up.weight is bfloat16 on cpu)",
                 nn.Linear(16, 32, bias=False).to(torch.bfloat16))):
            with self.subTest(fragment):
                self.assertRejects(fragment, FP8Linear.from_gated, gate, up)
        biased = nn.Linear(16, 32).to(torch.bfloat16)
        for fn in (FP8Linear.from_gated, lambda g, u, *a, **kw: FusedLinear.from_gated(g, u, *a, math="fp8", **kw)):
            self.assertRejects("gate or up has a bias, which E must name and params give", fn, biased, biased)
            self.assertRejects("gate or up has a bias", fn, biased, biased, "silu(x) * x2 * c where scalar c",
                               params={"c": 2.0})
        # with the biases in params, the checks go on to the weights (here: on the CPU)
        self.assertRejects("(gate.weight is bfloat16 on cpu)", FP8Linear.from_gated, biased, biased,
                           "silu(x + b1) * (x2 + b2) where col b1, col b2",
                           params={"b1": biased.bias, "b2": biased.bias})

    def test_checks_before_any_launch(self):
        layer = FusedLinear(16, 8)
        with torch.no_grad():
            self.assertRejects("weight is on cpu", layer, torch.zeros(2, 16))
        self.assertRejects("weight requires grad", FusedLinear.from_linear(nn.Linear(16, 8)).requires_grad_(True),
                           torch.zeros(2, 16))
        self.assertRejects("x must be a tensor", layer, [1.0])
        self.assertRejects("x has shape [2, 15], expected [..., 16]", layer, torch.zeros(2, 15))
        self.assertRejects("x has shape [], expected [..., 16]", layer, torch.zeros(()))
        self.assertRejects("weight is on cpu: move the layer to a CUDA device", layer.plan_for, 4)

    def test_grad_mode(self):
        layer = FusedLinear(16, 8)
        x = torch.zeros(2, 16, requires_grad=True)
        self.assertRejects("x requires grad, but FusedLinear is inference-only", layer, x)
        # Without grad mode, the device check is what stops it here (no GPU).
        with torch.no_grad():
            self.assertRejects("weight is on cpu", layer, x)

    def test_fast_path_invalidation(self):
        # forward's fast path on CPU tensors, its launch recorded instead of made (device index -1
        # stands for the current device): a call whose state matches the recorded one launches
        # with x's and y's new addresses; any change the checks look at sends it to the checked
        # path, which refuses CPU tensors ("weight is on cpu").
        import fusedtune.torch.layer as ft  # the module whose globals forward reads
        from fusedtune.torch import _native
        _native.use(False)  # the Python path's fast path (the C++ operator's: test_torch_native_cpu.py)
        launches = []

        class FakePlan:
            _handle = ctypes.c_void_p(0x1234)
            presplit = False

        class FakePresplitPlan(FakePlan):
            presplit = True  # 3xtf32 with W split once: a change of W in place must reach the plan

        saved = ft._current_device, ft._raw_stream
        ft._current_device, ft._raw_stream = (lambda: -1), (lambda index: 0x77)
        try:
            layer = FusedLinear(16, 8, epilogue="relu(x + bias) * s where scalar s", params={"s": 2.0})
            x = torch.zeros(3, 16)
            va, sa = layer._slot_arrays({"bias": layer.bias.data_ptr()}, {"s": 2.0})
            self.assertEqual((va[0], sa[1]), (layer.bias.data_ptr(), 2.0))  # slots: bias, s
            record = lambda *a: launches.append(a) or 0  # noqa: E731
            with torch.no_grad():
                layer._keep_fast(x, FakePlan(), record, layer.weight.data_ptr(), va, sa, False)
                y = layer(x)
                self.assertEqual(tuple(y.shape), (3, 8))
                plan, xp, wp, yp, vp, sp, stream = launches[-1]
                self.assertEqual((plan, xp, wp, yp, vp, sp, stream), (0x1234, x.data_ptr(), layer.weight.data_ptr(),
                                                                      y.data_ptr(), ctypes.addressof(va),
                                                                      ctypes.addressof(sa), 0x77))
                layer.weight.mul_(2)  # in place: the same state
                layer(x)
                self.assertEqual(len(launches), 2)
                self.assertRejects("weight is on cpu", layer, torch.zeros(4, 16))  # a shape not recorded
                self.assertRejects("weight is on cpu", layer, torch.zeros(3, 16, dtype=torch.float64))
                self.assertRejects("weight is on cpu", layer, torch.zeros(16, 3).t())  # not contiguous
                self.assertRejects("weight is on cpu", layer, x, s=3.0)  # keyword arguments
                bias = layer.bias
                layer.bias = nn.Parameter(bias + 1, requires_grad=False)  # another address
                self.assertRejects("weight is on cpu", layer, x)
                layer.bias = bias
                layer.weight.data = layer.weight.data.t().contiguous().t()  # same shape, strided
                self.assertRejects("weight is on cpu", layer, x)
            self.assertEqual(len(launches), 2)
            self.assertRejects("weight is on cpu", layer, x)  # grad mode on: not the recorded state
            # A pre-split plan: the weight's version is part of the state.
            layer = FusedLinear(16, 8, epilogue="relu(x + bias) * s where scalar s", params={"s": 2.0})
            va, sa = layer._slot_arrays({"bias": layer.bias.data_ptr()}, {"s": 2.0})
            with torch.no_grad():
                layer._keep_fast(x, FakePresplitPlan(), record, layer.weight.data_ptr(), va, sa, False)
                layer(x)
                self.assertEqual(len(launches), 3)
                layer.weight.mul_(2)  # in place: the checked path, which tells the plan
                self.assertRejects("weight is on cpu", layer, x)
        finally:
            ft._current_device, ft._raw_stream = saved
            _native.use(True)

    def test_note_weight(self):
        # A pre-split plan is told when its weight changed in place since its last launch (torch's
        # version counter), not on its first launch nor when nothing changed; other plans never.
        class Plan:
            def __init__(self, presplit):
                self.presplit, self.weight_seen, self.told = presplit, None, 0

            def weight_changed(self):
                self.told += 1

        w = torch.ones(4, 4)
        layer = FusedLinear(4, 4, epilogue="x", bias=False)
        pre, plain = Plan(True), Plan(False)
        layer._plans.update({("a", 1): pre, ("a", 2): plain})
        for p in (pre, plain):
            layer._note_weight(p, w)
            layer._note_weight(p, w)
        self.assertEqual((pre.told, plain.told), (0, 0))
        w.mul_(2)
        for p in (pre, plain):
            layer._note_weight(p, w)
            layer._note_weight(p, w)
        self.assertEqual((pre.told, plain.told), (1, 0))
        # A layer's plans, one per M: a change one of them sees reaches the others too; an inference
        # tensor keeps no version, so only layer.weight_changed() tells them.
        layer = FusedLinear(4, 4, epilogue="x", bias=False)
        p1, p8, p16 = Plan(True), Plan(True), Plan(False)
        layer._plans.update({("a", 1): p1, ("a", 8): p8, ("a", 16): p16})
        w = torch.ones(4, 4)
        layer._note_weight(p1, w), layer._note_weight(p8, w)
        w.add_(1)
        layer._note_weight(p1, w)
        self.assertEqual((p1.told, p8.told, p16.told), (1, 1, 0))
        with torch.inference_mode():
            wi = torch.ones(4, 4)
        layer._note_weight(p1, wi)
        layer.weight_changed()
        self.assertEqual((p1.told, p8.told, p16.told), (3, 2, 0))  # p1 also at the new address
        from fusedtune.plan import _presplit
        self.assertEqual([_presplit(c) for c in ('{"kind":"gemm","presplit":1}', '{"kind": "gemm", "presplit": 1}',
                                                 '{"kind":"gemm"}', None, "not json")], [True, True, False, False, False])


if __name__ == "__main__":
    unittest.main(verbosity=2)
