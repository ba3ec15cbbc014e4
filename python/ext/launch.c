/* fusedtune's compiled launch path for Python (module _fusedtune_ext): one C call per launch of
 * ft_plan_launch_ptrs, where ctypes spends a microsecond converting seven arguments. Built only
 * where a compiler and Python's headers are (CMakeLists.txt); python/fusedtune/_launch.py falls
 * back to ctypes without it. It does not link libfusedtune: bind() takes the address of
 * ft_plan_launch_ptrs from the library ctypes loaded, so both paths call one library. The GIL
 * stays held during a launch, so Python threads never launch one plan at once. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef int (*launch_ptrs_fn)(void *plan, const void *x, const void *w, void *y, const void *const *vecs,
                              const float *scalars, void *stream);

static launch_ptrs_fn g_launch;

static PyObject *ext_bind(PyObject *self, PyObject *arg) {
  (void)self;
  void *p = PyLong_AsVoidPtr(arg);
  if (!p) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bind: the function address is 0");
    return NULL;
  }
  /* An object pointer to a function pointer, as dlsym's callers do (POSIX guarantees it). */
  memcpy(&g_launch, &p, sizeof g_launch);
  Py_RETURN_NONE;
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
  for (int i = 0; i < 7; i++) {
    if (!PyLong_Check(args[i])) {
      PyErr_Format(PyExc_TypeError, "launch: argument %d must be an int address, not %s", i + 1,
                   Py_TYPE(args[i])->tp_name);
      return NULL;
    }
    v[i] = PyLong_AsVoidPtr(args[i]);
    if (PyErr_Occurred()) return NULL;
  }
  const int st = g_launch(v[0], v[1], v[2], v[3], (const void *const *)v[4], (const float *)v[5], v[6]);
  return PyLong_FromLong(st);
}

static PyMethodDef ext_methods[] = {
    {"bind", ext_bind, METH_O, "bind(address): the ft_plan_launch_ptrs to call"},
    {"launch", (PyCFunction)(void (*)(void))ext_launch, METH_FASTCALL,
     "launch(plan, x, w, y, vecs, scalars, stream) -> ft_status (int addresses)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef ext_module = {PyModuleDef_HEAD_INIT, "_fusedtune_ext",
                                        "fusedtune's compiled launch path (see python/fusedtune/_launch.py)", -1,
                                        ext_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fusedtune_ext(void) { return PyModule_Create(&ext_module); }
