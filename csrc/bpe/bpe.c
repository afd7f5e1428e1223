/* csrc/bpe: exact byte-pair encoding with tiktoken's semantics, and the encode loop.
 *
 * A piece (from the pretokenizer) that is itself a token is one trie walk. Otherwise the
 * piece starts as single bytes and the adjacent pair whose concatenation has the lowest rank
 * (the leftmost among equals) is merged until no pair is a token -- exactly tiktoken's
 * byte_pair_merge. The rank of a pair is found by walking the trie from the left part's cell
 * over the right part's bytes. Short pieces use tiktoken's array scan; long ones a binary heap
 * with lazy deletion (O(n log n)), which merges in the same order. All scratch memory is the
 * caller's workspace.
 */
#include <string.h>

#include "../model/model.h"
#include "../pretok/cl100k.h"

#define SMALL_PIECE 64u  /* pieces up to this many bytes use the array scan */
#define WS_PER_BYTE 48u  /* workspace bytes per piece byte (see heap_merge) */
#define WS_MIN_PIECE 256u

struct et_ws {
    const et_model *m;
    size_t cap;  /* longest piece the workspace can merge */
    size_t need; /* set with ET_E_WORKSPACE */
    uint64_t *mem;
};

size_t et_ws_size(size_t max_piece)
{
    if (max_piece < WS_MIN_PIECE) max_piece = WS_MIN_PIECE;
    if (max_piece > (SIZE_MAX - 256) / WS_PER_BYTE - 1) return SIZE_MAX;
    return ((sizeof(struct et_ws) + 7u) & ~(size_t)7u) + WS_PER_BYTE * (max_piece + 1);
}

et_ws *et_ws_init(const et_model *m, void *mem, size_t size)
{
    size_t head = (sizeof(struct et_ws) + 7u) & ~(size_t)7u;
    if (!m || !mem || ((uintptr_t)mem & 7u) || size < et_ws_size(0)) return NULL;
    et_ws *ws = mem;
    ws->m = m;
    ws->cap = (size - head) / WS_PER_BYTE - 1;
    if (ws->cap > 0xFFFFFFF0u) ws->cap = 0xFFFFFFF0u; /* positions are 32-bit */
    ws->need = 0;
    ws->mem = (uint64_t *)((uint8_t *)mem + head);
    return ws;
}

size_t et_ws_need(const et_ws *ws) { return ws->need; }

/* tiktoken's byte_pair_merge for a short piece p[0..n), n >= 2. Returns the part count; the
 * ids are left in ids[0..count). */
static size_t small_merge(const et_model *m, const uint8_t *p, uint32_t n, uint64_t *mem,
                          uint32_t *ids)
{
    uint32_t *bnd = (uint32_t *)mem, *node = bnd + n + 1, *pnode = node + n, *rank = pnode + n;
    for (uint32_t i = 0; i <= n; i++) bnd[i] = i;
    for (uint32_t i = 0; i < n; i++) node[i] = et_trie_next(m, 0, p[i]); /* never ET_NONE */
    for (uint32_t i = 0; i + 1 < n; i++) {
        pnode[i] = et_trie_next(m, node[i], p[i + 1]);
        rank[i] = pnode[i] == ET_NONE ? ET_NONE : m->values[pnode[i]];
    }
    uint32_t parts = n;
    rank[parts - 1] = ET_NONE;
    for (;;) {
        uint32_t best = ET_NONE, k = 0;
        for (uint32_t i = 0; i + 1 < parts; i++)
            if (rank[i] < best) { best = rank[i]; k = i; }
        if (best == ET_NONE) break;
        node[k] = pnode[k];
        parts--;
        memmove(bnd + k + 1, bnd + k + 2, (parts - k) * sizeof *bnd);
        memmove(node + k + 1, node + k + 2, (parts - k - 1) * sizeof *node);
        memmove(pnode + k + 1, pnode + k + 2, (parts - k - 1) * sizeof *pnode);
        memmove(rank + k + 1, rank + k + 2, (parts - k - 1) * sizeof *rank);
        rank[parts - 1] = ET_NONE;
        for (uint32_t i = k ? k - 1 : 0; i <= k && i + 1 < parts; i++) {
            pnode[i] = et_trie_walk(m, node[i], p + bnd[i + 1], bnd[i + 2] - bnd[i + 1]);
            rank[i] = pnode[i] == ET_NONE ? ET_NONE : m->values[pnode[i]];
        }
    }
    for (uint32_t i = 0; i < parts; i++) ids[i] = m->values[node[i]];
    return parts;
}

/* Min-heap of (rank << 32 | position): pops the lowest rank, leftmost first. */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (h[up] <= v) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--(*n)];
    size_t i = 0, len = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= len) break;
        if (c + 1 < len && h[c + 1] < h[c]) c++;
        if (v <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    if (len) h[i] = v;
    return top;
}

/* The same merge order as small_merge for a long piece, in O(n log n). Parts are named by
 * their start offset; nx/pv link live parts, rank[i]/pnode[i] describe the pair (i, nx[i]).
 * Memory: 5 x 4 bytes per byte for the arrays, up to 3 heap entries (8 bytes) per byte. */
static size_t heap_merge(const et_model *m, const uint8_t *p, uint32_t n, uint64_t *mem,
                         uint32_t *ids)
{
    uint64_t *heap = mem;
    uint32_t *nx = (uint32_t *)(mem + 3 * (size_t)n), *pv = nx + n, *node = pv + n,
             *pnode = node + n, *rank = pnode + n;
    size_t hn = 0;
    for (uint32_t i = 0; i < n; i++) {
        nx[i] = i + 1;
        pv[i] = i - 1;
        node[i] = et_trie_next(m, 0, p[i]);
    }
    for (uint32_t i = 0; i < n; i++) {
        pnode[i] = i + 1 < n ? et_trie_next(m, node[i], p[i + 1]) : ET_NONE;
        rank[i] = pnode[i] == ET_NONE ? ET_NONE : m->values[pnode[i]];
        if (rank[i] != ET_NONE) heap_push(heap, &hn, (uint64_t)rank[i] << 32 | i);
    }
    while (hn) {
        uint64_t top = heap_pop(heap, &hn);
        uint32_t r = (uint32_t)(top >> 32), i = (uint32_t)top;
        if (rank[i] != r) continue; /* stale: the pair changed since it was pushed */
        uint32_t j = nx[i];
        node[i] = pnode[i];
        nx[i] = nx[j];
        if (nx[j] < n) pv[nx[j]] = i;
        rank[j] = ET_NONE; /* j is gone */
        uint32_t k = nx[i];
        pnode[i] = k < n ? et_trie_walk(m, node[i], p + k, nx[k] - k) : ET_NONE;
        rank[i] = pnode[i] == ET_NONE ? ET_NONE : m->values[pnode[i]];
        if (rank[i] != ET_NONE) heap_push(heap, &hn, (uint64_t)rank[i] << 32 | i);
        if (i > 0) {
            uint32_t h = pv[i];
            pnode[h] = et_trie_walk(m, node[h], p + i, nx[i] - i);
            rank[h] = pnode[h] == ET_NONE ? ET_NONE : m->values[pnode[h]];
            if (rank[h] != ET_NONE) heap_push(heap, &hn, (uint64_t)rank[h] << 32 | h);
        }
    }
    size_t c = 0;
    for (uint32_t i = 0; i < n; i = nx[i]) ids[c++] = m->values[node[i]];
    return c;
}

/* The encode loop behind et_encode and et_count (out == NULL counts only). */
static int run(et_ws *ws, const uint8_t *t, size_t len, unsigned flags, uint32_t *out,
               size_t cap, size_t *n_out, size_t *consumed)
{
    const et_model *m = ws->m;
    const unsigned maxdig = m->pretok_param, final = flags & ET_FINAL;
    size_t i = 0, n = 0, cut = 0, cut_n = 0;
    int rc = ET_OK;
    uint32_t one;
    while (i < len) {
        size_t e = et_cl100k_next(t, len, i, maxdig), plen = e - i;
        if (!final) {
            if (e == len) break; /* the last piece may still grow */
            if (i > 0 && et_cl100k_safe_cut(t, len, i)) {
                cut = i;
                cut_n = n;
            }
        }
        const uint32_t *ids = &one;
        size_t k = 1;
        uint32_t node = et_trie_walk(m, 0, t + i, plen);
        if (node != ET_NONE && m->values[node] != ET_NONE) {
            one = m->values[node];
        } else {
            if (plen > ws->cap) {
                ws->need = plen;
                rc = ET_E_WORKSPACE;
                break;
            }
            /* the ids go after the merge arrays (44 bytes per piece byte, see heap_merge) */
            uint32_t *tmp = (uint32_t *)((uint8_t *)ws->mem + 44u * (ws->cap + 1));
            k = plen <= SMALL_PIECE ? small_merge(m, t + i, (uint32_t)plen, ws->mem, tmp)
                                    : heap_merge(m, t + i, (uint32_t)plen, ws->mem, tmp);
            ids = tmp;
        }
        if (out) {
            if (k > cap - n) {
                rc = ET_E_FULL;
                break;
            }
            memcpy(out + n, ids, k * sizeof *ids);
        }
        n += k;
        i = e;
    }
    *consumed = final ? i : cut;
    *n_out = final ? n : cut_n;
    return rc;
}

int et_encode(et_ws *ws, const char *text, size_t len, unsigned flags, uint32_t *out,
              size_t cap, size_t *n_out, size_t *consumed)
{
    if (!ws || (!text && len) || (!out && cap) || !n_out || !consumed) return ET_E_ARG;
    uint32_t none;
    return run(ws, (const uint8_t *)text, len, flags, out ? out : &none, cap, n_out, consumed);
}

int et_count(et_ws *ws, const char *text, size_t len, unsigned flags, size_t *count,
             size_t *consumed)
{
    if (!ws || (!text && len) || !count || !consumed) return ET_E_ARG;
    return run(ws, (const uint8_t *)text, len, flags, NULL, 0, count, consumed);
}

int et_pretokenize(const et_model *m, const char *text, size_t len, unsigned flags,
                   size_t *ends, size_t cap, size_t *n_out, size_t *consumed)
{
    if (!m || (!text && len) || (!ends && cap) || !n_out || !consumed) return ET_E_ARG;
    const uint8_t *t = (const uint8_t *)text;
    size_t i = 0, n = 0, cut = 0, cut_n = 0;
    int rc = ET_OK;
    while (i < len) {
        size_t e = et_cl100k_next(t, len, i, m->pretok_param);
        if (!(flags & ET_FINAL)) {
            if (e == len) break;
            if (i > 0 && et_cl100k_safe_cut(t, len, i)) {
                cut = i;
                cut_n = n;
            }
        }
        if (n == cap) {
            rc = ET_E_FULL;
            break;
        }
        ends[n++] = e;
        i = e;
    }
    *consumed = (flags & ET_FINAL) ? i : cut;
    *n_out = (flags & ET_FINAL) ? n : cut_n;
    return rc;
}
