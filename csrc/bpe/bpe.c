/* csrc/bpe: exact byte-pair encoding with tiktoken's semantics, and the encode loop.
 *
 * A piece (from the pretokenizer) that is itself a token is one trie walk. Otherwise:
 * - short pieces run tiktoken's byte_pair_merge: start from single bytes and merge the
 *   adjacent pair whose concatenation has the lowest rank (leftmost among equals) until no
 *   pair is a token; the rank of a pair is a trie step from the left part's cell over the
 *   right part's bytes;
 * - long pieces use the backtracking encoder of GitHub's `bpe` crate, linear in practice:
 *   take the longest token at the current position if it forms a valid pair with the token
 *   before it (BPE of the two tokens' bytes gives exactly those two tokens), else the next
 *   shorter prefix token; when none fits, pop the previous token and mark the position as a
 *   dead end. Validity unwinds the two tokens' merge histories (the SPLIT table) and asks, at
 *   each step, whether BPE would rather have merged across the boundary;
 * - models whose tables are not consistent (see ET_FLAG_BACKTRACK) use a binary heap with lazy
 *   deletion for long pieces instead (O(n log n)), which merges in tiktoken's order.
 * Ranks are token ids (tiktoken vocabularies). All scratch memory is the caller's workspace.
 */
#include <stdlib.h>
#include <string.h>

#include "../encode/ws.h"
#include "../model/model.h"
#include "../pretok/cl100k.h"
#include "../pretok/gpt2.h"
#include "../pretok/o200k.h"

/* The model's pretokenizer: the end of the piece that starts at i < len (pretok: m->pretok, a
 * constant where the caller has a copy of its loop for each), and whether a piece boundary b
 * is a safe streaming cut (see each header). */
ET_ALWAYS_INLINE static inline size_t piece_end(const et_model *m, unsigned pretok,
                                                const uint8_t *t, size_t len, size_t i)
{
    switch (pretok) {
    case ET_PRETOK_O200K: return et_o200k_next(t, len, i);
    case ET_PRETOK_GPT2: return et_gpt2_next(t, len, i, m->pretok_param == 1);
    case ET_PRETOK_LLAMA3: return et_cl100k_next(t, len, i, m->pretok_param, 0);
    case ET_PRETOK_REGEX: return len; /* the caller passes one piece at a time */
    default: return et_cl100k_next(t, len, i, m->pretok_param, 1);
    }
}

ET_ALWAYS_INLINE static inline size_t next_piece(const et_model *m, const uint8_t *t, size_t len,
                                                 size_t i)
{
    return piece_end(m, m->pretok, t, len, i);
}

/* The piece starts after i (a piece start) that a block of the 64 bytes from i shows, as bits
 * from i (see et_cl100k_block): the cl100k and o200k families'; 0 for GPT-2's and regex
 * pretokenizers, with fewer than 64 bytes left, or where the block shows none. Loops take the
 * ends of the pieces from these bits while they last, then one piece from piece_end. The blocks
 * class letters and punctuation beyond ASCII too (man pages in 20 languages: 11% fewer
 * instructions a byte counting with cl100k, 15% with o200k, than blocks of ASCII alone); a
 * block that shows none (a piece longer than it, or text it leaves to the scalar code) makes
 * the loop go on without blocks for 64 bytes (*from: where it tries one again). */
ET_ALWAYS_INLINE static inline uint64_t block_starts(const et_model *m, unsigned pretok,
                                                     const uint8_t *t, size_t len, size_t i,
                                                     size_t *from)
{
    if (i < *from || len - i < 64) return 0;
    uint64_t starts = 0;
    switch (pretok) {
    case ET_PRETOK_CL100K: case ET_PRETOK_LLAMA3:
        starts = et_cl100k_block(t + i, m->pretok_param);
        break;
    case ET_PRETOK_O200K: starts = et_o200k_block(t + i); break;
    default: return 0;
    }
    if (!starts) *from = i + 64;
    return starts;
}

static inline int safe_cut(const et_model *m, const uint8_t *t, size_t len, size_t b)
{
    switch (m->pretok) {
    case ET_PRETOK_O200K: return et_o200k_safe_cut(t, len, b);
    case ET_PRETOK_GPT2: return et_gpt2_safe_cut(t, len, b, m->pretok_param == 1);
    case ET_PRETOK_REGEX: return 0;
    default: return et_cl100k_safe_cut(t, len, b); /* the Llama-3 pattern too */
    }
}

/* A cut et_encode without ET_FINAL may make at b, text going on past the character at b. */
static inline int stream_cut(const et_model *m, const uint8_t *t, size_t len, size_t prev,
                             size_t b)
{
    switch (m->pretok) {
    case ET_PRETOK_O200K: return et_o200k_stream_cut(t, len, prev, b);
    case ET_PRETOK_GPT2: return et_gpt2_stream_cut(t, len, b, m->pretok_param == 1);
    case ET_PRETOK_REGEX: return 0;
    default: return et_cl100k_stream_cut(t, len, prev, b);
    }
}

/* Whether the character at i < len is all there: more text cannot make it another one. A
 * stream cut before the last piece needs that (its rules read the character at the cut), as
 * the next piece's start guarantees for the others. */
static inline int whole_char(const uint8_t *t, size_t len, size_t i)
{
    size_t n;
    return t[i] < 0x80u || et_utf8_decode(t, len, i, &n) != 0xFFFFFFFFu || len - i >= 4;
}

#ifndef SMALL_PIECE_OVERRIDE
/* Pieces up to this many bytes use the array scan, longer ones the backtracking encoder.
 * Measured with the build's -O3 (etok count, cl100k, min of 13 interleaved runs): 24 is 3-6%
 * faster than 64 on man pages in 20 languages, English, code and multilingual text; 12 and 16
 * are within noise of 24 (fewer instructions, more cache misses). Models without
 * backtracking tables scan up to SMALL_PIECE_HEAP (their long-piece merge, the heap, costs
 * more). */
#define SMALL_PIECE 24u
#else
#define SMALL_PIECE SMALL_PIECE_OVERRIDE
#endif
#define SMALL_PIECE_HEAP 64u
/* small_merge's sort key of the pair at position i whose concatenation is trie node pair_node:
 * its rank << 32 | i (rank ET_NONE where the pair is no token). */
static inline uint64_t part_rank(const et_model *m, uint32_t pair_node, uint32_t i)
{
    return (uint64_t)(pair_node == ET_NONE ? ET_NONE : et_value(m, pair_node)) << 32 | i;
}

/* tiktoken's byte_pair_merge for a short piece p[0..n), n >= 2, stopping when `stop` parts
 * are left (1: run to the end). Returns the part count; the ids are left in ids[0..count).
 * Parts are a doubly linked list by start offset (nxt, prv), so a merge unlinks one, with no
 * shifting; the lowest rank is found by a scan of the dense array rk of rank << 32 | position,
 * whose minimum is the lowest rank, leftmost among equals (one compare a part), where a part
 * merged away has rank ET_NONE (no load depends on the one before: faster than following nxt).
 * mem holds 24 * n + 4 bytes. */
static size_t small_merge(const et_model *m, const uint8_t *p, uint32_t n, uint64_t *mem,
                          uint32_t *ids, uint32_t stop)
{
    uint64_t *rk = mem;
    uint32_t *nxt = (uint32_t *)(mem + n), *node = nxt + n + 1, *pnode = node + n, *prv = pnode + n;
    const uint64_t none = (uint64_t)ET_NONE << 32; /* above every rank a pair can have */
    for (uint32_t i = 0; i < n; i++) {
        nxt[i] = i + 1;
        prv[i] = i - 1; /* (ET_NONE for the first) */
        node[i] = et_trie_next(m, 0, p[i]); /* never ET_NONE */
    }
    for (uint32_t i = 0; i + 1 < n; i++) {
        pnode[i] = et_trie_next(m, node[i], p[i + 1]);
        rk[i] = part_rank(m, pnode[i], i);
    }
    rk[n - 1] = none | (n - 1);
    uint32_t parts = n;
    while (parts > stop) {
        uint64_t best = rk[0]; /* the lowest rank, leftmost among equals */
        for (uint32_t i = 1; i + 1 < n; i++) best = rk[i] < best ? rk[i] : best;
        if (best >= none) break;
        const uint32_t k = (uint32_t)best, before = prv[k], gone = nxt[k];
        node[k] = pnode[k];
        rk[gone] = none | gone; /* merged into k */
        nxt[k] = nxt[gone];
        parts--;
        const uint32_t after = nxt[k]; /* the part now after k, or n */
        if (after < n) {
            prv[after] = k;
            pnode[k] = et_trie_walk(m, node[k], p + after, nxt[after] - after);
            rk[k] = part_rank(m, pnode[k], k);
        } else {
            rk[k] = none | k;
        }
        if (before != ET_NONE) {
            pnode[before] = et_trie_walk(m, node[before], p + k, after - k);
            rk[before] = part_rank(m, pnode[before], before);
        }
    }
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i = nxt[i]) ids[c++] = et_value(m, node[i]);
    return c;
}

/* The token made of token a's bytes followed by token b's, or ET_NONE. */
static uint32_t concat(const et_model *m, uint32_t a, uint32_t b)
{
    const uint8_t *q = NULL, *qa = NULL;
    uint32_t lb = et_tok(m, b, &q), la = et_tok(m, a, &qa);
    uint32_t s = a < m->n_vocab ? m->tnode[a] : ET_NONE;
    if (!lb || s >= m->n_cells || la + lb > m->max_token_len) return ET_NONE;
    s = et_trie_walk(m, s, q, lb);
    return s == ET_NONE ? ET_NONE : et_value(m, s);
}

static int odd_pair(const et_model *m, uint32_t a, uint32_t b);

/* Whether BPE of a's bytes followed by b's gives exactly [a, b]: unwind the later of the two
 * merges across the boundary, one step at a time, and fail as soon as BPE would have merged
 * the two current parts (a lower rank than the merge it is being compared with). That needs
 * merges ranked above their parts all down both trees: ET_FLAG_WHOLE models' other tokens
 * (et_odd_of) are asked of odd_pair. */
static int valid_pair(const et_model *m, uint32_t a, uint32_t b)
{
    if (m->flags & ET_FLAG_WHOLE) {
        const int k = odd_pair(m, a, b);
        if (k >= 0) return k;
    }
    uint32_t limit = ET_NONE;
    for (uint32_t guard = 2 * m->max_token_len + 2; guard; guard--) {
        uint32_t c = concat(m, a, b);
        if (c != ET_NONE && c < limit) return 0;
        if (a >= m->n_vocab || b >= m->n_vocab) return 0;
        if (et_pair_unwind(m, &a, &b, &limit)) return 1;
    }
    return 1; /* only a damaged model gets here */
}

/* valid_pair, remembered: repetitive long pieces ask about the same few pairs again and again. */
static int valid_pair_cached(et_ws *ws, uint32_t a, uint32_t b)
{
    if ((a | b) >> 31) return valid_pair(ws->m, a, b); /* ids fit in 31 bits (checked at load) */
    uint64_t key = (uint64_t)a << 32 | b;
    uint64_t *slot = &ws->pairs[(uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 51) & (PAIR_CACHE - 1)];
    if ((*slot & ~(uint64_t)0x80000000u) == key && *slot) return (int)(*slot >> 31 & 1u);
    int ok = valid_pair(ws->m, a, b);
    *slot = key | (uint64_t)ok << 31;
    return ok;
}

/* ET_FLAG_WHOLE models: the tokens et_pair_unwind cannot take (model.h), in one pass by id (a
 * token is odd if a part ranks above it, or is odd and so ranks below it). */
static uint64_t *odd_build(const et_model *m)
{
    uint64_t *bits = calloc((size_t)m->n_vocab / 64u + 1u, 8u);
    if (!bits) return NULL;
    for (uint32_t t = 0; t < m->n_vocab; t++) {
        const uint32_t a = m->split[2u * t], b = m->split[2u * t + 1u];
        if (a == t && b == t) continue; /* a byte, or no ordinary token */
        if (a >= t || b >= t || et_odd(bits, a) || et_odd(bits, b))
            bits[t >> 6] |= (uint64_t)1 << (t & 63u);
    }
    return bits;
}

const uint64_t *et_odd_of(const et_model *m)
{
    if (!m || m->kind != ET_KIND_BPE || !(m->flags & ET_FLAG_WHOLE)) return NULL;
    _Atomic(uint64_t *) *slot = &((et_model *)m)->odd; /* (allocated, not const) */
    uint64_t *bits = atomic_load_explicit(slot, memory_order_acquire);
    if (bits) return bits;
    uint64_t *mine = odd_build(m), *none = NULL;
    if (!mine) return NULL;
    if (atomic_compare_exchange_strong_explicit(slot, &none, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    free(mine); /* another thread's came first */
    return none;
}

static size_t heap_merge(const et_model *m, const uint8_t *p, uint32_t n, uint64_t *mem,
                         uint32_t *ids);

/* valid_pair(a, b) of an ET_FLAG_WHOLE model where a or b is odd (et_odd_of): 0 where one is
 * a whole piece only (BPE never makes it inside a longer piece), else whether merging their
 * bytes gives [a, b] (heap_merge: O(n log n), whatever a damaged file's lengths); -1 where
 * neither is odd (the pair walk holds). 0 where the bits or memory (pairs of more than 256
 * bytes) run out, or a token is longer than the model's longest. */
static int odd_pair(const et_model *m, uint32_t a, uint32_t b)
{
    const uint64_t *odd = et_odd_of(m);
    if (!odd || a >= m->n_vocab || b >= m->n_vocab) return 0;
    if (!et_odd(odd, a) && !et_odd(odd, b)) return -1;
    const uint8_t *pa = NULL, *pb = NULL;
    const uint32_t la = et_tok(m, a, &pa), lb = et_tok(m, b, &pb);
    if (m->split[2u * a] == ET_NONE || m->split[2u * b] == ET_NONE || !la || !lb ||
        la > m->max_token_len || lb > m->max_token_len || m->tnode[a] == ET_NONE ||
        m->tnode[b] == ET_NONE || (uint64_t)la + lb > 0xFFFFFFFFu)
        return 0;
    enum { ODD_MAX = 256 };
    const size_t n = (size_t)la + lb, words = (44u * n + 7u) / 8u + 1u; /* (heap_merge's) */
    uint64_t smem[(44u * ODD_MAX + 7u) / 8u + 1u], *mem = smem;
    uint32_t sids[ODD_MAX], *ids = sids;
    uint8_t sbuf[ODD_MAX], *buf = sbuf;
    void *heap = NULL;
    if (n > ODD_MAX) {
        if (!(heap = malloc(words * 8u + n * 4u + n))) return 0;
        mem = heap;
        ids = (uint32_t *)(mem + words);
        buf = (uint8_t *)(ids + n);
    }
    memcpy(buf, pa, la);
    memcpy(buf + la, pb, lb);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) /* (the merge's start: a damaged model may lack one) */
        ok = et_trie_next(m, 0, buf[i]) != ET_NONE;
    ok = ok && heap_merge(m, buf, (uint32_t)n, mem, ids) == 2 && ids[0] == a && ids[1] == b;
    free(heap);
    return ok;
}

/* The longest token that p[0..n) starts with (n >= 1; single bytes always are tokens). */
static uint32_t longest_match(const et_model *m, const uint8_t *p, size_t n)
{
    uint32_t s = 0, best = m->byteids[p[0]];
    if (n > m->max_token_len) n = m->max_token_len;
    for (size_t i = 0; i < n; i++) {
        s = et_trie_next(m, s, p[i]);
        if (s == ET_NONE) break;
        if (et_value(m, s) != ET_NONE) best = et_value(m, s);
    }
    return best;
}

/* The backtracking encoder (see the top of the file) for p[0..n), n >= 1. mem holds a bit per
 * position (1: not yet a dead end); the ids go to ids[0..n). Returns the id count, or 0 if the
 * model's tables are damaged. */
static size_t bt_merge(et_ws *ws, const et_model *m, const uint8_t *p, uint32_t n,
                       uint64_t *mem, uint32_t *ids)
{
    uint64_t *live = mem;
    memset(live, 0xFF, ((size_t)n / 64 + 1) * 8);
    size_t top = 0;
    uint32_t pos = 0, next = longest_match(m, p, n);
    /* the last longest match: a position whose next max_token_len bytes repeat those of
     * `seen` has the same longest match (repetitive runs skip the trie walk) */
    uint32_t seen = 0, seen_tok = next, w = m->max_token_len;
    while (pos < n) {
        uint32_t tok = next, last = top ? ids[top - 1] : ET_NONE;
        /* a valid model's PREFIX chains get strictly shorter, so they end within
         * max_token_len steps; a damaged one's may cycle (no load-time pass: cold start) */
        for (uint32_t chain = 0;; chain++) {
            if (chain > w) return 0;
            const uint8_t *q;
            uint32_t len = et_tok(m, tok, &q);
            if (len && len <= n - pos && (live[(pos + len) >> 6] >> ((pos + len) & 63) & 1u) &&
                (last == ET_NONE || (ws ? valid_pair_cached(ws, last, tok) : valid_pair(m, last, tok)))) {
                ids[top++] = tok;
                pos += len;
                if (pos >= n) break;
                if (n - pos >= w && n - seen >= w && memcmp(p + pos, p + seen, w) == 0) {
                    next = seen_tok;
                } else {
                    next = longest_match(m, p + pos, n - pos);
                    seen = pos;
                    seen_tok = next;
                }
                break;
            }
            uint32_t shorter = tok < m->n_vocab ? m->prefix[tok] : ET_NONE;
            if (shorter != ET_NONE) {
                tok = shorter;
                continue;
            }
            live[pos >> 6] &= ~((uint64_t)1 << (pos & 63)); /* no way on from pos */
            if (!top) return 0;
            top--;
            uint32_t back = et_tok(m, last, &q);
            if (!back || back > pos) return 0;
            pos -= back;
            next = last;
            break;
        }
    }
    return top;
}

int et_bpe_tables(const et_model *m, uint32_t *split, uint32_t *prefix, uint32_t *tnode)
{
    /* scratch for merging one token's bytes (small_merge: 24 bytes a byte) and for bt_merge */
    size_t cap = (size_t)m->max_token_len + 1;
    uint64_t *mem = malloc(cap * 24 + 64);
    uint32_t *ids = malloc(cap * 4);
    int ok = 1, odd = 0; /* odd: a token BPE does not make from its bytes, or from lower ranks */
    if (!mem || !ids) { free(mem); free(ids); return -1; }
    for (uint32_t t = 0; t < m->n_vocab; t++) {
        const uint8_t *q = NULL;
        uint32_t len = et_tok(m, t, &q), s = 0, pre = ET_NONE;
        split[2 * t] = split[2 * t + 1] = t;
        for (uint32_t i = 0; i < len && s != ET_NONE; i++) {
            if (i && et_value(m, s) != ET_NONE) pre = et_value(m, s);
            s = et_trie_next(m, s, q[i]);
        }
        int ordinary = len && s != ET_NONE && et_value(m, s) == t; /* specials are not in the trie */
        for (uint32_t i = 0; ordinary && (m->flags & ET_FLAG_GAPS) && i < len; i++)
            if (m->byteids[q[i]] == ET_NONE) ordinary = 0; /* holds a dropped byte: unreachable */
        tnode[t] = ordinary ? s : ET_NONE;
        prefix[t] = ordinary ? pre : ET_NONE;
    }
    for (uint32_t t = 0; t < m->n_vocab; t++) { /* (concat reads the parts' TNODE: all first) */
        const uint8_t *q = NULL;
        const uint32_t len = et_tok(m, t, &q);
        if (tnode[t] == ET_NONE || len < 2) continue;
        if (small_merge(m, q, len, mem, ids, 2) != 2 || concat(m, ids[0], ids[1]) != t) {
            split[2 * t] = split[2 * t + 1] = ET_NONE; /* BPE never makes it: a whole piece only */
            odd = 1;
            continue;
        }
        split[2 * t] = ids[0];
        split[2 * t + 1] = ids[1];
        if (ids[0] >= t || ids[1] >= t) odd = 1; /* made by a merge ranked below a part */
    }
    /* every token must be what the backtracking encoder makes of its bytes (as the crate checks) */
    et_model probe = *m;
    probe.split = split;
    probe.prefix = prefix;
    probe.tnode = tnode;
    for (uint32_t t = 0; !odd && ok && t < m->n_vocab; t++) {
        const uint8_t *q = NULL;
        uint32_t len = et_tok(m, t, &q);
        if (tnode[t] != ET_NONE && (bt_merge(NULL, &probe, q, len, mem, ids) != 1 || ids[0] != t)) ok = 0;
    }
    free(mem);
    free(ids);
    return odd ? ET_FLAG_WHOLE : ok ? ET_FLAG_BACKTRACK : 0;
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
        rank[i] = pnode[i] == ET_NONE ? ET_NONE : et_value(m, pnode[i]);
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
        rank[i] = pnode[i] == ET_NONE ? ET_NONE : et_value(m, pnode[i]);
        if (rank[i] != ET_NONE) heap_push(heap, &hn, (uint64_t)rank[i] << 32 | i);
        if (i > 0) {
            uint32_t h = pv[i];
            pnode[h] = et_trie_walk(m, node[h], p + i, nx[i] - i);
            rank[h] = pnode[h] == ET_NONE ? ET_NONE : et_value(m, pnode[h]);
            if (rank[h] != ET_NONE) heap_push(heap, &hn, (uint64_t)rank[h] << 32 | h);
        }
    }
    size_t c = 0;
    for (uint32_t i = 0; i < n; i = nx[i]) ids[c++] = et_value(m, node[i]);
    return c;
}

/* For a model with ET_FLAG_GAPS: p[0..*plen) without the bytes that have no token, copied
 * into the workspace after the merge arrays and the ids (48 bytes per piece byte); NULL with
 * *rc set if the piece is too long. Kept out of line: the common models never come here. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline, cold))
#endif
static const uint8_t *drop_gap_bytes(et_ws *ws, const uint8_t *p, size_t *plen, int *rc)
{
    if (*plen > ws->cap) {
        ws->need = *plen;
        *rc = ET_E_WORKSPACE;
        return NULL;
    }
    uint8_t *kept = (uint8_t *)ws->mem + 48u * (ws->cap + 1);
    size_t w = 0;
    for (size_t i = 0; i < *plen; i++)
        if (ws->m->byteids[p[i]] != ET_NONE) kept[w++] = p[i];
    *plen = w;
    return kept;
}

/* 32 bytes 0xFF, then 32 zero bytes: the 8 bytes from KEEP + 32 - n + 8 * w mask word w of
 * a key to its first n bytes (byte 8 * w + j is kept where 8 * w + j < n), with no branch. */
static const uint8_t KEEP[64] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
};

/* Word w of the key of p[0..n) (1 <= n <= 32, 8 * w + 8 bytes readable at p): its bytes
 * 8 * w to 8 * w + 7 in memory order, those from n on zero. */
ET_ALWAYS_INLINE static inline uint64_t key_word(const uint8_t *p, size_t n, size_t w)
{
    uint64_t x, mask;
    memcpy(&x, p + 8 * w, 8);
    memcpy(&mask, KEEP + 32 - n + 8 * w, 8);
    return x & mask;
}

/* p[0..n) (1 <= n <= 8 * words <= 32, avail >= n bytes readable at p) as `words` numbers: its
 * bytes in memory order, zero-padded. */
ET_ALWAYS_INLINE static inline void piece_key(const uint8_t *p, size_t n, size_t avail,
                                              uint64_t *key, size_t words)
{
    if (avail >= 8 * words) { /* whole loads, masked to the first n bytes */
        for (size_t w = 0; w < words; w++) key[w] = key_word(p, n, w);
    } else {
        memset(key, 0, 8 * words);
        memcpy(key, p, n);
    }
}

/* A hash of p[0..n) (n >= 8), for the huge slots. */
static uint64_t bytes_hash(const uint8_t *p, size_t n)
{
    uint64_t h = n * 0x9E3779B97F4A7C15ull, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xC2B2AE3D27D4EB4Full;
        h ^= h >> 29;
    }
    memcpy(&w, p + n - 8, 8); /* the last 8 bytes (again, in part) */
    h = (h ^ w) * 0x165667B19E3779F9ull;
    return h ^ (h >> 32);
}

/* Whether the tokens ids[0..k) spell p[0..n) exactly (avail >= n bytes readable at p). A token
 * of up to 8 bytes with 8 readable on both sides is one masked compare of two words. */
static int ids_spell(const et_model *m, const uint32_t *ids, size_t k, const uint8_t *p, size_t n,
                     size_t avail)
{
    size_t at = 0;
    for (size_t x = 0; x < k; x++) {
        const uint8_t *q;
        uint32_t l = et_tok(m, ids[x], &q);
        if (!l || l > n - at) return 0;
        if (l <= 8 && avail - at >= 8 && m->blob_size - (size_t)(q - m->blob) >= 8) {
            if (key_word(p + at, l, 0) != key_word(q, l, 0)) return 0;
        } else if (memcmp(p + at, q, l) != 0) {
            return 0;
        }
        at += l;
    }
    return at == n;
}

/* Moves slot w of a set of `type` slots to the set's front, those before it one place back
 * (the piece used last first). */
#define SET_FRONT(type, set, w)                                                                \
    do {                                                                                       \
        const type used_ = (set)[w];                                                           \
        for (unsigned b_ = (w); b_ > 0; b_--) (set)[b_] = (set)[b_ - 1];                       \
        (set)[0] = used_;                                                                      \
    } while (0)

/* Makes room at the front of a set of `type` slots for a new piece: the slots one place back,
 * the last one's piece gone. */
#define SET_PUSH(ws, type, set, ways)                                                          \
    do {                                                                                       \
        (ws)->evictions += (set)[(ways) - 1].info != 0;                                        \
        for (unsigned b_ = (ways) - 1; b_ > 0; b_--) (set)[b_] = (set)[b_ - 1];                \
    } while (0)

/* The huge slots of a piece p[0..n) (8 <= n <= HUGE_KEY, avail >= n bytes readable at p)
 * that the short and long slots cannot hold: its ids, copied to ids, and their count where a
 * slot of its set holds ids that spell the piece (that slot made the set's first), else 0.
 * *set is the set, for huge_put. Out of line: the short pieces' path keeps its registers. */
ET_NOINLINE static size_t huge_find(et_ws *ws, const uint8_t *p, size_t n, size_t avail,
                                    uint32_t *ids, struct huge_slot **set)
{
    const uint64_t h = bytes_hash(p, n);
    struct huge_slot *s = *set = &ws->huge[(h >> 40) & ws->huge_mask];
    for (unsigned w = 0; w < LONG_WAYS; w++) {
        const size_t k = s[w].info >> 16;
        if (s[w].hash != h || (s[w].info & 0xFFFFu) != n ||
            !ids_spell(ws->m, s[w].ids, k, p, n, avail))
            continue;
        if (w) SET_FRONT(struct huge_slot, s, w);
        memcpy(ids, s->ids, k * sizeof *ids);
        return k;
    }
    return 0;
}

/* Puts the k <= HUGE_IDS ids of p[0..n) first in its huge set s (from huge_find). */
static void huge_put(et_ws *ws, struct huge_slot *s, const uint8_t *p, size_t n,
                     const uint32_t *ids, size_t k)
{
    SET_PUSH(ws, struct huge_slot, s, LONG_WAYS);
    s->hash = bytes_hash(p, n);
    memcpy(s->ids, ids, k * sizeof *ids);
    s->info = (uint32_t)n | (uint32_t)k << 16;
}

/* The set of two short slots (one 64-byte line) of the piece whose key is k0, k1 and length
 * plen (<= PIECE_KEY): the piece used last first. */
ET_ALWAYS_INLINE static inline struct piece_slot *short_set(struct piece_slot *slots,
                                                            size_t mask, uint64_t k0,
                                                            uint64_t k1, size_t plen)
{
    uint64_t h = (k0 * 0x9E3779B97F4A7C15ull) ^ (k1 + plen) * 0xC2B2AE3D27D4EB4Full;
    return &slots[(h >> 40) & mask & ~(size_t)1];
}

ET_ALWAYS_INLINE static inline int short_is(const struct piece_slot *slot, uint64_t k0,
                                            uint64_t k1, size_t plen)
{
    return slot->key[0] == k0 && slot->key[1] == k1 && (slot->info & 0xFFu) == plen;
}

/* The slot of set holding the piece (k0, k1, plen), made the set's first; NULL if none. */
ET_ALWAYS_INLINE static inline struct piece_slot *short_find(struct piece_slot *set, uint64_t k0,
                                                             uint64_t k1, size_t plen)
{
    if (short_is(set, k0, k1, plen)) return set;
    if (!short_is(set + 1, k0, k1, plen)) return NULL;
    SET_FRONT(struct piece_slot, set, 1);
    return set;
}

/* The set of LONG_WAYS long slots of the piece whose key is key[0..4) and length plen
 * (<= LONG_KEY): the piece used last first. */
ET_ALWAYS_INLINE static inline struct long_slot *long_set(const et_ws *ws, const uint64_t *key,
                                                          size_t plen)
{
    uint64_t h = ((key[0] * 0x9E3779B97F4A7C15ull) ^ (key[1] + plen) * 0xC2B2AE3D27D4EB4Full) +
                 ((key[2] * 0x165667B19E3779F9ull) ^ key[3] * 0x27D4EB2F165667C5ull);
    return &ws->longs[(h >> 40) & ws->long_mask];
}

/* The slot of the first `ways` of set holding the piece (key, plen), made the set's first; NULL
 * if none. */
ET_ALWAYS_INLINE static inline struct long_slot *long_find(struct long_slot *set,
                                                           const uint64_t *key, size_t plen,
                                                           unsigned ways)
{
    for (unsigned w = 0; w < ways; w++)
        if (set[w].key[0] == key[0] && set[w].key[1] == key[1] && set[w].key[2] == key[2] &&
            set[w].key[3] == key[3] && (set[w].info & 0xFFu) == plen) {
            if (w) SET_FRONT(struct long_slot, set, w);
            return set;
        }
    return NULL;
}

/* The ids of one piece p[0..plen) (avail >= plen bytes readable at p; gaps: the model's
 * ET_FLAG_GAPS, a constant in the whole-text loops, which are for models without it): *ids points at them
 * (at *one for a whole-piece token, else into the workspace, valid until the next call).
 * Returns their count: 0 with *rc set on an error, 0 with *rc untouched when the piece held
 * only dropped bytes (ET_FLAG_GAPS). */
ET_ALWAYS_INLINE static inline size_t piece_ids(et_ws *ws, const uint8_t *p, size_t plen,
                                                size_t avail, unsigned gaps, uint32_t *one,
                                                const uint32_t **ids, int *rc)
{
    const et_model *m = ws->m;
    struct piece_slot *set = NULL; /* the set of two a short piece goes in */
    struct long_slot *lset = NULL; /* the set of two a longer piece, or more ids, goes in */
    uint64_t key[4];
    if (plen <= LONG_KEY && !gaps) {
        if (plen <= PIECE_KEY) {
            uint64_t k0, k1; /* the key in registers: faster than in key[] for the hits */
            if (avail >= 16) {
                k0 = key_word(p, plen, 0);
                k1 = key_word(p, plen, 1);
            } else {
                piece_key(p, plen, avail, key, 2);
                k0 = key[0];
                k1 = key[1];
            }
            set = short_set(ws->pieces, ws->piece_mask, k0, k1, plen);
            const struct piece_slot *hit = short_find(set, k0, k1, plen);
            if (hit) {
                *ids = hit->ids;
                return hit->info >> 8;
            }
            key[0] = k0;
            key[1] = k1;
            key[2] = key[3] = 0;
        } else {
            piece_key(p, plen, avail, key, 4);
        }
        /* pieces of more than PIECE_IDS ids, and longer pieces: the second table */
        lset = long_set(ws, key, plen);
        const struct long_slot *hit = long_find(lset, key, plen, LONG_WAYS);
        if (hit) {
            *ids = hit->ids;
            return hit->info >> 8;
        }
    }
    if (gaps) {
        if (!(p = drop_gap_bytes(ws, p, &plen, rc))) return 0;
        if (plen == 0) return 0; /* nothing left: no tokens, no error */
    }
    const uint32_t *got; /* the piece's k ids */
    size_t k;
    struct huge_slot *hs = NULL;
    uint32_t node = et_trie_walk(m, 0, p, plen);
    if (node != ET_NONE && et_value(m, node) != ET_NONE) {
        *one = et_value(m, node);
        got = one;
        k = 1;
    } else {
        if (plen > ws->cap) {
            ws->need = plen;
            *rc = ET_E_WORKSPACE;
            return 0;
        }
        /* the ids go after the merge arrays (44 bytes per piece byte, see heap_merge) */
        uint32_t *tmp = (uint32_t *)((uint8_t *)ws->mem + 44u * (ws->cap + 1));
        *ids = tmp;
        /* a piece of 8 to HUGE_KEY bytes that no slot above holds (more ids, more bytes) */
        if (plen >= 8 && plen <= HUGE_KEY && !gaps && (k = huge_find(ws, p, plen, avail, tmp, &hs)))
            return k;
        if (plen <= SMALL_PIECE || (plen <= SMALL_PIECE_HEAP && !(m->flags & ET_FLAG_BACKTRACK)))
            k = small_merge(m, p, (uint32_t)plen, ws->mem, tmp, 1);
        else if (m->flags & ET_FLAG_BACKTRACK)
            k = bt_merge(ws, m, p, (uint32_t)plen, ws->mem, tmp);
        else
            k = heap_merge(m, p, (uint32_t)plen, ws->mem, tmp);
        if (!k) {
            *rc = ET_E_FORMAT;
            return 0;
        }
        got = tmp;
    }
    *ids = got;
    if (set && k <= PIECE_IDS) { /* into the set's first slot */
        SET_PUSH(ws, struct piece_slot, set, 2);
        set->key[0] = key[0];
        set->key[1] = key[1];
        memcpy(set->ids, got, k * sizeof *got);
        set->info = (uint32_t)plen | (uint32_t)k << 8;
    } else if (lset && k <= LONG_IDS) {
        SET_PUSH(ws, struct long_slot, lset, LONG_WAYS);
        memcpy(lset[0].key, key, sizeof key);
        memcpy(lset[0].ids, got, k * sizeof *got);
        lset[0].info = (uint32_t)plen | (uint32_t)k << 8;
    } else if (hs && k <= HUGE_IDS) {
        huge_put(ws, hs, p, plen, got, k);
    }
    return k;
}


#ifndef SETTLE_MIN_OVERRIDE
#define SETTLE_MIN 4096u /* ET_SETTLE: shorter pieces wait for the next cut */
#else
#define SETTLE_MIN SETTLE_MIN_OVERRIDE /* (the fuzz target settles short pieces too) */
#endif
static int grows(const et_model *m);
static int settle(et_ws *ws, const uint8_t *t, size_t i, size_t len, uint32_t *out, size_t cap,
                  size_t *n, size_t *at);

/* Copies a piece's k ids to out. */
ET_ALWAYS_INLINE static inline void put_ids(uint32_t *out, const uint32_t *ids, size_t k)
{
    if (k <= 4) { /* most pieces are a few tokens: no memcpy call */
        out[0] = ids[0];
        if (k > 1) out[1] = ids[1];
        if (k > 2) out[2] = ids[2];
        if (k > 3) out[3] = ids[3];
    } else {
        memcpy(out, ids, k * sizeof *ids);
    }
}

/* BPE's encode loop (et_bpe_run) for a model whose pretokenizer is `pretok` (m->pretok) and
 * whose ET_FLAG_GAPS is `gaps`. */
ET_ALWAYS_INLINE static inline int bpe_loop(et_ws *ws, unsigned pretok, unsigned gaps,
                                            const uint8_t *t, size_t len, unsigned flags, uint32_t *out,
                                            size_t *ends, size_t cap, size_t limit,
                                            size_t *n_out, size_t *consumed)
{
    const et_model *m = ws->m;
    const unsigned final = flags & ET_FINAL;
    size_t i = 0, prev = 0, n = 0, cut = 0, cut_n = 0; /* prev: where the piece before i starts */
    size_t cut_end = 0; /* without ET_FINAL: where the piece that starts at cut ends */
    int rc = ET_OK;
    uint32_t one;
    while (i < len && n <= limit) {
        size_t e = piece_end(m, pretok, t, len, i);
        if (!final) { /* (the character at i must be all there: see whole_char) */
            if (i > 0 && (e < len || whole_char(t, len, i)) && stream_cut(m, t, len, prev, i)) {
                cut = i;
                cut_n = n;
            }
            if (cut == i) cut_end = e; /* the piece that starts at the cut */
            if (e == len) { /* the last piece may still grow */
                if ((flags & ET_SETTLE) && cut_end - cut >= SETTLE_MIN && grows(m) &&
                    m->pretok != ET_PRETOK_REGEX) {
                    size_t at = cut, got = cut_n;
                    rc = settle(ws, t, cut, cut_end, out, cap, &got, &at);
                    cut = at;
                    cut_n = got;
                }
                break;
            }
        }
        const uint32_t *ids;
        size_t k = piece_ids(ws, t + i, e - i, len - i, gaps, &one, &ids, &rc);
        if (!k && rc) break;
        if (k && out) {
            if (k > cap - n) {
                rc = ET_E_FULL;
                break;
            }
            put_ids(out + n, ids, k);
            if (ends) { /* token ends from their lengths, which must add up to the piece's */
                size_t at = i;
                for (size_t x = 0; x < k; x++) {
                    const uint8_t *q;
                    at += et_tok(m, ids[x], &q);
                    ends[n + x] = at;
                }
                if (at != e) { /* a damaged model: TOKOFF disagrees with the trie */
                    rc = ET_E_FORMAT;
                    break;
                }
                ends[n + k - 1] = e | ET_PIECE_END;
            }
        }
        n += k;
        prev = i;
        i = e;
    }
    *consumed = final ? i : cut;
    *n_out = final ? n : cut_n;
    return rc;
}

/* Where short_hits stopped: the first piece it left starts at i; n ids so far. */
struct hits {
    size_t i, n;
};

/* A block's pieces from i (the block's starts in `starts`, from base; the text going on 80+
 * bytes from base, so that a key is whole loads: a piece of more than 16 bytes starts before
 * base + 47) while each is a hit in the short slots or in the long slots' first two (one line
 * each) and its ids fit in out (NULL: counting): their ids to out + n. Returns where the first
 * piece it leaves starts (a miss there, a piece of more than LONG_KEY bytes, no room:
 * whole_loop's general path takes it), and n with their ids added; the block's starts up to
 * there are done. */
ET_ALWAYS_INLINE static inline struct hits short_hits(et_ws *ws, const uint8_t *t, size_t base,
                                                      uint64_t starts, size_t i, uint32_t *out,
                                                      size_t cap, size_t n)
{
    struct piece_slot *const slots = ws->pieces;
    const size_t mask = ws->piece_mask;
    while (starts) {
        const size_t e = base + et_ctz64(starts), plen = e - i;
        const uint32_t *ids;
        uint32_t info;
        if (plen <= PIECE_KEY) {
            const uint64_t k0 = key_word(t + i, plen, 0), k1 = key_word(t + i, plen, 1);
            const struct piece_slot *set = short_find(short_set(slots, mask, k0, k1, plen), k0,
                                                      k1, plen);
            if (!set) break;
            ids = set->ids;
            info = set->info;
        } else { /* a longer piece (words of non-Latin scripts): the long slots */
            if (plen > LONG_KEY) break;
            const uint64_t key[4] = {key_word(t + i, plen, 0), key_word(t + i, plen, 1),
                                     key_word(t + i, plen, 2), key_word(t + i, plen, 3)};
            const struct long_slot *set = long_find(long_set(ws, key, plen), key, plen, 2);
            if (!set) break;
            ids = set->ids;
            info = set->info;
        }
        const size_t k = info >> 8;
        if (out) {
            if (k > cap - n) break;
            put_ids(out + n, ids, k);
        }
        n += k;
        i = e;
        starts &= starts - 1;
    }
    return (struct hits){i, n};
}

/* short_hits in functions of their own, for counting and for ids: in whole_loop, whose miss
 * path keeps many values live, the hit path's values went to the stack (i, n, the slots and
 * their mask loaded and stored at every piece); here they stay in registers. */
ET_NOINLINE static struct hits short_hits_count(et_ws *ws, const uint8_t *t, size_t base,
                                                uint64_t starts, size_t i, size_t n)
{
    return short_hits(ws, t, base, starts, i, NULL, 0, n);
}

ET_NOINLINE static struct hits short_hits_ids(et_ws *ws, const uint8_t *t, size_t base,
                                              uint64_t starts, size_t i, uint32_t *out,
                                              size_t cap, size_t n)
{
    return short_hits(ws, t, base, starts, i, out, cap, n);
}

/* bpe_loop on whole text (ET_FINAL, no token ends, no limit) for a model without gaps. The
 * cl100k and o200k families' pieces come from block_starts where it finds them: every piece
 * that starts in 64 bytes of ASCII text from one bit mask (measured 1.7x the whole count on
 * repeated English and code), the scalar pretokenizer for the rest. */
ET_ALWAYS_INLINE static inline int whole_loop(et_ws *ws, unsigned pretok, const uint8_t *t,
                                              size_t len, uint32_t *out, size_t cap,
                                              size_t *n_out, size_t *consumed)
{
    if (pretok != ET_PRETOK_CL100K && pretok != ET_PRETOK_LLAMA3 && pretok != ET_PRETOK_O200K)
        return bpe_loop(ws, pretok, 0, t, len, ET_FINAL, out, NULL, cap, SIZE_MAX, n_out,
                        consumed);
    size_t i = 0, n = 0, from = 0;
    int rc = ET_OK;
    uint32_t one;
    while (i < len) {
        uint64_t starts = block_starts(ws->m, pretok, t, len, i, &from);
        const size_t base = i;
        /* a block's pieces end before base + 64: with 16 more bytes, every short one's key is
         * two whole loads (short_hits) */
        const int roomy = starts && len - base >= 64 + PIECE_KEY;
        do { /* the pieces up to the block's last start, or one piece */
            if (roomy) {
                const struct hits h = out ? short_hits_ids(ws, t, base, starts, i, out, cap, n)
                                          : short_hits_count(ws, t, base, starts, i, n);
                i = h.i;
                n = h.n;
                starts &= ~(uint64_t)1 << (i - base); /* those up to i are done */
                if (!starts) break;
            }
            const size_t e = starts ? base + et_ctz64(starts) : piece_end(ws->m, pretok, t, len, i);
            starts &= starts - 1;
            const uint32_t *ids;
            size_t k = piece_ids(ws, t + i, e - i, len - i, 0, &one, &ids, &rc);
            if (!k && rc) goto done;
            if (out) {
                if (k > cap - n) {
                    rc = ET_E_FULL;
                    goto done;
                }
                put_ids(out + n, ids, k);
            }
            n += k;
            i = e;
        } while (starts);
    }
done:
    *consumed = i;
    *n_out = n;
    return rc;
}

/* The copies of whole_loop, each a function of its own (inlined into et_bpe_run together,
 * they shared one register allocation and spilled ws, n and out in every copy); the count_
 * ones with no out. */
#define WHOLE_LOOP(name, pretok, ids)                                                          \
    ET_NOINLINE static int name(et_ws *ws, const uint8_t *t, size_t len, uint32_t *out,        \
                                size_t cap, size_t *n_out, size_t *consumed)                   \
    {                                                                                          \
        (void)out;                                                                             \
        return whole_loop(ws, pretok, t, len, ids, cap, n_out, consumed);                      \
    }
WHOLE_LOOP(whole_cl100k, ET_PRETOK_CL100K, out)
WHOLE_LOOP(whole_o200k, ET_PRETOK_O200K, out)
WHOLE_LOOP(whole_gpt2, ET_PRETOK_GPT2, out)
WHOLE_LOOP(whole_llama3, ET_PRETOK_LLAMA3, out)
WHOLE_LOOP(count_cl100k, ET_PRETOK_CL100K, NULL)
WHOLE_LOOP(count_o200k, ET_PRETOK_O200K, NULL)

size_t et_ws_take(et_ws *to, const et_ws *from)
{
    if (!to || !from || to == from || to->m != from->m) return SIZE_MAX;
    if (to->m->kind != ET_KIND_BPE) return 0; /* (their caches are laid out otherwise) */
    const size_t evicted = to->evictions; /* (SET_PUSH counts what the moves put out) */
    size_t moved = 0;
    /* each set's slots from its last to its first, so that the first stays first */
    for (size_t i = 0; i <= from->piece_mask; i += 2)
        for (unsigned w = 2; w-- > 0;) {
            const struct piece_slot *s = &from->pieces[i + w];
            const size_t plen = s->info & 0xFFu;
            if (!s->info) continue;
            struct piece_slot *set = short_set(to->pieces, to->piece_mask, s->key[0], s->key[1],
                                               plen);
            if (short_is(set, s->key[0], s->key[1], plen) ||
                short_is(set + 1, s->key[0], s->key[1], plen))
                continue;
            SET_PUSH(to, struct piece_slot, set, 2u);
            set[0] = *s;
            moved++;
        }
    for (size_t i = 0; i < from->long_mask + LONG_WAYS; i += LONG_WAYS)
        for (unsigned w = LONG_WAYS; w-- > 0;) {
            const struct long_slot *s = &from->longs[i + w];
            if (!s->info) continue;
            struct long_slot *set = long_set(to, s->key, s->info & 0xFFu);
            if (long_find(set, s->key, s->info & 0xFFu, LONG_WAYS)) continue;
            SET_PUSH(to, struct long_slot, set, LONG_WAYS);
            set[0] = *s;
            moved++;
        }
    for (size_t i = 0; i < from->huge_mask + LONG_WAYS; i += LONG_WAYS)
        for (unsigned w = LONG_WAYS; w-- > 0;) {
            const struct huge_slot *s = &from->huge[i + w];
            if (!s->info) continue;
            struct huge_slot *set = &to->huge[(s->hash >> 40) & to->huge_mask];
            unsigned k = 0;
            while (k < LONG_WAYS && !(set[k].hash == s->hash && set[k].info == s->info &&
                                      !memcmp(set[k].ids, s->ids, sizeof s->ids)))
                k++;
            if (k < LONG_WAYS) continue;
            SET_PUSH(to, struct huge_slot, set, LONG_WAYS);
            set[0] = *s;
            moved++;
        }
    memcpy(to->pairs, from->pairs, sizeof to->pairs);
    const size_t kept = moved - (to->evictions - evicted);
    to->evictions = evicted;
    return kept;
}

/* BPE's encode loop, behind the public functions (csrc/encode). Encoding or counting whole
 * text with a built-in pretokenizer and a model that drops no bytes (ET_FLAG_GAPS) has a copy
 * of the loop each (a function each: see WHOLE_LOOP): the pretokenizer inlined with no
 * dispatch per piece, and the tests for streaming, limits, ends and gaps folded away; counting
 * (no out) with the cl100k and o200k pretokenizers has its own copy, with no stores of ids. */
int et_bpe_run(et_ws *ws, const uint8_t *t, size_t len, unsigned flags, uint32_t *out,
               size_t *ends, size_t cap, size_t limit, size_t *n_out, size_t *consumed)
{
    const unsigned pretok = ws->m->pretok;
    if ((flags & ET_FINAL) && !ends && limit == SIZE_MAX && !(ws->m->flags & ET_FLAG_GAPS)) {
        if (!out) switch (pretok) { /* counting */
        case ET_PRETOK_CL100K: return count_cl100k(ws, t, len, NULL, 0, n_out, consumed);
        case ET_PRETOK_O200K: return count_o200k(ws, t, len, NULL, 0, n_out, consumed);
        }
        switch (pretok) {
        case ET_PRETOK_CL100K: return whole_cl100k(ws, t, len, out, cap, n_out, consumed);
        case ET_PRETOK_O200K: return whole_o200k(ws, t, len, out, cap, n_out, consumed);
        case ET_PRETOK_GPT2: return whole_gpt2(ws, t, len, out, cap, n_out, consumed);
        case ET_PRETOK_LLAMA3: return whole_llama3(ws, t, len, out, cap, n_out, consumed);
        }
    }
    return bpe_loop(ws, pretok, ws->m->flags & ET_FLAG_GAPS, t, len, flags, out, ends, cap, limit,
                    n_out, consumed);
}

int et_prefix_counts(et_ws *ws, const char *text, size_t len, uint32_t *cum)
{
    const uint8_t *t = (const uint8_t *)text;
    if (!ws || (!t && len) || !cum || ws->m->kind != ET_KIND_BPE) return ET_E_ARG;
    const et_model *m = ws->m;
    size_t i = 0, n = 0;
    uint32_t one;
    int rc = ET_OK;
    memset(cum, 0xFF, (len + 1) * sizeof *cum);
    while (i < len) {
        size_t e = next_piece(m, t, len, i);
        const uint32_t *ids;
        cum[i] = (uint32_t)n;
        size_t k = piece_ids(ws, t + i, e - i, len - i, m->flags & ET_FLAG_GAPS, &one, &ids, &rc);
        if (!k && rc) return rc;
        n += k;
        if (n >= ET_NONE) return ET_E_ARG;
        i = e;
    }
    cum[len] = (uint32_t)n;
    return ET_OK;
}

/* Tokens of the pieces of t[0..len) (complete text). */
static int count_all(et_ws *ws, const uint8_t *t, size_t len, size_t *count)
{
    size_t used;
    return et_bpe_run(ws, t, len, ET_FINAL, NULL, NULL, 0, SIZE_MAX, count, &used);
}

int et_count_range(et_ws *ws, const char *text, size_t len, const uint32_t *cum, size_t i,
                   size_t j, size_t *count)
{
    const uint8_t *t = (const uint8_t *)text;
    if (!ws || (!t && len) || !cum || !count || i > j || j > len || ws->m->kind != ET_KIND_BPE)
        return ET_E_ARG;
    const et_model *m = ws->m;
    /* q: the last piece boundary of the whole text before j that is a safe cut. text[i..j)
     * has a boundary there too, and the same pieces as the whole text from any boundary the
     * two share up to q, because no piece before a safe cut looks past it. The cut is judged
     * as text[..j) sees it: where j splits a character, the one at q may differ there */
    size_t q = j > 0 ? j - 1 : 0;
    while (q > i && !(cum[q] != ET_NONE && safe_cut(m, t, j, q))) q--;
    size_t s = i, n = 0;
    uint32_t one;
    int rc = ET_OK;
    while (s < q && cum[s] == ET_NONE) { /* text[i..j)'s own pieces until they meet text's */
        size_t e = next_piece(m, t, j, s);
        const uint32_t *ids;
        size_t k = piece_ids(ws, t + s, e - s, len - s, m->flags & ET_FLAG_GAPS, &one, &ids, &rc);
        if (!k && rc) return rc;
        n += k;
        s = e;
    }
    if (s < q) { /* met at s: the whole text's counts cover s..q */
        n += cum[q] - cum[s];
        s = q;
    }
    size_t tail = 0;
    if ((rc = count_all(ws, t + s, j - s, &tail))) return rc;
    *count = n + tail;
    return ET_OK;
}

/* ---- one growing piece (the appending counter) ------------------------------------------
 * The "last token of every prefix" table of GitHub's bpe crate (encode_via_table): the last
 * token of BPE(p[0..i]) is the longest token t ending at i whose pair with the last token of
 * the prefix before t is valid (valid_pair) -- or that starts the piece. Exact for the models
 * whose backtracking tables were proven at compile time (ET_FLAG_BACKTRACK). The trie walks
 * that may still reach a token ending later are kept between calls, oldest first. */

/* Whether the table above is exact for model m's pieces. */
static int grows(const et_model *m)
{
    return m->kind == ET_KIND_BPE && (m->flags & ET_FLAG_BACKTRACK) && !(m->flags & ET_FLAG_GAPS);
}

/* et_piece_grow's work (cnt may be NULL): checked arguments, a model that grows(). */
static int grow(et_ws *ws, const uint8_t *p, size_t from, size_t to, uint32_t *last,
                uint32_t *cnt, uint32_t *walks, size_t *n_walks)
{
    const et_model *m = ws->m;
    size_t nw = *n_walks;
    for (size_t i = from; i < to; i++) {
        size_t k = 0; /* the walks that go on over p[i], in order, then one starting at i */
        for (size_t w = 0; w < nw; w++) {
            uint32_t s = walks[2 * w + 1] < m->n_cells ? et_trie_next(m, walks[2 * w + 1], p[i])
                                                       : ET_NONE;
            if (s != ET_NONE && walks[2 * w] < i) {
                walks[2 * k] = walks[2 * w];
                walks[2 * k + 1] = s;
                k++;
            }
        }
        uint32_t s0 = et_trie_next(m, 0, p[i]);
        if (s0 == ET_NONE || k > m->max_token_len) return ET_E_FORMAT;
        walks[2 * k] = (uint32_t)i;
        walks[2 * k + 1] = s0;
        nw = k + 1;
        size_t w = 0;
        for (; w < nw; w++) { /* longest first */
            uint32_t tok = et_value(m, walks[2 * w + 1]), st = walks[2 * w];
            if (tok == ET_NONE) continue;
            if (st == 0 || valid_pair_cached(ws, last[st - 1], tok)) {
                last[i] = tok;
                if (cnt) cnt[i] = (st ? cnt[st - 1] : 0) + 1;
                break;
            }
        }
        if (w == nw) return ET_E_FORMAT; /* a damaged model: some token always fits */
    }
    *n_walks = nw;
    return ET_OK;
}

int et_piece_grow(et_ws *ws, const char *piece, size_t from, size_t to, uint32_t *last,
                  uint32_t *cnt, uint32_t *walks, size_t *n_walks)
{
    if (!ws || (!piece && to) || !last || !cnt || !walks || !n_walks || from > to ||
        to > 0xFFFFFFF0u)
        return ET_E_ARG;
    if (!grows(ws->m) || *n_walks > (size_t)ws->m->max_token_len + 1) return ET_E_ARG;
    return grow(ws, (const uint8_t *)piece, from, to, last, cnt, walks, n_walks);
}

int et_encode_piece(et_ws *ws, const char *text, size_t len, uint32_t *out, size_t cap,
                    size_t *n_out)
{
    size_t consumed;
    if (!ws || (!text && len) || !out || !n_out || ws->m->kind != ET_KIND_BPE) return ET_E_ARG;
    return bpe_loop(ws, ET_PRETOK_REGEX, ws->m->flags & ET_FLAG_GAPS, (const uint8_t *)text, len,
                    ET_FINAL, out, NULL, cap, SIZE_MAX, n_out, &consumed);
}

/* What kind of piece of model m starts at t[start] (of a piece t[start..end)): a word,
 * punctuation (with its line-break tail), whitespace, a run of digits (GPT-2's \p{N}+), or
 * something else (digit groups of at most 3, or one digit). */
enum { PIECE_OTHER, PIECE_WORD, PIECE_PUNCT, PIECE_SPACE, PIECE_DIGITS };

static int piece_kind(const et_model *m, const uint8_t *t, size_t start, size_t end)
{
    if (m->pretok == ET_PRETOK_O200K) {
        unsigned br = et_o2_piece_branch(t, start, end);
        return br <= O2B_PREFIXED ? PIECE_WORD
               : br == O2B_PUNCT || br == O2B_SPACE_PUNCT ? PIECE_PUNCT
               : br == O2B_SPACE ? PIECE_SPACE : PIECE_OTHER;
    }
    if (m->pretok == ET_PRETOK_GPT2) {
        size_t n0, n1 = 0;
        unsigned c0 = et_g2_cat(t, end, start, &n0);
        unsigned c1 = start + n0 < end ? et_g2_cat(t, end, start + n0, &n1) : G2_END;
        if (c0 == G2_SP && c1 != G2_END && c1 != G2_SP && c1 != G2_WS) c0 = c1; /* " ?" prefix */
        return c0 == G2_L ? PIECE_WORD
               : c0 == G2_AP || c0 == G2_P ? PIECE_PUNCT
               : c0 == G2_SP || c0 == G2_WS ? PIECE_SPACE
               : c0 == G2_N && m->pretok_param != 1 ? PIECE_DIGITS : PIECE_OTHER;
    }
    unsigned c1;
    switch (et_cl_piece_branch(t, start, end, &c1)) {
    case B_WORD: case B_PREFIXED: return PIECE_WORD;
    case B_PUNCT: case B_SPACE_PUNCT: return PIECE_PUNCT;
    case B_APOS: return c1 == C_L ? PIECE_WORD : PIECE_PUNCT; /* long: no contraction */
    case B_SPACE: return PIECE_SPACE;
    default: return PIECE_OTHER;
    }
}

/* Whether the character classes of t[old_end..len) only continue the piece t[start..old_end)
 * (of the given kind, its last character in class p) to the end of the text; tail: the
 * punctuation piece is in its line-break tail ([\r\n/]* after o200k's run, [\r\n]* after
 * cl100k's and Llama-3's), -1 when that is not known yet (o200k: it ends in '/'). */
static int run_goes_on(const et_model *m, const uint8_t *t, size_t start, size_t old_end,
                       size_t len, int kind, unsigned p, int tail)
{
    const uint32_t fam = m->pretok;
    const int o2 = fam == ET_PRETOK_O200K, g2 = fam == ET_PRETOK_GPT2;
    for (size_t i = old_end; i < len;) {
        size_t n;
        unsigned c = o2 ? et_o2_cat(t, len, i, &n) : g2 ? et_g2_cat(t, len, i, &n)
                                                         : et_cl_cat(t, len, i, &n);
        i += n;
        if (kind == PIECE_DIGITS) {
            if (c != G2_N) return 0;
        } else if (kind == PIECE_WORD) {
            if (o2 ? (p == O2_LU ? c != O2_LU : !((O2M_LO >> c) & 1u)) /* A2's Lu/Lt; A1's LO+ */
                   : c != (g2 ? (unsigned)G2_L : (unsigned)C_L))       /* \p{L}+ */
                return 0;
        } else if (kind == PIECE_PUNCT) {
            const int nl = o2 ? c == O2_NL : !g2 && c == C_NL;
            const int punct = o2 ? (O2M_PUNCT >> c) & 1u
                              : g2 ? (G2M_PUNCT >> c) & 1u : (M_PUNCT >> c) & 1u;
            if (nl) {
                tail = 1;
            } else if (o2 && c == O2_SL) {
                /* the run and the tail both take it */
            } else if (punct) {
                if (tail < 0) { /* o200k ending in '/': in the tail if a line break is before */
                    size_t k = old_end;
                    while (k > start && t[k - 1] == '/') k--;
                    tail = k > start && (t[k - 1] == '\n' || t[k - 1] == '\r');
                }
                if (tail) return 0;
            } else {
                return 0;
            }
        } else { /* PIECE_SPACE */
            if (fam == ET_PRETOK_CL100K || g2) { /* \s++$ takes the whole run */
                if (!(g2 ? (G2M_SPACE >> c) & 1u : (M_SPACE >> c) & 1u)) return 0;
            } else { /* o200k, Llama-3: \s*[\r\n]+ up to the last line break, \s+(?!\S) */
                const int pnl = o2 ? p == O2_NL : p == C_NL, cnl = o2 ? c == O2_NL : c == C_NL;
                const int csp = o2 ? c == O2_SP || c == O2_WS : c == C_SP || c == C_WS;
                if (pnl ? !cnl : !csp) return 0;
            }
        }
    }
    return 1;
}

int et_piece_extends(const et_model *m, const char *text, size_t start, size_t old_end,
                     size_t len)
{
    const uint8_t *t = (const uint8_t *)text;
    if (!m || !t || m->kind != ET_KIND_BPE || start > old_end || old_end - start < 16 ||
        len <= old_end)
        return 0;
    if ((t[old_end] & 0xC0u) == 0x80u) return 0; /* may complete a character cut at old_end */
    const uint32_t fam = m->pretok;
    unsigned p;
    int tail = 0;
    if (fam == ET_PRETOK_O200K) p = et_o2_cat_before(t, old_end, old_end);
    else if (fam == ET_PRETOK_GPT2) p = et_g2_cat_before(t, old_end, old_end);
    else if (fam == ET_PRETOK_CL100K || fam == ET_PRETOK_LLAMA3) p = et_cl_cat_before(t, old_end, old_end);
    else return 0;
    const int kind = piece_kind(m, t, start, old_end);
    if (kind == PIECE_WORD) {
        if (fam == ET_PRETOK_O200K) {
            if (p != O2_LU && !((O2M_LO >> p) & 1u)) return 0;
            for (size_t k = old_end - 8; k < old_end; k++)
                if (t[k] == '\'') return 0; /* a word that may end in a contraction is complete */
        } else if (p != (fam == ET_PRETOK_GPT2 ? (unsigned)G2_L : (unsigned)C_L)) {
            return 0;
        }
    } else if (kind == PIECE_PUNCT) {
        if (fam == ET_PRETOK_O200K) tail = p == O2_NL ? 1 : p == O2_SL ? -1 : 0;
        else if (fam != ET_PRETOK_GPT2) tail = p == C_NL;
    } else if (kind == PIECE_DIGITS) {
        if (p != G2_N) return 0;
    } else if (kind != PIECE_SPACE) {
        return 0; /* digit groups: short pieces */
    }
    return run_goes_on(m, t, start, old_end, len, kind, p, tail);
}

int et_run_extends(const et_model *m, const char *text, size_t from, size_t len, unsigned kind,
                   size_t *split)
{
    const uint8_t *t = (const uint8_t *)text;
    if (!m || !t || !split || from > len || m->kind != ET_KIND_BPE) return 0;
    const int o2 = m->pretok == ET_PRETOK_O200K;
    if (!(kind == ET_RUN_SPACE && (o2 || m->pretok == ET_PRETOK_LLAMA3)) &&
        !(kind == ET_RUN_UPPER && o2))
        return 0;
    size_t at = from;
    for (size_t i = from; i < len;) {
        size_t n;
        if (o2) {
            unsigned c = et_o2_cat(t, len, i, &n);
            if (kind == ET_RUN_SPACE ? !((O2M_SPACE >> c) & 1u) : !((O2M_UP >> c) & 1u))
                return 0;
            if (kind == ET_RUN_SPACE ? c == O2_NL : c != O2_LU) at = i + n;
        } else {
            unsigned c = et_cl_cat(t, len, i, &n);
            if (!((M_SPACE >> c) & 1u)) return 0;
            if (c == C_NL) at = i + n;
        }
        i += n;
    }
    *split = at;
    return 1;
}

/* ---- a long last piece, settled (ET_SETTLE) ------------------------------------------------
 * A stream can hold megabytes without a cut (one letter repeated, a line of emoji): the tokens
 * of such a piece that no following text can change come out early, so memory stays bounded.
 * BPE side: the encoding of a text is the one token sequence whose adjacent pairs are all
 * valid (the backtracking encoder's theorem), so BPE(p[0..e)) passes through a position y iff
 * BPE(p[0..y)) followed by BPE(p[y..e)) has a valid pair where they meet. A window p[0..q) is
 * encoded (backtracking encoder), y is taken at one of its token ends some 3L bytes before q
 * (L: the longest token), and that test is made for every end in (q - L, q] with a table of
 * the last token of every prefix of p[y..q) (et_piece_grow's): then every longer text passes
 * through y too (its encoding ends in one of those positions' encodings), and BPE(p[0..y)),
 * the window's tokens up to y, are settled. Cost: the window's encoding plus about 3L bytes
 * of table a window. Pretokenizer side: the piece that starts at the cut i ends at
 * piece_floor() or later whatever follows, and from a character boundary y before that floor
 * (two characters of the run or a line break after y) the pretokenizer finds the same end as
 * from i, so the text from y on pretokenizes as the rest of the whole text does. */

#ifndef SETTLE_WINDOW_OVERRIDE
#define SETTLE_WINDOW ((size_t)1 << 20) /* bytes encoded a window at most */
#else
#define SETTLE_WINDOW ((size_t)SETTLE_WINDOW_OVERRIDE)
#endif

/* Where the piece t[i..len) (as the text so far cuts it), of a run kind, ends at the earliest
 * once more text follows, less 4 bytes for the characters look-ahead gives back (a whitespace
 * run's last character, a contraction); 0 for other kinds. */
static size_t piece_floor(const et_model *m, const uint8_t *t, size_t i, size_t len)
{
    size_t end = len;
    switch (piece_kind(m, t, i, len)) {
    case PIECE_WORD: case PIECE_DIGITS: /* more of the run extends it; anything else ends it */
        break;
    case PIECE_PUNCT: /* not into its line-break tail: from inside that it is whitespace */
        while (end > i && (t[end - 1] == '\r' || t[end - 1] == '\n' || t[end - 1] == '/')) end--;
        break;
    case PIECE_SPACE: /* \s*[\r\n]+ ends at the run's last line break whatever follows */
        if (m->pretok != ET_PRETOK_GPT2)
            for (size_t k = len; k > i; k--)
                if (t[k - 1] == '\r' || t[k - 1] == '\n') return k;
        break;
    default:
        return 0;
    }
    return end - i > 4 ? end - 4 : 0;
}

/* Whether BPE of the text before y, ending in token prev, and of y[0..r), for every end in
 * (r - L, r], meet with a valid pair (see above). loc: r numbers, walks: 2 (L + 1). */
static int meets(et_ws *ws, const uint8_t *y, size_t r, uint32_t prev, uint32_t *loc,
                 uint32_t *walks, int *rc)
{
    const et_model *m = ws->m;
    const size_t L = m->max_token_len;
    size_t nw = 0;
    if ((*rc = grow(ws, y, 0, r, loc, NULL, walks, &nw))) return 0;
    for (size_t h = r; h > r - L; h--) { /* each end's encoding, back to its first token */
        uint32_t first = ET_NONE;
        for (size_t x = h; x > 0;) {
            const uint8_t *b;
            uint32_t tl = et_tok(m, loc[x - 1], &b);
            if (!tl || tl > x) {
                *rc = ET_E_FORMAT; /* a damaged model */
                return 0;
            }
            first = loc[x - 1];
            x -= tl;
        }
        if (!valid_pair_cached(ws, prev, first)) return 0;
    }
    return 1;
}

/* Encodes the settled part of the piece t[i..len) that starts at a cut (model: grows()):
 * ids to out[*n..cap) (out NULL: counted only), *n and *at moved past them. Works in windows
 * that fit the output (or, counting, the workspace); stops at one that settles nothing. */
static int settle(et_ws *ws, const uint8_t *t, size_t i, size_t len, uint32_t *out, size_t cap,
                  size_t *n, size_t *at)
{
    const et_model *m = ws->m;
    /* y is looked for between K and R bytes before the window's end */
    const size_t L = m->max_token_len, K = 3 * L + 16, R = K + 8 * L;
    const size_t stop = piece_floor(m, t, i, len);
    /* the workspace: walks, the local table (R + 1), then the window's dead-end bits and,
     * counting, its ids */
    uint32_t *walks = (uint32_t *)ws->mem, *loc = walks + 2 * (L + 1);
    uint64_t *live = (uint64_t *)ws->mem + (2 * (L + 1) + R + 1) / 2 + 1;
    const size_t used = (size_t)((uint8_t *)live - (uint8_t *)ws->mem), room = WS_PER_BYTE * (ws->cap + 1);
    if (room < used + 1024) return ET_OK;
    size_t w = out ? (room - used - 16) * 8 : (room - used - 16) / 5; /* bits; or ids and bits */
    uint32_t *ids = out ? NULL : (uint32_t *)(live + w / 64 + 2);
    if (w > SETTLE_WINDOW) w = SETTLE_WINDOW;
    size_t p = i;
    int rc = ET_OK;
    while (stop > p && stop - p > R) {
        size_t q = stop - p < w ? stop - p : w;
        if (out) {
            if (cap - *n < q) q = cap - *n;
            ids = out + *n;
        }
        if (q <= R) break;
        size_t k = bt_merge(ws, m, t + p, (uint32_t)q, live, ids), y = q, j = k;
        if (!k) return ET_E_FORMAT;
        int found = 0;
        for (int tries = 0; j > 0 && tries < 4 && q - y <= R;) { /* token ends, K before q on */
            const uint8_t *b;
            uint32_t tl = et_tok(m, ids[j - 1], &b);
            if (!tl || tl > y) return ET_E_FORMAT;
            if (y <= q - K && (t[p + y] & 0xC0u) != 0x80u) {
                tries++;
                if (meets(ws, t + p + y, q - y, ids[j - 1], loc, walks, &rc)) {
                    found = 1;
                    break;
                }
                if (rc) return rc;
            }
            y -= tl;
            j--;
        }
        if (!found || y == 0) break;
        *n += j;
        p += y;
    }
    *at = p;
    return ET_OK;
}

int et_pretokenize(const et_model *m, const char *text, size_t len, unsigned flags,
                   size_t *ends, size_t cap, size_t *n_out, size_t *consumed)
{
    if (!m || (!text && len) || (!ends && cap) || !n_out || !consumed || m->kind != ET_KIND_BPE)
        return ET_E_ARG;
    const uint8_t *t = (const uint8_t *)text;
    size_t i = 0, prev = 0, n = 0, cut = 0, cut_n = 0, from = 0;
    int rc = ET_OK;
    while (i < len) {
        uint64_t starts = block_starts(m, m->pretok, t, len, i, &from);
        const size_t base = i;
        do {
            const size_t e = starts ? base + et_ctz64(starts) : next_piece(m, t, len, i);
            starts &= starts - 1;
            if (!(flags & ET_FINAL)) { /* as in et_bpe_run() */
                if (i > 0 && (e < len || whole_char(t, len, i)) && stream_cut(m, t, len, prev, i)) {
                    cut = i;
                    cut_n = n;
                }
                if (e == len) goto done;
            }
            if (n == cap) {
                rc = ET_E_FULL;
                goto done;
            }
            ends[n++] = e;
            prev = i;
            i = e;
        } while (starts);
    }
done:
    *consumed = (flags & ET_FINAL) ? i : cut;
    *n_out = (flags & ET_FINAL) ? n : cut_n;
    return rc;
}

size_t et_shard_cut(const et_model *m, const char *text, size_t len, size_t from)
{
    if (!m || !text || from >= len || m->kind != ET_KIND_BPE || m->pretok == ET_PRETOK_REGEX)
        return len;
    const uint8_t *t = (const uint8_t *)text;
    if (m->pretok == ET_PRETOK_GPT2) return et_gpt2_forced_cut(t, len, from);
    return et_cl100k_forced_cut(t, len, from, m->pretok == ET_PRETOK_O200K);
}

int et_bpe_safe_cut(const et_model *m, const uint8_t *t, size_t len, size_t b)
{
    return safe_cut(m, t, len, b);
}

/* ---- canonical token sequences (issue 19) ------------------------------------------------ */

/* Whether ids[0..n) are the encoding of their own bytes, without encoding them: every piece
 * boundary of the decoded text (the pretokenizer's cuts) must be a token boundary, and inside
 * each piece every adjacent pair must be a valid pair (valid_pair: a piece's token sequence is
 * what merging makes of it iff all its pairs are), and (ET_FLAG_WHOLE) a piece that is a token
 * must be that token. buf[0..cap) receives the bytes (cap from et_decode_len). */
int et_is_canonical(et_ws *ws, const uint32_t *ids, size_t n, char *buf, size_t cap,
                    int *verdict)
{
    if (!ws || (!ids && n) || !verdict) return ET_E_ARG;
    const et_model *m = ws->m;
    *verdict = 0;
    if (!et_model_pair_tables(m) || (m->flags & (ET_FLAG_GAPS | ET_FLAG_NFC)) ||
        m->pretok == ET_PRETOK_REGEX)
        return ET_E_ARG;
    if ((m->flags & ET_FLAG_WHOLE) && !et_odd_of(m)) return ET_E_NOMEM;
    for (uint32_t i = 0; i < m->n_specials; i++)
        if (m->specials[i] & ET_SPECIAL_ADDED) return ET_E_ARG; /* matched in ordinary text */
    size_t len = 0;
    int rc = et_decode(m, ids, n, buf, cap, &len);
    if (rc) return rc;
    const uint8_t *t = (const uint8_t *)buf;
    for (size_t i = 0, c; i < len; i += c) /* the re-encoding definition of other bytes differs */
        if (et_utf8_decode(t, len, i, &c) == 0xFFFFFFFFu) {
            *verdict = -1;
            return ET_OK;
        }
    size_t pos = 0, k = 0;
    while (pos < len) {
        const size_t e = next_piece(m, t, len, pos);
        uint32_t prev = ET_NONE;
        if (m->flags & ET_FLAG_WHOLE) { /* a piece that is a token is that token (the encoder
                                           looks first), whether BPE makes it or not */
            const uint32_t s = e - pos <= m->max_token_len ? et_trie_walk(m, 0, t + pos, e - pos)
                                                            : ET_NONE;
            const uint32_t w = s == ET_NONE ? ET_NONE : et_value(m, s);
            if (w != ET_NONE && (k >= n || ids[k] != w)) return ET_OK;
        }
        while (pos < e && k < n) { /* (k < n: a damaged model's empty token) */
            const uint32_t tok = ids[k++];
            const uint8_t *q;
            if (tok >= m->n_vocab || m->tnode[tok] == ET_NONE) return ET_OK; /* special */
            if (prev != ET_NONE && !valid_pair_cached(ws, prev, tok)) return ET_OK;
            pos += et_tok(m, tok, &q);
            prev = tok;
        }
        if (pos != e) return ET_OK; /* a token crosses a piece boundary */
    }
    *verdict = 1;
    return ET_OK;
}

int et_valid_pair(const et_model *m, uint32_t a, uint32_t b)
{
    if (!m || !et_model_pair_tables(m) || a >= m->n_vocab ||
        b >= m->n_vocab || m->tnode[a] == ET_NONE || m->tnode[b] == ET_NONE)
        return 0;
    return valid_pair(m, a, b);
}
