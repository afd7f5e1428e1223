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
    free(mem);
    free(h);
    free(s);
}

#endif
