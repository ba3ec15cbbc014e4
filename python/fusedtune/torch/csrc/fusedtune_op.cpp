// fusedtune::linear's C++ implementation (python/fusedtune/torch/op.py defines the operator; the
// Python package loads this library with torch.ops.load_library, python/fusedtune/torch/_native.py).
//
// One call per layer call, with no Python frame: the tensors are checked, y (and an fp8 layer's
// quantized x) allocated with ATen, the plan of x's M taken from the layer's table, and the plan
// launched on the current stream through the C API. What the table lacks, and every call that
// fails a check, goes to fusedtune::_linear_py, the Python implementation: it resolves the plan
// once (looked up, bucketed or tuned, as FusedLinear.plan_for does) and notes it here
// (fusedtune_torchop_plan), or raises the error its checks name, so both paths raise the same
// exceptions with the same text and the library's rules live in one place.
//
// It does not link libfusedtune: fusedtune_torchop_bind takes the functions' addresses from the
// library the package loaded (as python/ext/launch.c does), so both paths call one library. It
// links c10 and torch_cpu only (the current stream through c10's device guard interface), so one
// build serves CUDA and CPU torch alike. One mutex serializes the C++ launches (a context and its
// plans serve one thread at a time: include/fusedtune.h); the Python paths do not take it, so a
// call resolved in Python on one thread may overlap a C++ launch on another (docs/PYTHON.md says
// to keep one Database's layers on one thread).
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fusedtune.h"

namespace {

using launch_ptrs_fn = ft_status (*)(ft_plan *, const void *, const void *, void *, const void *const *,
                                     const float *, cudaStream_t);
using launch_typed_fn = ft_status (*)(ft_plan *, const ft_typed_args *, cudaStream_t);
using quantize_fn = ft_status (*)(ft_quantizer *, const void *, ft_dtype, int64_t, int64_t, ft_scaling, void *,
                                  float *, cudaStream_t);

struct Api {
  launch_ptrs_fn launch_ptrs = nullptr;
  launch_typed_fn launch_typed = nullptr;
  quantize_fn quantize = nullptr;
};

constexpr int kMaxSlots = 16;  // the library's FT_EPILOGUE_MAX_PARAMS is 8

struct Slot {
  char kind;       // 'c' col vector [N], 'r' row vector [M], 'm' matrix [..., N], 's' scalar
  int dtype;       // ft_dtype of the tensor, or -1: the layer's (x's) dtype
  bool own;        // filled by the op itself: an fp8 layer's x scales (sx)
  std::string name;
};

struct Entry {
  ft_plan *plan;
  ft_quantizer *quantizer;  // fp8: the quantizer of x, per token
  bool presplit;            // a pre-split 3xtf32 plan: launched only with the weight it saw
  const void *w_seen;
  int64_t w_version;  // -1: an inference tensor (no version counter)
};

struct Layer {
  bool typed = false;  // fp8: ft_plan_launch_typed after ft_quantize_e4m3
  int64_t n = 0, k = 0, w_rows = 0;
  unsigned w_dtypes = 0;  // the weight's allowed dtypes, a mask of 1 << ft_dtype
  int x_dtype = -1;       // ft_dtype of x, -1: the weight's
  std::vector<int64_t> y_tail;
  std::vector<Slot> slots;
  int n_operands = 0, n_scalars = 0, own_slot = -1;
  std::unordered_map<uint64_t, Entry> plans;  // by plan_key(device, M, weight dtype)
};

std::mutex g_mu;
Api g_api;
std::unordered_map<int64_t, std::unique_ptr<Layer>> g_layers;
thread_local const char *t_fallback = "";  // why this thread's last call went to Python (tests, debugging)

uint64_t plan_key(int device, int64_t m, int w_dtype) {
  return (static_cast<uint64_t>(m) << 16) | (static_cast<uint64_t>(device & 0xff) << 8) |
         static_cast<uint64_t>(w_dtype & 0xff);
}

int ft_dtype_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return FT_DTYPE_F32;
    case c10::ScalarType::BFloat16: return FT_DTYPE_BF16;
    case c10::ScalarType::Half: return FT_DTYPE_F16;
    case c10::ScalarType::Float8_e4m3fn: return FT_DTYPE_E4M3;
    default: return -1;
  }
}

// The tensor is what a launch may read through its pointer: dtype (ft_dtype), contiguous,
// aligned to its element, on x's device.
bool fits(const at::Tensor &t, int dtype, const c10::Device &dev) {
  return t.defined() && ft_dtype_of(t.scalar_type()) == dtype && t.device() == dev && t.is_contiguous() &&
         reinterpret_cast<uintptr_t>(t.const_data_ptr()) % t.element_size() == 0;
}

bool grad_ok(const at::Tensor &t, bool grad) { return !grad || !t.requires_grad(); }

at::Tensor python_path(const at::Tensor &x, const at::Tensor &w, at::TensorList operands, at::ArrayRef<double> scalars,
                       int64_t layer, const char *why) {
  t_fallback = why;
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("fusedtune::_linear_py", "")
                             .typed<at::Tensor(const at::Tensor &, const at::Tensor &, at::TensorList,
                                               at::ArrayRef<double>, int64_t)>();
  return op.call(x, w, operands, scalars, layer);
}

// fusedtune::linear(Tensor x, Tensor weight, Tensor[] operands, float[] scalars, int layer).
at::Tensor linear(const at::Tensor &x, const at::Tensor &w, at::TensorList operands, at::ArrayRef<double> scalars,
                  int64_t layer) {
  std::unique_lock<std::mutex> lock(g_mu);
  if (!g_api.launch_ptrs) return lock.unlock(), python_path(x, w, operands, scalars, layer, "not bound");
  const auto found = g_layers.find(layer);
  if (found == g_layers.end()) return lock.unlock(), python_path(x, w, operands, scalars, layer, "layer");
  const Layer &L = *found->second;
  const bool grad = at::GradMode::is_enabled();
  const c10::Device dev = w.device();
  const int wd = ft_dtype_of(w.scalar_type());
  const int xd = L.x_dtype >= 0 ? L.x_dtype : wd;
  if (wd < 0 || !(L.w_dtypes & (1u << wd)) || w.dim() != 2 || w.size(0) != L.w_rows || w.size(1) != L.k ||
      !fits(w, wd, dev) || !grad_ok(w, grad))
    return lock.unlock(), python_path(x, w, operands, scalars, layer, "weight");
  if (x.dim() < 1 || x.size(-1) != L.k || !fits(x, xd, dev) || !grad_ok(x, grad))
    return lock.unlock(), python_path(x, w, operands, scalars, layer, "x");
  if (static_cast<int>(operands.size()) != L.n_operands || static_cast<int>(scalars.size()) != L.n_scalars)
    return lock.unlock(), python_path(x, w, operands, scalars, layer, "operand count");
  const auto lead = x.sizes().slice(0, x.dim() - 1);
  const int64_t m = c10::multiply_integers(lead);
  // The slot-indexed arrays of ft_plan_launch_ptrs, and ft_typed_args's by name for fp8.
  const void *vecs[kMaxSlots] = {};
  float vals[kMaxSlots] = {};
  ft_tensor_arg targs[kMaxSlots];
  ft_scalar_arg sargs[kMaxSlots];
  int n_t = 0, n_s = 0;
  size_t oi = 0, si = 0;
  for (size_t s = 0; s < L.slots.size(); s++) {
    const Slot &slot = L.slots[s];
    if (slot.kind == 's') {
      vals[s] = static_cast<float>(scalars[si++]);
      sargs[n_s++] = ft_scalar_arg{slot.name.c_str(), vals[s]};
      continue;
    }
    if (slot.own) continue;
    const at::Tensor &t = operands[oi++];
    const int td = slot.dtype >= 0 ? slot.dtype : xd;
    bool shape_ok;
    if (slot.kind == 'm')
      shape_ok = t.dim() == x.dim() && t.sizes().slice(0, t.dim() - 1) == lead && t.size(-1) == L.n;
    else
      shape_ok = t.dim() == 1 && t.size(0) == (slot.kind == 'c' ? L.n : m);
    if (!shape_ok || !fits(t, td, dev) || !grad_ok(t, grad))
      return lock.unlock(), python_path(x, w, operands, scalars, layer, "operand");
    vecs[s] = t.const_data_ptr();
    targs[n_t++] = ft_tensor_arg{slot.name.c_str(), vecs[s], static_cast<ft_dtype>(td)};
  }
  if (dev.type() != c10::DeviceType::CUDA) return lock.unlock(), python_path(x, w, operands, scalars, layer, "device");
  std::vector<int64_t> shape(lead.begin(), lead.end());
  shape.insert(shape.end(), L.y_tail.begin(), L.y_tail.end());
  t_fallback = "";
  if (m == 0) return at::empty(shape, x.options());
  const auto entry = L.plans.find(plan_key(dev.index(), m, wd));
  if (entry == L.plans.end()) return lock.unlock(), python_path(x, w, operands, scalars, layer, "plan");
  const Entry &e = entry->second;
  if (e.presplit && (w.const_data_ptr() != e.w_seen || (w.is_inference() ? -1 : w._version()) != e.w_version))
    return lock.unlock(), python_path(x, w, operands, scalars, layer, "weight changed");
  at::Tensor y = at::empty(shape, x.options());
  const c10::DeviceGuard guard(dev);
  const c10::Stream current = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(dev);
  const auto stream = static_cast<cudaStream_t>(current.native_handle());
  ft_status st;
  if (!L.typed) {
    st = g_api.launch_ptrs(e.plan, x.const_data_ptr(), w.const_data_ptr(), y.data_ptr(), vecs, vals, stream);
  } else {
    // x's codes and per-token scales in one allocation: the codes, then the scales 16-byte aligned.
    const int64_t codes = (m * L.k + 15) / 16 * 16;
    at::Tensor scratch = at::empty({codes + 4 * m}, x.options().dtype(c10::ScalarType::Byte));
    auto *xq = static_cast<uint8_t *>(scratch.data_ptr());
    auto *sx = reinterpret_cast<float *>(xq + codes);
    st = g_api.quantize(e.quantizer, x.const_data_ptr(), static_cast<ft_dtype>(xd), m, L.k, FT_SCALE_ROW, xq, sx,
                        stream);
    if (st != FT_OK) return lock.unlock(), python_path(x, w, operands, scalars, layer, "launch failed");
    targs[n_t++] = ft_tensor_arg{L.slots[L.own_slot].name.c_str(), sx, FT_DTYPE_F32};
    ft_typed_args a{};
    a.struct_size = sizeof a;
    a.x = ft_tensor_arg{nullptr, xq, FT_DTYPE_E4M3};
    a.w = ft_tensor_arg{nullptr, w.const_data_ptr(), FT_DTYPE_E4M3};
    a.y = ft_tensor_arg{nullptr, y.data_ptr(), FT_DTYPE_BF16};
    a.vecs = targs;
    a.n_vecs = n_t;
    a.scalars = n_s ? sargs : nullptr;
    a.n_scalars = n_s;
    st = g_api.launch_typed(e.plan, &a, stream);
  }
  // A failed launch (refused: nothing launched; or a CUDA or cuBLAS failure) goes to the Python
  // implementation, which launches it again into its own y and raises the error the library names
  // as fusedtune's typed exception, as on the Python path. Failures are rare: the retry costs nothing
  // on the calls that succeed.
  if (st != FT_OK) return lock.unlock(), python_path(x, w, operands, scalars, layer, "launch failed");
  return y;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedtune, CUDA, m) { m.impl("linear", &linear); }
// On CPU tensors every call goes to the Python implementation, which refuses them; registered so
// that CPU tests run the checks above (fusedtune_torchop_fallback says which one sent the call on).
TORCH_LIBRARY_IMPL(fusedtune, CPU, m) { m.impl("linear", &linear); }

// The functions python/fusedtune/torch/_native.py calls through ctypes. Each returns 0, or -1 for
// an argument it refuses.
extern "C" {

// The library's functions, by address (from the library ctypes loaded).
__attribute__((visibility("default"))) int fusedtune_torchop_bind(void *launch_ptrs, void *launch_typed,
                                                                  void *quantize) {
  if (!launch_ptrs || !launch_typed || !quantize) return -1;
  std::lock_guard<std::mutex> lock(g_mu);
  g_api.launch_ptrs = reinterpret_cast<launch_ptrs_fn>(launch_ptrs);
  g_api.launch_typed = reinterpret_cast<launch_typed_fn>(launch_typed);
  g_api.quantize = reinterpret_cast<quantize_fn>(quantize);
  return 0;
}

// The fusedtune this was compiled against (FUSEDTUNE_VERSION_NUMBER): the loader refuses a library
// of another version, whose structs (ft_tensor_arg, ft_typed_args) may differ.
__attribute__((visibility("default"))) int fusedtune_torchop_abi(void) { return FUSEDTUNE_VERSION_NUMBER; }

// What fusedtune_torchop_bind holds, i in 0..2 in its argument order (NULL otherwise): the loader
// checks the addresses arrived whole.
__attribute__((visibility("default"))) void *fusedtune_torchop_bound(int i) {
  std::lock_guard<std::mutex> lock(g_mu);
  void *const fns[3] = {reinterpret_cast<void *>(g_api.launch_ptrs), reinterpret_cast<void *>(g_api.launch_typed),
                        reinterpret_cast<void *>(g_api.quantize)};
  return i >= 0 && i < 3 ? fns[i] : nullptr;
}

// A layer the op serves (replacing any of that handle, plans dropped). kinds: one letter per
// epilogue slot ('c', 'r', 'm', 's'; 'o' for a vector the op fills: fp8's sx); dtypes: an ft_dtype
// per slot, -1 for x's; names: the slots' names (fp8 binds by name).
__attribute__((visibility("default"))) int fusedtune_torchop_layer(int64_t handle, int typed, int64_t n, int64_t k,
                                                                   int64_t w_rows, unsigned w_dtypes, int x_dtype,
                                                                   const int64_t *y_tail, int n_tail,
                                                                   const char *kinds, const int *dtypes,
                                                                   const char *const *names) {
  const int n_slots = kinds ? static_cast<int>(std::strlen(kinds)) : 0;
  if (n_slots > kMaxSlots || n_tail < 0 || n_tail > 2 || (n_tail && !y_tail) || (n_slots && (!dtypes || !names)))
    return -1;
  auto L = std::make_unique<Layer>();
  L->typed = typed != 0;
  L->n = n, L->k = k, L->w_rows = w_rows, L->w_dtypes = w_dtypes, L->x_dtype = x_dtype;
  L->y_tail.assign(y_tail, y_tail + n_tail);
  for (int s = 0; s < n_slots; s++) {
    const char kind = kinds[s];
    if (!std::strchr("crmso", kind) || !names[s]) return -1;
    L->slots.push_back(Slot{kind == 'o' ? 'r' : kind, dtypes[s], kind == 'o', names[s]});
    if (kind == 's')
      L->n_scalars++;
    else if (kind == 'o')
      L->own_slot = s;
    else
      L->n_operands++;
  }
  if (L->typed != (L->own_slot >= 0)) return -1;
  std::lock_guard<std::mutex> lock(g_mu);
  g_layers[handle] = std::move(L);
  return 0;
}

// The plan that serves the layer's calls of m rows on device with a weight of w_dtype; a
// pre-split plan only while the weight is at w_seen with that version (-1: an inference tensor).
__attribute__((visibility("default"))) int fusedtune_torchop_plan(int64_t handle, int device, int64_t m, int w_dtype,
                                                                  void *plan, void *quantizer, int presplit,
                                                                  const void *w_seen, int64_t w_version) {
  std::lock_guard<std::mutex> lock(g_mu);
  const auto found = g_layers.find(handle);
  if (found == g_layers.end() || !plan || (found->second->typed && !quantizer)) return -1;
  found->second->plans[plan_key(device, m, w_dtype)] =
      Entry{static_cast<ft_plan *>(plan), static_cast<ft_quantizer *>(quantizer),
            presplit != 0, w_seen, w_version};
  return 0;
}

// Drops the layer's plans (clear) or the layer too (forget).
__attribute__((visibility("default"))) void fusedtune_torchop_clear(int64_t handle, int forget) {
  std::lock_guard<std::mutex> lock(g_mu);
  const auto found = g_layers.find(handle);
  if (found == g_layers.end()) return;
  if (forget)
    g_layers.erase(found);
  else
    found->second->plans.clear();
}

// Drops every entry that uses object (a plan or a quantizer about to be destroyed).
__attribute__((visibility("default"))) void fusedtune_torchop_forget_object(const void *object) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto &layer : g_layers) {
    auto &plans = layer.second->plans;
    for (auto it = plans.begin(); it != plans.end();)
      it = (it->second.plan == object || it->second.quantizer == object) ? plans.erase(it) : std::next(it);
  }
}

// Why this thread's last call of the op went to the Python implementation ("" when it did not):
// "not bound", "layer", "weight", "x", "operand count", "operand", "device", "plan", "weight changed",
// "launch failed".
__attribute__((visibility("default"))) const char *fusedtune_torchop_fallback(void) { return t_fallback; }

}  // extern "C"
