/* aut_check: token-level automata with no Python, for sanitizer runs (tests/test_automata.py).
 *
 *   aut_check MODEL DFA FLAGS STEPS SEED [FIRST]
 *
 * DFA is a file: uint32 n, then n * 256 int32 transitions, then n accept bytes (as
 * edgetok.regex_dfa writes them). Builds the automaton with FLAGS (1: canonical), then walks
 * STEPS random steps from the start: at each state the allowed ids and bitset (checked to
 * agree), then a random allowed id (restarting at the start when none is), and a few ids that
 * are not allowed (next must say -1). FIRST (ids, comma-separated): before that, the state
 * after each of them from the start is checked the same way, and ids its mask allows (1,024
 * spread over it) must step (where a walk rarely goes: after tokens the pair walk cannot
 * take; with AUT_CHECK_PAIRS every pair answer is checked). Prints rows,
 * bytes, and the steps taken.
 * Exit status: 0 ok, 1 a library error or a disagreement, 2 usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgetok.h"

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* The mask of state s (k ids into ids, bits) checked against itself and next(): 1 if bad. */
static int check_state(const et_automaton *a, int64_t s, uint32_t nv, uint32_t *ids,
                       uint8_t *bits, size_t nbytes, size_t *k)
{
    size_t k2 = 0, k3 = 0, set = 0;
    int bad = 0;
    /* the bitset alone first (a state's first mask: mask_whole where the row has a bitset),
     * then with the ids, then the count: the same */
    uint8_t *const alone = malloc(nbytes ? nbytes : 1u);
    if (!alone || et_automaton_allowed(a, s, NULL, 0, alone, nbytes, &k3) ||
        et_automaton_allowed(a, s, ids, nv, bits, nbytes, k) ||
        et_automaton_allowed(a, s, NULL, 0, NULL, 0, &k2) || *k != k2 || *k != k3 ||
        memcmp(alone, bits, nbytes)) {
        free(alone);
        return 1;
    }
    free(alone);
    for (size_t b = 0; b < nbytes; b++)
        for (unsigned x = 0; x < 8; x++) set += bits[b] >> x & 1u;
    for (size_t j = 0; j < *k; j++)
        if (!(bits[ids[j] >> 3] >> (ids[j] & 7u) & 1u) || (j && ids[j] <= ids[j - 1])) bad = 1;
    if (set != *k) bad = 1;
    for (int probe = 0; probe < 4; probe++) { /* ids that are not allowed */
        uint32_t t = next_rand() % (nv + 8u);
        if ((t >= nv || !(bits[t >> 3] >> (t & 7u) & 1u)) && et_automaton_next(a, s, t) != -1)
            bad = 1;
    }
    (void)et_automaton_accepting(a, s);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: aut_check MODEL DFA FLAGS STEPS SEED [FIRST]\n");
        return 2;
    }
    et_model *m = NULL;
    int rc = et_model_open(argv[1], 0, &m);
    if (rc) {
        fprintf(stderr, "aut_check: %s\n", et_strerror(rc));
        return 1;
    }
    FILE *f = fopen(argv[2], "rb");
    uint32_t n = 0;
    if (!f || fread(&n, 4, 1, f) != 1 || n == 0 || n > (1u << 20)) {
        fprintf(stderr, "aut_check: bad DFA file\n");
        return 1;
    }
    int32_t *trans = malloc((size_t)n * 256u * 4u);
    uint8_t *accept = malloc(n);
    if (!trans || !accept || fread(trans, 4, (size_t)n * 256u, f) != (size_t)n * 256u ||
        fread(accept, 1, n, f) != n) {
        fprintf(stderr, "aut_check: bad DFA file\n");
        return 1;
    }
    fclose(f);
    unsigned flags = (unsigned)strtoul(argv[3], NULL, 10);
    long steps = strtol(argv[4], NULL, 10);
    rng += strtoull(argv[5], NULL, 10);
    et_automaton *a = NULL;
    if ((rc = et_automaton_build(m, trans, accept, n, flags, &a))) {
        fprintf(stderr, "aut_check: build: %s\n", et_strerror(rc));
        return 1;
    }
    const uint32_t nv = et_model_n_vocab(m);
    const size_t nbytes = ((size_t)nv + 7u) / 8u;
    uint32_t *ids = malloc((size_t)nv * 4u);
    uint8_t *bits = malloc(nbytes);
    int64_t s = 0;
    int bad = !ids || !bits;
    for (const char *p = argc == 7 ? argv[6] : ""; *p && !bad;) { /* FIRST */
        char *end = NULL;
        const int64_t f = et_automaton_next(a, 0, (uint32_t)strtoul(p, &end, 10));
        size_t k = 0;
        if (end == p) break;
        p = *end == ',' ? end + 1 : end;
        if (f < 0) continue;
        bad = check_state(a, f, nv, ids, bits, nbytes, &k);
        for (size_t j = 0; j < k && !bad; j += 1u + k / 1024u) bad = et_automaton_next(a, f, ids[j]) < 0;
    }
    for (long i = 0; i < steps && !bad; i++) {
        size_t k = 0;
        if (check_state(a, s, nv, ids, bits, nbytes, &k)) {
            bad = 1;
            break;
        }
        if (!k) {
            s = 0;
            continue;
        }
        int64_t ns = et_automaton_next(a, s, ids[next_rand() % k]);
        if (ns < 0) bad = 1;
        s = ns;
    }
    /* states that are none of the automaton's */
    size_t k = 0;
    if (et_automaton_next(a, -5, 0) != -1 || et_automaton_accepting(a, INT64_MAX) ||
        et_automaton_allowed(a, INT64_MAX, NULL, 0, NULL, 0, &k) != ET_E_ARG)
        bad = 1;
    printf("rows %u bytes %zu bad %d\n", et_automaton_rows(a), et_automaton_bytes(a), bad);
    free(ids);
    free(bits);
    free(trans);
    free(accept);
    et_automaton_free(a);
    et_model_close(m);
    return bad;
}
