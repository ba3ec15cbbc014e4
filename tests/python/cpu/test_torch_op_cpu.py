"""CPU tests of the torch operator fusedtune::linear (fusedtune.torch_op) with torch but no GPU:
its schema, its meta / fake implementation (shape and dtype), torch.compile(fullgraph=True)
keeping a model of FusedLinear layers in one graph of op calls (traced on meta tensors, also
through AOTAutograd with dynamic shapes), the layer handles the op finds layers by, and the errors
of a call on CPU tensors. Exits 77 (skipped, for ctest) without torch.

    python3 tests/python/cpu/test_torch_op_cpu.py     (FUSEDTUNE_LIBRARY set, or a build in ./build)
"""
import copy
import gc
import os
import pickle
import sys
import unittest

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed for this python3; the torch op tests need it")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import fusedtune  # noqa: E402
from fusedtune import torch_op  # noqa: E402
from fusedtune.torch import FusedLinear  # noqa: E402

ROWCOL = "silu(x * g + bias) + r * s where col g, row r, scalar s"


class TwoLayers(torch.nn.Module):
    """A gated-style block: a layer with a col and a row vector and a scalar, then one without bias."""

    def __init__(self, device="meta", dtype=torch.bfloat16):
        super().__init__()
        g = torch.ones(32, device=device, dtype=dtype)
        self.up = FusedLinear(16, 32, device=device, dtype=dtype, epilogue=ROWCOL, params={"g": g, "s": 0.5})
        self.down = FusedLinear(32, 8, bias=False, device=device, dtype=dtype, epilogue="relu(x)")

    def forward(self, x):
        r = torch.ones(x.shape[:-1].numel(), device=x.device, dtype=x.dtype)
        return self.down(self.up(x, r=r)) * 2


def op_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and "fusedtune" in str(n.target)]


class TorchOpCpuTest(unittest.TestCase):
    def test_schema(self):
        op = torch.ops.fusedtune.linear.default
        self.assertEqual(str(op._schema), "fusedtune::" + torch_op.SCHEMA)
        self.assertIs(torch_op.linear, torch.ops.fusedtune.linear)

    def test_meta_shape_and_dtype(self):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            layer = FusedLinear(16, 8, device="meta", dtype=dtype)
            with torch.no_grad():
                y = layer(torch.empty(2, 3, 16, device="meta", dtype=dtype))
            self.assertEqual((tuple(y.shape), y.dtype, y.device.type), ((2, 3, 8), dtype, "meta"))
        # The layer's output shape: none after a row reduction, N / w after a pool.
        for epilogue, tail in (("logsumexp(x + bias)", ()), ("maxpool(x + bias, 2)", (4,))):
            layer = FusedLinear(16, 8, device="meta", dtype=torch.bfloat16, epilogue=epilogue)
            with torch.no_grad():
                y = layer(torch.empty(2, 3, 16, device="meta", dtype=torch.bfloat16))
                self.assertEqual(tuple(y.shape), (2, 3) + tail)
                y = torch.compile(layer, backend="eager", fullgraph=True)(torch.empty(5, 16, device="meta",
                                                                                     dtype=torch.bfloat16))
                self.assertEqual(tuple(y.shape), (5,) + tail)
        y = torch.ops.fusedtune.linear(torch.empty(0, 16, device="meta"), torch.empty(8, 16, device="meta"), [], [], 0)
        self.assertEqual(tuple(y.shape), (0, 8))
        with self.assertRaises(Exception) as cm:
            torch.ops.fusedtune.linear(torch.empty(4, 15, device="meta"), torch.empty(8, 16, device="meta"), [], [], 0)
        self.assertIn("expected x [..., K] and weight [N, K]", str(cm.exception))

    def test_fake_tensor_mode(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            x, w = torch.empty(5, 7, 64, dtype=torch.bfloat16), torch.empty(24, 64, dtype=torch.bfloat16)
            y = torch.ops.fusedtune.linear(x, w, [torch.empty(24, dtype=torch.bfloat16)], [1.0], 0)
        self.assertEqual((tuple(y.shape), y.dtype), ((5, 7, 24), torch.bfloat16))

    def test_compile_fullgraph_one_graph(self):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm

        model = TwoLayers()
        x = torch.empty(5, 16, device="meta", dtype=torch.bfloat16)
        with torch.no_grad():
            eager = model(x)
            y = torch.compile(model, backend=backend, fullgraph=True)(x)
        self.assertEqual(len(graphs), 1)
        nodes = op_nodes(graphs[0])
        self.assertEqual(len(nodes), 2)
        up = nodes[0]
        self.assertEqual(up.args[-1], model.up.op_handle)
        self.assertEqual(len(up.args[2]), 3)  # bias, g, r in slot order
        self.assertEqual(list(up.args[3]), [0.5])
        self.assertEqual(nodes[1].args[-1], model.down.op_handle)
        self.assertEqual((tuple(y.shape), y.dtype), (tuple(eager.shape), eager.dtype))

    def test_compile_aot_dynamic(self):
        model = TwoLayers()
        torch._dynamo.reset()
        c = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=True)
        with torch.no_grad():
            for m in (3, 17, 100):
                y = c(torch.empty(m, 16, device="meta", dtype=torch.bfloat16))
                self.assertEqual(tuple(y.shape), (m, 8))

    def test_compile_errors_name_the_argument(self):
        # The error is raised outside Dynamo's trace (it cannot build the exception): without
        # fullgraph the error itself; with it, Dynamo's report names the call and its line.
        model = TwoLayers()
        x = torch.empty(4, 16, device="meta", dtype=torch.bfloat16)
        torch._dynamo.reset()
        with torch.no_grad(), self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            torch.compile(model.up, backend="eager")(x)
        self.assertIn("row vector r has no value", str(cm.exception))
        torch._dynamo.reset()
        with torch.no_grad(), self.assertRaises(Exception) as cm:
            torch.compile(model.up, backend="eager", fullgraph=True)(x)
        self.assertIn("_op_fail", str(cm.exception))
        self.assertIn("vector {name} has no value", str(cm.exception))
        weight = model.down.weight
        weight.requires_grad_(True)
        torch._dynamo.reset()
        with self.assertRaises(Exception) as cm:
            torch.compile(model.down, backend="eager", fullgraph=True)(torch.empty(4, 32, device="meta",
                                                                                    dtype=torch.bfloat16))
        self.assertIn("_op_fail", str(cm.exception))
        self.assertIn("requires grad, but FusedLinear is inference-only", str(cm.exception))

    def test_handles(self):
        layer = FusedLinear(16, 8)
        self.assertIs(torch_op.layer_of(layer.op_handle), layer)
        for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
            self.assertNotEqual(twin.op_handle, layer.op_handle)
            self.assertIs(torch_op.layer_of(twin.op_handle), twin)
        handle = layer.op_handle
        del layer
        gc.collect()
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            torch_op.layer_of(handle)
        self.assertIn("no live FusedLinear", str(cm.exception))

    def test_cpu_tensors_refused(self):
        with self.assertRaises(fusedtune.InvalidArgumentError) as cm:
            torch.ops.fusedtune.linear(torch.zeros(2, 16), torch.zeros(8, 16), [], [], 0)
        self.assertIn("runs on CUDA tensors", str(cm.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
