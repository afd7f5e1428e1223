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
#include <string.h>

#define CACHE_MAX (1u << 20) /* ids above this are not cached (no vocabulary is that big) */

/* In the stable ABI from 3.10; exported by every CPython 3.9 too. A str of ASCII characters
 * only (str.isascii) holds its UTF-8 already: this gives it with no copy (another str would
 * keep a UTF-8 copy as long as it lives: those are encoded into a bytes object instead). */
#if !defined(Py_LIMITED_API) || Py_LIMITED_API + 0 < 0x030A0000
PyAPI_FUNC(const char *) PyUnicode_AsUTF8AndSize(PyObject *unicode, Py_ssize_t *size);
#endif

/* s's UTF-8 without a copy where s is all ASCII: *p and *len, 1; 0 otherwise (or on an error,
 * cleared: the caller encodes s as before). A copy of a long text was a third of count()'s time
 * and, the GIL held, what two threads could not do at once. */
static PyObject *str_isascii; /* str.isascii (the base type's: a subclass cannot lie) */

static int ascii_utf8(PyObject *s, const char **p, size_t *len)
{
    PyObject *r = PyObject_CallFunctionObjArgs(str_isascii, s, NULL);
    const int ascii = r == Py_True;
    Py_XDECREF(r);
    Py_ssize_t n = 0;
    const char *q = ascii ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
    if (!q) {
        PyErr_Clear();
        return 0;
    }
    *p = q;
    *len = (size_t)n;
    return 1;
}

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

/* ---- batches: the whole C call without the GIL ------------------------------------------
 *
 * batch(mode, fn, ws, out, cap, docs, start, end, heads, b0, b1, fallback, final) encodes
 * (or counts) the str documents docs[start:end] through the C core's et_encode (mode 0: a
 * list of ids per document; mode 2: one flat run of ids, as bytes of uint32, and the
 * documents' end offsets, as bytes of int64) or et_count (mode 1: a count per document),
 * called through the function address fn with workspace ws and id buffer out of cap ids (the
 * thread's own, reused: no memory is mapped and unmapped per call, which would stall the
 * other threads). Documents are taken while their bound on ids fits the buffer. Under the GIL: each document to UTF-8 (fallback(doc) for one
 * holding lone surrogates, as tiktoken replaces them); then the GIL is released for all of the
 * encoding; then it is taken back to make the results. A document holding one of heads (UTF-8
 * bytes: the first characters of special or added tokens) is not encoded: its index goes in
 * `flagged` (mode 0: None in its place, mode 1: -1; mode 2: no ids) for the caller to redo.
 * Returns (status, stop, results, flagged, need): documents from stop on were not done
 * (status is the C status of document stop, e.g. ET_E_WORKSPACE: grow the workspace, call
 * again; or 0 when the buffer was full: call again), need > 0: the first document needs a
 * buffer of that many ids. */
typedef int (*encode_fn)(void *ws, const char *text, size_t len, unsigned flags, uint32_t *out,
                         size_t cap, size_t *n_out, size_t *consumed);
typedef int (*count_fn)(void *ws, const char *text, size_t len, unsigned flags, size_t *count,
                        size_t *consumed);

#define ASCII_MIN 256 /* characters: a shorter document is copied (less than asking isascii) */
struct doc {
    PyObject *bytes; /* UTF-8, or the str that holds it (owned) */
    const char *p;
    size_t len;
    int flagged;
};

static int holds(const char *p, size_t len, const char *h, size_t hl)
{
    if (!hl || hl > len) return hl == 0;
    const char *end = p + len - hl + 1;
    for (const char *q = p; (q = memchr(q, h[0], (size_t)(end - q))) != NULL; q++)
        if (memcmp(q, h, hl) == 0) return 1;
    return 0;
}

static PyObject *batch(PyObject *self, PyObject *args)
{
    int mode;
    unsigned long long fn_addr, ws_addr, out_addr;
    PyObject *docs, *heads, *fallback;
    Py_ssize_t start, end, b0, b1, out_cap;
    unsigned final;
    (void)self;
    if (!PyArg_ParseTuple(args, "iKKKnOnnOnnOI", &mode, &fn_addr, &ws_addr, &out_addr, &out_cap,
                          &docs, &start, &end, &heads, &b0, &b1, &fallback, &final))
        return NULL;
    if (!PyList_Check(docs) || !PyTuple_Check(heads) || mode < 0 || mode > 2 || !fn_addr ||
        !ws_addr || start < 0 || end < start || end > PyList_Size(docs) || b0 < 0 || b1 < 0 ||
        out_cap < 0 || (out_cap && !out_addr)) {
        PyErr_SetString(PyExc_ValueError, "batch: bad arguments");
        return NULL;
    }
    const Py_ssize_t nh = PyTuple_Size(heads);
    Py_ssize_t n = end - start, need = 0;
    struct doc *d = PyMem_Calloc((size_t)n + 1, sizeof *d);
    uint64_t *counts = PyMem_Calloc((size_t)n + 1, sizeof *counts); /* (int64 ends in mode 2) */
    PyObject *result = NULL, *flagged = PyList_New(0), *res = NULL;
    uint32_t *out = (uint32_t *)(uintptr_t)out_addr;
    size_t cap = 0;
    Py_ssize_t k = 0, got = 0;
    int rc = 0;
    if (!d || !counts || !flagged) {
        PyErr_NoMemory();
        goto done;
    }
    for (k = 0; k < n; k++) { /* UTF-8, heads, the output bound */
        PyObject *s = PyList_GetItem(docs, start + k);
        if (!s) goto done;
        if (!PyUnicode_Check(s)) {
            PyErr_Format(PyExc_TypeError, "expected str, got %s", Py_TYPE(s) == &PyBytes_Type
                         ? "bytes" : "another type");
            goto done;
        }
        PyObject *b = NULL;
        if (PyUnicode_GetLength(s) >= ASCII_MIN && ascii_utf8(s, &d[k].p, &d[k].len)) {
            Py_INCREF(s); /* (the list may lose it while the GIL is released) */
            d[k].bytes = s;
            goto got;
        }
        b = PyUnicode_AsUTF8String(s);
        if (!b) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) goto done;
            PyErr_Clear();
            b = PyObject_CallFunctionObjArgs(fallback, s, NULL);
            if (!b) goto done;
            if (!PyBytes_Check(b)) {
                Py_DECREF(b);
                PyErr_SetString(PyExc_TypeError, "batch: fallback must return bytes");
                goto done;
            }
        }
        d[k].bytes = b;
        d[k].p = PyBytes_AsString(b);
        d[k].len = (size_t)PyBytes_Size(b);
    got:
        for (Py_ssize_t h = 0; h < nh && !d[k].flagged; h++) {
            PyObject *hb = PyTuple_GetItem(heads, h);
            if (!hb || !PyBytes_Check(hb)) {
                PyErr_SetString(PyExc_TypeError, "batch: heads must be bytes");
                goto done;
            }
            d[k].flagged = holds(d[k].p, d[k].len, PyBytes_AsString(hb),
                                 (size_t)PyBytes_Size(hb));
        }
        if (mode != 1 && !d[k].flagged) {
            size_t bound = (size_t)b0 + (size_t)b1 * d[k].len;
            if (bound < d[k].len || cap + bound < cap) {
                PyErr_NoMemory();
                goto done;
            }
            if (cap + bound > (size_t)out_cap) { /* the buffer is full: stop before k */
                if (k == 0) need = (Py_ssize_t)bound;
                n = k;
                break;
            }
            cap += bound;
        }
    }
    { /* the C core, without the GIL */
        PyThreadState *ts = PyEval_SaveThread();
        size_t w = 0, used = 0, c = 0;
        for (got = 0; got < n; got++) {
            if (d[got].flagged) {
                counts[got] = 0;
                continue;
            }
            if (mode == 1)
                rc = ((count_fn)(uintptr_t)fn_addr)((void *)(uintptr_t)ws_addr, d[got].p,
                                                    d[got].len, final, &c, &used);
            else
                rc = ((encode_fn)(uintptr_t)fn_addr)((void *)(uintptr_t)ws_addr, d[got].p,
                                                     d[got].len, final, out + w, cap - w, &c,
                                                     &used);
            if (rc) break;
            counts[got] = c;
            if (mode != 1) w += c;
        }
        PyEval_RestoreThread(ts);
    }
    for (Py_ssize_t i = 0; i < got; i++)
        if (d[i].flagged) {
            PyObject *o = PyLong_FromSsize_t(start + i);
            if (!o || PyList_Append(flagged, o) < 0) {
                Py_XDECREF(o);
                goto done;
            }
            Py_DECREF(o);
        }
    if (mode == 2) { /* ids as bytes, and each document's end offset (int64) */
        size_t w = 0;
        int64_t *ends = (int64_t *)(void *)counts; /* rewritten in place */
        for (Py_ssize_t i = 0; i < got; i++) {
            w += counts[i];
            ends[i] = (int64_t)w;
        }
        PyObject *ids = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)(w * 4));
        PyObject *offs = ids ? PyBytes_FromStringAndSize((const char *)ends,
                                                         (Py_ssize_t)(got * 8)) : NULL;
        result = offs ? PyTuple_Pack(2, ids, offs) : NULL;
        Py_XDECREF(ids);
        Py_XDECREF(offs);
        if (!result) goto done;
    } else {
        if (!(result = PyList_New(got))) goto done;
        size_t at = 0;
        for (Py_ssize_t i = 0; i < got; i++) {
            PyObject *o;
            const size_t cnt = (size_t)counts[i];
            if (mode == 1) {
                o = d[i].flagged ? PyLong_FromLong(-1) : PyLong_FromUnsignedLongLong(counts[i]);
            } else if (d[i].flagged) {
                Py_INCREF(Py_None);
                o = Py_None;
            } else {
                o = PyList_New((Py_ssize_t)cnt);
                for (size_t j = 0; o && j < cnt; j++) {
                    PyObject *v = int_of(out[at + j]);
                    if (!v) {
                        Py_CLEAR(o);
                        break;
                    }
                    PyList_SetItem(o, (Py_ssize_t)j, v);
                }
                at += cnt;
            }
            if (!o) goto done;
            PyList_SetItem(result, i, o);
        }
    }
    res = Py_BuildValue("inOOn", rc, start + got, result, flagged, need);
done:
    if (d)
        for (Py_ssize_t i = 0; i <= n && i < end - start; i++) Py_XDECREF(d[i].bytes);
    PyMem_Free(d);
    PyMem_Free(counts);
    Py_XDECREF(result);
    Py_XDECREF(flagged);
    return res;
}

/* one(mode, fn, ws, out, cap, text, heads, b0, b1, final): one text (str, or bytes already in
 * UTF-8) through et_encode (mode 0: the list of ids) or et_count (mode 1: the count), ws the
 * thread's workspace and out its id buffer of cap ids; the GIL is released only for texts long
 * enough to pay for it. None when this quick path cannot say (the caller then takes the
 * general one): a str holding one of heads (see batch) or lone surrogates, ids that might not
 * fit cap, any status but ET_OK (a workspace to grow, an error to raise). */
#define ONE_NOGIL_BYTES 2048

static PyObject *one(PyObject *self, PyObject *args)
{
    int mode;
    unsigned long long fn_addr, ws_addr, out_addr;
    Py_ssize_t cap, b0, b1;
    PyObject *text, *heads;
    unsigned final;
    (void)self;
    if (!PyArg_ParseTuple(args, "iKKKnOOnnI", &mode, &fn_addr, &ws_addr, &out_addr, &cap, &text,
                          &heads, &b0, &b1, &final))
        return NULL;
    if (!fn_addr || !ws_addr || !PyTuple_Check(heads) || cap < 0 || b0 < 0 || b1 < 0 ||
        (cap && !out_addr)) {
        PyErr_SetString(PyExc_ValueError, "one: bad arguments");
        return NULL;
    }
    PyObject *owned = NULL;
    const char *p;
    size_t len;
    if (PyUnicode_Check(text)) {
        if (PyUnicode_GetLength(text) < ONE_NOGIL_BYTES || !ascii_utf8(text, &p, &len)) {
            if (!(owned = PyUnicode_AsUTF8String(text))) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            p = PyBytes_AsString(owned);
            len = (size_t)PyBytes_Size(owned);
        }
        for (Py_ssize_t h = 0, nh = PyTuple_Size(heads); h < nh; h++) {
            PyObject *hb = PyTuple_GetItem(heads, h);
            if (!hb || !PyBytes_Check(hb) ||
                holds(p, len, PyBytes_AsString(hb), (size_t)PyBytes_Size(hb))) {
                Py_XDECREF(owned);
                Py_RETURN_NONE;
            }
        }
    } else if (PyBytes_Check(text)) {
        p = PyBytes_AsString(text);
        len = (size_t)PyBytes_Size(text);
    } else {
        Py_RETURN_NONE;
    }
    size_t n = 0, used = 0;
    int rc;
    PyObject *res = NULL;
    if (mode == 1) {
        PyThreadState *ts = len > ONE_NOGIL_BYTES ? PyEval_SaveThread() : NULL;
        rc = ((count_fn)(uintptr_t)fn_addr)((void *)(uintptr_t)ws_addr, p, len, final, &n, &used);
        if (ts) PyEval_RestoreThread(ts);
        if (rc == 0) res = PyLong_FromSize_t(n);
    } else {
        uint32_t *out = (uint32_t *)(uintptr_t)out_addr;
        const size_t bound = (size_t)b0 + (size_t)b1 * len;
        if (bound > (size_t)cap || bound < len) {
            Py_XDECREF(owned);
            Py_RETURN_NONE;
        }
        PyThreadState *ts = len > ONE_NOGIL_BYTES ? PyEval_SaveThread() : NULL;
        rc = ((encode_fn)(uintptr_t)fn_addr)((void *)(uintptr_t)ws_addr, p, len, final, out,
                                             bound, &n, &used);
        if (ts) PyEval_RestoreThread(ts);
        if (rc == 0 && (res = PyList_New((Py_ssize_t)n)) != NULL)
            for (size_t j = 0; j < n; j++) {
                PyObject *v = int_of(out[j]);
                if (!v) {
                    Py_CLEAR(res);
                    break;
                }
                PyList_SetItem(res, (Py_ssize_t)j, v);
            }
    }
    Py_XDECREF(owned);
    if (rc != 0 && !res) Py_RETURN_NONE;
    return res;
}

/* join(parts, numpy): the (ids, ends) of batch's mode 2, chunk after chunk, as one bytearray
 * of uint32 ids and one bytearray of int64 offsets (n + 1 of them, from 0). */
static PyObject *join(PyObject *self, PyObject *args)
{
    PyObject *parts;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &parts)) return NULL;
    if (!PyList_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "join: a list of (ids, ends)");
        return NULL;
    }
    Py_ssize_t np = PyList_Size(parts), nid = 0, nend = 0;
    for (Py_ssize_t i = 0; i < np; i++) {
        PyObject *t = PyList_GetItem(parts, i);
        if (!t || !PyTuple_Check(t) || PyTuple_Size(t) != 2 ||
            !PyBytes_Check(PyTuple_GetItem(t, 0)) || !PyBytes_Check(PyTuple_GetItem(t, 1))) {
            PyErr_SetString(PyExc_TypeError, "join: a list of (ids, ends)");
            return NULL;
        }
        nid += PyBytes_Size(PyTuple_GetItem(t, 0));
        nend += PyBytes_Size(PyTuple_GetItem(t, 1));
    }
    PyObject *ids = PyByteArray_FromStringAndSize(NULL, nid);
    PyObject *offs = ids ? PyByteArray_FromStringAndSize(NULL, nend + 8) : NULL;
    if (!offs) {
        Py_XDECREF(ids);
        return NULL;
    }
    char *ip = PyByteArray_AsString(ids);
    int64_t *op = (int64_t *)(void *)PyByteArray_AsString(offs), base = 0;
    *op++ = 0;
    for (Py_ssize_t i = 0; i < np; i++) {
        PyObject *t = PyList_GetItem(parts, i);
        PyObject *a = PyTuple_GetItem(t, 0), *e = PyTuple_GetItem(t, 1);
        Py_ssize_t la = PyBytes_Size(a), le = PyBytes_Size(e) / 8;
        memcpy(ip, PyBytes_AsString(a), (size_t)la);
        ip += la;
        const char *ep = PyBytes_AsString(e);
        for (Py_ssize_t j = 0; j < le; j++) {
            int64_t v;
            memcpy(&v, ep + 8 * j, 8);
            *op++ = base + v;
        }
        base += la / 4;
    }
    PyObject *r = PyTuple_Pack(2, ids, offs);
    Py_DECREF(ids);
    Py_DECREF(offs);
    return r;
}

/* holds_any(data, heads): whether the bytes data hold one of heads (a tuple of bytes); the
 * parallel paths' look for special tokens in a large text (memchr: str.find took 4-6 ms on
 * 3.7 MB of prose and code, whose '<' it stops at one by one). */
static PyObject *holds_any(PyObject *self, PyObject *args)
{
    PyObject *data, *heads;
    (void)self;
    if (!PyArg_ParseTuple(args, "SO!", &data, &PyTuple_Type, &heads)) return NULL;
    const char *p = PyBytes_AsString(data);
    size_t len = (size_t)PyBytes_Size(data);
    for (Py_ssize_t h = 0, nh = PyTuple_Size(heads); h < nh; h++) {
        PyObject *hb = PyTuple_GetItem(heads, h);
        if (!PyBytes_Check(hb)) {
            PyErr_SetString(PyExc_TypeError, "holds_any: heads must be bytes");
            return NULL;
        }
        if (holds(p, len, PyBytes_AsString(hb), (size_t)PyBytes_Size(hb))) Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"batch", batch, METH_VARARGS,
     "batch(mode, fn, ws, out, cap, docs, start, end, heads, b0, b1, fallback, final): see the source"},
    {"one", one, METH_VARARGS,
     "one(mode, fn, ws, out, cap, text, heads, b0, b1, final): one text's ids or count, or None"},
    {"join", join, METH_VARARGS, "join(parts): batch mode 2's parts as (ids, offsets)"},
    {"holds_any", holds_any, METH_VARARGS, "holds_any(data, heads): data holds one of heads"},
    {"to_list", to_list, METH_VARARGS, "to_list(address, n): the n uint32 ids at address, as a list"},
    {"pieces", pieces, METH_VARARGS,
     "pieces(data, address, n): data cut at the n size_t end offsets at address, decoded"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ids", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ids(void)
{
    if (!str_isascii &&
        !(str_isascii = PyObject_GetAttrString((PyObject *)&PyUnicode_Type, "isascii")))
        return NULL;
    return PyModule_Create(&module);
}
