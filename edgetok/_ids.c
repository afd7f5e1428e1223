/* edgetok._ids: token ids (uint32) to a Python list, fast; pretokenizer pieces likewise.
 *
 * Building the list is the largest cost of encode() after the C core itself: each id would
 * otherwise become a new int object (~20 ns). Here every id gets one int object, made the first
 * time it is seen and kept, so a list costs a reference increment per id. The only function
 * takes the address of the ids (from cffi) and their count; the GIL is held throughout, so the
 * cache needs no lock. Stable ABI (Py_LIMITED_API 3.9), one build serves every CPython. */
#define Py_LIMITED_API 0x03090000
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#define CACHE_MAX (1u << 20) /* ids above this are not cached (no vocabulary is that big) */

static PyObject **cache;
static size_t cache_n;

static PyObject *int_of(uint32_t id)
{
    if (id < cache_n && cache[id]) {
        Py_INCREF(cache[id]);
        return cache[id];
    }
    PyObject *o = PyLong_FromUnsignedLong(id);
    if (!o || id >= CACHE_MAX) return o;
    if (id >= cache_n) {
        size_t n = cache_n ? cache_n : 1024;
        while (n <= id) n *= 2;
        PyObject **grown = realloc(cache, n * sizeof *grown);
        if (!grown) return o; /* no cache, still correct */
        for (size_t i = cache_n; i < n; i++) grown[i] = NULL;
        cache = grown;
        cache_n = n;
    }
    Py_INCREF(o);
    cache[id] = o;
    return o;
}

static PyObject *to_list(PyObject *self, PyObject *args)
{
    unsigned long long addr;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "Kn", &addr, &n)) return NULL;
    if (n < 0 || (n && !addr)) {
        PyErr_SetString(PyExc_ValueError, "bad id buffer");
        return NULL;
    }
    const uint32_t *ids = (const uint32_t *)(uintptr_t)addr;
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = int_of(ids[i]);
        if (!o || PyList_SetItem(list, i, o) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

/* pieces(data, address, n): data (bytes, valid UTF-8) cut at the n size_t end offsets at
 * address, each piece decoded: what a pretokenizer's offsets mean as regex.findall gives them. */
static PyObject *pieces(PyObject *self, PyObject *args)
{
    PyObject *data;
    unsigned long long addr;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "SKn", &data, &addr, &n)) return NULL;
    const char *p = PyBytes_AsString(data);
    const Py_ssize_t len = PyBytes_Size(data);
    if (!p || len < 0) return NULL;
    if (n < 0 || (n && !addr)) {
        PyErr_SetString(PyExc_ValueError, "bad offset buffer");
        return NULL;
    }
    const size_t *ends = (const size_t *)(uintptr_t)addr;
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    size_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ends[i] < at || ends[i] > (size_t)len) {
            Py_DECREF(list);
            PyErr_SetString(PyExc_ValueError, "piece offsets out of order or past the data");
            return NULL;
        }
        PyObject *o = PyUnicode_DecodeUTF8(p + at, (Py_ssize_t)(ends[i] - at), "strict");
        if (!o || PyList_SetItem(list, i, o) < 0) {
            Py_DECREF(list);
            return NULL;
        }
        at = ends[i];
    }
    return list;
}

static PyMethodDef methods[] = {
    {"to_list", to_list, METH_VARARGS, "to_list(address, n): the n uint32 ids at address, as a list"},
    {"pieces", pieces, METH_VARARGS,
     "pieces(data, address, n): data cut at the n size_t end offsets at address, decoded"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ids", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ids(void) { return PyModule_Create(&module); }
