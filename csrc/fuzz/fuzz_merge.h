/* The merge functions of bpe.c, compared (include after bpe.c and fuzz_common.h). */
#ifndef ET_FUZZ_MERGE_H
#define ET_FUZZ_MERGE_H

static int same_ids(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * 4) == 0);
}

/* The three merges of one piece p[0..n) (2 <= n <= cap of the scratch) agree. */
static void merge_checks(const et_model *m, const uint8_t *p, uint32_t n)
{
    uint64_t *mem = fz_alloc((size_t)(n + 1) * 48);
    uint32_t *h = fz_alloc((size_t)n * 4), *s = fz_alloc((size_t)n * 4);
    size_t nh = heap_merge(m, p, n, mem, h);
    CHECK(nh >= 1);
    if (n <= 512) {
        size_t ns = small_merge(m, p, n, mem, s, 1);
        CHECK(same_ids(h, nh, s, ns)); /* tiktoken's scan == heap */
    }
    if (m->flags & ET_FLAG_BACKTRACK) {
        size_t nb = bt_merge(NULL, m, p, n, mem, s);
        CHECK(same_ids(h, nh, s, nb)); /* backtracking == heap */
    }
    if (et_model_pair_tables(m) && !(m->flags & ET_FLAG_GAPS))
        for (size_t i = 0; i + 1 < nh; i++) CHECK(et_valid_pair(m, h[i], h[i + 1])); /* merged */
    free(mem);
    free(h);
    free(s);
}

/* et_valid_pair(a, b) of two ids from the input against its definition: the merges of a's
 * bytes followed by b's give [a, b] (a model with pair tables; a token that BPE does not make
 * from its bytes is never what merging gives). */
static inline void pair_checks(const et_model *m, const uint8_t *p, size_t n)
{
    if (!et_model_pair_tables(m) || (m->flags & ET_FLAG_GAPS) || n < 6) return;
    const uint32_t V = m->n_vocab, a = (p[0] | p[1] << 8 | (uint32_t)p[2] << 16) % V,
                   b = (p[3] | p[4] << 8 | (uint32_t)p[5] << 16) % V;
    const uint8_t *qa = NULL, *qb = NULL;
    const uint32_t la = et_tok(m, a, &qa), lb = et_tok(m, b, &qb);
    if (!la || !lb || m->tnode[a] == ET_NONE || m->tnode[b] == ET_NONE) {
        CHECK(!et_valid_pair(m, a, b));
        return;
    }
    const uint32_t len = la + lb;
    uint8_t *both = fz_alloc(len);
    memcpy(both, qa, la);
    memcpy(both + la, qb, lb);
    uint64_t *mem = fz_alloc((size_t)(len + 1) * 48);
    uint32_t *h = fz_alloc((size_t)len * 4);
    const size_t nh = heap_merge(m, both, len, mem, h);
    CHECK(et_valid_pair(m, a, b) == (nh == 2 && h[0] == a && h[1] == b));
    free(both);
    free(mem);
    free(h);
}

#endif
