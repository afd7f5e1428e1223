/* Compiling a BPE vocabulary into an .etok image: sort, build the double-array trie, lay out
 * the sections. Runs once per vocabulary (at package build or `edgetok compile`), so it may
 * allocate freely; it never runs on the encode path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define FREE ET_NONE

typedef struct {
    const uint8_t *bytes;
    const uint32_t *off;
} tokset;

static int tok_cmp(const tokset *ts, uint32_t a, uint32_t b)
{
    size_t la = ts->off[a + 1] - ts->off[a], lb = ts->off[b + 1] - ts->off[b];
    int c = memcmp(ts->bytes + ts->off[a], ts->bytes + ts->off[b], la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

/* Bottom-up merge sort of idx[0..n) by token bytes (qsort has no context argument). */
static int sort_tokens(const tokset *ts, uint32_t *idx, uint32_t n)
{
    uint32_t *tmp = malloc((size_t)n * sizeof *tmp + 1);
    if (!tmp) return ET_E_NOMEM;
    uint32_t *a = idx, *b = tmp;
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) b[k++] = tok_cmp(ts, a[j], a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid) b[k++] = a[i++];
            while (j < hi) b[k++] = a[j++];
        }
        uint32_t *t = a; a = b; b = t;
    }
    if (a != idx) memcpy(idx, a, (size_t)n * sizeof *idx);
    free(tmp);
    return ET_OK;
}

typedef struct {
    uint32_t *base, *check, *value;
    uint32_t *nf;       /* next-free links: nf[i] == i for a free cell, else a cell further on */
    uint32_t cap, used; /* cells allocated; one past the highest used cell */
} dat;

static int dat_grow(dat *d, uint32_t need)
{
    if (need <= d->cap) return ET_OK;
    uint32_t cap = d->cap ? d->cap : 1024;
    while (cap < need) cap = cap * 2;
    uint32_t *b = realloc(d->base, (size_t)cap * 4), *c, *v;
    if (!b) return ET_E_NOMEM;
    d->base = b;
    if (!(c = realloc(d->check, (size_t)cap * 4))) return ET_E_NOMEM;
    d->check = c;
    if (!(v = realloc(d->value, (size_t)cap * 4))) return ET_E_NOMEM;
    d->value = v;
    if (!(v = realloc(d->nf, ((size_t)cap + 1) * 4))) return ET_E_NOMEM;
    d->nf = v;
    for (uint32_t i = d->cap; i < cap; i++) { /* new cells start free */
        d->base[i] = 0;
        d->check[i] = FREE;
        d->value[i] = ET_NONE;
        d->nf[i] = i;
    }
    d->nf[cap] = cap; /* one past the end: a free cell to be */
    d->cap = cap;
    return ET_OK;
}

typedef struct {
    uint32_t cell, lo, hi, depth;
} job;

/* The first free cell >= i (cap when none is allocated yet), halving paths as it goes. */
static uint32_t dat_free_from(dat *d, uint32_t i)
{
    while (d->nf[i] != i) {
        d->nf[i] = d->nf[d->nf[i]];
        i = d->nf[i];
    }
    return i;
}

static void dat_take(dat *d, uint32_t t)
{
    d->nf[t] = t + 1;
}

/* Builds the trie of the sorted tokens idx[0..n) (all distinct). */
static int dat_build(dat *d, const tokset *ts, const uint32_t *idx, const uint32_t *ids,
                     uint32_t n)
{
    job *q = malloc(((size_t)ts->off[n] - ts->off[0] + 2) * sizeof *q); /* at most one job per node */
    if (!q) return ET_E_NOMEM;
    size_t qh = 0, qt = 0;
    int rc = dat_grow(d, 1024);
    if (rc) goto out;
    d->check[0] = FREE - 1; /* the root is used, and is nobody's child */
    dat_take(d, 0);
    d->used = 1;
    q[qt++] = (job){0, 0, n, 0};
    while (qh < qt) {
        job j = q[qh++];
        uint32_t lo = j.lo;
        if (lo == j.hi) continue; /* an empty root: no token at all */
        uint32_t len0 = ts->off[idx[lo] + 1] - ts->off[idx[lo]];
        if (len0 == j.depth) d->value[j.cell] = ids[idx[lo++]];
        if (lo == j.hi) continue;
        /* children: runs of equal byte at this depth */
        uint8_t kids[256];
        uint32_t starts[257], nk = 0;
        for (uint32_t i = lo; i < j.hi; i++) {
            uint8_t c = ts->bytes[ts->off[idx[i]] + j.depth];
            if (nk == 0 || kids[nk - 1] != c) {
                kids[nk] = c;
                starts[nk++] = i;
            }
        }
        starts[nk] = j.hi;
        /* the first base >= 1 whose cells for all children are free: the first child goes
         * only over free cells (next-free links skip the used ones) */
        uint32_t b, t0 = kids[0] + 1u;
        for (;; t0++) {
            if ((rc = dat_grow(d, t0 + 1))) goto out;
            t0 = dat_free_from(d, t0);
            b = t0 - kids[0];
            if ((rc = dat_grow(d, b + 256))) goto out;
            uint32_t k = 1;
            while (k < nk && d->check[b + kids[k]] == FREE) k++;
            if (k == nk) break;
        }
        d->base[j.cell] = b;
        for (uint32_t k = 0; k < nk; k++) {
            uint32_t t = b + kids[k];
            d->check[t] = j.cell;
            dat_take(d, t);
            if (t + 1 > d->used) d->used = t + 1;
            q[qt++] = (job){t, starts[k], starts[k + 1], j.depth + 1};
        }
    }
out:
    free(q);
    return rc;
}

static size_t align64(size_t x) { return (x + 63u) & ~(size_t)63u; }

typedef et_image_extra extra; /* (model.h) */

int et_compile_image(const uint8_t *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                     const uint8_t *sbytes, const uint32_t *soff, const uint32_t *sids,
                     const uint8_t *sadded, uint32_t ns, extra *x, uint8_t **out,
                     size_t *out_len)
{
    const int bpe = x->kind == ET_KIND_BPE;
    uint32_t *fourth = NULL; /* the cells' fourth word, from x->fill */
    int rc = ET_OK;
    uint32_t n_vocab = 0, max_len = 0;
    if (n == 0) return ET_E_VOCAB; /* no ordinary token: nothing could ever be encoded */
    uint32_t byteids[256];
    memset(byteids, 0xFF, sizeof byteids);
    for (uint32_t i = 0; i < n; i++) {
        if (off[i + 1] <= off[i] || ids[i] >= 0x7FFFFFFFu) return ET_E_VOCAB;
        uint32_t l = off[i + 1] - off[i];
        if (l > max_len) max_len = l;
        if (ids[i] + 1 > n_vocab) n_vocab = ids[i] + 1;
        if (bpe && l == 1) byteids[bytes[off[i]]] = ids[i];
    }
    if (!bpe) memcpy(byteids, x->byteids, sizeof byteids);
    for (uint32_t i = 0; i < ns; i++) {
        if (soff[i + 1] <= soff[i] || sids[i] >= 0x7FFFFFFFu) return ET_E_VOCAB;
        uint32_t l = soff[i + 1] - soff[i];
        if (l > max_len) max_len = l;
        if (sids[i] + 1 > n_vocab) n_vocab = sids[i] + 1;
    }
    if ((uint64_t)n_vocab > (uint64_t)n + ns + ET_MAX_UNUSED_IDS)
        return ET_E_VOCAB; /* tables per id: a crafted id 2^31 - 2 would ask for 40 GiB */
    uint32_t gaps = 0; /* BPE: bytes with no token of their own are dropped when encoding */
    for (int b = 0; bpe && b < 256; b++)
        if (byteids[b] == ET_NONE) gaps = ET_FLAG_GAPS;

    uint32_t *tokoff = calloc((size_t)n_vocab + 1, 4), *idx = malloc((size_t)n * 4 + 4);
    dat d = {0};
    uint8_t *img = NULL;
    if (!tokoff || !idx) { rc = ET_E_NOMEM; goto done; }
    /* lengths per id (rejecting duplicate ids), then prefix sums */
    for (uint32_t i = 0; i < n + ns; i++) {
        uint32_t id = i < n ? ids[i] : sids[i - n];
        uint32_t l = i < n ? off[i + 1] - off[i] : soff[i - n + 1] - soff[i - n];
        if (tokoff[id + 1]) { rc = ET_E_VOCAB; goto done; }
        tokoff[id + 1] = l;
    }
    for (uint32_t i = 0; i < n_vocab; i++) {
        if ((uint64_t)tokoff[i] + tokoff[i + 1] > 0xFFFFFFFFu) { rc = ET_E_VOCAB; goto done; }
        tokoff[i + 1] += tokoff[i];
    }
    size_t blob_size = tokoff[n_vocab];

    /* the trie: over the tokens, or over the family's own keys */
    const uint32_t nk = x->nk ? x->nk : n, *kids = x->nk ? x->kids : ids;
    tokset ts = {x->nk ? x->kbytes : bytes, x->nk ? x->koff : off};
    if (x->nk) {
        free(idx);
        if (!(idx = malloc((size_t)nk * 4 + 4))) { rc = ET_E_NOMEM; goto done; }
    }
    for (uint32_t i = 0; i < nk; i++) idx[i] = i;
    if ((rc = sort_tokens(&ts, idx, nk))) goto done;
    for (uint32_t i = 1; i < nk; i++)
        if (tok_cmp(&ts, idx[i - 1], idx[i]) == 0) { rc = ET_E_VOCAB; goto done; }
    if ((rc = dat_build(&d, &ts, idx, kids, nk))) goto done;
    if (d.used > ET_MAX_CELLS) { rc = ET_E_VOCAB; goto done; }
    if (x->fill) {
        if (!(fourth = malloc((size_t)d.used * 4 + 4))) { rc = ET_E_NOMEM; goto done; }
        if ((rc = x->fill(x->ctx, x, d.base, d.check, d.value, d.used, fourth))) goto done;
    }

    size_t plen = x->pattern ? strlen(x->pattern) + 1 : 0;
    const size_t cw = bpe ? ET_BPE_CELL : ET_UNI_CELL; /* words per cell */
    size_t sz[ET_NSEC] = {(size_t)d.used * cw * 4, 0, ((size_t)n_vocab + 1) * 4,
                          blob_size, (size_t)ns * 4, 256 * 4, plen};
    if (bpe) {
        sz[ET_SEC_SPLIT] = (size_t)n_vocab * 8;
        sz[ET_SEC_PREFIX] = sz[ET_SEC_TNODE] = (size_t)n_vocab * 4;
    }
    for (int k = ET_SEC_SCORES; k < ET_NSEC; k++) sz[k] = x->size[k];
    et_header h;
    memset(&h, 0, sizeof h);
    size_t pos = align64(sizeof h);
    for (int k = 0; k < ET_NSEC; k++) {
        h.sec[k].off = pos;
        h.sec[k].size = sz[k];
        pos = align64(pos + sz[k]);
    }
    img = calloc(1, pos);
    if (!img) { rc = ET_E_NOMEM; goto done; }
    memcpy(h.magic, "EDGETOK", 8);
    h.version = ET_FORMAT_VERSION;
    h.header_size = sizeof h;
    h.file_size = pos;
    h.kind = x->kind;
    h.pretok = x->pretok;
    h.pretok_param = x->pretok_param;
    h.n_vocab = n_vocab;
    h.n_cells = d.used;
    h.n_specials = ns;
    h.max_token_len = max_len;
    uint32_t *cells = (uint32_t *)(img + h.sec[ET_SEC_CELLS].off);
    for (uint32_t i = 0; i < d.used; i++) {
        cells[cw * i] = d.base[i];
        cells[cw * i + 1] = d.check[i];
        cells[cw * i + 2] = d.value[i];
        if (fourth) {
            cells[cw * i + 3] = fourth[i];
        } else if (!bpe) { /* the piece's score beside it: Viterbi reads one cache line a step */
            const float *scores = x->data[ET_SEC_SCORES];
            const float sc = d.value[i] < n_vocab ? scores[d.value[i]] : NAN;
            memcpy(&cells[cw * i + 3], &sc, 4);
        }
    }
    memcpy(img + h.sec[ET_SEC_TOKOFF].off, tokoff, sz[ET_SEC_TOKOFF]);
    uint8_t *blob = img + h.sec[ET_SEC_BLOB].off;
    for (uint32_t i = 0; i < n; i++)
        memcpy(blob + tokoff[ids[i]], bytes + off[i], off[i + 1] - off[i]);
    for (uint32_t i = 0; i < ns; i++) {
        memcpy(blob + tokoff[sids[i]], sbytes + soff[i], soff[i + 1] - soff[i]);
        uint32_t v = sids[i] | (sadded && sadded[i] ? ET_SPECIAL_ADDED : 0u);
        memcpy(img + h.sec[ET_SEC_SPECIALS].off + 4 * (size_t)i, &v, 4);
    }
    memcpy(img + h.sec[ET_SEC_BYTEIDS].off, byteids, sizeof byteids);
    if (plen) memcpy(img + h.sec[ET_SEC_PATTERN].off, x->pattern, plen);
    for (int k = ET_SEC_SCORES; k < ET_NSEC; k++)
        if (sz[k]) memcpy(img + h.sec[k].off, x->data[k], sz[k]);
    h.checksum = 0;
    h.flags = gaps; /* the tables below skip tokens holding a dropped byte */
    memcpy(img, &h, sizeof h);
    if (bpe) {   /* the backtracking encoder's tables, computed with the model as laid out so far */
        et_model *m = NULL;
        /* the loader refuses it: fewer than 256 ids without a token for every byte */
        if (et_model_from_buffer(img, pos, 0, &m)) { rc = ET_E_VOCAB; goto done; }
        int ok = et_bpe_tables(m, (uint32_t *)(img + h.sec[ET_SEC_SPLIT].off),
                               (uint32_t *)(img + h.sec[ET_SEC_PREFIX].off),
                               (uint32_t *)(img + h.sec[ET_SEC_TNODE].off));
        et_model_close(m);
        if (ok < 0) { rc = ET_E_NOMEM; goto done; }
        h.flags = x->flags | gaps | (uint32_t)ok; /* ET_FLAG_BACKTRACK, ET_FLAG_WHOLE or 0 */
        memcpy(img, &h, sizeof h);
    }
    h.checksum = et_image_checksum(img, pos);
    memcpy(img, &h, sizeof h);
    *out = img;
    *out_len = pos;
    img = NULL;
done:
    free(fourth);
    free(tokoff);
    free(idx);
    free(d.base);
    free(d.check);
    free(d.value);
    free(d.nf);
    free(img);
    return rc;
}

int et_compile_bpe(const char *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                   const char *sbytes, const uint32_t *soff, const uint32_t *sids,
                   const uint8_t *sadded, uint32_t ns, uint32_t pretok, uint32_t pretok_param,
                   uint32_t flags, const char *pattern, uint8_t **out, size_t *out_len)
{
    if (!out || !out_len || !pattern || (n && (!bytes || !off || !ids)) ||
        (ns && (!sbytes || !soff || !sids)) || n > 0x7FFFFFFFu)
        return ET_E_ARG;
    if (pretok < ET_PRETOK_CL100K || pretok > ET_PRETOK_REGEX || (flags & ~ET_COMPILE_NFC))
        return ET_E_ARG;
    if ((pretok == ET_PRETOK_CL100K || pretok == ET_PRETOK_LLAMA3) &&
        (pretok_param < 1 || pretok_param > 9))
        return ET_E_ARG;
    if (pretok == ET_PRETOK_GPT2 && pretok_param > 1) return ET_E_ARG;
    extra x = {ET_KIND_BPE, pretok, pretok_param, flags & ET_COMPILE_NFC ? ET_FLAG_NFC : 0u,
               pattern, NULL, {0}, {0}, NULL, NULL, NULL, 0, NULL, NULL};
    return et_compile_image((const uint8_t *)bytes, off, ids, n, (const uint8_t *)sbytes, soff,
                            sids, sadded, ns, &x, out, out_len);
}

int et_compile_unigram(const char *bytes, const uint32_t *off, uint32_t n, const float *scores,
                       const uint8_t *types, const char *charsmap, size_t charsmap_len,
                       uint32_t flags, uint32_t unk_id, uint32_t bos_id, uint32_t eos_id,
                       const char *unk_surface, uint8_t **out, size_t *out_len)
{
    if (!out || !out_len || !n || !bytes || !off || !scores || !types || !unk_surface ||
        (charsmap_len && !charsmap) || n > 0x7FFFFFFFu || unk_id >= n ||
        (bos_id != ET_NONE && bos_id >= n) || (eos_id != ET_NONE && eos_id >= n))
        return ET_E_ARG;
    /* trie pieces (normal, user-defined, unused) and the rest ("specials"), by id */
    uint32_t *ids = malloc((size_t)n * 4), *tb = malloc((size_t)n * 4 + 4),
             *sids = malloc((size_t)n * 4), *sb = malloc((size_t)n * 4 + 4);
    uint32_t nt = 0, ns = 0, byteids[256];
    int rc = ET_OK;
    if (!ids || !tb || !sids || !sb) { rc = ET_E_NOMEM; goto out; }
    memset(byteids, 0xFF, sizeof byteids);
    et_uparam up = {unk_id, flags, 3.402823466e+38f, -3.402823466e+38f, {0, 0, 0, 0}, bos_id, eos_id,
                    et_charsmap_expansion((const uint8_t *)charsmap, charsmap_len)};
    if (!up.expand) { rc = ET_E_NOMEM; goto out; }
    for (unsigned c = 0; c < 128; c++)
        if (et_charsmap_ascii_rule((const uint8_t *)charsmap, charsmap_len, (uint8_t)c))
            up.ascii_rules[c >> 5] |= 1u << (c & 31);
    /* piece bytes are passed through as offsets into the caller's buffer */
    tb[0] = sb[0] = 0;
    uint32_t *toff = malloc(((size_t)n + 1) * 4), *soff = malloc(((size_t)n + 1) * 4);
    char *tbytes = malloc((size_t)off[n] + 1), *sbytes = malloc((size_t)off[n] + 1);
    if (!toff || !soff || !tbytes || !sbytes) {
        free(toff); free(soff); free(tbytes); free(sbytes);
        rc = ET_E_NOMEM;
        goto out;
    }
    toff[0] = soff[0] = 0;
    int words = (flags & ET_SP_ESCAPE_WS) && !(flags & ET_SP_WS_SUFFIX);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = off[i + 1] - off[i];
        if (off[i + 1] < off[i] || l == 0) { rc = ET_E_VOCAB; break; }
        int t = types[i];
        if (t == ET_SP_USER_DEFINED) up.flags |= ET_SP_HAS_USER;
        if (t == ET_SP_UNUSED && (flags & ET_SP_BPE)) words = 0;
        if (words && (t == ET_SP_NORMAL || t == ET_SP_USER_DEFINED)) {
            const uint8_t *p = (const uint8_t *)bytes + off[i];
            uint32_t k = 0;
            while (k + 3 <= l && memcmp(p + k, "\xE2\x96\x81", 3) == 0) k += 3;
            for (; words && k + 3 <= l; k++) /* U+2581 after something else */
                if (memcmp(p + k, "\xE2\x96\x81", 3) == 0) words = 0;
        }
        if (t == ET_SP_NORMAL) {
            if (scores[i] < up.min_score) up.min_score = scores[i];
            if (scores[i] > up.max_score) up.max_score = scores[i];
        }
        if (t == ET_SP_NORMAL || t == ET_SP_USER_DEFINED || t == ET_SP_UNUSED) {
            memcpy(tbytes + toff[nt], bytes + off[i], l);
            toff[nt + 1] = toff[nt] + l;
            ids[nt++] = i;
        } else {
            memcpy(sbytes + soff[ns], bytes + off[i], l);
            soff[ns + 1] = soff[ns] + l;
            sids[ns++] = i;
            unsigned v;
            if (t == ET_SP_BYTE && l == 6 && memcmp(bytes + off[i], "<0x", 3) == 0 &&
                bytes[off[i] + 5] == '>') {
                char hex[3] = {bytes[off[i] + 3], bytes[off[i] + 4], 0};
                char *end;
                v = (unsigned)strtoul(hex, &end, 16);
                if (*end == 0 && v < 256) byteids[v] = i;
            }
        }
    }
    if (words && ((flags & ET_SP_BPE) || !(up.flags & ET_SP_HAS_USER))) up.flags |= ET_SP_WORDS;
    /* Unigram: SCORES holds what a piece adds to a Viterbi path (see model.h) */
    float *vs = NULL;
    if (rc == ET_OK && !(flags & ET_SP_BPE)) {
        if (!(vs = malloc((size_t)n * sizeof *vs))) rc = ET_E_NOMEM;
        for (uint32_t i = 0; vs && i < n; i++) {
            if (types[i] == ET_SP_UNUSED)
                vs[i] = NAN;
            else if (types[i] == ET_SP_USER_DEFINED) /* sentencepiece 0.2.3's bonus */
                vs[i] = (float)(0.1 * (double)(off[i + 1] - off[i] - 1));
            else if (types[i] == ET_SP_NORMAL && !(scores[i] - scores[i] == 0.0f))
                rc = ET_E_ARG; /* a NaN or infinite score: sentencepiece refuses it too */
            else
                vs[i] = scores[i];
        }
    }
    if (rc == ET_OK) {
        extra x = {ET_KIND_UNIGRAM, ET_PRETOK_NONE, 0, 0, unk_surface, byteids, {0}, {0},
                   NULL, NULL, NULL, 0, NULL, NULL};
        x.data[ET_SEC_SCORES] = vs ? vs : scores;
        x.size[ET_SEC_SCORES] = (size_t)n * 4;
        x.data[ET_SEC_TYPES] = types;
        x.size[ET_SEC_TYPES] = n;
        x.data[ET_SEC_UPARAM] = &up;
        x.size[ET_SEC_UPARAM] = sizeof up;
        x.data[ET_SEC_CHARSMAP] = charsmap;
        x.size[ET_SEC_CHARSMAP] = charsmap_len;
        rc = et_compile_image((const uint8_t *)tbytes, toff, ids, nt, (const uint8_t *)sbytes,
                              soff, sids, NULL, ns, &x, out, out_len);
    }
    free(toff); free(soff); free(tbytes); free(sbytes); free(vs);
out:
    free(ids); free(tb); free(sids); free(sb);
    return rc;
}
