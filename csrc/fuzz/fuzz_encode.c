/* fuzz_encode: encoding and the budget operations on arbitrary bytes, for each model family,
 * with the invariants that turn a logic bug into a crash.
 *
 * Models: ET_FUZZ_MODELS, paths separated by ':' (run.sh makes them with models.py).
 * Input: byte 0 picks the model, bytes 1-6 the parameters (a streaming prefix, a shard start,
 * a token budget, a range), the rest is the text.
 *
 * Invariants, byte-level BPE models: count == len(encode); decode(encode(x)) == x (without
 * the bytes a model drops); streaming (non-final encode of a prefix, then the rest from where
 * it stopped) == whole; et_shard_cut halves == whole; warm workspace == fresh; split_at's
 * contract; count_range == count of the slice; count_limit stops at the piece boundary where
 * the whole text's count passes the limit; for every piece, tiktoken's merge (small), the heap
 * and the backtracking encoder give the same ids; et_piece_grow's counts == the heap's;
 * et_encode_piece of the whole text is its token, or else the heap's ids.
 * SentencePiece models: count == len(encode), warm == fresh, decode measures what it writes.
 * WordPiece models: the same, at most an id per byte, and a space is a cut: the ids of the
 * text before its first space and of the text after it, joined, are the whole text's.
 *
 * bpe.c is included, not linked, so that its merge functions can be compared directly. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
#define SETTLE_MIN_OVERRIDE 300u /* ET_SETTLE on pieces that fit the fuzzer's inputs, */
#define SETTLE_WINDOW_OVERRIDE 1800u /* in several windows */
#include "../bpe/bpe.c"
#include "fuzz_common.h"
#include "fuzz_merge.h"

#define MAX_MODELS 16
#define MAX_TEXT 8192

static et_model *models[MAX_MODELS];
static et_ws *warm[MAX_MODELS];
static size_t n_models;
static unsigned long n_inputs;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    n_models = fz_open_models("fuzz_encode", models, MAX_MODELS);
    for (size_t i = 0; i < n_models; i++) warm[i] = fz_ws(models[i], MAX_TEXT + 16);
    return 0;
}

/* encode(t[0..len)) complete, into a new array (*n ids). */
static uint32_t *encode_all(et_ws **ws, const et_model *m, const uint8_t *t, size_t len,
                            size_t *n)
{
    size_t cap = et_encode_bound(m, len) + 1, used = 0;
    uint32_t *ids = fz_alloc(cap * 4);
    int rc = fz_encode(ws, m, t, len, ids, cap, n, &used);
    if (rc) fprintf(stderr, "encode: %s\n", et_strerror(rc));
    CHECK(rc == ET_OK);
    CHECK(used == len);
    return ids;
}

static size_t count_all_of(et_ws **ws, const et_model *m, const uint8_t *t, size_t len)
{
    size_t c = 0, used = 0;
    CHECK(fz_encode(ws, m, t, len, NULL, 0, &c, &used) == ET_OK);
    CHECK(used == len);
    return c;
}

/* SentencePiece models: what holds without a reference. */
static void unigram_checks(et_ws **ws, et_ws **fresh, const et_model *m, const uint8_t *t,
                           size_t len)
{
    size_t n = 0, nf = 0;
    uint32_t *a = encode_all(ws, m, t, len, &n);
    uint32_t *b = encode_all(fresh, m, t, len, &nf);
    CHECK(same_ids(a, n, b, nf)); /* warm == fresh */
    CHECK(count_all_of(ws, m, t, len) == n);
    for (size_t i = 0; i < n; i++) CHECK(a[i] < et_model_n_vocab(m));
    size_t dl = 0, dn = 0;
    CHECK(et_decode_len(m, a, n, &dl) == ET_OK);
    char *out = fz_alloc(dl + 1);
    CHECK(et_decode(m, a, n, out, dl, &dn) == ET_OK);
    CHECK(dn == dl);
    free(out);
    free(a);
    free(b);
}

/* WordPiece models: at most an id per byte; a space cuts the text into independent parts;
 * et_encode_spans gives the same ids, each from a non-empty range of the text, in order; the
 * token budgets and streaming as for BPE (split_at after a whole word when one fits). */
static void wordpiece_checks(et_ws **ws, const et_model *m, const uint8_t *t, size_t len,
                             const uint32_t par[6])
{
    size_t n = 0, na = 0, nb = 0, sp = 0, ns = 0;
    uint32_t *all = encode_all(ws, m, t, len, &n);
    CHECK(n <= len);
    uint32_t *ids = fz_alloc((len + 1) * 4);
    size_t *spans = fz_alloc((len + 1) * 2 * sizeof(size_t));
    CHECK(et_encode_spans(*ws, (const char *)t, len, ids, spans, len + 1, &ns) == ET_OK);
    CHECK(ns == n && same_ids(ids, ns, all, n));
    for (size_t k = 0; k < ns; k++)
        CHECK(spans[2 * k] < spans[2 * k + 1] && spans[2 * k + 1] <= len &&
              (k == 0 || spans[2 * k] >= spans[2 * k - 2]));
    free(ids);
    free(spans);
    while (sp < len && t[sp] != ' ') sp++;
    if (sp < len) {
        uint32_t *a = encode_all(ws, m, t, sp, &na);
        uint32_t *b = encode_all(ws, m, t + sp + 1, len - sp - 1, &nb);
        CHECK(na + nb == n && same_ids(a, na, all, na) && same_ids(b, nb, all + na, nb));
        free(a);
        free(b);
    }

    /* split_at: its own encoding is the text's first k <= budget tokens; a cut inside a word
     * only when no word end fits */
    size_t budget = par[2] % 48, cap = len + budget + 64, cut = 0, k = 0, nc = 0;
    uint32_t *sids = fz_alloc(cap * 4);
    size_t *ends = fz_alloc(cap * sizeof *ends);
    CHECK(et_split_at(*ws, (const char *)t, len, budget, sids, ends, cap, &cut, &k) == ET_OK);
    CHECK(cut <= len && k <= budget && et_char_boundary(t, len, cut));
    uint32_t *own = encode_all(ws, m, t, cut, &nc);
    CHECK(same_ids(own, nc, sids, k) && same_ids(sids, k, all, k));
    if (n <= budget) CHECK(cut == len && k == n);
    if (k) {
        size_t nr = 0;
        uint32_t *rest = encode_all(ws, m, t + cut, len - cut, &nr);
        size_t sp = cut; /* a word cut in two: all k tokens are of that word, so nothing
                          * before a space in the prefix has a token */
        while (sp > 0 && t[sp - 1] != ' ') sp--;
        if (!(nr == n - k && same_ids(rest, nr, all + k, nr)) && sp > 0)
            CHECK(count_all_of(ws, m, t, sp - 1) == 0);
        free(rest);
    }
    free(own);
    free(sids);
    free(ends);

    /* count_limit; streaming: a prefix without ET_FINAL, then the rest from where it stopped */
    size_t limit = par[3] % (n + 2), c = 0, used = 0, p = len ? par[0] % (len + 1) : 0, got = 0;
    CHECK(et_count_limit(*ws, (const char *)t, len, limit, &c, &used) == ET_OK);
    CHECK(n <= limit ? (c == n && used == len) : (c > limit && used <= len));
    uint32_t *s = fz_alloc((p + 1) * 4);
    CHECK(et_encode(*ws, (const char *)t, p, 0, s, p + 1, &got, &used) == ET_OK);
    CHECK(used <= p && got <= n && same_ids(s, got, all, got));
    size_t nr = 0, cc = 0, cu = 0;
    uint32_t *rest = encode_all(ws, m, t + used, len - used, &nr);
    CHECK(same_ids(rest, nr, all + got, n - got) && nr == n - got);
    CHECK(et_count(*ws, (const char *)t, p, 0, &cc, &cu) == ET_OK && cc == got && cu == used);
    free(rest);
    free(s);
    free(all);
}

/* et_piece_grow over p[0..n) in two steps: each prefix's count is the heap's. */
static void grow_checks(et_ws *ws, const et_model *m, const uint8_t *p, uint32_t n,
                        uint32_t step)
{
    uint32_t *last = fz_alloc((size_t)n * 4), *cnt = fz_alloc((size_t)n * 4);
    uint32_t *walks = fz_alloc(((size_t)m->max_token_len + 1) * 8);
    size_t nw = 0, mid = step % (n + 1u);
    CHECK(et_piece_grow(ws, (const char *)p, 0, mid, last, cnt, walks, &nw) == ET_OK);
    CHECK(et_piece_grow(ws, (const char *)p, mid, n, last, cnt, walks, &nw) == ET_OK);
    uint64_t *mem = fz_alloc((size_t)(n + 1) * 48);
    uint32_t *h = fz_alloc((size_t)n * 4);
    size_t at[3] = {n, mid ? mid : 1, (n + 1) / 2};
    for (int k = 0; k < 3; k++) {
        size_t e = at[k];
        size_t nh = heap_merge(m, p, (uint32_t)e, mem, h);
        CHECK(cnt[e - 1] == nh && last[e - 1] == h[nh - 1]);
    }
    free(mem);
    free(h);
    free(last);
    free(cnt);
    free(walks);
}

static void bpe_checks(et_ws **wsp, et_ws **fresh, const et_model *m, const uint8_t *t, size_t len,
                       const uint32_t par[6])
{
    const int gaps = (m->flags & ET_FLAG_GAPS) != 0;
    et_ws *ws = *wsp; /* a BPE workspace sized for the text never grows */
    size_t n = 0, nf = 0;
    uint32_t *a = encode_all(wsp, m, t, len, &n);

    /* warm == fresh; count == len(encode) */
    uint32_t *b = encode_all(fresh, m, t, len, &nf);
    CHECK(same_ids(a, n, b, nf));
    free(b);
    CHECK(count_all_of(wsp, m, t, len) == n);

    /* decode(encode(x)) == x, less the bytes the model drops */
    size_t dl = 0, dn = 0;
    CHECK(et_decode_len(m, a, n, &dl) == ET_OK);
    uint8_t *dec = fz_alloc(dl + 1), *kept = fz_alloc(len + 1);
    CHECK(et_decode(m, a, n, (char *)dec, dl, &dn) == ET_OK && dn == dl);
    size_t nk = 0;
    for (size_t i = 0; i < len; i++)
        if (!gaps || m->byteids[t[i]] != ET_NONE) kept[nk++] = t[i];
    CHECK(dl == nk && (nk == 0 || memcmp(dec, kept, nk) == 0));
    free(dec);
    free(kept);

    /* streaming: text[0..p) without ET_FINAL (and with ET_SETTLE, which may stop inside a
     * long piece), then the rest from where it stopped */
    size_t prefixes[4] = {len, len ? par[0] % (len + 1) : 0, len, len ? par[0] % (len + 1) : 0};
    for (int k = 0; k < 4; k++) {
        size_t p = prefixes[k], cap = p + 1, got = 0, used = 0, got2 = 0;
        unsigned fl = k < 2 ? 0u : ET_SETTLE;
        uint32_t *s = fz_alloc(cap * 4);
        CHECK(et_encode(ws, (const char *)t, p, fl, s, cap, &got, &used) == ET_OK);
        CHECK(used <= p && got <= n && same_ids(s, got, a, got));
        uint32_t *rest = encode_all(wsp, m, t + used, len - used, &got2);
        CHECK(same_ids(rest, got2, a + got, n - got));
        size_t c = 0, cu = 0;
        CHECK(et_count(ws, (const char *)t, p, fl, &c, &cu) == ET_OK && c == got && cu == used);
        free(rest);
        free(s);
    }

    /* a short text repeated into a long run (a long piece when it is of one class): streamed
     * with ET_SETTLE from anywhere, then the rest, gives the run's own ids */
    if (len && len <= 48) {
        size_t rl = 0, want = 2600 + (size_t)(par[1] % 8) * 400;
        uint8_t *rep = fz_alloc(want + len);
        while (rl < want) {
            memcpy(rep + rl, t, len);
            rl += len;
        }
        rl -= par[4] % len; /* end anywhere in the unit */
        size_t nr = 0;
        uint32_t *whole = encode_all(wsp, m, rep, rl, &nr);
        size_t cuts[2] = {rl, rl - (par[0] % (rl / 2))};
        for (int k = 0; k < 2; k++) {
            size_t got = 0, used = 0, got2 = 0, c = 0, cu = 0;
            uint32_t *s = fz_alloc((cuts[k] + 1) * 4);
            CHECK(et_encode(ws, (const char *)rep, cuts[k], ET_SETTLE, s, cuts[k] + 1, &got,
                            &used) == ET_OK);
            CHECK(used <= cuts[k] && got <= nr && same_ids(s, got, whole, got));
            uint32_t *rest = encode_all(wsp, m, rep + used, rl - used, &got2);
            CHECK(same_ids(rest, got2, whole + got, nr - got));
            CHECK(et_count(ws, (const char *)rep, cuts[k], ET_SETTLE, &c, &cu) == ET_OK);
            CHECK(c == got && cu == used);
            free(rest);
            free(s);
        }
        free(whole);
        free(rep);
    }

    /* shard cuts: encoding the two halves apart gives the whole's ids */
    if (len && m->pretok != ET_PRETOK_REGEX) {
        size_t from = par[1] % len, cut = et_shard_cut(m, (const char *)t, len, from);
        CHECK(cut >= from && cut <= len);
        if (cut < len) {
            size_t n1 = 0, n2 = 0;
            uint32_t *x = encode_all(wsp, m, t, cut, &n1), *y = encode_all(wsp, m, t + cut, len - cut, &n2);
            CHECK(n1 + n2 == n && same_ids(x, n1, a, n1) && same_ids(y, n2, a + n1, n2));
            free(x);
            free(y);
        }
    }

    /* split_at: the longest prefix on a character boundary whose own encoding is the first
     * k <= budget tokens of the text's */
    size_t budget = par[2] % 64, cap = len + budget + 64, cut = 0, k = 0;
    uint32_t *ids = fz_alloc(cap * 4);
    size_t *ends = fz_alloc(cap * sizeof *ends);
    int rc = et_split_at(ws, (const char *)t, len, budget, ids, ends, cap, &cut, &k);
    if (gaps) {
        CHECK(rc == ET_E_ARG);
    } else {
        CHECK(rc == ET_OK && cut <= len && k <= budget);
        CHECK(et_char_boundary(t, len, cut));
        size_t nc = 0;
        uint32_t *own = encode_all(wsp, m, t, cut, &nc);
        CHECK(same_ids(own, nc, ids, k));
        CHECK(same_ids(ids, k, a, k)); /* the text's own first k tokens */
        for (size_t x = 0; x < k; x++) CHECK(ends[x] <= cut && (x == 0 || ends[x] >= ends[x - 1]));
        if (n <= budget) CHECK(cut == len && k == n);
        free(own);
    }
    free(ids);
    free(ends);

    /* prefix counts, count_range == count of the slice, count_limit */
    uint32_t *cum = fz_alloc((len + 1) * 4);
    CHECK(et_prefix_counts(ws, (const char *)t, len, cum) == ET_OK);
    CHECK(cum[len] == n && cum[0] == 0);
    for (int r = 0; r < 2; r++) {
        size_t i = (r ? par[3] : par[4]) % (len + 1), j = (r ? par[5] : par[3] + par[5]) % (len + 1);
        if (i > j) { size_t tmp = i; i = j; j = tmp; }
        size_t c = 0;
        CHECK(et_count_range(ws, (const char *)t, len, cum, i, j, &c) == ET_OK);
        CHECK(c == count_all_of(fresh, m, t + i, j - i));
    }
    size_t limit = par[2] % (n + 2), c = 0, used = 0;
    CHECK(et_count_limit(ws, (const char *)t, len, limit, &c, &used) == ET_OK);
    if (n <= limit) {
        CHECK(c == n && used == len);
    } else {
        CHECK(c > limit && used <= len && cum[used] == c); /* a piece boundary of the text's */
    }
    free(cum);

    /* every piece: the three merges agree; the longest one grown in two steps */
    size_t np = 0, pu = 0, longest = 0, lstart = 0, start = 0;
    size_t *pe = fz_alloc((len + 1) * sizeof *pe);
    CHECK(et_pretokenize(m, (const char *)t, len, ET_FINAL, pe, len + 1, &np, &pu) == ET_OK);
    CHECK(pu == len);
    for (size_t x = 0; x < np; x++) {
        CHECK(pe[x] > start && pe[x] <= len);
        size_t pl = pe[x] - start;
        if (!gaps && pl >= 2) merge_checks(m, t + start, (uint32_t)pl);
        if (pl > longest) { longest = pl; lstart = start; }
        start = pe[x];
    }
    if (!gaps && (m->flags & ET_FLAG_BACKTRACK) && longest && longest <= 1024)
        grow_checks(ws, m, t + lstart, (uint32_t)longest, par[0]);
    pair_checks(m, t, len);
    free(pe);
    free(a);

    /* the whole text as one piece (et_encode_piece): a token if it is one, else the heap's */
    if (!gaps && len >= 1 && len <= 1024) {
        uint32_t *one = fz_alloc(len * 4), *h = fz_alloc(len * 4);
        uint64_t *mem = fz_alloc((len + 1) * 48);
        size_t k = 0;
        CHECK(et_encode_piece(ws, (const char *)t, len, one, len, &k) == ET_OK);
        uint32_t node = et_trie_walk(m, 0, t, len);
        if (node != ET_NONE && et_value(m, node) != ET_NONE) {
            CHECK(k == 1 && one[0] == et_value(m, node));
        } else {
            size_t nh = heap_merge(m, t, (uint32_t)len, mem, h);
            CHECK(same_ids(one, k, h, nh));
        }
        free(one);
        free(h);
        free(mem);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_TEXT + 16) return 0;
    size_t pick = fz_take(&data, &size, 1) % n_models;
    uint32_t par[6];
    for (int k = 0; k < 6; k++) par[k] = fz_take(&data, &size, 1);
    par[0] |= fz_take(&data, &size, 1) << 8; /* the streaming prefix may be anywhere */
    const et_model *m = models[pick];
    et_ws *fresh = fz_ws(m, size + 16);
    if (et_model_kind(m) == ET_MODEL_BPE)
        bpe_checks(&warm[pick], &fresh, m, data, size, par);
    else
        unigram_checks(&warm[pick], &fresh, m, data, size);
    if (et_model_kind(m) == ET_MODEL_WORDPIECE) wordpiece_checks(&warm[pick], m, data, size, par);
    free(fresh);
    /* every 64th input: the warm workspace laid out anew with the other cache size (16384 <->
     * 32768 slots), taking the old one's pieces (et_ws_take): "warm == fresh" checks them */
    if (++n_inputs % 64u == 0) {
        const size_t slots = et_ws_slots(warm[pick]) == 16384u ? 32768u : 16384u;
        const size_t wsize = et_ws_size_slots(MAX_TEXT + 16, slots);
        et_ws *grown = et_ws_init_slots(m, fz_alloc(wsize), wsize, slots);
        CHECK(grown != NULL);
        et_ws *copy = fz_ws(m, 16); /* (16384 slots: a copy of one that size holds them all) */
        const size_t had = et_ws_take(copy, warm[pick]), took = et_ws_take(grown, warm[pick]);
        free(copy);
        CHECK(took != SIZE_MAX && (slots == 16384u || took == had));
        free(warm[pick]);
        warm[pick] = grown;
    }
    return 0;
}
