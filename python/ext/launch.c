/* fusedtune's compiled launch path for Python (module _fusedtune_ext): one C call per launch of
 * ft_plan_launch_ptrs (and, for fp8 layers, of ft_plan_launch_typed and ft_quantize_e4m3), where
 * ctypes spends microseconds converting the arguments. Built only where a compiler and Python's
 * headers are (CMakeLists.txt); python/fusedtune/_launch.py falls back to ctypes without it. It
 * does not link libfusedtune: bind() and bind_fp8() take the functions' addresses from the
 * library ctypes loaded, so both paths call one library. The GIL stays held during a call, so
 * Python threads never launch one plan at once. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_ptrs_fn)(void *plan, const void *x, const void *w, void *y, const void *const *vecs,
                              const float *scalars, void *stream);
typedef int (*launch_typed_fn)(void *plan, const void *args, void *stream);
typedef int (*quantize_fn)(void *q, const void *src, int dtype, int64_t rows, int64_t cols, int scaling, void *dst,
                           float *scales, void *stream);

static launch_ptrs_fn g_launch;
static launch_typed_fn g_launch_typed;
static quantize_fn g_quantize;

/* *fn = the function at address arg (an int, not 0). */
static int take_function(PyObject *arg, void *fn, size_t size, const char *what) {
  void *p = PyLong_AsVoidPtr(arg);
  if (!p) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: the function address is 0", what);
    return -1;
  }
  /* An object pointer to a function pointer, as dlsym's callers do (POSIX guarantees it). */
  memcpy(fn, &p, size);
  return 0;
}

static PyObject *ext_bind(PyObject *self, PyObject *arg) {
  (void)self;
  if (take_function(arg, &g_launch, sizeof g_launch, "bind") < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *ext_bind_fp8(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "bind_fp8 takes 2 arguments (launch_typed, quantize), %zd given", nargs);
    return NULL;
  }
  if (take_function(args[0], &g_launch_typed, sizeof g_launch_typed, "bind_fp8") < 0 ||
      take_function(args[1], &g_quantize, sizeof g_quantize, "bind_fp8") < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* v[i] = the int address args[i], for n arguments of fn. */
static int take_addresses(PyObject *const *args, Py_ssize_t n, void **v, const char *fn) {
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!PyLong_Check(args[i])) {
      PyErr_Format(PyExc_TypeError, "%s: argument %zd must be an int address, not %s", fn, i + 1,
                   Py_TYPE(args[i])->tp_name);
      return -1;
    }
    v[i] = PyLong_AsVoidPtr(args[i]);
    if (PyErr_Occurred()) return -1;
  }
  return 0;
}

/* launch(plan, x, w, y, vecs, scalars, stream) -> ft_status: every argument an int address (vecs:
 * a void *[] in slot order, scalars: a float[]; 0 for NULL). */
static PyObject *ext_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 7) {
    PyErr_Format(PyExc_TypeError, "launch takes 7 arguments (plan, x, w, y, vecs, scalars, stream), %zd given", nargs);
    return NULL;
  }
  if (!g_launch) {
    PyErr_SetString(PyExc_RuntimeError, "launch: call bind() with ft_plan_launch_ptrs's address first");
    return NULL;
  }
  void *v[7];
  if (take_addresses(args, 7, v, "launch") < 0) return NULL;
  const int st = g_launch(v[0], v[1], v[2], v[3], (const void *const *)v[4], (const float *)v[5], v[6]);
  return PyLong_FromLong(st);
}

/* launch_typed(plan, args, stream) -> ft_status: int addresses (args: an ft_typed_args). */
static PyObject *ext_launch_typed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 3) {
    PyErr_Format(PyExc_TypeError, "launch_typed takes 3 arguments (plan, args, stream), %zd given", nargs);
    return NULL;
  }
  if (!g_launch_typed) {
    PyErr_SetString(PyExc_RuntimeError, "launch_typed: call bind_fp8() first");
    return NULL;
  }
  void *v[3];
  if (take_addresses(args, 3, v, "launch_typed") < 0) return NULL;
  return PyLong_FromLong(g_launch_typed(v[0], v[1], v[2]));
}

/* quantize(q, src, dtype, rows, cols, scaling, dst, scales, stream) -> ft_status: addresses and
 * ints as ft_quantize_e4m3 takes them. */
static PyObject *ext_quantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 9) {
    PyErr_Format(PyExc_TypeError, "quantize takes 9 arguments (q, src, dtype, rows, cols, scaling, dst, scales, "
                 "stream), %zd given", nargs);
    return NULL;
  }
  if (!g_quantize) {
    PyErr_SetString(PyExc_RuntimeError, "quantize: call bind_fp8() first");
    return NULL;
  }
  void *p[2], *d[3];
  if (take_addresses(args, 2, p, "quantize") < 0 || take_addresses(args + 6, 3, d, "quantize") < 0) return NULL;
  const long dtype = PyLong_AsLong(args[2]), scaling = PyLong_AsLong(args[5]);
  const long long rows = PyLong_AsLongLong(args[3]), cols = PyLong_AsLongLong(args[4]);
  if (PyErr_Occurred()) return NULL;
  if (dtype < INT_MIN || dtype > INT_MAX || scaling < INT_MIN || scaling > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError, "quantize: dtype and scaling are C ints");
    return NULL;
  }
  return PyLong_FromLong(g_quantize(p[0], p[1], (int)dtype, rows, cols, (int)scaling, d[0], (float *)d[1], d[2]));
}

static PyMethodDef ext_methods[] = {
    {"bind", ext_bind, METH_O, "bind(address): the ft_plan_launch_ptrs to call"},
    {"launch", (PyCFunction)(void (*)(void))ext_launch, METH_FASTCALL,
     "launch(plan, x, w, y, vecs, scalars, stream) -> ft_status (int addresses)"},
    {"bind_fp8", (PyCFunction)(void (*)(void))ext_bind_fp8, METH_FASTCALL,
     "bind_fp8(launch_typed, quantize): the ft_plan_launch_typed and ft_quantize_e4m3 to call"},
    {"launch_typed", (PyCFunction)(void (*)(void))ext_launch_typed, METH_FASTCALL,
     "launch_typed(plan, args, stream) -> ft_status (int addresses)"},
    {"quantize", (PyCFunction)(void (*)(void))ext_quantize, METH_FASTCALL,
     "quantize(q, src, dtype, rows, cols, scaling, dst, scales, stream) -> ft_status"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef ext_module = {PyModuleDef_HEAD_INIT, "_fusedtune_ext",
                                        "fusedtune's compiled launch path (see python/fusedtune/_launch.py)", -1,
                                        ext_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fusedtune_ext(void) { return PyModule_Create(&ext_module); }
