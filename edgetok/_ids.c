/* edgetok._ids: token ids (uint32) to a Python list, fast; pretokenizer pieces likewise.
 *
 * Building the list is the largest cost of encode() after the C core itself: each id would
 * otherwise become a new int object (~20 ns). Here every id gets one int object, made the first
 * time it is seen and kept, so a list costs a reference increment per id. The only function
 * takes the address of the ids (from cffi) and their count; the GIL is held throughout, so the
 * cache needs no lock. Stable ABI (Py_LIMITED_API 3.9), one build serves every CPython. */
#define Py_LIMITED_API 0x03090000
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define CACHE_MAX (1u << 20) /* ids above this are not cached (no vocabulary is that big) */

/* In the stable ABI from 3.10; exported by every CPython 3.9 too. A str of ASCII characters
 * only (str.isascii) holds its UTF-8 already: this gives it with no copy. Another str gets a
 * UTF-8 copy that it keeps as long as it lives: one() reads long texts so (see there), the
 * batches never (their documents are many, and each is read once). */
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

/* The n ids at ids as a new list (NULL with an exception set on failure). */
static PyObject *ids_list(const uint32_t *ids, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = int_of(ids[i]);
        if (!o) Py_CLEAR(list);
        else PyList_SetItem(list, (Py_ssize_t)i, o);
    }
    return list;
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
    return ids_list((const uint32_t *)(uintptr_t)addr, (size_t)n);
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

/* ---- batches: documents in chunks, across threads, the workers never taking the GIL -------
 *
 * A batch is a job (job_new) that its calling thread (the main one) and helper threads run
 * together (job_run). The documents are cut into chunks of about `step` characters. The main
 * thread does everything that needs the GIL: it readies chunks (each document's UTF-8) a few
 * ahead of those taken, and makes the results of finished chunks, in order; when it has none
 * of that to do, it encodes a chunk too. Helpers only encode, without the GIL. (Before,
 * every thread readied, encoded and listed chunks of its own, the GIL passed between threads
 * at every chunk: 2 threads ran batches of 4 KB documents at 1.4-1.7x one thread's speed.)
 * A chunk's ids go to memory of its own until they are listed.
 *
 * Helpers are threads that wait for jobs in job_serve, the GIL released: the main thread's
 * first job_run posts the job on a board and a waiting helper starts on it as soon as the
 * main thread readies its first chunk, with the workspace it used last. It takes the GIL
 * only for a job of another model than its last one (to find its workspace for that model)
 * and where the job stops for it (a larger workspace); it goes on with job_run then, holding
 * a reference to the job. The main thread, done or stopped, retires the job: no helper takes
 * it from the board after that, and those in job_serve have left it (`inside` counts them;
 * they hold no reference). Locks: the board's before a job's, and no thread waits for the
 * GIL holding either. A job is freed with its capsule, the main thread's last reference
 * gone, after retire; or never run (never posted), or made before a fork (see
 * board_reset). (Before, helpers were a thread pool's tasks that began and ended in Python:
 * the first helper started ~60 us after the main thread had readied a chunk, and the main
 * thread waited ~25 us at the end for a helper to let go of the GIL; 2 threads ran
 * count_batch of 2 MB of 4 KB documents at 1.8-1.9x one thread's speed.)
 *
 * A document holding one of heads (the first bytes of special or added tokens: looked for by
 * the encoding thread) or lone surrogates, or that the C core refuses (a status other than
 * ET_OK that a larger workspace does not cure), is left for the caller (`flagged`), which
 * encodes it the ordinary way: that replaces surrogates as tiktoken does, or raises the
 * proper error. */
typedef int (*encode_fn)(void *ws, const char *text, size_t len, unsigned flags, uint32_t *out,
                         size_t cap, size_t *n_out, size_t *consumed);
typedef int (*count_fn)(void *ws, const char *text, size_t len, unsigned flags, size_t *count,
                        size_t *consumed);
typedef size_t (*ws_fn)(const void *ws);

#ifndef PyBUF_READ
#define PyBUF_READ 0x100 /* (CPython's value; the 3.9 limited API names it not) */
#endif
#define ET_E_WORKSPACE_ 6 /* edgetok.h's ET_E_WORKSPACE (this module does not include it) */
#define ASCII_MIN 256     /* characters: a shorter document is copied (less than asking isascii) */

struct doc {
    PyObject *bytes; /* its UTF-8, or the str that holds it (owned) */
    const char *p;
    size_t len;
    size_t count; /* ids */
    int flagged;  /* left for the caller */
};

enum { CH_NEW, CH_TAKEN, CH_DONE }; /* (readied: below j->ready) */

struct chunk {
    Py_ssize_t a, b; /* documents [a, b) */
    int state;       /* under the job's lock */
    uint32_t *ids;   /* modes 0, 2, 3: the chunk's ids, back to back (malloc) */
    size_t n_ids;
};

struct job {
    int mode; /* 0: a list of ids per document, 1: a count, 2: one flat run of ids, 3: one list */
    int threads, check; /* check: long enough to grow piece caches (see grows) */
    Py_ssize_t max_slots;
    unsigned final;
    void *fn; /* et_encode (modes 0, 2, 3) or et_count (mode 1) */
    ws_fn evictions, need;
    size_t b0, b1, grow_evict;
    PyObject *docs, *heads, *result, *sink; /* owned */
    PyObject *model, *errors; /* owned: the model (for helpers) and where helpers' errors go */
    PyObject *capsule;        /* the job's own (borrowed: see job_serve) */
    unsigned long long key;   /* the model's, for helpers: their workspace is for one model */
    Py_ssize_t total;         /* characters (bytes for parts of one text) */
    const char **head;  /* heads' bytes and lengths (the encoding threads', without the GIL) */
    size_t *head_len;
    Py_ssize_t n_heads;
    struct doc *d;
    Py_ssize_t n;
    const char *raw; /* documents given as one bytes object (docs[0]) cut at offsets */
    struct chunk *c;
    Py_ssize_t n_chunks, ahead;
    unsigned long forks; /* the process's forks when it was made (see board_reset) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu: */
    Py_ssize_t ready, next; /* chunks [0, ready) readied, [0, next) taken */
    int waiting, cancel;
    int inside; /* helpers that took the job from the board and have not left it */
    /* under board.mu: */
    int want; /* helpers still wanted */
    /* the main thread's: */
    int posted; /* job_run posted it */
    Py_ssize_t listed;
    uint32_t *ucs;      /* a document's code points, then its UTF-8 (see utf8_doc) */
    size_t ucs_cap;     /* code points it holds */
};

static int holds(const char *p, size_t len, const char *h, size_t hl)
{
    if (!hl || hl > len) return hl == 0;
    const char *end = p + len - hl + 1;
    for (const char *q = p; (q = memchr(q, h[0], (size_t)(end - q))) != NULL; q++)
        if (memcmp(q, h, hl) == 0) return 1;
    return 0;
}

static atomic_ullong helped; /* chunks the helpers encoded, in this process (job_helped) */

/* The board: jobs posted for helpers, oldest first (a job that finds it full has none). */
#define POSTS 8
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *post[POSTS];
    int n;
    unsigned long forks;
} board = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {NULL}, 0, 0};

/* In a child after fork: the helpers are gone, and so are the threads of the jobs made before
 * (whose locks may be held for ever): those are let go without a look at their locks. */
static void board_reset(void)
{
    pthread_mutex_init(&board.mu, NULL);
    pthread_cond_init(&board.cv, NULL);
    board.n = 0;
    board.forks++;
}

static void unpost(struct job *j) /* (under board.mu) */
{
    for (int i = 0; i < board.n; i++)
        if (board.post[i] == j) {
            memmove(board.post + i, board.post + i + 1, (size_t)(board.n - i - 1) * sizeof j);
            board.n--;
            return;
        }
}

static void leave(struct job *j)
{
    pthread_mutex_lock(&j->mu);
    j->inside--;
    if (j->waiting) pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* No helper takes the job from now on; returns once none is inside it (the GIL held, let go
 * while waiting: a helper may need it to leave), the job's reference to the helpers' errors
 * gone (the caller holds them, and an error's traceback may hold the job). A job made before
 * a fork has no helpers here (see board_reset). */
static void retire(struct job *j)
{
    if (j->forks == board.forks) {
        pthread_mutex_lock(&board.mu);
        unpost(j);
        pthread_mutex_unlock(&board.mu);
        pthread_mutex_lock(&j->mu);
        const int inside = j->inside;
        pthread_mutex_unlock(&j->mu);
        if (inside) {
            Py_BEGIN_ALLOW_THREADS
            pthread_mutex_lock(&j->mu);
            while (j->inside) {
                j->waiting++;
                pthread_cond_wait(&j->cv, &j->mu);
                j->waiting--;
            }
            pthread_mutex_unlock(&j->mu);
            Py_END_ALLOW_THREADS
        }
    }
    Py_CLEAR(j->errors);
}

static void cancel(struct job *j)
{
    pthread_mutex_lock(&j->mu);
    j->cancel = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void job_free(PyObject *capsule)
{
    struct job *j = PyCapsule_GetPointer(capsule, "edgetok.job");
    if (!j) return;
    const int here = j->forks == board.forks;
    if (here) cancel(j); /* (its main thread retired it already: job_run, job_cancel) */
    retire(j);
    for (Py_ssize_t i = 0; j->d && i < j->n; i++) Py_XDECREF(j->d[i].bytes);
    for (Py_ssize_t k = 0; j->c && k < j->n_chunks; k++) free(j->c[k].ids);
    Py_XDECREF(j->docs);
    Py_XDECREF(j->heads);
    Py_XDECREF(j->result);
    Py_XDECREF(j->sink);
    Py_XDECREF(j->model);
    Py_XDECREF(j->errors);
    PyMem_Free(j->d);
    PyMem_Free(j->c);
    PyMem_Free(j->head);
    PyMem_Free(j->head_len);
    free(j->ucs);
    if (here) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
    }
    PyMem_Free(j);
}

/* Document i's characters (bytes for the parts of one text; 0 for what is not a str: an error
 * when it is readied). */
static Py_ssize_t doc_chars(const struct job *j, Py_ssize_t i)
{
    if (j->raw) return (Py_ssize_t)j->d[i].len;
    PyObject *s = PyList_GetItem(j->docs, i);
    return PyUnicode_Check(s) ? PyUnicode_GetLength(s) : 0;
}

/* job_new(mode, fn, evictions, need, docs, heads, b0, b1, final, chunk, threads, min_total,
 * grow_text, grow_evict, max_slots, sink, model, key, errors): a job over the list docs
 * (str), or over the parts of one text (docs: (data, ends), data bytes of UTF-8 cut at the
 * offsets ends, ascending, the last len(data): its shards); fn, evictions and need the
 * addresses of et_encode or et_count, et_ws_evictions and et_ws_need. On up to `threads`
 * threads where the documents hold min_total characters or more (bytes for parts), in the
 * main interpreter (job_run posts it for the helpers, job_serve), else on the calling thread
 * alone; chunks of about `chunk` characters (at least 8 a thread). grow_text, grow_evict,
 * max_slots: see grows. sink (mode 2): called with each chunk's ids in turn (a memoryview of
 * uint32, valid during the call only: array.frombytes, bytearray.extend; a sink must not
 * keep it nor a slice).
 * model, key: what job_serve gives helpers, the key telling which workspace serves the
 * model; errors: a list, given to helpers for their errors. Returns (job, the number of
 * threads it is for). */
static PyObject *job_new(PyObject *self, PyObject *args)
{
    int mode;
    unsigned long long fn, ev, need, key;
    PyObject *docs, *heads, *sink, *model, *errors;
    Py_ssize_t b0, b1, step, threads, min_total, grow_text, grow_evict, max_slots;
    unsigned final;
    (void)self;
    if (!PyArg_ParseTuple(args, "iKKKOOnnInnnnnnOOKO", &mode, &fn, &ev, &need, &docs, &heads,
                          &b0, &b1, &final, &step, &threads, &min_total, &grow_text,
                          &grow_evict, &max_slots, &sink, &model, &key, &errors))
        return NULL;
    const int raw = PyTuple_Check(docs) && PyTuple_Size(docs) == 2 &&
                    PyBytes_Check(PyTuple_GetItem(docs, 0)) &&
                    PyList_Check(PyTuple_GetItem(docs, 1));
    if ((!PyList_Check(docs) && !raw) || !PyTuple_Check(heads) || mode < 0 || mode > 3 ||
        !fn || !ev || !need || b0 < 0 || b1 < 0 || step < 1 || threads < 1 || min_total < 0 ||
        grow_text < 0 || grow_evict < 0 || max_slots < 0 ||
        (mode == 2 && !PyCallable_Check(sink)) || !PyList_Check(errors)) {
        PyErr_SetString(PyExc_ValueError, "job_new: bad arguments");
        return NULL;
    }
    for (Py_ssize_t h = 0; h < PyTuple_Size(heads); h++)
        if (!PyBytes_Check(PyTuple_GetItem(heads, h))) {
            PyErr_SetString(PyExc_TypeError, "job_new: heads must be bytes");
            return NULL;
        }
    struct job *j = PyMem_Calloc(1, sizeof *j);
    if (!j) return PyErr_NoMemory();
    if (pthread_mutex_init(&j->mu, NULL)) {
        PyMem_Free(j);
        return PyErr_NoMemory();
    }
    if (pthread_cond_init(&j->cv, NULL)) {
        pthread_mutex_destroy(&j->mu);
        PyMem_Free(j);
        return PyErr_NoMemory();
    }
    PyObject *capsule = PyCapsule_New(j, "edgetok.job", job_free);
    if (!capsule) {
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        PyMem_Free(j);
        return NULL;
    }
    j->mode = mode;
    j->final = final;
    j->fn = (void *)(uintptr_t)fn;
    j->evictions = (ws_fn)(uintptr_t)ev;
    j->need = (ws_fn)(uintptr_t)need;
    j->b0 = (size_t)b0;
    j->b1 = (size_t)b1;
    j->grow_evict = (size_t)grow_evict;
    j->max_slots = max_slots;
    j->capsule = capsule;
    j->forks = board.forks;
    Py_INCREF(model);
    j->model = model;
    Py_INCREF(errors);
    j->errors = errors;
    j->key = key;
    Py_INCREF(docs);
    j->docs = docs;
    Py_INCREF(heads);
    j->heads = heads;
    Py_INCREF(sink);
    j->sink = sink;
    j->n_heads = PyTuple_Size(heads);
    j->head = PyMem_Calloc((size_t)j->n_heads + 1, sizeof *j->head);
    j->head_len = PyMem_Calloc((size_t)j->n_heads + 1, sizeof *j->head_len);
    if (!j->head || !j->head_len) {
        Py_DECREF(capsule);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t h = 0; h < j->n_heads; h++) {
        PyObject *hb = PyTuple_GetItem(heads, h);
        j->head[h] = PyBytes_AsString(hb);
        j->head_len[h] = (size_t)PyBytes_Size(hb);
    }
    PyObject *ends = raw ? PyTuple_GetItem(docs, 1) : NULL;
    j->n = PyList_Size(raw ? ends : docs);
    j->d = PyMem_Calloc((size_t)j->n + 1, sizeof *j->d);
    j->c = PyMem_Calloc((size_t)j->n + 1, sizeof *j->c); /* at most a chunk per document */
    if (!j->d || !j->c) {
        Py_DECREF(capsule);
        return PyErr_NoMemory();
    }
    if (raw) { /* the parts, checked: every one inside data, in order */
        PyObject *data = PyTuple_GetItem(docs, 0);
        j->raw = PyBytes_AsString(data);
        size_t at = 0;
        for (Py_ssize_t i = 0; i < j->n; i++) {
            const size_t e = PyLong_AsSize_t(PyList_GetItem(ends, i));
            if (PyErr_Occurred() || e < at || e > (size_t)PyBytes_Size(data) ||
                (i + 1 == j->n && e != (size_t)PyBytes_Size(data))) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "job_new: bad part offsets");
                Py_DECREF(capsule);
                return NULL;
            }
            j->d[i].p = j->raw + at;
            j->d[i].len = e - at;
            at = e;
        }
    }
    for (Py_ssize_t i = 0; i < j->n; i++) j->total += doc_chars(j, i);
    if (threads > j->n) threads = j->n;
    if (PyInterpreterState_GetID(PyInterpreterState_Get()) != 0)
        threads = 1; /* (helpers live in the main interpreter: Py_EndInterpreter wants none) */
    j->threads = j->total < min_total || threads < 2 ? 1 : threads < 1024 ? (int)threads : 1024;
    j->check = j->total >= grow_text;
    j->ahead = 2 * j->threads - 1; /* chunks readied beyond those taken */
    if (j->threads > 1 && step > j->total / (8 * j->threads))
        step = j->total / (8 * j->threads) > 1 ? j->total / (8 * j->threads) : 1;
    /* With helpers, the first chunks (those the main thread readies before it encodes) are a
     * quarter of step: the helpers start sooner. count_batch of 4 KB English documents on 2
     * threads, 1.77-1.83x -> 1.85-1.88x one thread's speed (3 runs, 4 blocks each, alternated).
     * And the last ones shrink with the work left (a quarter of a thread's share of it, an
     * eighth of step at least): the threads end together. */
    Py_ssize_t start = 0, acc = 0, left = j->total;
    for (Py_ssize_t i = 0; i < j->n; i++) {
        acc += doc_chars(j, i);
        Py_ssize_t limit = step;
        if (j->threads > 1 && j->n_chunks < j->ahead)
            limit = step / 4;
        else if (j->threads > 1 && left < 4 * j->threads * step)
            limit = left / (4 * j->threads) > step / 8 ? left / (4 * j->threads) : step / 8;
        if (acc >= limit || i + 1 == j->n) {
            j->c[j->n_chunks].a = start;
            j->c[j->n_chunks++].b = i + 1;
            start = i + 1;
            left -= acc;
            acc = 0;
        }
    }
    if (mode < 2) {
        j->result = PyList_New(j->n);
        if (!j->result) {
            Py_DECREF(capsule);
            return NULL;
        }
    }
    return Py_BuildValue("Ni", capsule, j->threads);
}

/* The n code points at w (none above U+10FFFF) as UTF-8 at out, which has room for 4 n bytes
 * and may be w itself (a code point's UTF-8 is at most its 4 bytes, so what is written never
 * reaches a code point not yet read): its length, or SIZE_MAX where w holds a surrogate (a
 * str's lone one: no UTF-8). A run of ASCII goes 16 characters at a time with SSE2 (8
 * without), the rest one by one as CPython's encoder does. */
static size_t wide_utf8(const uint32_t *w, size_t n, unsigned char *out)
{
    unsigned char *q = out;
    size_t i = 0;
    while (i < n) {
        const uint32_t c = w[i];
        if (c < 0x80) {
            if (n - i >= 4 && (w[i + 1] | w[i + 2] | w[i + 3]) < 0x80) { /* (a run: blocks) */
#ifdef __SSE2__
                while (n - i >= 16) {
                    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(w + i));
                    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(w + i + 4));
                    const __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(w + i + 8));
                    const __m128i f = _mm_loadu_si128((const __m128i *)(const void *)(w + i + 12));
                    const __m128i m = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(e, f));
                    if (_mm_movemask_epi8(_mm_cmpeq_epi32(_mm_srli_epi32(m, 7),
                                                          _mm_setzero_si128())) != 0xFFFF)
                        break;
                    _mm_storeu_si128((__m128i *)(void *)q, _mm_packus_epi16(
                                     _mm_packs_epi32(a, b), _mm_packs_epi32(e, f)));
                    q += 16;
                    i += 16;
                }
#else
                while (n - i >= 8) {
                    uint32_t m = 0;
                    for (int k = 0; k < 8; k++) m |= w[i + k];
                    if (m >= 0x80) break;
                    for (int k = 0; k < 8; k++) q[k] = (unsigned char)w[i + k];
                    q += 8;
                    i += 8;
                }
#endif
            }
            while (i < n && w[i] < 0x80) *q++ = (unsigned char)w[i++];
            continue;
        }
        i++;
        if (c < 0x800) {
            q[0] = (unsigned char)(0xC0 | c >> 6);
            q[1] = (unsigned char)(0x80 | (c & 0x3F));
            q += 2;
        } else if (c < 0x10000) {
            if ((c & 0xF800) == 0xD800) return SIZE_MAX;
            q[0] = (unsigned char)(0xE0 | c >> 12);
            q[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            q[2] = (unsigned char)(0x80 | (c & 0x3F));
            q += 3;
        } else {
            q[0] = (unsigned char)(0xF0 | c >> 18);
            q[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            q[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            q[3] = (unsigned char)(0x80 | (c & 0x3F));
            q += 4;
        }
    }
    return (size_t)(q - out);
}

/* Document s (a str of n characters, 0 < n <= UTF8_MAX) as a new bytes object of its UTF-8,
 * made in the main thread's own scratch memory: its code points (PyUnicode_AsUCS4, a
 * widening copy), then wide_utf8 in place. CPython's UTF-8 encoder takes 0.45 ns a character
 * on English prose (a curly quote in most 4 KB documents) and 0.85 on man pages in 20
 * languages, the GIL held: on 2 threads the main thread's copies took 1.1 ms of count_batch's
 * 1.9 on English, 0.4 ms now. (The code points put in memory that a helper then reads cost
 * 3-4x more to write than in the thread's own: the scratch is the main thread's only.) NULL
 * and no exception where s holds a lone surrogate; NULL with one on an error. */
#define UTF8_MAX ((Py_ssize_t)1 << 20)

static PyObject *utf8_doc(struct job *j, PyObject *s, Py_ssize_t n)
{
    if ((size_t)n > j->ucs_cap) {
        size_t cap = j->ucs_cap ? j->ucs_cap : 1u << 12;
        while (cap < (size_t)n) cap *= 2;
        free(j->ucs);
        j->ucs_cap = (j->ucs = malloc(4 * cap)) != NULL ? cap : 0;
        if (!j->ucs) return PyErr_NoMemory();
    }
    if (!PyUnicode_AsUCS4(s, j->ucs, n, 0)) return NULL;
    unsigned char *const u8 = (unsigned char *)j->ucs;
    const size_t len = wide_utf8(j->ucs, (size_t)n, u8);
    if (len == SIZE_MAX) return NULL;
    return PyBytes_FromStringAndSize((const char *)u8, (Py_ssize_t)len);
}

/* Readies chunk k (the GIL held): each document's UTF-8 (an ASCII str's own bytes, read in
 * place; another's made by utf8_doc). A document holding lone surrogates is left to the caller, which replaces them as
 * tiktoken does. */
static int ready_chunk(struct job *j, Py_ssize_t k)
{
    if (j->raw) return 0; /* (parts of one text: ready from the start) */
    for (Py_ssize_t i = j->c[k].a; i < j->c[k].b; i++) {
        struct doc *d = &j->d[i];
        PyObject *s = PyList_GetItem(j->docs, i);
        if (!s) return -1;
        if (!PyUnicode_Check(s)) {
            PyErr_Format(PyExc_TypeError, "expected str, got %s", Py_TYPE(s) == &PyBytes_Type
                         ? "bytes" : "another type");
            return -1;
        }
        const Py_ssize_t n = PyUnicode_GetLength(s);
        if (n >= ASCII_MIN && ascii_utf8(s, &d->p, &d->len)) {
            Py_INCREF(s); /* (the list may lose it while the GIL is released) */
            d->bytes = s;
            continue;
        }
        PyObject *b = n > 0 && n <= UTF8_MAX ? utf8_doc(j, s, n) : PyUnicode_AsUTF8String(s);
        if (!b) {
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                return -1;
            PyErr_Clear();
            d->flagged = 1;
            continue;
        }
        d->bytes = b;
        d->p = PyBytes_AsString(b);
        d->len = (size_t)PyBytes_Size(b);
    }
    return 0;
}

/* A thread's id buffer for the job (malloc; the core writes where the bound says it may). */
struct buf {
    uint32_t *p;
    size_t cap, w;
};

static int buf_room(struct buf *o, size_t more)
{
    if (o->w + more <= o->cap && o->w + more >= more) return 0;
    size_t cap = o->cap ? o->cap : 1u << 12;
    while (cap < o->w + more) {
        if (cap > SIZE_MAX / 8) return -1;
        cap *= 2;
    }
    uint32_t *p = realloc(o->p, cap * sizeof *p);
    if (!p) return -1;
    o->p = p;
    o->cap = cap;
    return 0;
}

/* The ids in o go to chunk c's own memory, after those already there (-1: no memory); o is
 * empty after, either way (the next chunk's ids start at its beginning). */
static int keep_ids(struct chunk *c, struct buf *o)
{
    int rc = 0;
    if (o->w) {
        uint32_t *p = realloc(c->ids, (c->n_ids + o->w) * sizeof *p);
        if (p) {
            memcpy(p + c->n_ids, o->p, o->w * sizeof *p);
            c->ids = p;
            c->n_ids += o->w;
        } else {
            rc = -1;
        }
    }
    o->w = 0;
    return rc;
}

static void set_state(struct job *j, Py_ssize_t k, int state)
{
    pthread_mutex_lock(&j->mu);
    j->c[k].state = state;
    if (j->waiting) pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Encodes (counts) chunk k from document *at on, without the GIL. 0: done (the chunk DONE);
 * 1: stopped before document *at, the workspace too small (*need: et_ws_size's argument for
 * it), or after it, the piece cache thrashing (*need 0; only when check): the caller grows
 * the workspace and calls again from *at, the chunk still its own. */
static int encode_chunk(struct job *j, Py_ssize_t k, Py_ssize_t *at, void *ws, struct buf *o,
                        int check, size_t *need)
{
    struct chunk *c = &j->c[k];
    int stop = 0;
    for (Py_ssize_t i = *at; i < c->b && !stop; i++) {
        struct doc *d = &j->d[i];
        if (d->flagged) continue;
        const char *p = d->p;
        const size_t len = d->len;
        for (Py_ssize_t h = 0; h < j->n_heads && !d->flagged; h++)
            d->flagged = holds(p, len, j->head[h], j->head_len[h]);
        if (d->flagged) continue;
        size_t n = 0, used = 0;
        int rc;
        if (j->mode == 1) {
            rc = ((count_fn)j->fn)(ws, p, len, j->final, &n, &used);
        } else {
            const size_t bound = j->b0 + j->b1 * len;
            if (bound < len || buf_room(o, bound)) {
                d->flagged = 1; /* (no memory: the caller's path will say so) */
                continue;
            }
            rc = ((encode_fn)j->fn)(ws, p, len, j->final, o->p + o->w, bound, &n, &used);
        }
        if (rc == ET_E_WORKSPACE_ && (*need = j->need(ws)) > 0) {
            *at = i;
            stop = 1;
            break;
        }
        if (rc) {
            d->flagged = 1;
            continue;
        }
        d->count = n;
        if (j->mode != 1) o->w += n;
        if (check) {
            const size_t ev = j->evictions(ws);
            if (ev >= 4 && ev * j->grow_evict > len) {
                *need = 0;
                *at = i + 1;
                stop = 1;
            }
        }
    }
    if (j->mode != 1 && keep_ids(c, o)) /* (no memory: the chunk's documents are redone) */
        for (Py_ssize_t i = c->a; i < c->b; i++) j->d[i].flagged = 1;
    if (stop) return 1; /* (at == b after the last document: the caller grows, then it is DONE) */
    set_state(j, k, CH_DONE);
    return 0;
}

/* The results of chunk k (the GIL held): lists of ids (mode 0), counts (mode 1), its ids to
 * the sink (mode 2); its documents' UTF-8 copies are let go (a batch larger than memory keeps
 * a few chunks' worth). */
static int list_chunk(struct job *j, Py_ssize_t k)
{
    struct chunk *c = &j->c[k];
    size_t at = 0;
    for (Py_ssize_t i = c->a; i < c->b; i++) Py_CLEAR(j->d[i].bytes);
    if (j->mode == 2) {
        if (!c->n_ids) return 0;
        PyObject *mv = PyMemoryView_FromMemory((char *)c->ids, (Py_ssize_t)(c->n_ids * 4),
                                               PyBUF_READ);
        if (!mv) return -1;
        PyObject *r = PyObject_CallFunctionObjArgs(j->sink, mv, NULL);
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb); /* (the sink's error, if any, is the one to raise) */
        PyObject *rel = PyObject_CallMethod(mv, "release", NULL);
        Py_DECREF(mv);
        if (!rel) { /* the sink holds the view (it must not): the ids are left, not freed */
            PyErr_Clear();
            c->ids = NULL;
        }
        Py_XDECREF(rel);
        PyErr_Restore(type, value, tb);
        if (!r) return -1;
        Py_DECREF(r);
        free(c->ids);
        c->ids = NULL;
        return 0;
    }
    if (j->mode == 3) return 0; /* (one list of all ids: made by job_result) */
    for (Py_ssize_t i = c->a; i < c->b; i++) {
        struct doc *d = &j->d[i];
        PyObject *o;
        if (d->flagged) {
            if (j->mode == 1) {
                o = PyLong_FromLong(-1);
            } else {
                Py_INCREF(Py_None);
                o = Py_None;
            }
        } else if (j->mode == 1) {
            o = PyLong_FromSize_t(d->count);
        } else {
            o = ids_list(c->ids + at, d->count);
            at += d->count;
        }
        if (!o) return -1;
        PyList_SetItem(j->result, i, o);
    }
    free(c->ids);
    c->ids = NULL;
    return 0;
}

/* The next chunk to encode, or -1 (none left, or the job cancelled). A helper waits for the
 * main thread to ready one; the main thread does not (wait 0). */
static Py_ssize_t take(struct job *j, int wait)
{
    Py_ssize_t k = -1;
    pthread_mutex_lock(&j->mu);
    while (wait && !j->cancel && j->next >= j->ready && j->ready < j->n_chunks) {
        j->waiting++;
        pthread_cond_wait(&j->cv, &j->mu);
        j->waiting--;
    }
    if (!j->cancel && j->next < j->ready) {
        k = j->next++;
        j->c[k].state = CH_TAKEN;
    }
    pthread_mutex_unlock(&j->mu);
    return k;
}

/* Chunk k's documents from at on are left for the caller; the chunk is done. */
static void give_up(struct job *j, Py_ssize_t k, Py_ssize_t at)
{
    for (Py_ssize_t i = at > j->c[k].a ? at : j->c[k].a; i < j->c[k].b; i++)
        j->d[i].flagged = 1;
    set_state(j, k, CH_DONE);
}

/* A job made before a fork cannot go on in the child (its helpers are gone). */
static PyObject *forked(void)
{
    PyErr_SetString(PyExc_RuntimeError, "edgetok: a batch cannot go on in a forked child");
    return NULL;
}

/* Whether a workspace with a piece cache of `slots` slots (a power of two) stops when the
 * cache thrashes (puts a piece out for more than 1/grow_evict of a document's bytes, after 4
 * evictions): the job's documents hold grow_text characters or more, and Model._grow would
 * give it more slots for them (total / 8, a power of two, at most max_slots). */
static int grows(const struct job *j, Py_ssize_t slots)
{
    return j->check && slots < j->max_slots && j->total / 16 >= slots;
}

/* job_run(job, ws, slots, chunk, at, main): runs the job on this thread with workspace ws
 * (its piece cache of `slots` slots) until nothing is left for it: None. Or (chunk, at, need,
 * total): it stopped in the middle of that chunk, its own, for a larger workspace (need:
 * et_ws_size's argument) or for a larger piece cache (need 0: see grows; total: the job's
 * characters): grow it and call again with that chunk and at. main: this thread
 * readies chunks and makes the results (see above), and returns once no helper is left in
 * the job; the others only encode. An error stops every thread (job_cancel). */
static PyObject *job_run(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    unsigned long long ws_addr;
    int main;
    Py_ssize_t slots;
    Py_ssize_t k, at;
    (void)self;
    if (!PyArg_ParseTuple(args, "OKnnnp", &capsule, &ws_addr, &slots, &k, &at, &main))
        return NULL;
    struct job *j = PyCapsule_GetPointer(capsule, "edgetok.job");
    if (!j) return NULL;
    void *ws = (void *)(uintptr_t)ws_addr;
    if (!ws || k < -1 || k >= j->n_chunks || (k >= 0 && (at < j->c[k].a || at > j->c[k].b ||
                                                         j->c[k].state != CH_TAKEN))) {
        PyErr_SetString(PyExc_ValueError, "job_run: bad arguments");
        return NULL;
    }
    if (j->forks != board.forks) {
        retire(j);
        return forked();
    }
    pthread_mutex_lock(&j->mu);
    const int stopped_before = j->cancel;
    pthread_mutex_unlock(&j->mu);
    if (stopped_before && !main) { /* (a helper back from Python: the job stopped meanwhile) */
        if (k >= 0) give_up(j, k, at);
        Py_RETURN_NONE;
    }
    if (main && !j->posted && j->threads > 1) {
        j->posted = 1;
        pthread_mutex_lock(&board.mu);
        if (board.n < POSTS) {
            j->want = j->threads - 1;
            board.post[board.n++] = j;
            pthread_cond_broadcast(&board.cv);
        }
        pthread_mutex_unlock(&board.mu);
    }
    struct buf o = {NULL, 0, 0};
    size_t need = 0;
    PyObject *res = NULL;
    int stopped = 0;
    const int check = grows(j, slots);
    if (k >= 0) { /* the chunk this thread stopped in */
        Py_BEGIN_ALLOW_THREADS
        stopped = encode_chunk(j, k, &at, ws, &o, check, &need);
        Py_END_ALLOW_THREADS
        if (stopped) goto stop;
    }
    if (!main) {
        Py_BEGIN_ALLOW_THREADS
        while ((k = take(j, 1)) >= 0) {
            at = j->c[k].a;
            if ((stopped = encode_chunk(j, k, &at, ws, &o, check, &need)) != 0) break;
            atomic_fetch_add_explicit(&helped, 1, memory_order_relaxed);
        }
        Py_END_ALLOW_THREADS
        if (stopped) goto stop;
        res = Py_None;
        Py_INCREF(res);
        goto done;
    }
    for (;;) {
        if (PyErr_CheckSignals() < 0) goto fail; /* (Ctrl-C: between chunks) */
        if (j->forks != board.forks) { /* (a signal handler forked: this is the child) */
            retire(j);
            forked();
            goto done;
        }
        pthread_mutex_lock(&j->mu);
        const Py_ssize_t ready = j->ready, next = j->next;
        const int cancelled = j->cancel;
        const int listable = j->listed < j->n_chunks && j->c[j->listed].state == CH_DONE;
        pthread_mutex_unlock(&j->mu);
        if (cancelled) {
            PyErr_SetString(PyExc_RuntimeError, "edgetok: the batch was stopped by an error");
            goto done;
        }
        if (ready < j->n_chunks && ready < next + j->ahead) {
            if (ready_chunk(j, ready) < 0) goto fail;
            pthread_mutex_lock(&j->mu);
            j->ready++;
            if (j->waiting) pthread_cond_broadcast(&j->cv);
            pthread_mutex_unlock(&j->mu);
            continue;
        }
        if (listable) {
            if (list_chunk(j, j->listed) < 0) goto fail;
            j->listed++;
            continue;
        }
        if (j->listed == j->n_chunks) {
            retire(j);
            break;
        }
        if ((k = take(j, 0)) >= 0) {
            at = j->c[k].a;
            Py_BEGIN_ALLOW_THREADS
            stopped = encode_chunk(j, k, &at, ws, &o, check, &need);
            Py_END_ALLOW_THREADS
            if (stopped) goto stop;
            continue;
        }
        Py_BEGIN_ALLOW_THREADS /* every chunk is taken: wait for the next one to list */
        pthread_mutex_lock(&j->mu);
        while (!j->cancel && j->c[j->listed].state != CH_DONE) {
            j->waiting++;
            pthread_cond_wait(&j->cv, &j->mu);
            j->waiting--;
        }
        pthread_mutex_unlock(&j->mu);
        Py_END_ALLOW_THREADS
    }
    res = Py_None;
    Py_INCREF(res);
    goto done;
stop:
    res = Py_BuildValue("nnnn", k, at, (Py_ssize_t)need, j->total);
    goto done;
fail:
    cancel(j);
    retire(j);
done:
    free(o.p);
    return res;
}

/* job_cancel(job, chunk, at): stops the job (every thread's job_run returns, the main one
 * with an error); chunk >= 0: the caller's unfinished chunk, from document at, is given up. */
static PyObject *job_cancel(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    Py_ssize_t k, at;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onn", &capsule, &k, &at)) return NULL;
    struct job *j = PyCapsule_GetPointer(capsule, "edgetok.job");
    if (!j) return NULL;
    if (j->forks == board.forks) { /* (else its locks are not to be touched: board_reset) */
        if (k >= 0 && k < j->n_chunks && j->c[k].state == CH_TAKEN) give_up(j, k, at);
        cancel(j);
    }
    retire(j);
    Py_RETURN_NONE;
}

/* job_serve(key, ws, slots): a helper's loop. Waits for a posted job (the GIL released) and
 * runs those of the model of key with workspace ws (as job_run's) until one needs Python:
 * then (job, model, errors, total, chunk, at, need), chunk -1 for a job of another model
 * with chunks left (nothing done: the caller runs it with job_run and its workspace for that
 * model, and serves that model's from then on), else a stop as job_run's. ws 0: none yet. */
static PyObject *job_serve(PyObject *self, PyObject *args)
{
    unsigned long long key, ws_addr;
    Py_ssize_t slots;
    (void)self;
    if (!PyArg_ParseTuple(args, "KKn", &key, &ws_addr, &slots)) return NULL;
    void *ws = (void *)(uintptr_t)ws_addr;
    for (;;) {
        struct job *j;
        Py_ssize_t k = -1, at = 0;
        size_t need = 0;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            pthread_mutex_lock(&board.mu);
            while (!board.n) pthread_cond_wait(&board.cv, &board.mu);
            j = board.post[0];
            if (--j->want == 0) unpost(j);
            pthread_mutex_lock(&j->mu);
            j->inside++;
            const int left = !j->cancel && j->next < j->n_chunks;
            pthread_mutex_unlock(&j->mu);
            pthread_mutex_unlock(&board.mu);
            if (left && (!ws || j->key != key)) break;
            struct buf o = {NULL, 0, 0};
            int stopped = 0;
            while (left && (k = take(j, 1)) >= 0) {
                at = j->c[k].a;
                if ((stopped = encode_chunk(j, k, &at, ws, &o, grows(j, slots), &need)) != 0)
                    break;
                atomic_fetch_add_explicit(&helped, 1, memory_order_relaxed);
            }
            free(o.p);
            if (stopped) break;
            leave(j);
        }
        Py_END_ALLOW_THREADS
        /* The GIL held, the job (its capsule) is alive unless it is stopped: job_free stops
         * it before it lets go of the GIL to wait for this helper. A stopped one wants
         * nothing more, nor one of another model whose chunks were all taken meanwhile. */
        pthread_mutex_lock(&j->mu);
        const int wanted = !j->cancel && (k >= 0 || j->next < j->n_chunks);
        pthread_mutex_unlock(&j->mu);
        if (wanted) {
            PyObject *capsule = j->capsule;
            Py_INCREF(capsule); /* (before anything allocates: a finalizer could let it go) */
            PyObject *res = Py_BuildValue("OOOnnnn", capsule, j->model,
                                          j->errors ? j->errors : Py_None, j->total, k, at,
                                          (Py_ssize_t)need);
            if (!res && k >= 0) give_up(j, k, at);
            leave(j);
            Py_DECREF(capsule);
            return res;
        }
        leave(j);
    }
}

/* job_helped(): how many chunks the helpers encoded in this process, all jobs together. */
static PyObject *job_helped(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return PyLong_FromUnsignedLongLong(atomic_load_explicit(&helped, memory_order_relaxed));
}

/* job_result(job), after the main thread's job_run returned None: (results, flagged), results
 * a list (mode 0: ids or None per document; mode 1: counts, -1 for a flagged document; mode 3:
 * the ids of all documents but flagged ones, one after another) or, in
 * mode 2, the documents' offsets in the ids given to the sink, a bytearray of n + 1 int64 from
 * 0; flagged the indices of the documents left for the caller. */
static PyObject *job_result(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
    struct job *j = PyCapsule_GetPointer(capsule, "edgetok.job");
    if (!j) return NULL;
    if (j->listed != j->n_chunks) {
        PyErr_SetString(PyExc_RuntimeError, "job_result: the job is not done");
        return NULL;
    }
    PyObject *flagged = PyList_New(0), *result = NULL, *res = NULL;
    if (!flagged) return NULL;
    for (Py_ssize_t i = 0; i < j->n; i++)
        if (j->d[i].flagged) {
            PyObject *o = PyLong_FromSsize_t(i);
            if (!o || PyList_Append(flagged, o) < 0) {
                Py_XDECREF(o);
                goto done;
            }
            Py_DECREF(o);
        }
    if (j->mode == 3) { /* sized once all is known: a list grown part by part was copied */
        Py_ssize_t n = 0;
        for (Py_ssize_t k = 0; k < j->n_chunks; k++) n += (Py_ssize_t)j->c[k].n_ids;
        result = PyList_New(n);
        for (Py_ssize_t k = 0, at = 0; result && k < j->n_chunks; k++) {
            for (size_t t = 0; t < j->c[k].n_ids; t++) {
                PyObject *v = int_of(j->c[k].ids[t]);
                if (!v) {
                    Py_CLEAR(result);
                    break;
                }
                PyList_SetItem(result, at++, v);
            }
            free(j->c[k].ids);
            j->c[k].ids = NULL;
            j->c[k].n_ids = 0;
        }
    } else if (j->mode != 2) {
        Py_INCREF(j->result);
        result = j->result;
    } else if ((result = PyByteArray_FromStringAndSize(NULL, (j->n + 1) * 8)) != NULL) {
        char *op = PyByteArray_AsString(result);
        int64_t end = 0;
        memcpy(op, &end, 8);
        for (Py_ssize_t i = 0; i < j->n; i++) {
            end += j->d[i].flagged ? 0 : (int64_t)j->d[i].count;
            memcpy(op + 8 * (i + 1), &end, 8);
        }
    }
    if (result) res = PyTuple_Pack(2, result, flagged);
done:
    Py_XDECREF(result);
    Py_DECREF(flagged);
    return res;
}

/* one(mode, fn, ws, out, cap, text, heads, b0, b1, final): one text (str, or bytes already in
 * UTF-8) through et_encode (mode 0: the list of ids) or et_count (mode 1: the count), ws the
 * thread's workspace and out its id buffer of cap ids; the GIL is released only for texts long
 * enough to pay for it. None when this quick path cannot say (the caller then takes the
 * general one): a str holding one of heads (see batch) or lone surrogates, ids that might not
 * fit cap, any status but ET_OK (a workspace to grow, an error to raise).
 * A str of ONE_NOGIL_BYTES characters or more is read through the UTF-8 that CPython keeps
 * with it (PyUnicode_AsUTF8AndSize: an ASCII str's own bytes; another's made by the first call
 * and kept as long as the str lives), as tiktoken and the Rust peers read a str: a second
 * count or encode of the same text does not encode it again (2.6 MB of man pages in 20
 * languages, count(): 13.4 -> 8.0 ms, of which CPython's encoder took 2.9 ms and the freeing
 * and mapping again of the copy 1.4). Shorter ones are copied and let go. */
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
        Py_ssize_t n8 = 0;
        if (PyUnicode_GetLength(text) >= ONE_NOGIL_BYTES) { /* the str's own UTF-8 (see above) */
            if (!(p = PyUnicode_AsUTF8AndSize(text, &n8))) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            len = (size_t)n8;
        } else {
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
        if (rc == 0) res = ids_list(out, n);
    }
    Py_XDECREF(owned);
    if (rc != 0 && !res) Py_RETURN_NONE;
    return res;
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
    {"job_new", job_new, METH_VARARGS,
     "job_new(mode, fn, evictions, need, docs, heads, b0, b1, final, chunk, threads, "
     "min_total, grow_text, grow_evict, max_slots, sink, model, key, errors): a batch job"},
    {"job_run", job_run, METH_VARARGS,
     "job_run(job, ws, slots, chunk, at, main): run the job on this thread; None or a stop"},
    {"job_serve", job_serve, METH_VARARGS,
     "job_serve(key, ws, slots): a helper's loop; a job it cannot go on with without Python"},
    {"job_helped", job_helped, METH_NOARGS, "job_helped(): chunks the helpers encoded"},
    {"job_cancel", job_cancel, METH_VARARGS, "job_cancel(job, chunk, at): stop the job"},
    {"job_result", job_result, METH_VARARGS, "job_result(job): (results, flagged)"},
    {"one", one, METH_VARARGS,
     "one(mode, fn, ws, out, cap, text, heads, b0, b1, final): one text's ids or count, or None"},
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
    static int at_fork;
    if (!at_fork++ && pthread_atfork(NULL, NULL, board_reset)) return PyErr_NoMemory();
    if (!str_isascii &&
        !(str_isascii = PyObject_GetAttrString((PyObject *)&PyUnicode_Type, "isascii")))
        return NULL;
    return PyModule_Create(&module);
}
