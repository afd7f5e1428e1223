/* csrc/bpe/pairset.c: every token t that et_valid_pair(l, t) refuses, for one token l at once.
 *
 * The pair test (bpe.c valid_pair) walks down l's right spine (l, R(l), R(R(l)), ... to a token
 * with no parts: an atom) and t's left spine (t, L(t), ...) at once, always undoing the later
 * merge (the higher id; an atom never, and on a tie t's side), and fails at a pair (a, b) of
 * the two spines when a·b is a token c below the limit: the last token undone, +1 on t's side.
 * Seen as times, a on l's side lives from a (an atom: always) until its parent on the spine,
 * b on t's side from b + 1/2 until its parent + 1/2, and the walk meets exactly the pairs that
 * live at a common time. So for a = the i-th token of l's spine, below its parent U (i = 0: no
 * parent), and a token c = a·b with c < U, the pair (a, b) makes t invalid iff b is on t's left
 * spine with (i = 0, or b < U, or b an atom), and, where b is not t itself, the token u above
 * b on t's spine (L(u) = b) is >= c and, unless a is an atom, >= a. In the forest of left
 * parts (u's parent is L(u)), laid out depth first with each token's children by descending
 * id, those t are one range: b, then the subtrees of b's children from the first to the last
 * one >= that bound. The invalid set of l is the union of these ranges over l's spine and the
 * tokens c that extend each of its tokens (kept per token, c ascending: those below U are a
 * prefix), and of the tokens outside the trie (no pair with one is valid): a bitset in forest
 * order, made with word fills, then a bit per token to test.
 *
 * Exact where the model's tables are consistent, which building checks whole (NULL otherwise:
 * callers test pairs one by one): every token in the trie is found there by its bytes, at its
 * TNODE cell, and every trie value is such a token; a token outside the trie is an atom and no
 * token's part; every other token is an atom or has two parts in the trie, lower ids, whose
 * lengths (at least 1) add up to its own (so spines are shorter than max_token_len and the pair
 * test's guard is never reached). tests/test_automata.py compares every pair of real
 * vocabularies' tokens for sampled l with et_valid_pair.
 *
 * ET_FLAG_WHOLE models: the odd tokens (et_odd_of) are atoms here and no token's part (no
 * other token's spine holds one): a token that only a whole piece can be is no valid pair with
 * any token, like those outside the trie; the bits of the others (merged below a part) are
 * not this set's to give (the caller asks et_valid_pair), and after such an l there is none.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "../model/model.h"
#include "../unicode/ucd.h"

struct et_pairset {
    uint32_t n;         /* n_vocab */
    uint32_t n_lone;    /* tokens outside the trie */
    const uint32_t *split, *tnode;
    uint32_t *pos;      /* n: each token's place in the forest's order */
    uint32_t *at;       /* n: the token at each place (pos inverted) */
    uint32_t *end;      /* n: the end of its subtree there */
    uint32_t *kid_off;  /* n + 1: its children (tokens u with L(u) = it) in kids[] */
    uint32_t *kids;     /* by descending id */
    uint32_t *ext_off;  /* n + 1: its extensions in ext[] */
    uint32_t *ext;      /* (c, b, end) with c = a·b, c ascending, per token a; end: where the
                           range of places that c makes invalid ends (see extensions) */
    uint32_t *lone;     /* n_lone: the places of the tokens outside the trie (and of those
                           only a whole piece can be) */
    const uint64_t *odd;     /* ET_FLAG_WHOLE: et_odd_of (else NULL) */
    const uint32_t *msplit;  /* the model's SPLIT (ET_NONE: only a whole piece) */
    uint32_t *own;           /* ET_FLAG_WHOLE: SPLIT with the odd tokens as atoms (= split) */
    size_t bytes;
};

void et_pairset_free(struct et_pairset *ps)
{
    if (!ps) return;
    free(ps->pos);
    free(ps->at);
    free(ps->end);
    free(ps->kid_off);
    free(ps->kids);
    free(ps->ext_off);
    free(ps->ext);
    free(ps->lone);
    free(ps->own);
    free(ps);
}

/* Whether the tables hold what the invalid sets rely on (see the top). */
static int consistent(const et_model *m, const uint32_t *split)
{
    const uint32_t n = m->n_vocab;
    for (uint32_t s = 0; s < m->n_cells; s++) {
        const uint32_t v = et_value(m, s);
        if (v != ET_NONE && (v >= n || m->tnode[v] != s)) return 0;
    }
    for (uint32_t t = 0; t < n; t++) {
        const uint32_t l = split[2u * t], r = split[2u * t + 1u];
        const uint8_t *p = NULL;
        const uint32_t len = et_tok(m, t, &p);
        if (m->tnode[t] == ET_NONE) {
            if (l != t || r != t) return 0;
            continue;
        }
        if (m->tnode[t] >= m->n_cells || !len || len > m->max_token_len ||
            et_trie_walk(m, 0, p, len) != m->tnode[t])
            return 0;
        if (l == t && r == t) continue;
        if (l >= t || r >= t || m->tnode[l] == ET_NONE || m->tnode[r] == ET_NONE) return 0;
        const uint32_t ll = et_tok(m, l, &p), lr = et_tok(m, r, &p);
        if (!ll || !lr || (uint64_t)ll + lr != len) return 0;
    }
    return 1;
}

/* The forest of left parts: children lists, then places depth first. */
static int forest(struct et_pairset *ps)
{
    const uint32_t n = ps->n;
    uint32_t *fill = malloc(((size_t)n + 1u) * sizeof *fill);
    uint32_t *stack = malloc((size_t)n * 2u * sizeof *stack);
    if (!fill || !stack) {
        free(fill);
        free(stack);
        return 0;
    }
    for (uint32_t t = 0; t < n; t++) {
        const uint32_t l = ps->split[2u * t];
        if (l != t) ps->kid_off[l + 1u]++;
    }
    for (uint32_t i = 0; i < n; i++) ps->kid_off[i + 1u] += ps->kid_off[i];
    memcpy(fill, ps->kid_off, ((size_t)n + 1u) * sizeof *fill);
    for (uint32_t t = n; t-- > 0;) {
        const uint32_t l = ps->split[2u * t];
        if (l != t) ps->kids[fill[l]++] = t;
    }
    uint32_t at = 0;
    for (uint32_t root = 0; root < n; root++) {
        if (ps->split[2u * root] != root) continue;
        size_t sp = 0;
        stack[sp++] = root;
        stack[sp++] = ps->kid_off[root];
        ps->pos[root] = at++;
        while (sp) { /* each token is pushed once: sp <= 2n */
            const uint32_t x = stack[sp - 2u], k = stack[sp - 1u];
            if (k < ps->kid_off[x + 1u]) {
                const uint32_t u = ps->kids[k];
                stack[sp - 1u] = k + 1u;
                ps->pos[u] = at++;
                stack[sp++] = u;
                stack[sp++] = ps->kid_off[u];
            } else {
                ps->end[x] = at;
                sp -= 2u;
            }
        }
    }
    free(fill);
    free(stack);
    return at == n;
}

/* Each token's extensions: the tokens c = a·b (b a token), c ascending. */
static int extensions(const et_model *m, struct et_pairset *ps)
{
    const uint32_t n = ps->n;
    size_t cap = (size_t)n * 2u, used = 0;
    uint32_t *tmp = malloc(cap * 3u * sizeof *tmp); /* (a, c, b) in c order */
    if (!tmp) return 0;
    for (uint32_t c = 0; c < n; c++) {
        const uint8_t *q = NULL;
        const uint32_t len = m->tnode[c] == ET_NONE ? 0u : et_tok(m, c, &q);
        uint32_t s = 0;
        for (uint32_t k = 1; k < len; k++) {
            s = et_trie_next(m, s, q[k - 1u]); /* (the token's own path: consistent()) */
            const uint32_t a = et_value(m, s);
            if (a == ET_NONE) continue;
            const uint32_t sb = et_trie_walk(m, 0, q + k, len - k);
            const uint32_t b = sb == ET_NONE ? ET_NONE : et_value(m, sb);
            if (b == ET_NONE) continue;
            if (used == cap) {
                uint32_t *g = realloc(tmp, cap * 2u * 3u * sizeof *tmp);
                if (!g) {
                    free(tmp);
                    return 0;
                }
                tmp = g;
                cap *= 2u;
            }
            tmp[3u * used] = a;
            tmp[3u * used + 1u] = c;
            tmp[3u * used + 2u] = b;
            used++;
            ps->ext_off[a + 1u]++;
        }
    }
    for (uint32_t i = 0; i < n; i++) ps->ext_off[i + 1u] += ps->ext_off[i];
    ps->ext = malloc((used ? used : 1u) * 3u * sizeof *ps->ext);
    uint32_t *fill = malloc(((size_t)n + 1u) * sizeof *fill);
    if (!ps->ext || !fill) {
        free(tmp);
        free(fill);
        return 0;
    }
    memcpy(fill, ps->ext_off, ((size_t)n + 1u) * sizeof *fill);
    for (size_t e = 0; e < used; e++) {
        const uint32_t k = fill[tmp[3u * e]]++;
        ps->ext[3u * k] = tmp[3u * e + 1u];
        ps->ext[3u * k + 1u] = tmp[3u * e + 2u];
    }
    /* each range's end (see the top): b's place, then the subtrees of b's children from the
     * first to the last one >= the bound (c, or a where a has parts and c < a) */
    for (uint32_t a = 0; a < n; a++)
        for (uint32_t k = ps->ext_off[a]; k < ps->ext_off[a + 1u]; k++) {
            const uint32_t c = ps->ext[3u * k], b = ps->ext[3u * k + 1u];
            const uint32_t least = ps->split[2u * a] == a || c > a ? c : a;
            uint32_t lo = ps->kid_off[b], hi = ps->kid_off[b + 1u];
            while (lo < hi) { /* (children by descending id) */
                const uint32_t mid = lo + (hi - lo) / 2u;
                if (ps->kids[mid] >= least) lo = mid + 1u;
                else hi = mid;
            }
            ps->ext[3u * k + 2u] = lo == ps->kid_off[b] ? ps->pos[b] + 1u : ps->end[ps->kids[lo - 1u]];
        }
    ps->bytes += used * 3u * sizeof *ps->ext;
    free(tmp);
    free(fill);
    return 1;
}

/* Whether t is only ever a whole piece (ET_FLAG_WHOLE) or outside the trie. */
static int lone(const struct et_pairset *ps, uint32_t t)
{
    return ps->tnode[t] == ET_NONE || (ps->odd && ps->msplit[2u * t] == ET_NONE);
}

static struct et_pairset *build(const et_model *m)
{
    if (!et_model_pair_tables(m) || !m->n_vocab || m->n_vocab > (1u << 30))
        return NULL;
    const uint64_t *odd = et_odd_of(m); /* (NULL unless ET_FLAG_WHOLE) */
    if ((m->flags & ET_FLAG_WHOLE) && !odd) return NULL;
    struct et_pairset *ps = calloc(1, sizeof *ps);
    if (!ps) return NULL;
    const size_t n = m->n_vocab;
    ps->n = m->n_vocab;
    ps->split = m->split;
    ps->msplit = m->split;
    ps->odd = odd;
    if (odd) {
        if (!(ps->own = malloc(n * 2u * sizeof *ps->own))) {
            free(ps);
            return NULL;
        }
        memcpy(ps->own, m->split, n * 2u * sizeof *ps->own);
        for (uint32_t t = 0; t < ps->n; t++)
            if (et_odd(odd, t)) ps->own[2u * t] = ps->own[2u * t + 1u] = t;
        ps->split = ps->own;
    }
    if (!consistent(m, ps->split)) {
        et_pairset_free(ps);
        return NULL;
    }
    ps->tnode = m->tnode;
    ps->pos = malloc(n * sizeof *ps->pos);
    ps->at = malloc(n * sizeof *ps->at);
    ps->end = malloc(n * sizeof *ps->end);
    ps->kid_off = calloc(n + 1u, sizeof *ps->kid_off);
    ps->kids = malloc(n * sizeof *ps->kids);
    ps->ext_off = calloc(n + 1u, sizeof *ps->ext_off);
    for (uint32_t t = 0; t < ps->n; t++) ps->n_lone += (uint32_t)lone(ps, t);
    ps->lone = malloc((ps->n_lone ? ps->n_lone : 1u) * sizeof *ps->lone);
    ps->bytes = sizeof *ps + n * (odd ? 32u : 24u) + 8u + ps->n_lone * 4u;
    if (!ps->pos || !ps->at || !ps->end || !ps->kid_off || !ps->kids || !ps->ext_off || !ps->lone ||
        !forest(ps) || !extensions(m, ps)) {
        et_pairset_free(ps);
        return NULL;
    }
    for (uint32_t t = 0, k = 0; t < ps->n; t++) {
        if (lone(ps, t)) ps->lone[k++] = ps->pos[t];
        ps->at[ps->pos[t]] = t; /* (pos is a permutation: forest() placed each token once) */
    }
    return ps;
}

const struct et_pairset *et_pairset_of(const et_model *m)
{
    _Atomic(struct et_pairset *) *slot = &((et_model *)m)->pairset; /* (allocated, not const) */
    struct et_pairset *ps = atomic_load_explicit(slot, memory_order_acquire);
    if (ps) return ps;
    if (atomic_load_explicit(&((et_model *)m)->pairset_failed, memory_order_relaxed)) return NULL;
    struct et_pairset *mine = build(m), *none = NULL;
    if (!mine) {
        atomic_store_explicit(&((et_model *)m)->pairset_failed, 1, memory_order_relaxed);
        return NULL;
    }
    if (atomic_compare_exchange_strong_explicit(slot, &none, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    et_pairset_free(mine); /* another thread's came first */
    return none;
}

size_t et_pairset_bytes(const struct et_pairset *ps) { return ps ? ps->bytes : 0u; }
size_t et_pairset_words(const struct et_pairset *ps) { return ((size_t)ps->n + 63u) / 64u; }
const uint32_t *et_pairset_pos(const struct et_pairset *ps) { return ps->pos; }
size_t et_pairset_cost(const struct et_pairset *ps, uint32_t l)
{
    if (l >= ps->n || ps->tnode[l] == ET_NONE) return 0;
    size_t cost = 0;
    for (uint32_t r = l, up = ET_NONE;; up = r, r = ps->split[2u * r + 1u]) {
        uint32_t lo = ps->ext_off[r], hi = ps->ext_off[r + 1u];
        const uint32_t base = lo;
        while (lo < hi) { /* the extensions below up */
            const uint32_t mid = lo + (hi - lo) / 2u;
            if (ps->ext[3u * mid] < up) lo = mid + 1u;
            else hi = mid;
        }
        cost += lo - base;
        if (ps->split[2u * r] == r) return cost;
    }
}

static void fill(uint64_t *bits, uint32_t a, uint32_t b) /* bits [a, b) */
{
    if (a >= b) return;
    const uint32_t wa = a >> 6, wb = (b - 1u) >> 6;
    const uint64_t ma = ~0ull << (a & 63u), mb = ~0ull >> (63u - ((b - 1u) & 63u));
    if (wa == wb) {
        bits[wa] |= ma & mb;
        return;
    }
    bits[wa] |= ma;
    for (uint32_t w = wa + 1u; w < wb; w++) bits[w] = ~0ull;
    bits[wb] |= mb;
}

/* The invalid set of l (see the top) into bits, zero before: in the pair set's order (fill,
 * a word at a time), or by token id (by_id). 0 where it is not this set's to give (l odd) or
 * it is every token (l lone): the callers do those. */
static int ranges(const struct et_pairset *ps, uint32_t l, uint64_t *bits, int by_id)
{
    if (l >= ps->n || lone(ps, l) || et_odd(ps->odd, l)) return 0;
    uint32_t r = l, up = ET_NONE; /* the spine's token, and its parent (none for l) */
    for (;;) {
        for (uint32_t e = ps->ext_off[r]; e < ps->ext_off[r + 1u]; e++) {
            const uint32_t c = ps->ext[3u * e], b = ps->ext[3u * e + 1u], end = ps->ext[3u * e + 2u];
            if (c >= up) break;
            if (r != l && b >= up && ps->split[2u * b] != b) continue;
            if (!by_id) fill(bits, ps->pos[b], end);
            else
                for (uint32_t p = ps->pos[b]; p < end; p++)
                    bits[ps->at[p] >> 6] |= (uint64_t)1 << (ps->at[p] & 63u);
        }
        if (ps->split[2u * r] == r) break;
        up = r;
        r = ps->split[2u * r + 1u];
    }
    for (uint32_t k = 0; k < ps->n_lone; k++) {
        const uint32_t t = by_id ? ps->at[ps->lone[k]] : ps->lone[k];
        bits[t >> 6] |= (uint64_t)1 << (t & 63u);
    }
    return 1;
}

int et_pairset_invalid(const struct et_pairset *ps, uint32_t l, uint64_t *bits)
{
    if (l < ps->n && lone(ps, l)) { /* no pair with l is valid */
        memset(bits, 0xFF, et_pairset_words(ps) * sizeof *bits);
        return 1;
    }
    memset(bits, 0, et_pairset_words(ps) * sizeof *bits);
    return ranges(ps, l, bits, 0);
}

int et_pairset_by_token(const struct et_pairset *ps, uint32_t l, uint64_t *out)
{
    const size_t words = et_pairset_words(ps);
    if (l < ps->n && lone(ps, l)) { /* every token */
        memset(out, 0xFF, words * sizeof *out);
        if (ps->n % 64u) out[ps->n / 64u] = ~0ull >> (64u - ps->n % 64u);
        return 1;
    }
    memset(out, 0, words * sizeof *out);
    return ranges(ps, l, out, 1);
}
