/* Compiling a WordPiece vocabulary: the trie of the tokens (as spelled, and the continuation
 * tokens again without their prefix under the byte 0xFF), then LinMaxMatch's failure links and
 * failure pops for every cell (Song et al. 2021), by running MaxMatch on the cell's string:
 * at cell v (string w, a word start or a continuation), when the next byte has no child,
 * MaxMatch takes the longest token that w starts with (a continuation token must cover one
 * byte of w at least), then goes on with the rest of w as a continuation; the tokens taken
 * until the rest is a cell of the continuation trie are v's pops, that cell its failure link
 * (ET_NONE where no token fits: the word is [UNK]). Compile time only: allocates freely. */
#include <stdlib.h>
#include <string.h>

#include "../model/model.h"

#define CONT_BYTE 0xFFu /* no UTF-8 text holds it */

typedef struct {
    uint32_t *popoff, *pops;
    size_t n_pops, cap_pops;
    et_wparam *wp;
} wp_fill;

static inline uint32_t child(const uint32_t *base, const uint32_t *check, uint32_t n, uint32_t s,
                             uint8_t c)
{
    uint32_t t = base[s] + c;
    return t < n && check[t] == s ? t : ET_NONE;
}

static int push_pop(wp_fill *w, uint32_t id)
{
    if (w->n_pops == w->cap_pops) {
        size_t cap = w->cap_pops ? 2 * w->cap_pops : 4096;
        if (cap > 0x3FFFFFFFu) return ET_E_VOCAB;
        uint32_t *p = realloc(w->pops, cap * 4);
        if (!p) return ET_E_NOMEM;
        w->pops = p;
        w->cap_pops = cap;
    }
    w->pops[w->n_pops++] = id;
    return ET_OK;
}

static int fill(void *ctx, et_image_extra *x, const uint32_t *base, const uint32_t *check,
                const uint32_t *value, uint32_t n, uint32_t *fail)
{
    wp_fill *w = ctx;
    const uint32_t cont = child(base, check, n, 0, CONT_BYTE);
    if (cont == ET_NONE) return ET_E_VOCAB;
    w->wp->cont = cont;
    if (!(w->popoff = malloc(((size_t)n + 1) * 4))) return ET_E_NOMEM;
    uint32_t depth_max = 0;
    for (uint32_t v = 1; v < n; v++) { /* the deepest cell: a buffer for its string */
        if (check[v] == ET_NONE) continue;
        uint32_t d = 0;
        for (uint32_t p = v; p != 0 && d <= n; p = check[p]) d++;
        if (d > depth_max) depth_max = d;
    }
    uint8_t *str = malloc((size_t)depth_max + 1);
    if (!str) return ET_E_NOMEM;
    int rc = ET_OK;
    for (uint32_t v = 0; v < n && rc == ET_OK; v++) {
        w->popoff[v] = (uint32_t)w->n_pops;
        fail[v] = ET_NONE;
        if (v == 0 || v == cont || check[v] == ET_NONE) continue;
        uint32_t len = 0;
        for (uint32_t p = v; p != 0; p = check[p]) str[len++] = (uint8_t)(p - base[check[p]]);
        for (uint32_t i = 0; i < len / 2; i++) { /* root first */
            uint8_t c = str[i];
            str[i] = str[len - 1 - i];
            str[len - 1 - i] = c;
        }
        /* MaxMatch on str[at..len) from root r: the longest token, then the rest as a
         * continuation, until the rest is a cell */
        uint32_t at = 0, r = 0, f = ET_NONE;
        if (str[0] == CONT_BYTE) {
            at = 1;
            r = cont;
        }
        for (;;) {
            uint32_t s = r, best = ET_NONE, best_end = 0;
            for (uint32_t i = at; i < len && s != ET_NONE; i++) {
                s = child(base, check, n, s, str[i]);
                if (s != ET_NONE && value[s] != ET_NONE) {
                    best = value[s];
                    best_end = i + 1;
                }
            }
            if (best == ET_NONE) break; /* no token fits: [UNK] */
            if ((rc = push_pop(w, best))) break;
            at = best_end;
            r = cont;
            s = cont;
            for (uint32_t i = at; i < len && s != ET_NONE; i++) s = child(base, check, n, s, str[i]);
            if (s != ET_NONE) {
                f = s;
                break;
            }
        }
        if (f == ET_NONE) w->n_pops = w->popoff[v];
        fail[v] = f;
    }
    free(str);
    if (rc) return rc;
    w->popoff[n] = (uint32_t)w->n_pops;
    x->data[ET_SEC_POPOFF] = w->popoff;
    x->size[ET_SEC_POPOFF] = ((size_t)n + 1) * 4;
    x->data[ET_SEC_POPS] = w->pops;
    x->size[ET_SEC_POPS] = w->n_pops * 4;
    return ET_OK;
}

int et_compile_wordpiece(const char *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                         const char *sbytes, const uint32_t *soff, const uint32_t *sids,
                         uint32_t ns, const char *prefix, uint32_t unk_id, uint32_t cls_id,
                         uint32_t sep_id, uint32_t max_chars, uint32_t flags, uint8_t **out,
                         size_t *out_len)
{
    if (!out || !out_len || !prefix || !n || !bytes || !off || !ids || n > 0x3FFFFFFFu ||
        (ns && (!sbytes || !soff || !sids)) || (flags & ~ET_WP_FLAGS))
        return ET_E_ARG;
    const size_t pl = strlen(prefix);
    uint32_t nk = 1, kb = 1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = off[i + 1] - off[i];
        if (off[i + 1] <= off[i] || (uint8_t)bytes[off[i]] == CONT_BYTE) return ET_E_VOCAB;
        nk++;
        kb += l;
        if (l > pl && memcmp(bytes + off[i], prefix, pl) == 0) {
            nk++;
            kb += l - (uint32_t)pl + 1;
        }
    }
    uint8_t *kbytes = malloc(kb);
    uint32_t *koff = malloc(((size_t)nk + 1) * 4), *kids = malloc((size_t)nk * 4);
    wp_fill w = {NULL, NULL, 0, 0, NULL};
    et_wparam wp = {unk_id, cls_id, sep_id, flags, max_chars, 0, (uint32_t)pl};
    w.wp = &wp;
    int rc = ET_OK;
    if (!kbytes || !koff || !kids) {
        rc = ET_E_NOMEM;
        goto out;
    }
    uint32_t k = 0, at = 0;
    koff[0] = 0;
    kbytes[at++] = CONT_BYTE; /* the continuation root, always there */
    kids[k++] = ET_NONE;
    koff[k] = at;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = off[i + 1] - off[i];
        memcpy(kbytes + at, bytes + off[i], l);
        at += l;
        kids[k++] = ids[i];
        koff[k] = at;
        if (l > pl && memcmp(bytes + off[i], prefix, pl) == 0) {
            kbytes[at++] = CONT_BYTE;
            memcpy(kbytes + at, bytes + off[i] + pl, l - pl);
            at += l - (uint32_t)pl;
            kids[k++] = ids[i];
            koff[k] = at;
        }
    }
    uint32_t byteids[256];
    memset(byteids, 0xFF, sizeof byteids);
    et_image_extra x = {ET_KIND_WORDPIECE, ET_PRETOK_NONE, 0, 0, NULL, byteids, {0}, {0},
                        kbytes, koff, kids, nk, fill, &w};
    x.data[ET_SEC_UPARAM] = &wp;
    x.size[ET_SEC_UPARAM] = sizeof wp;
    rc = et_compile_image((const uint8_t *)bytes, off, ids, n, (const uint8_t *)sbytes, soff,
                          sids, NULL, ns, &x, out, out_len);
    if (rc == ET_OK) { /* the loader checks what the image says against these */
        et_model *m = NULL;
        if (et_model_from_buffer(*out, *out_len, 0, &m) != ET_OK ||
            (unk_id >= m->n_vocab) || (cls_id != ET_NONE && cls_id >= m->n_vocab) ||
            (sep_id != ET_NONE && sep_id >= m->n_vocab)) {
            free(*out);
            *out = NULL;
            rc = ET_E_VOCAB;
        }
        et_model_close(m);
    }
out:
    free(kbytes);
    free(koff);
    free(kids);
    free(w.popoff);
    free(w.pops);
    return rc;
}
