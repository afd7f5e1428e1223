/* fuzz_load: the loader on mutated models, then everything a binding calls on whatever loads.
 *
 * Input: an .etok image (the seed corpus holds small compiled models). The checksum is
 * re-sealed before loading, so mutations reach the loader's validation and the encoders
 * rather than stopping at the checksum: a model made by someone else has a correct checksum
 * too. Whatever loads must encode, count, split, decode and grow without a sanitizer report
 * or a hang (libFuzzer's -timeout); a model that et_model_verify accepts must also give back
 * the text it encoded (byte-level BPE models). A pair set (csrc/bpe/pairset.c), where the
 * tables allow one, must say what et_valid_pair says. */
#include "../model/model.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SAMPLE[] =
    "Hello, world! It's   12345 apples\r\n\n  caf\xc3\xa9 \xe2\x96\x81x \xf0\x9f\x98\x80\xff"
    "theHTTPServer's thethethethethethethethethethethethethethethethethethethethethethethe"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\t";

static void exercise(const et_model *m, int verified)
{
    const size_t len = sizeof SAMPLE - 1;
    const char *t = SAMPLE;
    et_ws *ws = fz_ws(m, len + 16);
    size_t cap = et_encode_bound(m, len) + 1, n = 0, used = 0;
    uint32_t *ids = fz_alloc(cap * 4);
    int rc = et_encode(ws, t, len, ET_FINAL, ids, cap, &n, &used);
    CHECK(n <= cap && used <= len);
    if (rc == ET_OK) {
        size_t dl = 0, dn = 0;
        if (et_decode_len(m, ids, n, &dl) == ET_OK) {
            char *out = fz_alloc(dl + 1);
            CHECK(et_decode(m, ids, n, out, dl, &dn) == ET_OK && dn == dl);
            if (verified && et_model_kind(m) == ET_MODEL_BPE && !et_model_drops_bytes(m))
                CHECK(dl == len && memcmp(out, t, len) == 0);
            free(out);
        } else {
            CHECK(!verified);
        }
    }
    size_t c = 0;
    (void)et_count(ws, t, len, ET_FINAL, &c, &used);
    (void)et_count(ws, t, len, 0, &c, &used);
    (void)et_count_limit(ws, t, len, 7, &c, &used);
    { /* a long piece, settled in parts (ET_SETTLE: the chains of the last-token table) */
        enum { LONG = 6000 };
        char *run = fz_alloc(LONG);
        et_ws *big = fz_ws(m, LONG);
        uint32_t *rids = fz_alloc((et_encode_bound(m, LONG) + 1) * 4);
        for (int k = 0; k < 2; k++) { /* a letter, an emoji */
            for (size_t i = 0; i < LONG; i++) run[i] = k ? "\xf0\x9f\x98\x80"[i % 4] : 'a';
            size_t rn = 0, ru = 0;
            if (et_encode(big, run, LONG, ET_SETTLE, rids, et_encode_bound(m, LONG) + 1, &rn,
                          &ru) == ET_OK)
                CHECK(ru <= LONG && rn <= ru);
            (void)et_count(big, run, LONG, ET_SETTLE, &rn, &ru);
        }
        free(rids);
        free(big);
        free(run);
    }
    size_t scap = len + 64, cut = 0, k = 0;
    size_t *ends = fz_alloc(scap * sizeof *ends);
    uint32_t *sids = fz_alloc(scap * sizeof *sids); /* split_at's ids: room for scap */
    for (size_t budget = 1; budget < 40; budget += 9) {
        if (et_split_at(ws, t, len, budget, sids, ends, scap, &cut, &k) == ET_OK)
            CHECK(cut <= len && k <= budget);
    }
    free(sids);
    uint32_t *cum = fz_alloc((len + 1) * 4);
    if (et_prefix_counts(ws, t, len, cum) == ET_OK) {
        (void)et_count_range(ws, t, len, cum, 3, len - 5, &c);
        (void)et_count_range(ws, t, len, cum, 0, len, &c);
    }
    (void)et_shard_cut(m, t, len, 10);
    size_t np = 0;
    (void)et_pretokenize(m, t, len, ET_FINAL, ends, scap, &np, &used);
    if (et_model_pair_tables(m) && et_model_kind(m) == ET_MODEL_BPE) { /* (grow: backtracking only) */
        uint32_t *last = fz_alloc(len * 4), *cnt = fz_alloc(len * 4);
        uint32_t *walks = fz_alloc(((size_t)et_model_max_token_len(m) + 1) * 8);
        size_t nw = 0;
        (void)et_piece_grow(ws, t + 100, 0, 60, last, cnt, walks, &nw);
        free(last);
        free(cnt);
        free(walks);
        /* the pair set (canonical automata): none, or et_valid_pair's answers exactly */
        const struct et_pairset *ps = et_pairset_of(m);
        const uint32_t nv = et_model_n_vocab(m);
        if (ps) {
            uint64_t *bits = fz_alloc(et_pairset_words(ps) * 8u),
                     *by_id = fz_alloc(et_pairset_words(ps) * 8u);
            const uint32_t *pos = et_pairset_pos(ps);
            for (uint32_t l = 0; l < nv && l < 600u; l += 1u + l / 64u) {
                const uint64_t *odd = et_odd_of(m); /* (ET_FLAG_WHOLE: bits not given) */
                const int made = et_pairset_invalid(ps, l, bits);
                CHECK(et_pairset_by_token(ps, l, by_id) == made); /* (the same set by id) */
                if (!made) {
                    CHECK(et_odd(odd, l));
                    continue;
                }
                for (uint32_t u = 0; u < nv; u++) {
                    CHECK((bits[pos[u] >> 6] >> (pos[u] & 63u) & 1u) == (by_id[u >> 6] >> (u & 63u) & 1u));
                    if (et_odd(odd, u) && m->split[2u * u] != ET_NONE)
                        continue;
                    const int valid = !(bits[pos[u] >> 6] >> (pos[u] & 63u) & 1u);
                    CHECK(valid == et_valid_pair(m, l, u));
                }
            }
            free(bits);
            free(by_id);
        }
    }
    /* ids the model may not have: decoding says so, never reads past a table */
    uint32_t odd[6] = {0, 255, et_model_n_vocab(m) - 1, et_model_n_vocab(m), ET_NONE, 1000};
    size_t dl = 0;
    if (et_decode_len(m, odd, 6, &dl) == ET_OK) {
        char *out = fz_alloc(dl + 1);
        (void)et_decode(m, odd, 6, out, dl, &dl);
        free(out);
    }
    for (uint32_t i = 0; i < et_model_n_specials(m); i++) (void)et_model_special(m, i);
    uint32_t id;
    (void)et_token_lookup(m, "the", 3, &id);
    free(cum);
    free(ends);
    free(ids);
    free(ws);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (16u << 20)) return 0;
    uint8_t *img = fz_alloc(size);
    if (size) memcpy(img, data, size);
    if (size >= sizeof(et_header)) { /* re-seal the checksum over the mutated image */
        et_header h;
        memcpy(&h, img, sizeof h);
        if (h.header_size == sizeof(et_header)) {
            h.checksum = et_image_checksum(img, size);
            memcpy(img, &h, sizeof h);
        }
    }
    et_model *m = NULL;
    if (et_model_from_buffer(img, size, 0, &m) == ET_OK) {
        int verified = et_model_verify(m) == ET_OK;
        exercise(m, verified);
        et_model_close(m);
        et_model *v = NULL; /* a verified load agrees with et_model_verify */
        int rc = et_model_from_buffer(img, size, ET_LOAD_VERIFY, &v);
        CHECK((rc == ET_OK) == verified);
        et_model_close(v);
    }
    free(img);
    return 0;
}
