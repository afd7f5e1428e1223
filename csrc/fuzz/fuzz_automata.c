/* fuzz_automata: token-level automata (csrc/automata) on the models of ET_FUZZ_MODELS, and on
 * small models made of the first 3,000 ids of each BPE model with pair tables.
 *
 * Input: byte 0 picks the model, byte 1 the mode.
 *   mode & 1 == 0: soundness. The rest is a text (UTF-8 only; other inputs are skipped); its
 *     encoding must walk the canonical automaton of "any text" ([\x00-\xff]*, built once per
 *     model) to an accepting state with every token allowed (by next; by the mask too for the
 *     first token of one text in eight: a mask there costs the whole vocabulary).
 *   mode & 1 == 1: a DFA from the input (byte 2: 1-6 states; per state an accept flag and up
 *     to four byte ranges with their targets), built plain or canonical (mode & 2), then a
 *     walk (canonical ones on the small models): at each state the mask (ids and bitset) must
 *     agree with itself and with next, a
 *     token it leaves out must get -1 from next, and states the input makes up (any int64)
 *     must give an error or -1, never a crash. Models without canonical automata must refuse
 *     ET_AUT_CANONICAL with ET_E_ARG. */
#include "fuzz_common.h"

#define MAX_MODELS 24
#define MAX_TEXT 600
#define MAX_STEPS 12
#define SMALL_VOCAB 3000u /* the small models: a BPE model's first ids */

static et_model *models[MAX_MODELS];
static et_automaton *anything[MAX_MODELS]; /* canonical [\x00-\xff]*, or NULL */
static et_ws *ws[MAX_MODELS];
static size_t small_of[MAX_MODELS]; /* the small model made of model i, or i */
static size_t n_models;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A model of BPE model m's first SMALL_VOCAB ids (its merges are among them: rank order), the
 * same pretokenizer: random automata whose rows are not the whole vocabulary cost less. */
static et_model *small_model(const et_model *m)
{
    uint32_t param = 0, pretok = et_model_pretok(m, &param), n = 0, off[SMALL_VOCAB + 1] = {0};
    uint32_t ids[SMALL_VOCAB];
    char *bytes = fz_alloc((size_t)SMALL_VOCAB * 128u);
    for (uint32_t id = 0; id < SMALL_VOCAB && id < et_model_n_vocab(m); id++) {
        const uint8_t *p = NULL;
        size_t len = 0;
        if (et_token_bytes(m, id, &p, &len) != ET_OK || !len || len > 128u) continue;
        memcpy(bytes + off[n], p, len);
        off[n + 1] = off[n] + (uint32_t)len;
        ids[n++] = id;
    }
    uint8_t *img = NULL;
    size_t img_len = 0;
    et_model *out = NULL;
    uint32_t soff[1] = {0};
    CHECK(et_compile_bpe(bytes, off, ids, n, "", soff, NULL, NULL, 0, pretok, param, 0, "", &img,
                         &img_len) == ET_OK);
    void *buf = fz_alloc(img_len); /* kept for the fuzzer's life */
    memcpy(buf, img, img_len);
    et_free(img);
    free(bytes);
    CHECK(et_model_from_buffer(buf, img_len, ET_LOAD_VERIFY, &out) == ET_OK);
    return out;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    n_models = fz_open_models("fuzz_automata", models, MAX_MODELS / 2u);
    for (size_t i = 0, n = n_models; i < n; i++) {
        small_of[i] = i;
        if (et_model_kind(models[i]) == ET_MODEL_BPE && et_model_pair_tables(models[i])) {
            small_of[i] = small_of[n_models] = n_models;
            models[n_models++] = small_model(models[i]);
        }
    }
    int32_t trans[256];
    const uint8_t accept = 1;
    for (unsigned b = 0; b < 256u; b++) trans[b] = 0;
    for (size_t i = 0; i < n_models; i++) {
        ws[i] = fz_ws(models[i], MAX_TEXT + 16);
        if (et_model_kind(models[i]) != ET_MODEL_BPE) continue;
        int rc = et_automaton_build(models[i], trans, &accept, 1, ET_AUT_CANONICAL, &anything[i]);
        CHECK(rc == ET_OK || rc == ET_E_ARG);
        if (rc) anything[i] = NULL;
    }
    return 0;
}

/* Whether p[0..n) is UTF-8 (no surrogates, nothing over U+10FFFF, shortest forms). */
static int utf8(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t c = p[i], k = c < 0x80u ? 1u : c >= 0xC2u && c < 0xE0u ? 2u
                                             : c >= 0xE0u && c < 0xF0u ? 3u
                                             : c >= 0xF0u && c < 0xF5u ? 4u : 0u;
        if (!k || i + k > n) return 0;
        uint32_t cp = k == 1u ? c : c & (0x7Fu >> k);
        for (uint32_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xC0u) != 0x80u) return 0;
            cp = cp << 6 | (p[i + j] & 0x3Fu);
        }
        if ((k == 3u && (cp < 0x800u || (cp >= 0xD800u && cp < 0xE000u))) ||
            (k == 4u && (cp < 0x10000u || cp > 0x10FFFFu)))
            return 0;
        i += k;
    }
    return 1;
}

/* The mask of state s (n ids, ascending, into ids; bits): checked against itself. */
static size_t mask(const et_automaton *a, uint32_t V, int64_t s, uint32_t *ids, uint8_t *bits)
{
    size_t n = 0, nb = (V + 7u) / 8u, set = 0, n3 = 0;
    /* the bitset alone first (a state's first mask: mask_whole where the row has a bitset),
     * then with the ids: the same */
    uint8_t *const alone = malloc(nb ? nb : 1u);
    CHECK(alone != NULL);
    CHECK(et_automaton_allowed(a, s, NULL, 0, alone, nb, &n3) == ET_OK);
    CHECK(et_automaton_allowed(a, s, ids, V, bits, nb, &n) == ET_OK);
    CHECK(n3 == n && !memcmp(alone, bits, nb));
    /* the bitset's ids (et_bitset_ids: the binding's cache) are the mask's, and a short room
     * says so */
    uint32_t *const back = malloc(n ? n * sizeof *back : 1u);
    CHECK(back != NULL);
    CHECK(et_bitset_ids(bits, nb, back, n, &n3) == ET_OK && n3 == n &&
          !memcmp(back, ids, n * sizeof *back));
    CHECK(!n || (et_bitset_ids(bits, nb, back, n - 1u, &n3) == ET_E_FULL && n3 == n));
    free(back);
    free(alone);
    CHECK(n <= V);
    for (size_t i = 0; i < n; i++) {
        CHECK(ids[i] < V && (i == 0 || ids[i - 1] < ids[i]));
        CHECK(bits[ids[i] >> 3] >> (ids[i] & 7u) & 1u);
    }
    for (size_t i = 0; i < nb; i++) set += (size_t)__builtin_popcount(bits[i]);
    CHECK(set == n);
    size_t n2 = 0;
    CHECK(et_automaton_allowed(a, s, NULL, 0, NULL, 0, &n2) == ET_OK && n2 == n);
    return n;
}

static void soundness(size_t pick, const uint8_t *t, size_t len)
{
    const et_automaton *a = anything[pick];
    if (!a || len > MAX_TEXT || !utf8(t, len)) return;
    const et_model *m = models[pick];
    const uint32_t V = et_model_n_vocab(m);
    size_t cap = et_encode_bound(m, len) + 1, n = 0, used = 0;
    uint32_t *out = fz_alloc(cap * 4u), *ids = fz_alloc((size_t)V * 4u);
    uint8_t *bits = fz_alloc(V / 8u + 1u);
    CHECK(fz_encode(&ws[pick], m, t, len, out, cap, &n, &used) == ET_OK && used == len);
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 && (len & 7u) == 0) { /* the mask too, now and then (it costs the vocabulary) */
            mask(a, V, s, ids, bits);
            CHECK(bits[out[i] >> 3] >> (out[i] & 7u) & 1u);
        }
        s = et_automaton_next(a, s, out[i]);
        if (s < 0) fprintf(stderr, "canonical encoding refused at token %zu of %zu\n", i, n);
        CHECK(s >= 0);
    }
    CHECK(et_automaton_accepting(a, s) == 1);
    free(out);
    free(ids);
    free(bits);
}

static void random_dfa(size_t pick, unsigned mode, const uint8_t *p, size_t len)
{
    if (mode & 2u) pick = small_of[pick]; /* canonical masks of big rows cost seconds here */
    const et_model *m = models[pick];
    const uint32_t V = et_model_n_vocab(m);
    uint32_t n = fz_take(&p, &len, 1) % 6u + 1u;
    int32_t *trans = fz_alloc((size_t)n * 256u * 4u);
    uint8_t accept[6] = {0};
    for (size_t i = 0; i < (size_t)n * 256u; i++) trans[i] = -1;
    for (uint32_t q = 0; q < n; q++) {
        uint32_t head = fz_take(&p, &len, 1);
        accept[q] = head & 1u;
        for (uint32_t r = 0; r < (head >> 1 & 3u) + 1u; r++) {
            uint32_t lo = fz_take(&p, &len, 1), hi = fz_take(&p, &len, 1);
            int32_t to = (int32_t)(fz_take(&p, &len, 1) % (n + 1u)) - 1;
            for (uint32_t b = lo; b <= hi && b < 256u; b++) trans[q * 256u + b] = to;
        }
    }
    et_automaton *a = NULL;
    const unsigned flags = mode & 2u ? ET_AUT_CANONICAL : 0u;
    int rc = et_automaton_build(m, trans, accept, n, flags, &a);
    free(trans);
    if (et_model_kind(m) != ET_MODEL_BPE || (flags && !anything[pick])) {
        CHECK(rc == ET_E_ARG);
        return;
    }
    CHECK(rc == ET_OK && a != NULL && et_automaton_rows(a) >= 1u);
    uint32_t *ids = fz_alloc((size_t)V * 4u);
    uint8_t *bits = fz_alloc(V / 8u + 1u);
    int64_t s = 0;
    for (int step = 0; step < MAX_STEPS && len; step++) {
        size_t k = mask(a, V, s, ids, bits);
        for (size_t i = 0; i < k && i < 4u; i++) CHECK(et_automaton_next(a, s, ids[i]) >= 0);
        uint32_t other = fz_take(&p, &len, 4); /* any id: allowed iff in the mask */
        int64_t o = et_automaton_next(a, s, other);
        CHECK((o >= 0) == (other < V && (bits[other >> 3] >> (other & 7u) & 1u)));
        int acc = et_automaton_accepting(a, s);
        CHECK(acc == 0 || acc == 1);
        int64_t made_up = (int64_t)((uint64_t)fz_take(&p, &len, 4) << 32 | fz_take(&p, &len, 4));
        size_t nn = 0;
        rc = et_automaton_allowed(a, made_up, NULL, 0, NULL, 0, &nn);
        CHECK(rc == ET_OK || rc == ET_E_ARG);
        CHECK(et_automaton_next(a, made_up, other) >= -1);
        (void)et_automaton_accepting(a, made_up);
        if (!k) break;
        s = et_automaton_next(a, s, ids[fz_take(&p, &len, 2) % k]);
        CHECK(s >= 0);
    }
    et_automaton_free(a);
    free(ids);
    free(bits);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || !n_models) return 0;
    const size_t pick = data[0] % n_models;
    const unsigned mode = data[1];
    if (mode & 1u) random_dfa(pick, mode, data + 2, size - 2);
    else soundness(pick, data + 2, size - 2);
    return 0;
}
