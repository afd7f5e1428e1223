/* csrc/fuzz: what the libFuzzer targets share. Built by run.sh with
 * clang -fsanitize=fuzzer,address,undefined over the C sources directly. */
#ifndef ET_FUZZ_COMMON_H
#define ET_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/edgetok.h"

/* An invariant: a broken one aborts, and libFuzzer keeps the input as a crash. */
#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);  \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* Memory that libFuzzer's leak checker and ASan see, 8-byte aligned (uint64_t). */
static inline void *fz_alloc(size_t n)
{
    void *p = calloc(n ? (n + 7) / 8 : 1, 8);
    CHECK(p != NULL);
    return p;
}

/* A workspace of model m for pieces of up to n bytes (free with free()). */
static inline et_ws *fz_ws(const et_model *m, size_t n)
{
    size_t size = et_ws_size(n);
    void *mem = fz_alloc(size);
    et_ws *ws = et_ws_init(m, mem, size);
    CHECK(ws != NULL);
    return ws;
}

/* et_encode (count: out NULL) of a complete text, growing the workspace *ws as a binding does
 * after ET_E_WORKSPACE. A BPE model's workspace sized for the text never needs that
 * (et_ws_size: the whole text length is always enough); a SentencePiece model's may. */
static inline int fz_encode(et_ws **ws, const et_model *m, const uint8_t *t, size_t len,
                            uint32_t *out, size_t cap, size_t *n, size_t *used)
{
    for (;;) {
        int rc = out ? et_encode(*ws, (const char *)t, len, ET_FINAL, out, cap, n, used)
                     : et_count(*ws, (const char *)t, len, ET_FINAL, n, used);
        if (rc != ET_E_WORKSPACE) return rc;
        CHECK(et_model_kind(m) != ET_MODEL_BPE);
        size_t need = et_ws_need(*ws);
        free(*ws);
        *ws = fz_ws(m, need);
    }
}

/* Reads a little-endian number from the input, advancing it (0 past its end). */
static inline uint32_t fz_take(const uint8_t **p, size_t *n, unsigned bytes)
{
    uint32_t v = 0;
    for (unsigned k = 0; k < bytes; k++) {
        if (*n) {
            v |= (uint32_t)(*p)[0] << (8 * k);
            (*p)++;
            (*n)--;
        }
    }
    return v;
}

/* Opens the models of ET_FUZZ_MODELS (paths separated by ':'; run.sh makes them with
 * models.py) into models[0..max), verified; exits the fuzzer if it is unset or one fails.
 * Returns how many. */
static inline size_t fz_open_models(const char *target, et_model **models, size_t max)
{
    const char *env = getenv("ET_FUZZ_MODELS");
    if (!env || !*env) {
        fprintf(stderr, "%s: set ET_FUZZ_MODELS to model paths separated by ':'\n", target);
        exit(2);
    }
    size_t n = 0;
    for (const char *p = env; *p && n < max;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *path = fz_alloc(len + 1);
        memcpy(path, p, len);
        int rc = len ? et_model_open(path, ET_LOAD_VERIFY, &models[n]) : ET_OK;
        if (rc) {
            fprintf(stderr, "%s: %s: %s\n", target, path, et_strerror(rc));
            exit(2);
        }
        n += len != 0;
        free(path);
        p += len + (end != NULL);
    }
    return n;
}

#endif
