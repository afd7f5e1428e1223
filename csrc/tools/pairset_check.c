/* pairset_check: the model's pair set (csrc/bpe/pairset.c) against et_valid_pair, pair by
 * pair (tests/test_automata.py).
 *
 *   pairset_check MODEL LOW RANDOM SEED
 *
 * For every left token l below LOW and RANDOM more drawn at random (xorshift from SEED),
 * compares et_pairset_invalid(l) with !et_valid_pair(l, t) for every token t of the model,
 * and et_pairset_by_token(l) with et_pairset_invalid(l) for every t (the same set). Prints the pairs compared and those that differ (the first few named). Exit status: 0 all
 * equal, 1 a difference or no pair set, 2 usage or a model that does not load. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "edgetok.h"
#include "model/model.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: pairset_check MODEL LOW RANDOM SEED\n");
        return 2;
    }
    et_model *m = NULL;
    int rc = et_model_open(argv[1], 0, &m);
    if (rc) {
        fprintf(stderr, "pairset_check: %s: %s\n", argv[1], et_strerror(rc));
        return 2;
    }
    const struct et_pairset *ps = et_pairset_of(m);
    if (!ps) {
        fprintf(stderr, "pairset_check: %s has no pair set\n", argv[1]);
        et_model_close(m);
        return 1;
    }
    const uint32_t n = et_model_n_vocab(m), low = (uint32_t)strtoul(argv[2], NULL, 10),
                   random = (uint32_t)strtoul(argv[3], NULL, 10);
    uint64_t rng = strtoull(argv[4], NULL, 10) * 2654435761u + 88172645463325252ull;
    uint64_t *bits = malloc(et_pairset_words(ps) * sizeof *bits),
             *by_id = malloc(et_pairset_words(ps) * sizeof *by_id);
    const uint32_t *pos = et_pairset_pos(ps);
    size_t pairs = 0, bad = 0;
    for (uint32_t k = 0; bits && by_id && k < low + random; k++) {
        uint32_t l = k;
        if (k >= low) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            l = (uint32_t)(rng % n);
        }
        if (l >= n || !et_pairset_invalid(ps, l, bits)) continue;
        if (!et_pairset_by_token(ps, l, by_id)) {
            if (bad++ < 10) printf("differs: l=%u: et_pairset_by_token gives no set\n", l);
            continue;
        }
        for (uint32_t t = 0; t < n; t++)
            if ((bits[pos[t] >> 6] >> (pos[t] & 63u) & 1u) != (by_id[t >> 6] >> (t & 63u) & 1u) &&
                bad++ < 10)
                printf("differs: l=%u t=%u: et_pairset_by_token\n", l, t);
        const uint64_t *odd = et_odd_of(m); /* (ET_FLAG_WHOLE: these bits are not given) */
        for (uint32_t t = 0; t < n; t++, pairs++) {
            if (et_odd(odd, t) && m->split[2u * t] != ET_NONE) continue;
            const int invalid = (int)(bits[pos[t] >> 6] >> (pos[t] & 63u) & 1u);
            if (invalid == !et_valid_pair(m, l, t)) continue;
            if (bad++ < 10)
                printf("differs: l=%u t=%u: et_valid_pair %d\n", l, t, et_valid_pair(m, l, t));
        }
    }
    printf("%zu pairs compared, %zu differ; pair set %zu bytes\n", pairs, bad,
           et_pairset_bytes(ps));
    const int ok = bits && by_id && pairs && !bad;
    free(bits);
    free(by_id);
    et_model_close(m);
    return ok ? 0 : 1;
}
