/* csrc/automata: token-level automata over a BPE model's trie, for constrained decoding.
 *
 * The caller gives a DFA over bytes (from a regular expression; every state but perhaps the
 * start can still reach acceptance). Building walks the model's trie once per DFA state that
 * a token boundary can reach, in step with the DFA, and keeps for that state the tokens whose
 * bytes the DFA can read (the mask) and the state each leads to: rows of (id, next row),
 * ascending ids. Stepping is a binary search in a row; a mask is a memset and one bit per
 * allowed id. Nothing is allocated after building; any number of threads may use an automaton
 * (canonical ones remember look-ahead answers per entry with relaxed atomic stores of facts,
 * and keep more per key in slots that one mask holds at a time, given up to other keys).
 *
 * Canonical automata (ET_AUT_CANONICAL) also carry the last two tokens in the state, and the
 * digit run the text ends in (see digit_step; n_d values, 1 where the pretokenizer does not
 * group digits): ((row * (n_vocab + 1) + l2 + 1) * (n_vocab + 1) + l + 1) * n_d + d, 0 for
 * none. They allow a token t after token l only where BPE could put them side by side: inside
 * one piece as a valid pair (the backtracking encoder's test), or across a cut the
 * pretokenizer may make between them (see probe(); where the digit run decides the cut, it
 * decides), and only where some canonical text can go on after t (entry_live()). Sound
 * (a canonical encoding is never refused; tested, and fuzzed by csrc/fuzz/fuzz_automata.c),
 * not exact. What they learn is kept for every later mask and thread, in memory fixed at
 * build: per entry a look-ahead byte, a witness and a class (7 bytes; see classes()), per row
 * its number of classes (2 bytes), per class of a long row its group (2 bytes; see groups())
 * and whether its look-ahead holds after any token (1 byte; look_any), per group its first
 * entry (4 bytes), and two direct-mapped tables of 2 slots an entry,
 * 2^10 to 2^17 slots of 8 bytes each (pair_valid's and the probes', at most 2 MiB in all);
 * every store a fact, relaxed atomics. Masks of long rows (AUT_LONG) take the tokens that are
 * no valid pair after l from the model's pair set (csrc/bpe/pairset.c) in one
 * of AUT_SCRATCH bitsets of the automaton, each held by one mask at a time; they keep what the
 * look-ahead proved by (row, digit run, l's shape) (lk_take), and rows of a 16th of the
 * vocabulary or more keep every entry's verdict by that and the probes' shapes (vk_code), so
 * that a mask of a key seen before takes 64 tokens at a time; a first one starts from the
 * row's bitset and asks only the entries a valid pair does not settle (mask_whole).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../model/model.h"
#include "../unicode/ucd.h"

#define AUT_LONG 256u   /* rows this long make their masks with the pair set (pair tests: see
                          * pair_valid, and the first bytes after l in et_automaton_allowed) */
#ifndef AUT_SCRATCH
#define AUT_SCRATCH 4u /* masks that can use the pair set at once (more: pair by pair) */
#endif
#ifndef AUT_LK
#define AUT_LK 32u /* look-aheads of long rows kept, for as many keys (see lk_take) */
#endif
#ifndef AUT_VK
#define AUT_VK 16u /* verdicts of long rows kept, for as many keys (see vk_code) */
#endif
#ifndef AUT_CV
#define AUT_CV 16u /* class verdicts of long rows kept (see cv_take): more than AUT_SCRATCH, the
                   * masks that may ask for one at once */
#endif
#define AUT_SEEN 256u /* keys of verdicts seen once, remembered by hash (see vk_code) */
/* Answers about pairs of tokens kept by the model's canonical automata (et_shapes' kept): */
#define AUT_CUTB_BITS 10u /* cut_before's, by (l2, l) (see cut_before_kept) */
#define AUT_ENDK_BITS 12u /* end_ok's, by (l2, l) (see end_ok) */
#define AUT_SPLK_BITS 14u /* split_whole's, by (l, t) (see split_whole) */
#define AUT_KEPT_SLOTS ((1u << AUT_CUTB_BITS) + (1u << AUT_ENDK_BITS) + (1u << AUT_SPLK_BITS))
/* The rows whose masks use them, of V tokens' vocabulary: a word of 64 tokens at a time pays
 * where the row holds a 16th of the vocabulary or more. */
static inline uint32_t vk_row(uint32_t V)
{
    return V / 16u + 1u > AUT_LONG ? V / 16u + 1u : AUT_LONG;
}
_Static_assert(AUT_LK >= 2u && AUT_LK % 2u == 0u, "lk_take's two places");
_Static_assert(AUT_VK >= 2u && AUT_VK <= 16u && (AUT_VK & (AUT_VK - 1u)) == 0u,
               "the verdicts' places: all of them (slot_take)");
_Static_assert(AUT_CV >= 2u && AUT_CV <= 16u && (AUT_CV & (AUT_CV - 1u)) == 0u,
               "the class verdicts' places: all of them (slot_take)");
struct et_automaton {
    const et_model *m;
    uint32_t n_rows, n_vocab;
    unsigned flags;
    uint32_t *row;    /* n_rows + 1 offsets into tok / nxt */
    uint32_t *tok;    /* allowed ids of each row, ascending */
    uint32_t *nxt;    /* the row each leads to */
    uint8_t *accept;  /* per row: the DFA state accepts */
    uint32_t *rb_at;  /* per row, its bitset's index in rb + 1 (0: none; see row_bits) */
    uint64_t *rb;     /* the bitsets by token id of the rows of vk_row() entries or more,
                       * (n_vocab + 63) / 64 words each (plain masks copy them; canonical
                       * ones clear what they refuse) */
    _Atomic uint64_t *rn; /* canonical, with rb: per entry, a bit: its class may not have its
                           * look-ahead proven after any token (cany not 1, or no class): at
                           * first all, cleared as masks find cany 1 (see mask_rn_in) */
    _Atomic uint32_t *rn_n; /* per row: [2r] its entries left in rn (as last counted), [2r + 1]
                             * its classes that cany proved since */
    _Atomic uint8_t *live; /* canonical: per (row, token) entry, what look-ahead proved */
    _Atomic uint32_t *wit; /* canonical: per entry, a next entry that proved it live (see
                            * entry_live): (offset in its row + 1) << 1 | valid pair; 0: none */
    _Atomic uint64_t *lany; /* canonical: per entry, a bit: its look-ahead holds after any
                             * token before it (entry_look, by a witness that reads no l) */
    _Atomic uint32_t *xw;  /* canonical: per row, the entry (offset + 1; 0: none) that last
                            * proved a live_exact in it: a hint */
    const uint32_t *shape; /* canonical: 4 x n_vocab shape ids of the tokens (see shapes_of():
                            * the model's, shared by its canonical automata) */
    const uint32_t *head;  /* canonical: per token, pair_head's length | AUT_HEAD_FLAGS (0: none) */
    _Atomic uint64_t *pairs; /* canonical: pair_valid's memo, n_pairs slots (see there) */
    uint32_t pair_bits;      /* n_pairs = 1 << pair_bits */
    _Atomic uint64_t *probes; /* canonical: probe answers by shapes (see probe_ok), the model's
                               * (shapes_of); NULL where the shapes are too many to pack */
    uint32_t n_shapes;       /* shape ids are < n_shapes */
    const uint8_t *dig; /* canonical: per token, its digit_desc() (0 where dig_g is 0) */
    uint8_t *dtab;    /* canonical: digit_step() of every run d and digit_desc g, at d * 256 + g:
                       * 0 where t cannot follow, else (run after t + 1) | mode << 4 */
    uint8_t *row_dig; /* canonical: per row, whether a token of it has a digit_desc() */
    uint32_t *dx_at;  /* canonical, rows mostly of digits (digit_index): per row (+ 1) its
                       * groups from dx_at[row] to dx_at[row + 1] (none: NULL) */
    uint32_t *dx_g;   /* per group (+ 1), its first entry in dx: the next one's ends it */
    uint32_t *dx;     /* the entries of those rows by their token's digit_desc(), a group each */
    uint8_t *dx_f;    /* per group: 1 where its tokens are all ASCII digits and none is odd */
    int dig_all;      /* every string of 1 to dig_g ASCII digits is a token (dig_g <= 3) */
    uint32_t dig_g;   /* digit groups of dig_g characters (0: none, n_d = 1) */
    uint32_t n_d;     /* states of the digit run carried in a state (see digit_step) */
    uint16_t *cls;    /* canonical: per entry, its class in its row (see classes()); AUT_CLS:
                       * none (the row's classes beyond AUT_CLS) */
    uint16_t *n_cls;  /* canonical: per row, its classes (<= AUT_CLS) */
    uint16_t *cgrp;   /* canonical: the group of each class of the rows of AUT_LONG entries or
                       * more (see groups()), from cgrp_at[row] */
    uint32_t *cgrp_at; /* n_rows + 1 offsets into cgrp */
    uint32_t *grep;   /* the first entry of each group of those rows, from grep_at[row] */
    uint32_t *grep_at; /* n_rows + 1 offsets into grep */
    _Atomic uint8_t *cany; /* per class of those rows (from cgrp_at[row]): 0 not asked, 1 its
                            * look-ahead proven after any token (look_any), 2 not (or not
                            * asked: a class of non-ASCII tokens past AUT_ALWAYS_CAP) */
    _Atomic uint32_t *count; /* canonical: [0] cut_always's probes run (see AUT_ALWAYS_CAP),
                              * [1] masks made of long rows (AUT_ANY_AFTER) */
    const struct et_pairset *ps; /* canonical, rows of AUT_LONG entries: the model's pair set */
    const uint64_t *odd; /* canonical, ET_FLAG_WHOLE models: et_odd_of(m) (see pair_valid) */
    uint64_t *inv;    /* AUT_SCRATCH bitsets of the pair set, each for one mask at a time */
    uint8_t *inv_cc;  /* AUT_SCRATCH x (AUT_CLS + 1): with each, mask_long's bytes per class */
    _Atomic uint8_t *busy; /* AUT_SCRATCH: inv's bitsets taken */
    uint64_t *lk;     /* AUT_LK slots of lk_words: a row's entries whose look-ahead is proven,
                       * lk_half words on, those proven not live, then its classes' proven, for
                       * one key (lk_key) each (see lk_take) */
    uint64_t *lk_key; /* 2 per slot: the row and digit run, and l's shape, they are for (0:
                       * none) */
    _Atomic uint8_t *lk_busy;  /* AUT_LK: slots taken (by one mask at a time) */
    _Atomic uint32_t *lk_used; /* AUT_LK + 1: when each slot was last taken; [AUT_LK] the clock */
    size_t lk_words, lk_half;
    uint64_t *vk;     /* AUT_VK slots of 4 x vk_words words: a long row's verdicts for one key
                       * (vk_key) each, by token id (see vk_code) */
    uint8_t *vk_codes; /* AUT_VK slots of vk_longest: the same by entry, as noted (live + 1,
                        * | entry_cs() << 2 for an entry with no class; the classes' decisions
                        * in vk_cst) */
    uint8_t *vk_cst;  /* AUT_VK slots of AUT_CLS: the classes' decisions a mask ended with */
    uint8_t *vk_stage; /* AUT_VK: the key held (0), its codes noted (1), its words made (2) */
    uint64_t *vk_key; /* 3 per slot: the row and digit run, l's shape + 1 (~0: no l; 0: no key;
                       * bit 62: l ends inside a character), the probes' shapes of l2 and l */
    _Atomic uint32_t *vk_seen; /* AUT_SEEN: keys seen once, by hash (a hint: see vk_code) */
    _Atomic uint8_t *vk_busy;  /* AUT_VK: slots taken (by one mask at a time) */
    _Atomic uint32_t *vk_used; /* AUT_VK + 1: as lk_used */
    uint64_t *tinv;   /* AUT_SCRATCH bitsets of vk_words by token id: inv's, one per mask */
    uint64_t *vk_tinv; /* AUT_VK bitsets of vk_words: each slot's last l's tinv (see vk_tinv) */
    uint32_t *vk_tl;  /* AUT_VK: that l + 1 (0: none) */
    size_t vk_words, vk_longest;
    uint64_t *cv;     /* AUT_CV slots of 4 x vk_words words: a row with a bitset's entries by
                       * what the classes' codes (cv_cc) answer, by token id (see cv_take) */
    uint8_t *cv_cc;   /* AUT_CV slots of cv_ncls: the codes a slot is for */
    uint64_t *cv_key; /* 2 per slot: row << 32 | classes + 1 (0: none), the codes' hash */
    _Atomic uint32_t *cv_seen; /* AUT_SEEN: codes met, by hash, and how often (a hint: cv_take) */
    _Atomic uint8_t *cv_busy;  /* AUT_CV: slots taken (by one mask at a time) */
    _Atomic uint32_t *cv_used; /* AUT_CV + 1: as lk_used */
    size_t cv_ncls;   /* the most classes of a row with a bitset */
    size_t bytes;     /* memory held */
    _Atomic uint64_t *cutb; /* canonical: cut_before's answers (see cut_before_kept), the model's */
    _Atomic uint64_t *endk; /* canonical: end_ok's answers (see end_ok), the model's */
    _Atomic uint64_t *splk; /* canonical: split_whole's answers (see there), the model's */
};

#define AUT_SHAPE_MAX (1u << 19) /* shape ids (+ 2) packed in a->probes' keys */
#define AUT_PAIR_BYTES 512u /* pairs longer than this are taken as a possible cut (canonical) */

/* Children lists of the trie: first[s] and sib[t] (ET_NONE ends), ascending bytes. */
static void trie_children(const et_model *m, uint32_t *first, uint32_t *sib)
{
    for (uint32_t s = 0; s < m->n_cells; s++) first[s] = sib[s] = ET_NONE;
    for (uint32_t t = m->n_cells; t-- > 1;) {
        uint32_t p = m->cells[(size_t)ET_BPE_CELL * t + 1u];
        if (p >= m->n_cells || p == t) continue;
        uint32_t base = m->cells[(size_t)ET_BPE_CELL * p];
        if (t < base || t - base > 255u) continue;
        sib[t] = first[p];
        first[p] = t;
    }
}

struct frame { uint32_t cell, q, it; };

void et_automaton_free(et_automaton *a)
{
    if (!a) return;
    free(a->row);
    free(a->tok);
    free(a->nxt);
    free(a->accept);
    free(a->live);
    free(a->wit);
    free((void *)a->lany);
    free(a->xw);
    free((void *)a->pairs);
    free(a->dtab);
    free(a->row_dig);
    free(a->dx_at);
    free(a->dx_g);
    free(a->dx);
    free(a->dx_f);
    free(a->cls);
    free(a->n_cls);
    free(a->cgrp);
    free(a->cgrp_at);
    free(a->grep);
    free(a->grep_at);
    free((void *)a->cany);
    free((void *)a->count);
    free(a->inv);
    free(a->inv_cc);
    free((void *)a->busy);
    free(a->lk);
    free(a->lk_key);
    free((void *)a->lk_busy);
    free((void *)a->lk_used);
    free(a->vk);
    free(a->vk_codes);
    free((void *)a->vk_seen);
    free(a->vk_cst);
    free(a->vk_stage);
    free(a->vk_key);
    free((void *)a->vk_busy);
    free((void *)a->vk_used);
    free(a->tinv);
    free(a->vk_tinv);
    free(a->vk_tl);
    free(a->rb_at);
    free(a->rb);
    free((void *)a->rn);
    free((void *)a->rn_n);
    free(a->cv);
    free((void *)a->cv_seen);
    free(a->cv_cc);
    free(a->cv_key);
    free((void *)a->cv_busy);
    free((void *)a->cv_used);
    free(a);
}

/* Shapes. The pretokenizers with canonical automata (cl100k, o200k, GPT-2, Llama-3) tell ASCII
 * characters apart only by class, and by name where their patterns name them: white space and
 * control characters, the apostrophe, '/', and the letters of the contractions ('s 't 're 've
 * 'm 'll 'd, either case) in the two places after an apostrophe. So the cuts in a text stay
 * where they are when a digit becomes '0', other ASCII punctuation '!', and a letter 'a' or
 * 'A' (its case kept) unless it is one of the two bytes after an apostrophe (same length).
 * Beyond ASCII they tell characters apart only by et_ucd_bits' classes, so a character
 * becomes its classes and UTF-8 length (shape_str), but for U+017F in those two places (the
 * regex module's case-insensitive 's takes 'ſ for a contraction: the one character beyond
 * ASCII whose case folds to a contraction's letter); a text that is not UTF-8 keeps its
 * other bytes.
 * Texts of the same shape are cut alike, and probe() answers are remembered
 * by the shapes of what it puts together. A token's shape names the letters after its own
 * apostrophes, and in its first two bytes too when an apostrophe may lie in the two bytes
 * before it and make a contraction with them ("first" shapes; "free" ones where none can: see
 * apos_before; after 'r' alone, the byte before it is the token's before that, where a probe
 * may put an apostrophe: "'re"). tests/test_automata.py checks the rule
 * against the patterns with the `regex` module. */
#define AUT_LONG_S 0x17Fu /* ſ */
static uint8_t shape_byte(uint8_t c, int named)
{
    if (c >= '0' && c <= '9') return '0';
    if ((uint8_t)((c | 0x20u) - 'a') < 26u) {
        const uint8_t lc = (uint8_t)(c | 0x20u);
        if (named && (lc == 's' || lc == 'd' || lc == 'm' || lc == 't' || lc == 'l' ||
                      lc == 'v' || lc == 'e' || lc == 'r'))
            return c;
        return c & 0x20u ? 'a' : 'A';
    }
    if (c > 0x20u && c < 0x7Fu && c != '\'' && c != '/') return '!';
    return c;
}

/* Whether p[0..n) is the one letter of a contraction that has one after it ('re 've 'll). */
static int one_mid(const uint8_t *p, size_t n)
{
    if (n != 1u) return 0;
    const unsigned c = p[0] | 0x20u;
    return c == 'r' || c == 'v' || c == 'l';
}

/* Whether p[0..n) has an apostrophe in its last two bytes (names what follows it). */
static int ends_apos(const uint8_t *p, size_t n)
{
    return (n >= 1u && p[n - 1u] == '\'') || (n >= 2u && p[n - 2u] == '\'');
}

/* Whether p[0..n) is UTF-8 of white space only (n > 0). */
static int all_ws(const uint8_t *p, size_t n)
{
    size_t k = 1;
    if (!n) return 0;
    for (size_t i = 0; i < n; i += k) {
        const uint32_t c = et_utf8_decode(p, n, i, &k);
        if (c == 0xFFFFFFFFu || !(et_ucd_bits(c) & ET_U_S)) return 0;
    }
    return 1;
}

struct shape_slot { uint64_t h; uint32_t at, len, id; }; /* (id + 1, 0: empty; len | raw << 31) */
struct shape_map {
    struct shape_slot *tab; /* (at most half full) */
    size_t cap;
    uint32_t next;
    uint8_t byte[2][256];
    uint8_t *buf;   /* the longest token's length: the shape being looked up */
    uint8_t *text;  /* the shapes found, end to end (tab's at and len) */
    size_t used, room;
    int failed;     /* memory ran out */
};

/* p[i]'s shape byte: letters named where an apostrophe is one or two bytes before, or where
 * i < 2 in a first shape. */
static inline int shape_named(const uint8_t *p, uint32_t i, int first)
{
    return i < 2u ? first || (i == 1u && p[0] == '\'') : p[i - 1u] == '\'' || p[i - 2u] == '\'';
}
static inline uint8_t shape_at(const struct shape_map *sm, const uint8_t *p, uint32_t i, int first)
{
    return sm->byte[shape_named(p, i, first)][p[i]];
}

/* Runs. The same patterns tell a run of three or more letters of one case, ASCII punctuation
 * marks, spaces, tabs or newlines, or characters beyond ASCII of one shape (classes and
 * length), from a run of two of them in no cut: the cuts in a run of these are at its ends,
 * and before its last character (white space before a non-space), and a piece never takes part
 * of such a run unless the run's first character (` ?`, a mark before letters) or its last. So
 * a shape keeps two of such a run, its first and last characters, and shapes of texts that
 * differ only in these runs' lengths are one (tests/test_automata.py checks it with the `regex`
 * module: a text and its runs shortened are cut alike, token by token). Digits are not
 * shortened (groups of three), nor named characters. */
static inline int shape_run(uint8_t c)
{
    return c == 'a' || c == 'A' || c == '!' || c == ' ' || c == '\t' || c == '\n';
}
/* The length of the character at a shape byte of shape_str's: 1 for ASCII, k for 0xF6 + k,
 * a named character's UTF-8 length for its first byte. */
static inline size_t shape_len(uint8_t c)
{
    return c < 0x80u ? 1u : c >= 0xF7u ? c - 0xF6u : c >= 0xF0u ? 4u : c >= 0xE0u ? 3u : 2u;
}
/* Whether the character of k bytes at s is one whose runs shorten: a shape_run byte, or a
 * character beyond ASCII by its classes that is no \p{N} (digits go in groups of three). */
static inline int shape_run_at(const uint8_t *s, size_t k)
{
    return k == 1u ? shape_run(s[0]) : s[0] >= 0xF7u && !(s[1] & ET_U_N);
}

/* The shape of p[0..n) in out (at most n bytes; *len: how many): ASCII bytes by shape_at; a
 * character beyond ASCII, unless named (kept), by its classes for the pretokenizers
 * (et_ucd_bits: \p{L}, \p{N}, \s, o200k's two letter sets, \p{M}) and its length: 0xF6 +
 * length, 0x80 | bits, 0xBF..., bytes that no UTF-8 holds; then runs of three or more of a
 * shape_run byte kept as two. Returns 1 (every byte by shape_at, as for ASCII, no run
 * shortened) when p is not UTF-8. */
static int shape_str(const struct shape_map *sm, const uint8_t *p, uint32_t n, int first,
                     uint8_t *out, uint32_t *len)
{
    size_t k = 1;
    *len = n;
    for (uint32_t i = 0; i < n; i += (uint32_t)k)
        if (et_utf8_decode(p, n, i, &k) == 0xFFFFFFFFu) {
            for (uint32_t j = 0; j < n; j++) out[j] = shape_at(sm, p, j, first);
            return 1;
        }
    for (uint32_t i = 0; i < n; i += (uint32_t)k) {
        k = 1;
        if (p[i] < 0x80u) {
            out[i] = shape_at(sm, p, i, first);
            continue;
        }
        const uint32_t cp = et_utf8_decode(p, n, i, &k);
        if (cp == AUT_LONG_S && shape_named(p, i, first)) {
            memcpy(out + i, p + i, k);
            continue;
        }
        out[i] = (uint8_t)(0xF6u + k);
        out[i + 1u] = (uint8_t)(0x80u | et_ucd_bits(cp));
        for (size_t j = 2; j < k; j++) out[i + j] = 0xBFu;
    }
    /* runs: a character is dropped where the one kept before it and the one after are it */
    uint32_t o = 0, prev = 0, pk = 0; /* the last kept character: out[prev, prev + pk) */
    for (uint32_t i = 0; i < n; i += (uint32_t)k) {
        k = shape_len(out[i]);
        if (!(pk == k && i + 2u * k <= n && shape_run_at(out + i, k) &&
              !memcmp(out + prev, out + i, k) && !memcmp(out + i + k, out + i, k))) {
            memmove(out + o, out + i, k);
            prev = o;
            pk = (uint32_t)k;
            o += (uint32_t)k;
        }
    }
    *len = o;
    return 0;
}

/* Doubles sm's table: 0 where memory ran out. */
static int shape_grow(struct shape_map *sm)
{
    const size_t cap = sm->cap * 2u;
    struct shape_slot *tab = calloc(cap, sizeof *tab);
    if (!tab) return 0;
    for (size_t k = 0; k < sm->cap; k++) {
        if (!sm->tab[k].id) continue;
        size_t q = (size_t)(sm->tab[k].h ^ sm->tab[k].h >> 29) & (cap - 1u);
        while (tab[q].id) q = (q + 1u) & (cap - 1u);
        tab[q] = sm->tab[k];
    }
    free(sm->tab);
    sm->tab = tab;
    sm->cap = cap;
    return 1;
}

/* The id of the (first or free) shape of p[0..n) (a new one if no string had that shape);
 * ET_NONE, and sm->failed, where memory ran out. */
static uint32_t shape_id(struct shape_map *sm, const uint8_t *p, uint32_t n, int first)
{
    uint32_t len = 0;
    const int raw = shape_str(sm, p, n, first, sm->buf, &len);
    uint64_t h = 1469598103934665603ull ^ (uint64_t)raw;
    for (uint32_t i = 0; i < len; i++) h = (h ^ sm->buf[i]) * 1099511628211ull;
    const uint32_t tag = len | (uint32_t)raw << 31;
    if ((2u * ((size_t)sm->next + 1u) > sm->cap && !shape_grow(sm)) || len >> 31) {
        sm->failed = 1;
        return ET_NONE;
    }
    for (size_t k = (size_t)(h ^ h >> 29) & (sm->cap - 1u);; k = (k + 1u) & (sm->cap - 1u)) {
        struct shape_slot *e = &sm->tab[k];
        if (e->h == h && e->id && e->len == tag && !memcmp(sm->text + e->at, sm->buf, len))
            return e->id - 1u;
        if (e->id) continue;
        if (sm->used + len > sm->room) {
            const size_t room = 2u * (sm->used + len);
            uint8_t *text = room <= 0xFFFFFFFFu ? realloc(sm->text, room) : NULL;
            if (!text) {
                sm->failed = 1;
                return ET_NONE;
            }
            sm->text = text;
            sm->room = room;
        }
        memcpy(sm->text + sm->used, sm->buf, len);
        *e = (struct shape_slot){h, (uint32_t)sm->used, tag, sm->next + 1u};
        sm->used += len;
        return sm->next++;
    }
}

/* Digit runs. The cl100k, o200k and Llama-3 pretokenizers put \p{N} characters only in pieces
 * of digits, up to G a piece from the start of each run (G = 3, or the model's parameter), and
 * GPT-2 with digits split off puts each digit in a piece of its own (G = 1). So there is a cut
 * between a digit and a character that is not one, either way, and between two digits of a
 * run exactly where the digits before are a multiple of G; no canonical token crosses a cut.
 * A pair of tokens does not show where the run began (a probe may put a digit before it), so
 * canonical states of these models carry the run: d = 0 where the text ends in a character
 * that is not \p{N} (or is empty), 1..G where it ends in a run of that many digits mod G (G for
 * a multiple), G + 1 where that is not known (a token that is part of a character, or a run
 * whose start was not known). Other models (GPT-2's ` ?\p{N}+`, whose cuts the probes show)
 * carry nothing. digit_desc() is what a token tells: */
#define DG_NEVER 0x80u /* it crosses a cut whatever is around it: never canonical */
#define DG_OPEN 0x40u  /* it begins inside a character (or holds none): no rule before it */
#define DG_PART 0x20u  /* it ends inside a character: the run after it is not known */
#define DG_N 0x10u     /* its characters are \p{N} (low nibble: how many, <= G); else none is */

static uint8_t digit_desc(const uint8_t *p, size_t n, uint32_t g)
{
    size_t i = 0, k = 1;
    while (i < n && i < 3u && (p[i] & 0xC0u) == 0x80u) i++; /* the end of a character */
    unsigned out = i ? DG_OPEN : 0u, chars = 0, digits = 0, run = 0, mixed = 0, longest = 0;
    for (; i < n; i += k) {
        const uint32_t cp = et_utf8_decode(p, n, i, &k);
        if (cp == 0xFFFFFFFFu) { /* part of a character (or not UTF-8): what follows is open */
            out |= DG_PART;
            break;
        }
        const int digit = (et_ucd_bits(cp) & ET_U_N) != 0;
        if (chars && (digit != (run > 0))) mixed = 1;
        run = digit ? run + 1u : 0u;
        if (run > longest) longest = run;
        digits += (unsigned)digit;
        chars++;
    }
    if (!chars) return (uint8_t)(DG_OPEN | DG_PART);
    if (mixed || longest > g) return (uint8_t)(out | DG_NEVER);
    return (uint8_t)(out | (digits ? DG_N | digits : 0u));
}

#define DM_PROBE 0u /* digit_step(): the digits tell nothing of the cut before t */
#define DM_CUT 1u   /* a cut is certain there: t may follow whatever the pair */
#define DM_JOIN 2u  /* t is in l's piece of digits: t may follow iff (l, t) is a valid pair */

/* The run after token t (its digit_desc g) where the run before it is d, or -1 when t cannot
 * follow there (it crosses a cut); *mode: what the run says of the cut before t. */
static int digit_step(uint32_t G, uint32_t d, unsigned g, unsigned *mode)
{
    *mode = DM_PROBE;
    if (!G) return 0;
    if (g & DG_NEVER) return -1;
    const uint32_t U = G + 1u, n = g & 15u;
    if ((g & DG_OPEN) || d >= U) return (g & (DG_PART | DG_N)) ? (int)U : 0;
    if (!(g & DG_N)) { /* a character that is no digit: cut after a digit */
        if (d) *mode = DM_CUT;
        return g & DG_PART ? (int)U : 0;
    }
    if (d == 0 || d == G) { /* a new group of digits */
        *mode = DM_CUT;
        return g & DG_PART ? (int)U : (int)n;
    }
    if (d + n > G) return -1; /* the group ends inside t */
    *mode = DM_JOIN;
    return g & DG_PART ? (int)U : (int)(d + n);
}

static const uint8_t *pair_head(const et_model *m, uint32_t t, size_t *nt);

/* a->head[t]'s flags (the rest: pair_head's length). A token's shape must name its first letters
 * where an apostrophe may lie in the two bytes before it and make a contraction with them (see
 * apos_before): after a token that ends with one in its last two bytes (AUT_ENDS_APOS,
 * ends_apos), or after a token that is the one letter of the patterns' contractions that has
 * one after it ('re 've 'll, either case: AUT_ONE_MID) whose byte before is an apostrophe
 * (AUT_LAST_APOS) or not known (a probe may put one there). */
#define AUT_ENDS_APOS 0x80000000u
#define AUT_ONE_MID 0x40000000u
#define AUT_LAST_APOS 0x20000000u
/* And a token all of white space (AUT_ALL_WS): after one that ends in white space, whether the
 * text may end after it is not what its probes show (see end_needed). */
#define AUT_ALL_WS 0x10000000u
#define AUT_HEAD_FLAGS (AUT_ENDS_APOS | AUT_ONE_MID | AUT_LAST_APOS | AUT_ALL_WS)

/* The digit runs' group (digit_desc's g) of m's pretokenizer: 0 where it carries none. */
static uint32_t dig_g_of(const et_model *m)
{
    return m->pretok == ET_PRETOK_O200K ? 3u
           : m->pretok == ET_PRETOK_CL100K || m->pretok == ET_PRETOK_LLAMA3 ? m->pretok_param
           : m->pretok == ET_PRETOK_GPT2 && m->pretok_param == 1u ? 1u
                                                                    : 0u;
}

/* A model's tokens as its canonical automata see them, the same for all of them, kept with the
 * model (shapes_of; et_model_close frees them) and made token by token as automata need them
 * (shapes_add: the tokens of a new automaton's rows, under a lock). shape[4t + k]: the ids of
 * token t's first shape (k = 0), free shape (1), and of its head's (pair_head) first (2) and
 * free (3) shapes, ET_NONE where t has none or is not made yet (ids are < 4V, in the order
 * found); head[t]; dig[t]. */
struct et_shapes {
    uint32_t *shape, *head;
    uint8_t *dig;
    uint64_t *made;    /* the tokens made (bit t) */
    uint32_t n_shapes; /* shape ids are < n_shapes (under the lock) */
    _Atomic uint64_t *probes; /* the probes' answers by shapes (see probe_ok), 1 << AUT_PROBE_BITS
                               * slots: facts of the model, learned by all its automata (those
                               * whose shapes are too many to pack ask none) */
    _Atomic uint64_t *kept;   /* AUT_KEPT_SLOTS: pair_kept's answers about pairs of tokens,
                               * facts of the model too (cut_before, end_ok, split_whole: a cold
                               * JSON mask asked split_whole of ~1,500 pairs, ~9 runs of the
                               * pretokenizer each) */
    struct shape_map sm;      /* (under the lock) */
    size_t buf_len;           /* sm.buf's bytes */
    atomic_flag lock;
};
#define AUT_PROBE_BITS 17u

void et_shapes_free(struct et_shapes *s)
{
    if (!s) return;
    free(s->shape);
    free(s->head);
    free(s->dig);
    free(s->made);
    free((void *)s->probes);
    free((void *)s->kept);
    free(s->sm.tab);
    free(s->sm.buf);
    free(s->sm.text);
    free(s);
}

static struct et_shapes *shapes_new(const et_model *m)
{
    const uint32_t V = m->n_vocab;
    const size_t slots = (size_t)1 << AUT_PROBE_BITS;
    struct et_shapes *s = calloc(1, sizeof *s);
    if (!s || !(s->shape = malloc((size_t)V * 16u)) || !(s->head = calloc(V, 4u)) ||
        !(s->dig = calloc(V, 1u)) || !(s->made = calloc((size_t)V / 64u + 1u, 8u)) ||
        !(s->probes = malloc(slots * sizeof *s->probes)) ||
        !(s->kept = malloc(AUT_KEPT_SLOTS * sizeof *s->kept)) ||
        !(s->sm.tab = calloc(s->sm.cap = 1024, sizeof *s->sm.tab))) {
        et_shapes_free(s);
        return NULL;
    }
    memset(s->shape, 0xFF, (size_t)V * 16u); /* (ET_NONE) */
    for (size_t i = 0; i < slots; i++) atomic_init(&s->probes[i], 0);
    for (size_t i = 0; i < AUT_KEPT_SLOTS; i++) atomic_init(&s->kept[i], 0);
    for (unsigned c = 0; c < 256u; c++) {
        s->sm.byte[0][c] = shape_byte((uint8_t)c, 0);
        s->sm.byte[1][c] = shape_byte((uint8_t)c, 1);
    }
    atomic_flag_clear(&s->lock);
    return s;
}

/* m's et_shapes, made on first use (NULL where memory ran out). */
static struct et_shapes *shapes_of(const et_model *m)
{
    _Atomic(struct et_shapes *) *slot = &((et_model *)m)->shapes; /* (allocated, not const) */
    struct et_shapes *s = atomic_load_explicit(slot, memory_order_acquire);
    if (s) return s;
    struct et_shapes *mine = shapes_new(m), *none = NULL;
    if (!mine) return NULL;
    if (atomic_compare_exchange_strong_explicit(slot, &none, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    et_shapes_free(mine); /* another thread's came first */
    return none;
}

/* Makes the shapes of the tokens tok[0..n) not made yet; *n_shapes: how many there are then
 * (every token of tok has its ids below). ET_OK or ET_E_NOMEM (those made are kept). */
static int shapes_add(const et_model *m, struct et_shapes *s, const uint32_t *tok, size_t n,
                      uint32_t *n_shapes)
{
    int rc = ET_OK;
    const uint32_t dig_g = dig_g_of(m);
    while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
        continue; /* (another build's tokens: a JSON pattern's take ~100 ms, once per model) */
    s->sm.failed = 0;
    for (size_t i = 0; i < n && rc == ET_OK; i++) {
        const uint32_t t = tok[i];
        if (s->made[t >> 6] >> (t & 63u) & 1u) continue;
        const uint8_t *p = NULL, *q = NULL;
        size_t nh = 0;
        const size_t nt = et_tok(m, t, &p);
        if (nt > s->buf_len) {
            uint8_t *buf = realloc(s->sm.buf, nt);
            if (!buf) {
                rc = ET_E_NOMEM;
                break;
            }
            s->sm.buf = buf;
            s->buf_len = nt;
        }
        q = nt ? pair_head(m, t, &nh) : NULL;
        uint32_t ids[4];
        for (int k = 0; k < 2; k++) {
            ids[k] = nt ? shape_id(&s->sm, p, (uint32_t)nt, !k) : ET_NONE;
            ids[2 + k] = q ? shape_id(&s->sm, q, (uint32_t)nh, !k) : ET_NONE;
        }
        if (s->sm.failed) {
            rc = ET_E_NOMEM;
            break;
        }
        memcpy(s->shape + (size_t)4u * t, ids, sizeof ids);
        if (q)
            s->head[t] = (uint32_t)nh | (ends_apos(p, nt) ? AUT_ENDS_APOS : 0u) |
                         (one_mid(p, nt) ? AUT_ONE_MID : 0u) |
                         (p[nt - 1u] == '\'' ? AUT_LAST_APOS : 0u) |
                         (all_ws(p, nt) ? AUT_ALL_WS : 0u);
        if (dig_g && nt) s->dig[t] = digit_desc(p, nt, dig_g);
        s->made[t >> 6] |= (uint64_t)1 << (t & 63u);
    }
    *n_shapes = s->sm.next;
    atomic_flag_clear_explicit(&s->lock, memory_order_release);
    return rc;
}

/* Classes. What a canonical mask decides of entry i (token t, leading to row r) from the
 * state alone, with no pair test, depends on t only through its shapes (a->shape[4t..4t+3]: the
 * probes' keys), its digit_desc, whether it has a head and ends with an apostrophe, and r (see
 * mask_class): entries of a row alike in these are one class, numbered in the row from 0 in
 * order of first entry; a mask decides each class once (a byte on the stack each). A row's
 * entries after its first AUT_CLS classes get none (AUT_CLS) and are decided one by one. */
#define AUT_CLS 16384u

static int same_class(const et_automaton *a, uint32_t i, uint32_t j)
{
    const uint32_t t = a->tok[i], u = a->tok[j];
    return a->nxt[i] == a->nxt[j] &&
           !memcmp(a->shape + (size_t)4u * t, a->shape + (size_t)4u * u, 16u) &&
           a->dig[t] == a->dig[u] &&
           !(a->head[t] & ~AUT_HEAD_FLAGS) == !(a->head[u] & ~AUT_HEAD_FLAGS) &&
           (a->head[t] & AUT_HEAD_FLAGS) == (a->head[u] & AUT_HEAD_FLAGS);
}

/* Groups. mask_class decides a class from its first entry's digit_desc, whether its next row
 * accepts, whether it has a head, whether it is all white space (end_needed), and its head's
 * two shapes (the probes' key): classes of a long row alike in these are one group, numbered
 * from 0 in order of first entry, and mask_long decides each group once. */
static int same_group(const et_automaton *a, uint32_t i, uint32_t j)
{
    const uint32_t t = a->tok[i], u = a->tok[j];
    return a->dig[t] == a->dig[u] && a->accept[a->nxt[i]] == a->accept[a->nxt[j]] &&
           !(a->head[t] & ~AUT_HEAD_FLAGS) == !(a->head[u] & ~AUT_HEAD_FLAGS) &&
           (a->head[t] & AUT_ALL_WS) == (a->head[u] & AUT_ALL_WS) &&
           !memcmp(a->shape + (size_t)4u * t + 2u, a->shape + (size_t)4u * u + 2u, 8u);
}

static int groups(et_automaton *a)
{
    const uint32_t rows = a->n_rows;
    size_t n_c = 0, cap = 16;
    if (!(a->cgrp_at = malloc(((size_t)rows + 1u) * 4u)) ||
        !(a->grep_at = malloc(((size_t)rows + 1u) * 4u)))
        return ET_E_NOMEM;
    for (uint32_t r = 0; r < rows; r++) {
        a->cgrp_at[r] = (uint32_t)n_c;
        if (a->row[r + 1u] - a->row[r] >= AUT_LONG) n_c += a->n_cls[r];
    }
    a->cgrp_at[rows] = (uint32_t)n_c;
    if (!(a->cany = malloc(n_c ? n_c : 1u))) return ET_E_NOMEM;
    for (size_t k = 0; k < n_c; k++) atomic_init(&a->cany[k], 0);
    while (cap < 2u * (size_t)AUT_CLS) cap *= 2;
    uint32_t *rep = malloc(cap * 4u), *gen = calloc(cap, 4u), *first = malloc(AUT_CLS * 4u);
    a->cgrp = malloc((n_c ? n_c : 1u) * sizeof *a->cgrp);
    a->grep = malloc((n_c ? n_c : 1u) * 4u); /* (groups <= classes) */
    if (!rep || !gen || !first || !a->cgrp || !a->grep) {
        free(rep);
        free(gen);
        free(first);
        return ET_E_NOMEM;
    }
    size_t n_g = 0;
    for (uint32_t r = 0; r < rows; r++) {
        a->grep_at[r] = (uint32_t)n_g;
        if (a->row[r + 1u] - a->row[r] < AUT_LONG) continue;
        const uint32_t n_cls = a->n_cls[r];
        uint16_t *const cg = a->cgrp + a->cgrp_at[r];
        for (uint32_t i = a->row[r], k = 0; k < n_cls && i < a->row[r + 1u]; i++)
            if (a->cls[i] == k) first[k++] = i; /* (classes are numbered in order of first entry) */
        uint32_t g = 0;
        for (uint32_t k = 0; k < n_cls; k++) {
            const uint32_t i = first[k], t = a->tok[i], *sh = a->shape + (size_t)4u * t + 2u;
            uint64_t h = ((uint64_t)a->dig[t] << 3 | (uint64_t)!!(a->head[t] & AUT_ALL_WS) << 2 |
                          (uint64_t)a->accept[a->nxt[i]] << 1 | !(a->head[t] & ~AUT_HEAD_FLAGS)) *
                         0x9E3779B97F4A7C15ull;
            for (int q = 0; q < 2; q++) h = (h ^ sh[q]) * 0xC2B2AE3D27D4EB4Full;
            for (size_t q = (size_t)(h >> 32) & (cap - 1u);; q = (q + 1u) & (cap - 1u)) {
                if (gen[q] != r + 1u) {
                    gen[q] = r + 1u;
                    rep[q] = k;
                    cg[k] = (uint16_t)g;
                    a->grep[n_g + g++] = i;
                    break;
                }
                if (same_group(a, first[rep[q]], i)) {
                    cg[k] = cg[rep[q]];
                    break;
                }
            }
        }
        n_g += g;
    }
    a->grep_at[rows] = (uint32_t)n_g;
    uint32_t *const fit = realloc(a->grep, (n_g ? n_g : 1u) * 4u); /* (as many as there are) */
    if (fit) a->grep = fit;
    free(rep);
    free(gen);
    free(first);
    a->bytes += ((size_t)rows + 1u) * 8u + n_c * (sizeof *a->cgrp + 1u) + n_g * 4u;
    return ET_OK;
}

static int classes(et_automaton *a)
{
    const uint32_t rows = a->n_rows;
    const size_t used = a->row[rows];
    uint32_t longest = 1;
    for (uint32_t r = 0; r < rows; r++)
        if (a->row[r + 1u] - a->row[r] > longest) longest = a->row[r + 1u] - a->row[r];
    size_t cap = 16;
    while (cap < 2u * (size_t)longest) cap *= 2;
    uint32_t *rep = malloc(cap * 4u), *gen = calloc(cap, 4u);
    a->cls = malloc((used ? used : 1u) * sizeof *a->cls);
    a->n_cls = malloc((size_t)rows * sizeof *a->n_cls);
    if (!rep || !gen || !a->cls || !a->n_cls) {
        free(rep);
        free(gen);
        return ET_E_NOMEM;
    }
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t n = 0;
        for (uint32_t i = a->row[r]; i < a->row[r + 1u]; i++) {
            const uint32_t t = a->tok[i], *sh = a->shape + (size_t)4u * t;
            uint64_t h = (uint64_t)a->nxt[i] * 0x9E3779B97F4A7C15ull;
            for (int k = 0; k < 4; k++) h = (h ^ sh[k]) * 0xC2B2AE3D27D4EB4Full;
            h = (h ^ a->dig[t] ^ (uint64_t)a->head[t] >> 24) * 0x9E3779B97F4A7C15ull;
            for (size_t k = (size_t)(h >> 32) & (cap - 1u);; k = (k + 1u) & (cap - 1u)) {
                if (gen[k] != r + 1u) {
                    gen[k] = r + 1u;
                    rep[k] = i;
                    a->cls[i] = (uint16_t)(n < AUT_CLS ? n : AUT_CLS);
                    n++;
                    break;
                }
                if (same_class(a, rep[k], i)) {
                    a->cls[i] = a->cls[rep[k]];
                    break;
                }
            }
        }
        a->n_cls[r] = (uint16_t)(n < AUT_CLS ? n : AUT_CLS);
    }
    free(rep);
    free(gen);
    a->bytes += used * sizeof *a->cls + (size_t)rows * sizeof *a->n_cls;
    return groups(a);
}

/* Masks of long rows (a 16th of the vocabulary or more: vk_row) start from their bitsets, made
 * here: a plain automaton's are copies, a word a store, where setting a bit an entry costs more
 * than the bitset (cl100k, the e-mail pattern's rows of ~41,000 tokens: 17 -> ~2 us a mask,
 * Python call included); a canonical one's take out what they refuse (mask_whole; 91-95% of
 * such a row is taken). Memory at most a quarter of the rows' own (8 bytes an entry, a bit a
 * token; canonical rows hold 15). */
static int row_bits(et_automaton *a)
{
    const uint32_t V = a->n_vocab, need = vk_row(V);
    const size_t words = ((size_t)V + 63u) / 64u;
    uint32_t n = 0;
    for (uint32_t r = 0; r < a->n_rows; r++) n += a->row[r + 1u] - a->row[r] >= need;
    if (!n) return ET_OK;
    if (!(a->rb_at = calloc(a->n_rows, sizeof *a->rb_at)) ||
        !(a->rb = calloc((size_t)n * words, sizeof *a->rb)))
        return ET_E_NOMEM;
    a->bytes += (size_t)a->n_rows * sizeof *a->rb_at + (size_t)n * words * sizeof *a->rb;
    n = 0;
    for (uint32_t r = 0; r < a->n_rows; r++) {
        if (a->row[r + 1u] - a->row[r] < need) continue;
        uint64_t *const b = a->rb + (size_t)n * words;
        a->rb_at[r] = ++n;
        for (uint32_t i = a->row[r]; i < a->row[r + 1u]; i++)
            b[a->tok[i] >> 6] |= (uint64_t)1 << (a->tok[i] & 63u);
    }
    if (a->flags & ET_AUT_CANONICAL) {
        const size_t nw = a->row[a->n_rows] / 64u + 1u;
        if (!(a->rn = malloc(nw * sizeof *a->rn))) return ET_E_NOMEM;
        for (size_t q = 0; q < nw; q++) atomic_init(&a->rn[q], ~0ull);
        if (!(a->rn_n = malloc(2u * (size_t)a->n_rows * sizeof *a->rn_n))) return ET_E_NOMEM;
        for (uint32_t r = 0; r < a->n_rows; r++) {
            atomic_init(&a->rn_n[2u * r], a->row[r + 1u] - a->row[r]);
            atomic_init(&a->rn_n[2u * r + 1u], 0u);
        }
        a->bytes += nw * sizeof *a->rn + 2u * (size_t)a->n_rows * sizeof *a->rn_n;
    }
    return ET_OK;
}

static void learn_looks(const et_automaton *a, size_t used); /* (small automata) */

/* Rows mostly of digit tokens (64 entries or more, half of them or more with \p{N} only: the
 * states of [0-9]{n} and the like) keep their entries grouped by digit_desc() too (dx), in
 * the row's order within a group: entry_live's scan of such a row skips a group that the digit
 * run refuses at once (o200k, ISO dates: 1,000 of the first row's 1,110 entries after one
 * digit, of every 1,110-entry scan that proves a first digit's token not live). ET_OK or
 * ET_E_NOMEM. */
#define AUT_DX_MIN 64u
static int digit_row(const et_automaton *a, uint32_t r)
{
    const uint32_t n = a->row[r + 1u] - a->row[r];
    uint32_t nd = 0;
    for (uint32_t i = a->row[r]; i < a->row[r + 1u] && n >= AUT_DX_MIN; i++)
        nd += (a->dig[a->tok[i]] & DG_N) != 0;
    return n >= AUT_DX_MIN && 2u * nd >= n;
}

/* Whether token t is n ASCII digits (its digit_desc DG_N | n, in n bytes) and not odd. */
static int ascii_digits(const et_automaton *a, uint32_t t)
{
    const unsigned g = a->dig[t];
    return (g & ~15u) == DG_N && a->m->tokoff[t + 1u] - a->m->tokoff[t] == (g & 15u) &&
           !et_odd(a->odd, t);
}

/* Makes those groups (dx_at, dx_g, dx, dx_f) and dig_all. */
static int digit_index(et_automaton *a)
{
    const uint32_t rows = a->n_rows;
    size_t n_dx = 0, n_g = 0;
    uint32_t count[256];
    for (uint32_t r = 0; r < rows; r++) {
        if (!digit_row(a, r)) continue;
        memset(count, 0, sizeof count);
        for (uint32_t i = a->row[r]; i < a->row[r + 1u]; i++) count[a->dig[a->tok[i]]]++;
        for (unsigned g = 0; g < 256u; g++) n_g += count[g] != 0;
        n_dx += a->row[r + 1u] - a->row[r];
    }
    if (!n_dx) return ET_OK;
    if (!(a->dx_at = malloc(((size_t)rows + 1u) * sizeof *a->dx_at)) ||
        !(a->dx_g = malloc((n_g + 1u) * sizeof *a->dx_g)) ||
        !(a->dx = malloc(n_dx * sizeof *a->dx)) || !(a->dx_f = malloc(n_g + 1u)))
        return ET_E_NOMEM;
    a->bytes += ((size_t)rows + 1u + n_g + 1u + n_dx) * sizeof *a->dx + n_g + 1u;
    a->dig_all = a->dig_g <= 3u;
    char d[3];
    for (uint32_t x = 0, n = 1, end = 10; a->dig_all && n <= a->dig_g; x++) {
        if (x == end) {
            x = 0;
            end *= 10u;
            if (++n > a->dig_g) break;
        }
        uint32_t id;
        for (uint32_t k = 0, y = x; k < n; k++, y /= 10u) d[n - 1u - k] = (char)('0' + y % 10u);
        a->dig_all = et_token_lookup(a->m, d, n, &id) == ET_OK;
    }
    uint32_t gi = 0, di = 0;
    for (uint32_t r = 0; r < rows; r++) {
        a->dx_at[r] = gi;
        if (!digit_row(a, r)) continue;
        memset(count, 0, sizeof count);
        for (uint32_t i = a->row[r]; i < a->row[r + 1u]; i++) count[a->dig[a->tok[i]]]++;
        uint32_t at[256];
        for (unsigned g = 0; g < 256u; g++) {
            at[g] = di;
            if (count[g]) a->dx_g[gi++] = di;
            di += count[g];
        }
        for (uint32_t i = a->row[r]; i < a->row[r + 1u]; i++) a->dx[at[a->dig[a->tok[i]]]++] = i;
    }
    a->dx_at[rows] = gi;
    a->dx_g[gi] = di;
    for (uint32_t g = 0; g < gi; g++) {
        a->dx_f[g] = 1u;
        for (uint32_t k = a->dx_g[g]; k < a->dx_g[g + 1u] && a->dx_f[g]; k++)
            a->dx_f[g] = (uint8_t)ascii_digits(a, a->tok[a->dx[k]]);
    }
    return ET_OK;
}

int et_automaton_build(const et_model *m, const int32_t *trans, const uint8_t *accept,
                       uint32_t n, unsigned flags, et_automaton **out)
{
    if (!m || !trans || !accept || !n || !out || m->kind != ET_KIND_BPE || n > 0x7FFFFFFFu)
        return ET_E_ARG;
    *out = NULL;
    for (size_t i = 0; i < (size_t)n * 256u; i++)
        if (trans[i] < -1 || trans[i] >= (int32_t)n) return ET_E_ARG;
    if ((flags & ET_AUT_CANONICAL) && (!et_model_pair_tables(m) || m->pretok == ET_PRETOK_REGEX ||
                                       m->n_vocab > 0x1FFFFFFFu))
        return ET_E_ARG;
    const uint64_t *odd = (flags & ET_AUT_CANONICAL) ? et_odd_of(m) : NULL;
    if ((flags & ET_AUT_CANONICAL) && (m->flags & ET_FLAG_WHOLE) && !odd) return ET_E_NOMEM;
    const uint32_t V = m->n_vocab, depth = m->max_token_len + 1u;
    et_automaton *a = calloc(1, sizeof *a);
    uint32_t *first = malloc((size_t)m->n_cells * 4u), *sib = malloc((size_t)m->n_cells * 4u);
    uint32_t *row_of = malloc((size_t)n * 4u), *dfa_of = malloc((size_t)n * 4u);
    uint32_t *next_of = malloc((size_t)V * 4u);
    uint64_t *seen = calloc((size_t)V / 64u + 1u, 8u);
    struct frame *st = malloc((size_t)(depth + 1u) * sizeof *st);
    size_t cap = 1024, used = 0;
    int rc = ET_E_NOMEM;
    if (!a || !first || !sib || !row_of || !dfa_of || !next_of || !seen || !st) goto done;
    a->m = m;
    a->odd = odd;
    a->n_vocab = V;
    a->flags = flags;
    a->row = malloc(((size_t)n + 1u) * 4u);
    a->accept = malloc(n);
    a->tok = malloc(cap * 4u);
    a->nxt = malloc(cap * 4u);
    if (!a->row || !a->accept || !a->tok || !a->nxt) goto done;
    trie_children(m, first, sib);
    for (uint32_t q = 0; q < n; q++) row_of[q] = ET_NONE;
    row_of[0] = 0;
    dfa_of[0] = 0;
    uint32_t rows = 1;
    for (uint32_t r = 0; r < rows; r++) { /* breadth first over the rows found */
        const uint32_t q0 = dfa_of[r];
        a->row[r] = (uint32_t)used;
        a->accept[r] = accept[q0] != 0;
        uint32_t lo_word = ET_NONE, hi_word = 0, d = 0;
        st[0].cell = 0;
        st[0].q = q0;
        st[0].it = first[0];
        for (;;) { /* depth-first over the trie, pruned where the DFA dies */
            uint32_t t = st[d].it;
            if (t == ET_NONE) {
                if (d == 0) break;
                d--;
                continue;
            }
            st[d].it = sib[t];
            uint32_t c = t - m->cells[(size_t)ET_BPE_CELL * st[d].cell];
            int32_t nq = trans[(size_t)st[d].q * 256u + c];
            if (nq < 0) continue;
            uint32_t v = et_value(m, t);
            if (v < V) {
                if (row_of[nq] == ET_NONE) {
                    row_of[nq] = rows;
                    dfa_of[rows++] = (uint32_t)nq;
                }
                seen[v >> 6] |= (uint64_t)1 << (v & 63u);
                next_of[v] = row_of[nq];
                if (v >> 6 < lo_word) lo_word = v >> 6;
                if (v >> 6 > hi_word) hi_word = v >> 6;
            }
            if (first[t] != ET_NONE && d + 1u < depth) {
                d++;
                st[d].cell = t;
                st[d].q = (uint32_t)nq;
                st[d].it = first[t];
            }
        }
        for (uint32_t w = lo_word; w != ET_NONE && w <= hi_word; w++) { /* ascending ids */
            for (uint64_t bits = seen[w]; bits; bits &= bits - 1u) {
                if (used == cap) {
                    cap *= 2;
                    uint32_t *t2 = realloc(a->tok, cap * 4u), *n2;
                    if (!t2) goto done;
                    a->tok = t2;
                    if (!(n2 = realloc(a->nxt, cap * 4u))) goto done;
                    a->nxt = n2;
                }
                uint32_t v = w * 64u + et_ctz64(bits);
                a->tok[used] = v;
                a->nxt[used++] = next_of[v];
            }
            seen[w] = 0;
        }
    }
    a->row[rows] = (uint32_t)used;
    a->n_rows = rows;
    a->bytes = sizeof *a + ((size_t)rows + 1u) * 4u + rows + used * 8u;
    if ((rc = row_bits(a)) != ET_OK) goto done;
    rc = ET_E_NOMEM; /* (what a failed allocation below returns) */
    if (flags & ET_AUT_CANONICAL) {
        if (!(a->live = malloc(used ? used : 1u)) ||
            !(a->wit = malloc((used ? used : 1u) * sizeof *a->wit)) ||
            !(a->lany = malloc((used / 64u + 1u) * sizeof *a->lany)) ||
            !(a->xw = malloc((rows ? rows : 1u) * sizeof *a->xw)))
            goto done;
        for (size_t i = 0; i < used; i++) {
            atomic_init(&a->live[i], 0);
            atomic_init(&a->wit[i], 0);
        }
        for (size_t q = 0; q < used / 64u + 1u; q++) atomic_init(&a->lany[q], 0);
        for (size_t r = 0; r < rows; r++) atomic_init(&a->xw[r], 0);
        a->bytes += used * (1u + sizeof *a->wit) + (used / 64u + 1u) * sizeof *a->lany +
                    (size_t)rows * sizeof *a->xw;
        if (!(a->count = malloc(2u * sizeof *a->count))) goto done;
        atomic_init(&a->count[0], 0u);
        atomic_init(&a->count[1], 0u);
        a->dig_g = dig_g_of(m);
        a->n_d = a->dig_g ? a->dig_g + 2u : 1u;
        /* states (see join_state) must fit an int64: rows * k * k * n_d, in divisions (the
         * product itself could wrap) */
        const uint64_t k = (uint64_t)V + 1u;
        if ((uint64_t)INT64_MAX / rows / a->n_d / k < k) {
            rc = ET_E_ARG;
            goto done;
        }
        struct et_shapes *const sh = shapes_of(m);
        if (!sh || shapes_add(m, sh, a->tok, used, &a->n_shapes) != ET_OK) goto done;
        a->shape = sh->shape;
        a->head = sh->head;
        a->dig = sh->dig;
        a->probes = a->n_shapes + 2u <= AUT_SHAPE_MAX ? sh->probes : NULL;
        a->cutb = sh->kept;
        a->endk = a->cutb + (1u << AUT_CUTB_BITS);
        a->splk = a->endk + (1u << AUT_ENDK_BITS);
        if ((rc = classes(a))) goto done;
        rc = ET_E_NOMEM;
        if (!(a->dtab = malloc((size_t)a->n_d * 256u))) goto done;
        for (uint32_t d = 0; d < a->n_d; d++)
            for (unsigned g = 0; g < 256u; g++) {
                unsigned mode;
                const int after = digit_step(a->dig_g, d, g, &mode);
                a->dtab[d * 256u + g] = after < 0 ? 0u : (uint8_t)((unsigned)(after + 1) | mode << 4);
            }
        if (!(a->row_dig = calloc(rows, 1u))) goto done;
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t i = a->row[r]; i < a->row[r + 1u] && !a->row_dig[r]; i++)
                a->row_dig[r] = a->dig[a->tok[i]] != 0;
        a->bytes += (size_t)a->n_d * 256u + rows;
        if ((rc = digit_index(a))) goto done;
        rc = ET_E_NOMEM;
        /* the pair memo: 2 slots an entry, 2^10 to 2^17 slots (8 KiB to 1 MiB) */
        for (a->pair_bits = 10; a->pair_bits < 17 && ((size_t)1 << a->pair_bits) < 2u * used;)
            a->pair_bits++;
        const size_t slots = (size_t)1 << a->pair_bits;
        if (!(a->pairs = malloc(slots * sizeof *a->pairs))) goto done;
        for (size_t i = 0; i < slots; i++) atomic_init(&a->pairs[i], 0);
        a->bytes += slots * sizeof *a->pairs;
        /* long rows: their masks take the tokens l refuses from the model's pair set (built
         * by the first automaton that needs it; where the model has none, pair by pair) */
        uint32_t longest = 0;
        for (uint32_t r = 0; r < rows; r++)
            if (a->row[r + 1u] - a->row[r] > longest) longest = a->row[r + 1u] - a->row[r];
        if (AUT_SCRATCH > 0u && longest >= AUT_LONG && (a->ps = et_pairset_of(m)) != NULL) {
            const size_t words = et_pairset_words(a->ps);
            if (!(a->inv = malloc(AUT_SCRATCH * words * sizeof *a->inv)) ||
                !(a->inv_cc = malloc(AUT_SCRATCH * ((size_t)AUT_CLS + 1u))) ||
                !(a->busy = malloc(AUT_SCRATCH * sizeof *a->busy)))
                goto done;
            for (unsigned q = 0; q < AUT_SCRATCH; q++) atomic_init(&a->busy[q], 0);
            a->bytes += AUT_SCRATCH * (words * sizeof *a->inv + AUT_CLS + 1u + sizeof *a->busy);
        }
        if (a->inv && longest >= vk_row(V) && /* the verdicts of long rows (vk_code) */
            ((size_t)V + 63u) / 64u <= SIZE_MAX / (AUT_VK * 4u * sizeof *a->vk)) {
            a->vk_words = ((size_t)V + 63u) / 64u;
            a->vk_longest = longest;
            if (!(a->tinv = malloc(AUT_SCRATCH * a->vk_words * sizeof *a->tinv)) ||
                !(a->vk_tinv = malloc(AUT_VK * a->vk_words * sizeof *a->vk_tinv)) ||
                !(a->vk_tl = calloc(AUT_VK, sizeof *a->vk_tl)) ||
                !(a->vk = malloc(AUT_VK * 4u * a->vk_words * sizeof *a->vk)) ||
                !(a->vk_codes = malloc(AUT_VK * (size_t)longest)) ||
                !(a->vk_seen = malloc(AUT_SEEN * sizeof *a->vk_seen)) ||
                !(a->vk_cst = malloc(AUT_VK * (size_t)AUT_CLS)) ||
                !(a->vk_stage = calloc(AUT_VK, 1u)) ||
                !(a->vk_key = calloc(3u * AUT_VK, sizeof *a->vk_key)) ||
                !(a->vk_busy = malloc(AUT_VK * sizeof *a->vk_busy)) ||
                !(a->vk_used = malloc((AUT_VK + 1u) * sizeof *a->vk_used)))
                goto done;
            for (unsigned q = 0; q < AUT_VK; q++) atomic_init(&a->vk_busy[q], 0);
            for (unsigned q = 0; q < AUT_SEEN; q++) atomic_init(&a->vk_seen[q], 0);
            for (unsigned q = 0; q <= AUT_VK; q++) atomic_init(&a->vk_used[q], 0);
            a->bytes += AUT_SCRATCH * a->vk_words * sizeof *a->tinv +
                        AUT_SEEN * sizeof *a->vk_seen +
                        AUT_VK * (5u * a->vk_words * sizeof *a->vk + longest + AUT_CLS +
                                  3u * sizeof *a->vk_key + 10u) +
                        4u;
            /* the class verdicts of rows with a bitset (cv_take) */
            for (uint32_t r = 0; r < rows; r++)
                if (a->rb_at && a->rb_at[r] && a->n_cls[r] > a->cv_ncls) a->cv_ncls = a->n_cls[r];
            if (a->cv_ncls) {
                if (!(a->cv = malloc(AUT_CV * 4u * a->vk_words * sizeof *a->cv)) ||
                    !(a->cv_cc = malloc(AUT_CV * a->cv_ncls)) ||
                    !(a->cv_key = calloc(2u * AUT_CV, sizeof *a->cv_key)) ||
                    !(a->cv_seen = malloc(AUT_SEEN * sizeof *a->cv_seen)) ||
                    !(a->cv_busy = malloc(AUT_CV * sizeof *a->cv_busy)) ||
                    !(a->cv_used = malloc((AUT_CV + 1u) * sizeof *a->cv_used)))
                    goto done;
                for (unsigned q = 0; q < AUT_CV; q++) atomic_init(&a->cv_busy[q], 0);
                for (unsigned q = 0; q < AUT_SEEN; q++) atomic_init(&a->cv_seen[q], 0);
                for (unsigned q = 0; q <= AUT_CV; q++) atomic_init(&a->cv_used[q], 0);
                a->bytes += AUT_CV * (4u * a->vk_words * sizeof *a->cv + a->cv_ncls +
                                      2u * sizeof *a->cv_key + 5u) +
                            AUT_SEEN * sizeof *a->cv_seen + 4u;
            }
        }
        if (longest >= AUT_LONG) {
            a->lk_half = ((size_t)longest + 63u) / 64u;
            a->lk_words = 2u * a->lk_half + AUT_CLS / 64u;
            if (!(a->lk = malloc(AUT_LK * a->lk_words * sizeof *a->lk)) ||
                !(a->lk_key = calloc(2u * AUT_LK, sizeof *a->lk_key)) ||
                !(a->lk_busy = malloc(AUT_LK * sizeof *a->lk_busy)) ||
                !(a->lk_used = malloc((AUT_LK + 1u) * sizeof *a->lk_used)))
                goto done;
            for (unsigned q = 0; q < AUT_LK; q++) atomic_init(&a->lk_busy[q], 0);
            for (unsigned q = 0; q <= AUT_LK; q++) atomic_init(&a->lk_used[q], 0);
            a->bytes += AUT_LK * (a->lk_words * sizeof *a->lk + 2u * sizeof *a->lk_key + 5u) + 4u;
        }
    }
    if (flags & ET_AUT_CANONICAL) learn_looks(a, used);
    rc = ET_OK;
done:
    free(first);
    free(sib);
    free(row_of);
    free(dfa_of);
    free(next_of);
    free(seen);
    free(st);
    if (rc) et_automaton_free(a);
    else *out = a;
    return rc;
}

uint32_t et_automaton_rows(const et_automaton *a) { return a->n_rows; }
size_t et_automaton_bytes(const et_automaton *a) { return a->bytes; }

/* A state: its row, and in canonical automata the last two tokens (ET_NONE where the text
 * has fewer). Returns 0 if it is none of this automaton's states. */
struct cstate { uint32_t row, l2, l, d; /* d: the digit run (digit_step) */ };

static int split_state(const et_automaton *a, int64_t state, struct cstate *c)
{
    if (state < 0) return 0;
    uint64_t s = (uint64_t)state;
    c->l2 = c->l = ET_NONE;
    c->d = 0;
    if (a->flags & ET_AUT_CANONICAL) {
        const uint64_t k = (uint64_t)a->n_vocab + 1u;
        c->d = (uint32_t)(s % a->n_d);
        s /= a->n_d;
        c->l = (uint32_t)(s % k) - 1u;
        s /= k;
        c->l2 = (uint32_t)(s % k) - 1u;
        s /= k;
        if ((c->l2 != ET_NONE || c->d) && c->l == ET_NONE) return 0;
        /* tokens of no row are in no state (and have no shape) */
        if ((c->l != ET_NONE && a->shape[(size_t)4u * c->l] == ET_NONE) ||
            (c->l2 != ET_NONE && a->shape[(size_t)4u * c->l2] == ET_NONE))
            return 0;
    }
    if (s >= a->n_rows) return 0;
    c->row = (uint32_t)s;
    return 1;
}

static int64_t join_state(const et_automaton *a, uint32_t row, uint32_t l2, uint32_t l, uint32_t d)
{
    if (!(a->flags & ET_AUT_CANONICAL)) return row;
    const int64_t k = (int64_t)a->n_vocab + 1;
    const int64_t a2 = l2 == ET_NONE ? 0 : (int64_t)l2 + 1, a1 = l == ET_NONE ? 0 : (int64_t)l + 1;
    return (((int64_t)row * k + a2) * k + a1) * (int64_t)a->n_d + (int64_t)d;
}

/* One character of each class the pretokenizers branch on, put before the text known (the
 * last two tokens) and after the token asked about: the piece the earlier token belongs to
 * may have begun before it (a contraction, a punctuation run, a digit group, o200k's marks
 * with the newlines and slashes after them: "#\n//" is one piece, so in "#\n//." one ends
 * before ".", which "//." alone does not cut), and what comes after the token decides some
 * cuts (white space before a non-space, the end of the text). */
static const char *const AUT_LEFT[] = {"",  "a", "A", "0",  "00", "!",
                                       "!!", " ", "'", "a'", "\n", "!\n"};
/* And a contraction begun, put only before a text whose first letter may end it ("'l" before
 * "l", "'r" and "'v" before "e", either case; after a letter too, as o200k's contractions
 * follow one): after "'l", "LL" is cut between its letters ("'lL" is a contraction). */
static const struct { const char *text; char before; } AUT_LEFT_APOS[] = {
    {"'l", 'l'}, {"'r", 'e'}, {"'v", 'e'}, {"a'l", 'l'}, {"a'r", 'e'}, {"a'v", 'e'}};
static const char *const AUT_RIGHT[] = {"", "a", "A", "0", "!", " ", "\n"};
#define AUT_PROBE 3u /* bytes of the longest probe */
#define AUT_N_LEFT (sizeof AUT_LEFT / sizeof *AUT_LEFT + sizeof AUT_LEFT_APOS / sizeof *AUT_LEFT_APOS)

/* Probe text x (< AUT_N_LEFT) put before a text whose first byte is first, or NULL where it is
 * not put there (AUT_LEFT_APOS's conditions). */
static inline const char *left_probe(size_t x, unsigned first)
{
    const size_t n = sizeof AUT_LEFT / sizeof *AUT_LEFT;
    if (x < n) return AUT_LEFT[x];
    return (first | 0x20u) == (unsigned char)AUT_LEFT_APOS[x - n].before ? AUT_LEFT_APOS[x - n].text
                                                                          : NULL;
}

/* The number of bytes of the first n characters of p[0..len), or 0 if p is not UTF-8 (a token
 * that is part of a character: what it becomes is not known here). */
static size_t utf8_chars(const uint8_t *p, size_t len, size_t n)
{
    size_t i = 0, k;
    for (size_t c = 0; i < len && c < n; i += k, c++)
        if (et_utf8_decode(p, len, i, &k) == 0xFFFFFFFFu) return 0;
    return i;
}

#define AUT_ANY (ET_NONE - 1u) /* probe(): l2 not known (only the probes before l) */

#define AUT_CUT 1    /* probe(): the pretokenizer may cut between l and t */
#define AUT_INSIDE 2 /* probe(): l and t may lie inside one piece */
#define AUT_NOCUT 4  /* probe(): it may not cut there (a text with no cut between them) */
#define AUT_FROM 8   /* probe(): only texts cut between l2 and l count (see pctx_from) */
#define AUT_WHOLE 16 /* probe(): only texts that cut nowhere inside l count (see pctx_whole) */

/* Whether one of want can happen in some text that goes on as the automaton knows: the
 * pretokenizer cuts between l and t (AUT_CUT), or nowhere from l's first byte to t's last
 * (AUT_INSIDE); t[0..nt) is t or its first characters. Before l: l2 (ET_NONE: l starts the
 * text; AUT_ANY: not known; from its first character's start: a probe stands for the one it
 * ends, if it begins inside one), then any one probe; after t: any probe (right) or the end
 * of the text (!right). With AUT_FROM in want (l2 known), only texts that cut between l2 and
 * l count; with AUT_WHOLE, only texts that cut nowhere inside l (a state's own test: see
 * pctx_whole). Else texts that cut inside l2 or l count too, though tokens of a canonical
 * encoding lie in one piece each: cut_always's texts, with no token before t, would otherwise
 * no longer stand for every token before it, and a class taken after any token be refused
 * after this one.
 * Pairs too long to look at, and tokens that are parts of characters (but where l2, l and
 * t's text are UTF-8 together: "\xf0\x9f\x8d" "\x86" is "🍆"; see split_answer), may.
 * Returns 0, or what the first text that answers allows (AUT_CUT, AUT_INSIDE or both, and
 * AUT_NOCUT where asked: facts). */
static int probe(const et_model *m, uint32_t l2, uint32_t l, const uint8_t *q, size_t nt,
                 int right, int want)
{
    const uint8_t *p = NULL, *p2 = NULL;
    const int known = l2 != ET_NONE && l2 != AUT_ANY;
    uint32_t nl = et_tok(m, l, &p), n2 = known ? et_tok(m, l2, &p2) : 0;
    const int may = AUT_CUT | AUT_INSIDE | (want & AUT_NOCUT); /* (not looked at) */
    if (!nl || !nt || (known && !n2) || n2 + nl + nt + 2u * AUT_PROBE > AUT_PAIR_BYTES)
        return may;
    /* l2 that begins inside a character (after "cd" "\xe2\x80", "\x99" then "q"): that
     * character is not known, so a probe stands for it, as for the text before any l2 */
    while (n2 && (p2[0] & 0xC0u) == 0x80u) p2++, n2--;
    const int stood = known && !n2; /* (l2 was that character's end alone) */
    uint8_t buf[AUT_PAIR_BYTES];
    if (n2) memcpy(buf, p2, n2); /* (l2, l, t UTF-8 together: a token may finish a character */
    memcpy(buf + n2, p, nl);     /* the one before it begins) */
    memcpy(buf + n2 + nl, q, nt);
    if (!utf8_chars(buf, n2 + nl + nt, n2 + nl + nt)) return may;
    size_t ends[AUT_PAIR_BYTES], n_out = 0, used = 0;
    const size_t nx_probes = l2 == ET_NONE ? 1u : AUT_N_LEFT;
    const size_t ny_probes = right ? sizeof AUT_RIGHT / sizeof *AUT_RIGHT : 1u;
    const unsigned first = n2 ? p2[0] : p[0]; /* (the text after the probe before) */
    for (size_t x = 0; x < nx_probes; x++) {
        const char *const left = left_probe(x, first);
        if (!left) continue;
        size_t nx = strlen(left), from = nx + n2, at = from + nl;
        memcpy(buf, left, nx);
        if (n2) memcpy(buf + nx, p2, n2);
        memcpy(buf + from, p, nl);
        memcpy(buf + at, q, nt);
        for (size_t y = 0; y < ny_probes; y++) {
            size_t ny = strlen(AUT_RIGHT[y]), n = at + nt + ny;
            memcpy(buf + at + nt, AUT_RIGHT[y], ny);
            if (et_pretokenize(m, (const char *)buf, n, ET_FINAL, ends, AUT_PAIR_BYTES, &n_out,
                               &used))
                return may;
            int cut = 0, inside = 1, broken = 0;
            int from_cut = !(want & AUT_FROM) || (!n2 && (!stood || !nx));
            for (size_t e = 0; e < n_out && ends[e] < at + nt; e++) {
                if (ends[e] == at) cut = 1;
                if (ends[e] > from) inside = 0;
                if (ends[e] > from && ends[e] < at) broken = 1;
                if (ends[e] == from) from_cut = 1;
            }
            if (!from_cut || (broken && (want & AUT_WHOLE)))
                continue; /* (a text the automaton is not in) */
            const int got = (cut ? AUT_CUT : want & AUT_NOCUT) | (inside ? AUT_INSIDE : 0);
            if (got & want) return got;
        }
    }
    return 0;
}

/* Whether the pretokenizer cuts before l whatever follows it, with l2 before l and any one
 * probe before l2 (probe()'s texts before the pair): the cut at l's start is one no following
 * text can move (et_pretokenize without ET_FINAL: the cuts the streaming encoder keeps). Then
 * the pieces from l on are those of the text that l begins, and every probe() of (l2, l, t)
 * answers as probe(ET_NONE, l, t) does: a mask may ask the probes as if l began the text (keys
 * shared by every l2 that cuts before l). 0 where not known (a text not UTF-8, too long). */
static int cut_before(const et_model *m, uint32_t l2, uint32_t l)
{
    const uint8_t *p = NULL, *p2 = NULL;
    const uint32_t nl = et_tok(m, l, &p), n2 = et_tok(m, l2, &p2);
    if (!nl || !n2 || n2 + nl + AUT_PROBE > AUT_PAIR_BYTES || !utf8_chars(p, nl, nl) ||
        !utf8_chars(p2, n2, n2))
        return 0;
    uint8_t buf[AUT_PAIR_BYTES];
    size_t ends[AUT_PAIR_BYTES], n_out = 0, used = 0;
    for (size_t x = 0; x < AUT_N_LEFT; x++) { /* (probe()'s texts before l2) */
        const char *const left = left_probe(x, p2[0]);
        if (!left) continue;
        const size_t nx = strlen(left), from = nx + n2;
        memcpy(buf, left, nx);
        memcpy(buf + nx, p2, n2);
        memcpy(buf + from, p, nl);
        if (et_pretokenize(m, (const char *)buf, from + nl, 0, ends, AUT_PAIR_BYTES, &n_out,
                           &used) ||
            used < from)
            return 0;
        size_t e = 0;
        while (e < n_out && ends[e] < from) e++;
        if (e == n_out || ends[e] != from) return 0;
    }
    return 1;
}

/* answer(a, l2, l), remembered in tab (1 << bits slots) by (l2, l): a slot is
 * (l2 << 29 | l) << 2 | answer << 1 | 1 (ids < 2^29), read and written whole: a fact, as
 * a->pairs' slots. */
static int pair_kept(const et_automaton *a, const _Atomic uint64_t *tab, unsigned bits,
                     uint32_t l2, uint32_t l,
                     int (*answer)(const et_automaton *, uint32_t, uint32_t))
{
    if ((l2 | l) >> 29) return answer(a, l2, l);
    const uint64_t key = (uint64_t)l2 << 29 | l;
    _Atomic uint64_t *const slot =
        (_Atomic uint64_t *)&tab[(key * 0x9E3779B97F4A7C15ull) >> (64u - bits)];
    const uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> 2 == key && (v & 1u)) {
#ifdef AUT_CHECK_PAIRS
        if ((int)(v >> 1 & 1u) != answer(a, l2, l)) abort();
#endif
        return (int)(v >> 1 & 1u);
    }
    const int res = answer(a, l2, l);
    atomic_store_explicit(slot, key << 2 | (uint64_t)res << 1 | 1u, memory_order_relaxed);
    return res;
}

static int cut_answer(const et_automaton *a, uint32_t l2, uint32_t l)
{
    return cut_before(a->m, l2, l);
}

/* cut_before(l2, l), remembered in a->cutb (the model's; a mask of a long row asks it: up to 18
 * runs of the pretokenizer, ~10% of a made mask of an integer's row). */
static int cut_before_kept(const et_automaton *a, uint32_t l2, uint32_t l)
{
    return pair_kept(a, a->cutb, AUT_CUTB_BITS, l2, l, cut_answer);
}

/* t's first two characters, and the two after an apostrophe among them (a contraction begun
 * there: "n't", "I'll"); all of t's characters if they are white space (a run's cuts look
 * further), or NULL when t does not begin with a whole character. Cuts before t depend on no
 * more of it (see probe). A token that ends inside a character has the head of those before
 * it (" \t" is cut before "\xe3\x83\xbc\xe3\x82", "ー" and the start of another). */
static const uint8_t *pair_head(const et_model *m, uint32_t t, size_t *nt)
{
    const uint8_t *q = NULL;
    size_t n = et_tok(m, t, &q), k, whole = 0; /* (its bytes up to a character it ends in) */
    while (whole < n && et_utf8_decode(q, n, whole, &k) != 0xFFFFFFFFu) whole += k;
    if (!whole || (whole < n && (q[whole] & 0xC0u) == 0x80u)) return NULL;
    size_t head = utf8_chars(q, whole, 2);
    for (size_t i = 0, c = 0; i < head; i += k, c++) {
        et_utf8_decode(q, whole, i, &k);
        if (q[i] == '\'') head = utf8_chars(q, whole, c + 3u); /* (the last apostrophe's) */
    }
    *nt = head;
    for (size_t i = 0; i < whole; i += k)
        if (!(et_ucd_bits(et_utf8_decode(q, whole, i, &k)) & ET_U_S)) return q;
    *nt = whole;
    return q;
}

/* The token of x's bytes followed by y's, or ET_NONE (as the backtracking encoder's concat);
 * x, y < n_vocab (the offsets were checked when the model was loaded). */
static inline uint32_t aut_concat(const et_model *m, uint32_t x, uint32_t y)
{
    const uint32_t o = m->tokoff[y], e = m->tokoff[y + 1u];
    uint32_t s = m->tnode[x];
    if (o == e || s >= m->n_cells || m->tokoff[x + 1u] - m->tokoff[x] + (e - o) > m->max_token_len)
        return ET_NONE;
    for (uint32_t k = o; k < e; k++)
        if ((s = et_trie_next(m, s, m->blob[k])) == ET_NONE) return ET_NONE;
    return et_value(m, s);
}

/* et_valid_pair(x, y), remembered. The backtracking encoder's test walks from (x, y) down the
 * two merge trees, one pair (x', y') at a time: at each it fails if the token x'y' exists with
 * a rank below the limit the step came with, and what follows (call it rest(x', y')) depends on
 * the pair only. So a->pairs keeps rest() of pairs seen, and whether x'y' exists, in one 64-bit
 * slot ((x' << 29 | y') << 3 | exists << 2 | rest << 1 | 1; ids < 2^29), direct-mapped, for
 * every mask and thread: a later test stops at the first pair it finds there. Relaxed atomic
 * loads and stores of whole slots, each a fact: a race loses a fact, never makes one up.
 * apart: the caller knows xy is no token (the first pair is neither looked up nor kept).
 * A pair with an odd token (a->odd: the walk does not hold for it) is asked of et_valid_pair
 * and its answer kept in its slot as a walk's last pair's (no token; rest = the answer): only
 * a test's first pair can be odd (the parts of other tokens are not). */
#define AUT_PATH 64u /* pairs of one test remembered */
static int pair_valid(const et_automaton *a, uint32_t x, uint32_t y, int apart)
{
    const et_model *m = a->m;
    if (x >= m->n_vocab || y >= m->n_vocab || m->tnode[x] == ET_NONE || m->tnode[y] == ET_NONE)
        return 0;
    const unsigned shift = 64u - a->pair_bits;
    if (et_odd(a->odd, x) || et_odd(a->odd, y)) {
        const uint64_t key = (uint64_t)x << 29 | y;
        _Atomic uint64_t *slot = &a->pairs[(key * 0x9E3779B97F4A7C15ull) >> shift];
        const uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
        if ((v >> 3) == key && (v & 1u)) return (int)(v >> 1 & 1u);
        const int res = et_valid_pair(m, x, y);
        atomic_store_explicit(slot, key << 3 | (uint64_t)res << 1 | 1u, memory_order_relaxed);
        return res;
    }
    uint64_t path[AUT_PATH];
    uint32_t n = 0, limit = ET_NONE;
    int res = 1;
    for (uint32_t guard = 2 * m->max_token_len + 2; guard; guard--) {
        const uint64_t key = (uint64_t)x << 29 | y;
        uint32_t c = ET_NONE;
        if (!apart) {
            const uint64_t slot = atomic_load_explicit(
                &a->pairs[(key * 0x9E3779B97F4A7C15ull) >> shift], memory_order_relaxed);
            if ((slot >> 3) == key && (slot & 1u)) {
                if (slot & 4u) {
                    c = limit == ET_NONE ? 0u : aut_concat(m, x, y);
                    if (c != ET_NONE && c < limit) {
                        res = 0;
                        break;
                    }
                }
                res = (int)(slot >> 1 & 1u);
                break;
            }
            c = aut_concat(m, x, y);
            if (c != ET_NONE && c < limit) {
                res = 0;
                break;
            }
        }
        if (!apart && n < AUT_PATH) path[n++] = key << 3 | (c != ET_NONE ? 4u : 0u) | 1u;
        apart = 0;
        if (et_pair_unwind(m, &x, &y, &limit)) break;
        if (x >= m->n_vocab || y >= m->n_vocab) { /* only a damaged model */
            res = 0;
            break;
        }
    }
    for (uint32_t k = 0; k < n; k++) /* each pair passed its test: its rest is res */
        atomic_store_explicit(&a->pairs[((path[k] >> 3) * 0x9E3779B97F4A7C15ull) >> shift],
                              path[k] | (uint64_t)res << 1, memory_order_relaxed);
    return res;
}

/* probe() answers remembered while one mask is made (on the stack), by the shapes of l2, l
 * and t's head (see shapes_of()), where a->probes cannot hold them: what is known (probe_ok). */
#define AUT_MEMO 1024u
#define AUT_LOOK_BITS 11u /* up to 2^11 look-aheads remembered by shape in a mask (entry_ok) */
struct memo {
    uint64_t key[AUT_MEMO][2];
    uint8_t ans[AUT_MEMO];
    uint64_t *look;      /* 1 << look_bits slots (look_bits <= AUT_LOOK_BITS), or NULL */
    unsigned look_bits;
    int look_set;        /* look zeroed (on first use) */
};

/* Whether t may follow l (and l2 before it) in a canonical encoding (see the top): inside one
 * piece as a valid pair, or across a cut (probe_ok, pair_ok_c), with l2 and l fixed (a mask's
 * first test, a look-ahead's scan): what depends on them only, worked out once. */
struct pctx {
    uint32_t l2, l;
    uint32_t s2, sl; /* the shapes of l2 (0xFFFFFFFF: none, 0xFFFFFFFE: any) and l (probes) */
    uint64_t k0;
    uint32_t next_free;
    int packed;
    /* the look-ahead after l (pair_ok_c(l, t, u) for t after l): l's key part, and which of
     * t's shapes it takes (entry_ok) */
    uint64_t lk_s2;
    uint32_t lk_free;
    int lk_packed;
    uint32_t *apart; /* pair_valid_apart's memo for l (AUT_APART slots, ET_NONE: empty), or NULL */
    struct pinv *pi; /* a mask's pair set for l, or NULL (pair by pair) */
    unsigned from;   /* AUT_FROM where the probes count only texts cut between l2 and l */
    unsigned whole;  /* AUT_WHOLE where they count only texts that keep l whole (pctx_whole) */
};

/* The tokens that are no valid pair after a mask's l, from the model's pair set: made at the
 * first pair test (pair_of). */
struct pinv {
    const struct et_pairset *ps;
    const uint32_t *pos; /* each token's bit in bits (et_pairset_pos) */
    uint64_t *bits;  /* (a scratch bitset of the automaton) */
    uint8_t *cc;     /* (its bytes per class, for mask_long) */
    int made;        /* 0: not yet, 1: made, -1: none (pair by pair) */
};

/* Whether an apostrophe may lie in the two bytes before the token after l, with l2 before l
 * (AUT_ANY: any text, as a probe's; ET_NONE: l begins the text): the first shapes of that
 * token then (see shapes). */
static inline int apos_before(const et_automaton *a, uint32_t l, uint32_t l2)
{
    const uint32_t h = a->head[l];
    return (h & AUT_ENDS_APOS) ||
           ((h & AUT_ONE_MID) &&
            (l2 == AUT_ANY || (l2 != ET_NONE && (a->head[l2] & AUT_LAST_APOS))));
}

/* The bytes of p[0..n) from its last that is no continuation byte (at most 4), or 0 where
 * there is none among them: the character l's text ends in (splits_char, ends_open). */
static size_t last_char(const uint8_t *p, size_t n)
{
    size_t k = 1;
    while (k < 4u && k < n && (p[n - k] & 0xC0u) == 0x80u) k++;
    return n && (p[n - k] & 0xC0u) != 0x80u ? k : 0u;
}

/* Whether l's last bytes begin a character that they do not end (a lead byte and fewer
 * continuation bytes than it asks for): only then can splits_char(l, t) hold for some t. */
static int ends_open(const et_model *m, uint32_t l)
{
    const uint8_t *p = NULL;
    const size_t nl = et_tok(m, l, &p), k = last_char(p, nl);
    if (!k) return 0;
    const uint8_t b = p[nl - k];
    return (b >= 0xF0u ? 4u : b >= 0xE0u ? 3u : b >= 0xC0u ? 2u : 1u) > k;
}

static int end_ok(const et_automaton *a, uint32_t l2, uint32_t l);

/* Whether a row that accepts after entry t (l before it) is live only where end_ok(l, t): t is
 * all white space and l ends in white space. There what follows t moves the cut between them
 * (a run of white space is cut before its last character only where a non-space follows: " "
 * " " may not end a text, nor lead where only the end may follow); elsewhere what follows t
 * moves no cut before it, and a pair that passes may end the text. */
static int end_needed(const et_automaton *a, uint32_t l, uint32_t t)
{
    if (!(a->head[t] & AUT_ALL_WS) || l >= a->n_vocab) return 0;
    const uint8_t *p = NULL;
    const size_t nl = et_tok(a->m, l, &p), k = last_char(p, nl);
    return k && all_ws(p + nl - k, k);
}

static void pctx_init(const et_automaton *a, struct pctx *x, uint32_t l2, uint32_t l)
{
    x->l2 = l2;
    x->l = l;
    x->packed = 0;
    x->apart = NULL;
    x->pi = NULL;
    x->lk_packed = 0; /* (pctx_look) */
    x->from = 0;      /* (pctx_from) */
    x->whole = 0;     /* (pctx_whole) */
    if (l == ET_NONE) return;
    const int l_first = l2 == AUT_ANY || (l2 != ET_NONE && apos_before(a, l2, AUT_ANY));
    const uint32_t s2 = l2 == ET_NONE ? 0xFFFFFFFFu : l2 == AUT_ANY ? 0xFFFFFFFEu
                                                                    : a->shape[(size_t)4u * l2];
    const uint32_t sl = a->shape[(size_t)4u * l + !l_first];
    x->s2 = s2;
    x->sl = sl;
    x->next_free = !apos_before(a, l, l2);
    x->packed = a->probes && sl < AUT_SHAPE_MAX;
    x->k0 = (uint64_t)(s2 + 2u) << 19 | sl;
}

/* Where l2 and l are no valid pair, a canonical text has a cut between them (they are in no
 * piece side by side), so the probes of t after l count only texts that cut there as well:
 * after "   " " " (no pair: "    " is a token), " " may not follow, as "     a" is cut only
 * before its last space ("    " " a"), never after its third. (Short rows and their exact
 * look-ahead: the look-aheads and verdicts that long rows keep by shapes do not know the
 * pair.) */
static void pctx_from(const et_automaton *a, struct pctx *x)
{
    if (x->l2 < a->n_vocab && x->l < a->n_vocab && !pair_valid(a, x->l2, x->l, 0))
        x->from = AUT_FROM;
}

/* A canonical encoding cuts no piece inside a token, so the pair test of a state's next token
 * may count only texts that keep l whole: "AV" " \t\t" then "\",": a run of white space is
 * cut before its last character where a non-space follows (" \t" "\t\","). Only the state's
 * own test (a mask's, a step's): look-aheads, kept by shapes and proven after any token before
 * (cut_always), count every text; where the state then allows nothing and the text may not end
 * there, its mask counts every text too (see et_automaton_allowed). l of one character: no
 * cut falls inside it (keys shared with the look-aheads'). */
static void pctx_whole(const et_automaton *a, struct pctx *x)
{
    if (x->l >= a->n_vocab) return;
    const uint8_t *p = NULL;
    const size_t nl = et_tok(a->m, x->l, &p);
    size_t starts = 0;
    for (size_t i = 0; i < nl && starts < 2u; i++) starts += (p[i] & 0xC0u) != 0x80u;
    if (starts >= 2u) x->whole = AUT_WHOLE;
}

/* pctx_init's look-ahead fields (entry_ok's: a mask's or a step's context). */
static void pctx_look(const et_automaton *a, struct pctx *x)
{
    const uint32_t l = x->l;
    x->lk_packed = a->probes != NULL;
    x->lk_s2 = l == ET_NONE ? 1u : (uint64_t)a->shape[(size_t)4u * l] + 2u; /* as s2 above */
    x->lk_free = !(l != ET_NONE && apos_before(a, l, AUT_ANY));
}

/* The slot of a->probes that holds key's answer, if any (key << 4 | bits). */
static inline _Atomic uint64_t *probe_slot(const et_automaton *a, uint64_t key)
{
    return &a->probes[(key * 0x9E3779B97F4A7C15ull) >> (64u - AUT_PROBE_BITS)];
}

/* What the probes know of a pair: AUT_CUT and AUT_INSIDE known (<< 2), and those of them
 * possible; the answer to want: 1, 0, or -1 where it is not known yet. */
static inline int pm_answer(unsigned k, unsigned want)
{
    if (k & want & 3u) return 1;
    return want & ~(k >> 2) ? -1 : 0;
}

/* What the probes know of x->l then t (t has a head; see probe()) once want (AUT_CUT,
 * AUT_INSIDE: whether one of them can happen) is answered: pm_answer's bits. Remembered by
 * shapes: in a->probes for every mask and thread (key << 4 | bits; relaxed atomics, each store
 * the facts loaded and found) or, where the shapes are too many to pack, in mm for this mask.
 * Only what is not known is asked. */
static unsigned probe_ok(const et_automaton *a, struct memo *mm, const struct pctx *x, uint32_t t,
                         unsigned want)
{
    const uint32_t st = a->shape[(size_t)4u * t + 2u + x->next_free];
    _Atomic uint64_t *slot = NULL;
    uint64_t key = 0, k0 = 0, k1 = 0;
    size_t h = 0;
    unsigned k = 0;
    if (x->packed && st < AUT_SHAPE_MAX) {
        key = (uint64_t)(x->whole != 0) << 58 | (uint64_t)(x->from != 0) << 57 | x->k0 << 19 |
              st; /* (x->k0 < 2^38) */
        slot = probe_slot(a, key);
        const uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
        if (v >> 4 == key) k = (unsigned)(v & 15u);
    } else {
        k0 = (uint64_t)x->s2 << 32 | x->sl;
        k1 = ((uint64_t)(x->whole != 0) << 33 | (uint64_t)(x->from != 0) << 32 | st) +
             1u; /* not 0: an empty slot matches nothing */
        h = (size_t)(((k0 * 0x9E3779B97F4A7C15ull) ^ (k1 * 0xC2B2AE3D27D4EB4Full)) >> 54);
        if (mm->key[h][0] == k0 && mm->key[h][1] == k1) k = mm->ans[h];
    }
    if (pm_answer(k, want) >= 0) return k;
    const unsigned ask = want & ~(k >> 2);
    const uint8_t *q = NULL;
    et_tok(a->m, t, &q);
    const unsigned got = (unsigned)probe(a->m, x->l2, x->l, q, a->head[t] & ~AUT_HEAD_FLAGS, 1,
                                         (int)(ask | x->from | x->whole));
    k |= got ? got << 2 | got : ask << 2;
    if (slot) {
        atomic_store_explicit(slot, key << 4 | k, memory_order_relaxed);
    } else {
        mm->key[h][0] = k0;
        mm->key[h][1] = k1;
        mm->ans[h] = (uint8_t)k;
    }
    return k;
}

/* et_valid_pair(l, t) where l's bytes then t's first byte begin no token: so do none of t's
 * prefixes, and the backtracking test's first steps (down t's left parts while they are not
 * below l) pass without a look; the rest is pair_valid's from the first pair that differs. */
#define AUT_APART 512u /* a mask's memo of pair_valid_apart by the pair it ends at */
static int pair_valid_apart(const et_automaton *a, uint32_t l, uint32_t t, uint32_t *memo)
{
    const et_model *m = a->m;
    uint32_t y = t;
    if ((t < m->n_vocab && et_odd(a->odd, t)) || (l < m->n_vocab && et_odd(a->odd, l)))
        return pair_valid(a, l, t, 0); /* (the walk's first steps are for regular pairs) */
    while (y < m->n_vocab && !(l > y)) {
        const uint32_t y2 = m->split[2u * y];
        if (y2 >= y) break; /* (an atom; and a damaged file's cycle ends) */
        y = y2;
    }
    if (!memo) return pair_valid(a, l, y, 1);
    uint32_t *slot = &memo[(y * 0x9E3779B1u) >> 23]; /* y << 1 | answer (ids < 2^29) */
    if (*slot >> 1 == y) return (int)(*slot & 1u);
    const int res = pair_valid(a, l, y, 1);
    *slot = y << 1 | (uint32_t)res;
    return res;
}

/* et_valid_pair(x->l, t): from the pair set where the mask has one, else pair_valid (apart:
 * l's bytes then t's first byte begin no token; see pair_valid_apart). */
static inline int pair_of(const et_automaton *a, const struct pctx *x, uint32_t t, int apart)
{
    struct pinv *pi = x->pi;
    if (pi && !pi->made) pi->made = et_pairset_invalid(pi->ps, x->l, pi->bits) ? 1 : -1;
    int res;
    if (pi && pi->made > 0 && !et_odd(a->odd, t))
        res = !(pi->bits[pi->pos[t] >> 6] >> (pi->pos[t] & 63u) & 1u);
    else
        res = apart ? pair_valid_apart(a, x->l, t, x->apart) : pair_valid(a, x->l, t, 0);
#ifdef AUT_CHECK_PAIRS
    if (res != et_valid_pair(a->m, x->l, t)) abort();
#endif
    return res;
}

/* digit_step() of token t after the run d, from a->dtab: 0 where t cannot follow, else
 * (run after t + 1) | mode << 4. */
static inline unsigned dstep(const et_automaton *a, uint32_t d, uint32_t t)
{
    return a->dtab[(size_t)d * 256u + a->dig[t]];
}

/* Whether l's last bytes and t's first lie in one character: l ends inside one (a lead byte
 * and fewer continuation bytes than it asks for) and t begins with continuation bytes. In a
 * UTF-8 text (the only kind a pattern's language holds) they are then that character's, which
 * no cut splits, so l and t are in one piece, whatever the text around: a valid pair (also
 * where t does not finish the character: '\xe8' '\x80' before '\xb7' is no pair, as
 * '\xe8\x80' is a token). */
static int splits_char(const et_model *m, uint32_t l, uint32_t t)
{
    const uint8_t *q = NULL;
    const size_t nt = et_tok(m, t, &q);
    return nt && (q[0] & 0xC0u) == 0x80u && ends_open(m, l);
}

/* Where l and t split a character (splits_char), whether some text cuts inside neither: l,
 * then t's bytes up to two characters past the one they finish, as probe()'s INSIDE with any
 * text before l. No probe() can look at either token alone: ' \xc2'
 * '\xbe\xe7\xa4\xba' (" ¾示") is cut before and after the digit ¾ in every text, so neither
 * token is canonical there. 1 where not known (a text that is not UTF-8, too long). Any text
 * before l, as the look-ahead after l2 has it (the rows inside a character are short: with
 * l2 and pctx_from, a mask after ' ' '\xeb\x8d' refused every last byte, where the look-ahead
 * of the long row before had let '\xeb\x8d' in). */
static int split_answer(const et_automaton *a, uint32_t l, uint32_t t)
{
    const uint8_t *q = NULL;
    const size_t nt = et_tok(a->m, t, &q);
    size_t nq = 0, c;
    while (nq < nt && (q[nq] & 0xC0u) == 0x80u) nq++; /* (the rest of l's last character) */
    for (unsigned chars = 0; nq < nt && chars < 2u; chars++, nq += c)
        if (et_utf8_decode(q, nt, nq, &c) == 0xFFFFFFFFu) break;
    return probe(a->m, AUT_ANY, l, q, nq, 1, AUT_INSIDE) != 0;
}

/* split_answer, kept by (l, t) in a->splk (the model's). */
static int split_whole(const et_automaton *a, uint32_t l, uint32_t t)
{
    return pair_kept(a, a->splk, AUT_SPLK_BITS, l, t, split_answer);
}

/* Whether t may follow x->l (and x->l2) where the digit run says dv of the cut before t
 * (dstep()'s, not 0; 1 where the run is not asked): across a cut, if one may fall there (asked
 * first: no pair test), or inside one piece as a valid pair. *valid: et_valid_pair(l, t), or
 * -1 while not known (-2: and l's bytes then t's are no token), worked out when needed. Where l
 * and t split a character (splits_char), they must be a valid pair. */
ET_ALWAYS_INLINE static inline int pair_ok_c(const et_automaton *a, struct memo *mm,
                                             const struct pctx *x, uint32_t t, int *valid,
                                             unsigned dv)
{
    unsigned mode = dv >> 4;
    if (mode == DM_CUT) return 1;
    if (mode == DM_PROBE && (x->l == ET_NONE || !(a->head[t] & ~AUT_HEAD_FLAGS))) {
        if (x->l >= a->n_vocab || !splits_char(a->m, x->l, t)) return 1;
        /* (t is no character: no probe could look at it) */
        if (*valid < 0) *valid = pair_of(a, x, t, *valid == -2);
        return *valid && split_whole(a, x->l, t);
    }
    /* the first text that answers either tells whether a cut (no pair test) may be there */
    if (mode == DM_PROBE && probe_ok(a, mm, x, t, AUT_CUT | AUT_INSIDE) & AUT_CUT) return 1;
    if (mode == DM_JOIN && *valid == -1 && x->l < a->n_vocab && !et_odd(a->odd, x->l) &&
        !et_odd(a->odd, t) && aut_concat(a->m, x->l, t) != ET_NONE) {
        /* (digits of one group, most often a token together: pair_valid's first step, with
         * no look-up of a->pairs) */
#ifdef AUT_CHECK_PAIRS
        if (et_valid_pair(a->m, x->l, t)) abort();
#endif
        *valid = 0;
        return 0;
    }
    if (*valid < 0) *valid = pair_of(a, x, t, *valid == -2);
    if (mode == DM_JOIN) return *valid; /* t is in l's piece of digits */
    return (probe_ok(a, mm, x, t, *valid ? AUT_CUT | AUT_INSIDE : AUT_CUT) &
            (*valid ? AUT_CUT | AUT_INSIDE : AUT_CUT)) != 0;
}

static int entry_live(const et_automaton *a, struct memo *mm, uint32_t l, uint32_t i, unsigned k,
                      uint32_t dt);

/* entry_live's step: whether entry j (token u, digit_step v != 0) of the row after entry i
 * (token t, after x's l) proves i live at level k: that level (wit[i] noted), else -1. */
static inline int live_witness(const et_automaton *a, struct memo *mm, const struct pctx *x,
                               uint32_t i, uint32_t j, unsigned k, unsigned v)
{
    int valid = -1; /* (a cut needs no pair test: not known then) */
    if (!pair_ok_c(a, mm, x, a->tok[j], &valid, v)) return -1;
    const int sub = k == 1u ? 0 : entry_live(a, mm, AUT_ANY, j, k - 1u, 0u);
    if (sub < 0) return -1;
    if (k > 1u)
        atomic_store_explicit(&a->wit[i],
                              (j - a->row[a->nxt[i]] + 1u) << 1 | (uint32_t)(valid == 1),
                              memory_order_relaxed);
    return sub == 15 ? 15 : sub + 1;
}

/* Look-ahead (canonical). live(l, i, k) for entry i of a row (token t after token l, leading
 * to row r): k = 0, or r accepts, or some entry j of r may follow t (pair_ok_c(l, t, tok[j]))
 * with live(t, j, k - 1). A token that is not live(l, i, AUT_LOOK) leads where no canonical
 * text can go on (after "y" in yes|no: "es" and "e" merge with it), so it is not allowed.
 * The first level knows l (the state's last token); deeper levels take any token before t
 * (AUT_ANY: each probe right before t, a looser test, so a canonical continuation still
 * implies live) and are remembered per entry: the low nibble of live[i] the highest level
 * proved live, the high nibble the lowest proved not (0: none). Every value stored is a fact,
 * so threads that race on an entry lose at most a fact. Returns -1 (not live) or a level
 * L >= k proved live (15: every level, an accepting row is reached). Recursion is AUT_LOOK
 * deep; each level scans one row. */
#define AUT_LOOK 3u
static int entry_live(const et_automaton *a, struct memo *mm, uint32_t l, uint32_t i, unsigned k,
                      uint32_t dt)
{
    const int keep = l == AUT_ANY;
    const unsigned m = keep ? atomic_load_explicit(&a->live[i], memory_order_relaxed) : 0u;
    if ((m & 15u) >= k) return (int)(m & 15u);
    if ((m >> 4) && (m >> 4) <= k) return -1;
    const uint32_t r = a->nxt[i], t = a->tok[i];
    int lvl = a->accept[r] ? 15 : -1;
    struct pctx x;
    if (lvl < 0) pctx_init(a, &x, l, t);
    /* the run after t: known where l is (deeper levels, remembered for any l, ask none) */
    const uint8_t *const drow = keep ? NULL : a->dtab + (size_t)dt * 256u;
    /* the entry that proved i live before (under any token before t, or another l): a hint,
     * checked like any other (its valid bit is a fact about (t, its token)) */
    const uint32_t w = lvl < 0 ? atomic_load_explicit(&a->wit[i], memory_order_relaxed) : 0u;
    if (w) {
        const uint32_t j = a->row[r] + (w >> 1) - 1u;
        const unsigned v = j >= a->row[r + 1u] ? 0u : drow ? drow[a->dig[a->tok[j]]] : 1u;
        int valid = w & 1u ? 1 : -1;
        if (v && pair_ok_c(a, mm, &x, a->tok[j], &valid, v)) {
            const int sub = k == 1u ? 0 : entry_live(a, mm, AUT_ANY, j, k - 1u, 0u);
            if (sub >= 0) lvl = sub == 15 ? 15 : sub + 1;
        }
    }
    if (drow && a->dx_at && a->dx_at[r] < a->dx_at[r + 1u]) {
        /* a row mostly of digits: by groups of one digit_desc(), those the run refuses
         * skipped */
        const int joins = a->dig_all && ascii_digits(a, t);
        for (uint32_t g = a->dx_at[r]; lvl < 0 && g < a->dx_at[r + 1u]; g++) {
            const uint32_t *e = a->dx + a->dx_g[g], *const end = a->dx + a->dx_g[g + 1u];
            const unsigned v = drow[a->dig[a->tok[*e]]];
            if (joins && v >> 4 == DM_JOIN && a->dx_f[g]) {
                /* ASCII digits of t's group, at most dig_g of them: a token together, so no
                 * valid pair (pair_ok_c's DM_JOIN step for each) */
#ifdef AUT_CHECK_PAIRS
                for (; e < end; e++)
                    if (et_valid_pair(a->m, t, a->tok[*e])) abort();
#endif
                continue;
            }
            for (; v && lvl < 0 && e < end; e++) lvl = live_witness(a, mm, &x, i, *e, k, v);
        }
    } else {
        for (uint32_t j = a->row[r]; lvl < 0 && j < a->row[r + 1u]; j++) {
            const unsigned v = drow ? drow[a->dig[a->tok[j]]] : 1u;
            if (v) lvl = live_witness(a, mm, &x, i, j, k, v);
        }
    }
    if (!keep) return lvl;
    const unsigned now = atomic_load_explicit(&a->live[i], memory_order_relaxed);
    unsigned lo = now & 15u, hi = now >> 4;
    if (lvl >= 0 && (unsigned)lvl > lo) lo = (unsigned)lvl;
    if (lvl < 0 && (!hi || k < hi)) hi = k;
    atomic_store_explicit(&a->live[i], (uint8_t)(hi << 4 | lo), memory_order_relaxed);
    return lvl;
}

/* Whether the text may end after l with l2 before it (et_automaton_accepting's test of the pair
 * at the end: l2 ET_NONE, or a cut or one piece that the end of the text allows), remembered
 * in a->endk (the model's; short rows' look-ahead asks it of many pairs). */
static int end_answer(const et_automaton *a, uint32_t l2, uint32_t l)
{
    const uint8_t *q = NULL;
    size_t nt = et_tok(a->m, l, &q);
    const int want = pair_valid(a, l2, l, 0) ? AUT_CUT | AUT_INSIDE : AUT_CUT;
    return !nt || !utf8_chars(q, nt, nt) || probe(a->m, AUT_ANY, l2, q, nt, 0, want);
}

static int end_ok(const et_automaton *a, uint32_t l2, uint32_t l)
{
    return l2 == ET_NONE || l == ET_NONE || pair_kept(a, a->endk, AUT_ENDK_BITS, l2, l, end_answer);
}

/* The look-ahead of short rows, with the tokens known at every step (entry_live's deeper
 * steps take any token before, which lets a walk in: "wor" of hello|world is live after any
 * token before "l", but after "wor", "l" then "d" make "world"): whether entry i (token t after
 * l, the run after t d) leads where the text may end (t's row accepts and end_ok(l, t)) or go
 * on for k more tokens, each allowed by pair_ok_c after the two before it. Rows are tried
 * from their last entry back: later ids are later merges, longer tokens, which canonical text
 * prefers (a digit group's "000" before "0", whose next digits all merge with it). As a proof
 * (proof = 1), the entries that proved one before go first (the row's a->xw, kept by both
 * kinds, then i's a->wit), and those that entry_live proved not live after any token are
 * skipped; past *budget entries tried the answer is 0 (not proven). Else past *budget the
 * answer is 1 (not known): what it tries does not depend on what was learned before, so the
 * answer is a function of the state alone, the same for a mask and for a step. */
static int live_exact(const et_automaton *a, struct memo *mm, uint32_t l, uint32_t i, uint32_t d,
                      unsigned k, int *budget, int proof)
{
    const uint32_t t = a->tok[i], r = a->nxt[i], beg = a->row[r], end = a->row[r + 1u];
    if (a->accept[r] && end_ok(a, l, t)) return 1;
    if (!k) return 1;
    struct pctx x;
    pctx_init(a, &x, l, t);
    pctx_from(a, &x);
    uint32_t hint[2] = {end, end}; /* (tried first; end: none) */
    if (proof) {
        const uint32_t xr = atomic_load_explicit(&a->xw[r], memory_order_relaxed),
                       w = atomic_load_explicit(&a->wit[i], memory_order_relaxed);
        if (xr && xr <= end - beg) hint[0] = beg + xr - 1u;
        if (w && (w >> 1) <= end - beg && beg + (w >> 1) - 1u != hint[0])
            hint[1] = beg + (w >> 1) - 1u;
    }
    for (uint32_t n = 0; n < 2u + (end - beg); n++) {
        const uint32_t j = n < 2u ? hint[n] : end - 1u - (n - 2u); /* (later ids first) */
        if (j == end || (n >= 2u && (j == hint[0] || j == hint[1]))) continue;
        if (--*budget < 0) return !proof;
        const uint32_t u = a->tok[j];
        const unsigned v = dstep(a, d, u),
                       m = atomic_load_explicit(&a->live[j], memory_order_relaxed);
        if (!v || (proof && k > 1u && (m >> 4) && (m >> 4) <= k - 1u)) continue;
        int valid = -1;
        if (pair_ok_c(a, mm, &x, u, &valid, v) &&
            live_exact(a, mm, t, j, (v & 15u) - 1u, k - 1u, budget, proof)) {
            atomic_store_explicit(&a->xw[r], j - beg + 1u, memory_order_relaxed);
            return 1;
        }
    }
    return 0;
}

/* live_exact for entry i after l (dt: the run after its token): a proof first, then the scan;
 * both AUT_EXACT_DEPTH tokens deep, more than the look-ahead's three: each step's pair test
 * imagines any text after the token (" " " " of " {1,5}" may be cut before a word), so a walk
 * may die further on where the pattern's text ends ("  " is one token at its end). */
#define AUT_PROOF_BUDGET 256
#define AUT_EXACT_BUDGET 2048
#define AUT_EXACT_DEPTH 8u
static int exact_live(const et_automaton *a, struct memo *mm, uint32_t l, uint32_t i, uint32_t dt)
{
    int budget = AUT_PROOF_BUDGET;
    if (live_exact(a, mm, l, i, dt, AUT_EXACT_DEPTH, &budget, 1)) return 1;
    budget = AUT_EXACT_BUDGET;
    return live_exact(a, mm, l, i, dt, AUT_EXACT_DEPTH, &budget, 0);
}

/* exact_live for entry i of row (v: dstep() of its token) after l, where the row is short
 * (AUT_LONG): masks and steps take its token only then. */
static int short_live(const et_automaton *a, struct memo *mm, uint32_t row, uint32_t l,
                      uint32_t i, unsigned v)
{
    if (a->row[row + 1u] - a->row[row] >= AUT_LONG) return 1;
    return exact_live(a, mm, l, i, (v & 15u) - 1u);
}

/* Whether entry i (token t after l, the run after t dt), whose row accepts, is live: the text
 * may end after t, or, where that depends on l (end_needed) and it may not, some text goes on
 * with every token known (exact_live: the look-ahead by any token before would take " " " "
 * then " " as live, though only the end of the text may follow and a run of three spaces is
 * one piece there). A function of the state alone, as short_live's answers. */
static int accept_live(const et_automaton *a, struct memo *mm, uint32_t l, uint32_t i, uint32_t dt)
{
    const uint32_t t = a->tok[i];
    return !end_needed(a, l, t) || end_ok(a, l, t) || exact_live(a, mm, l, i, dt);
}

/* Small automata (an enum of words: tens of entries) learn at build whether each entry is
 * live under any token before it (entry_live, AUT_ANY): their first masks then cost what a
 * later one does (cl100k, (yes|no|maybe|unknown): the first mask 22 -> 3 us, the build ~1 ms
 * either way); larger ones learn as masks ask (a build that learned 16,384 entries took up to
 * 1.9x as long). */
#define AUT_LEARN 512u
static void learn_looks(const et_automaton *a, size_t used)
{
    if (used > AUT_LEARN) return;
    struct memo mm;
    memset(mm.key, 0, sizeof mm.key);
    mm.look = NULL;
    for (size_t i = 0; i < used; i++)
        if (!a->accept[a->nxt[i]]) entry_live(a, &mm, AUT_ANY, (uint32_t)i, AUT_LOOK, 0u);
}

/* Whether the probes know a cut may fall in the pair of key (packed as in probe_ok). */
static inline int cut_known(const et_automaton *a, uint64_t key)
{
    const uint64_t v = atomic_load_explicit(probe_slot(a, key), memory_order_relaxed);
    return v >> 4 == key && (v & AUT_CUT);
}

/* Whether entry j of t's next row proves t's look-ahead (entry_ok's, after x->l; dt: the run
 * after t) by cuts alone, so that it proves it alike for any token of t's shape and digit_desc
 * leading there: j's token u is live at AUT_LOOK - 1, has a head, and may follow t across a cut
 * both after any token (the probes know) and after x->l (the digit run cuts, or the probes
 * know). */
static int look_by_cut(const et_automaton *a, const struct pctx *x, uint32_t t, uint32_t j,
                       uint32_t dt)
{
    const uint32_t u = a->tok[j];
    if ((atomic_load_explicit(&a->live[j], memory_order_relaxed) & 15u) < AUT_LOOK - 1u ||
        !(a->head[u] & ~AUT_HEAD_FLAGS))
        return 0;
    const unsigned uv = dstep(a, dt, u);
    if (!uv || uv >> 4 == DM_JOIN) return 0;
    /* (u's head after t: after any token, and after x->l) */
    const uint32_t st = a->shape[(size_t)4u * u + 2u + !apos_before(a, t, AUT_ANY)],
                   su = a->shape[(size_t)4u * u + 2u + !apos_before(a, t, x->l)],
                   s0 = a->shape[(size_t)4u * t], sl = a->shape[(size_t)4u * t + x->lk_free];
    if ((st | su | s0 | sl) >= AUT_SHAPE_MAX || !cut_known(a, (uint64_t)s0 << 19 | st)) return 0;
    return uv >> 4 == DM_CUT || cut_known(a, (x->lk_s2 << 19 | sl) << 19 | su);
}

/* Whether the pretokenizer cuts between t and u in every text the probes put them in after any
 * token (each probe before t, each after u's head: probe(AUT_ANY, ..., AUT_NOCUT) finds none
 * without the cut). Then a cut may fall there after any token l before t as well: what l's text
 * does before t, one of the probes does (the assumption the probes after any token rest on; the
 * sanitized build checks it at every use, see mask_entry). Remembered in a->probes by t's first
 * shape and u's head's (after any token), under AUT_ALWAYS in place of l's shape. */
#define AUT_ALWAYS (AUT_SHAPE_MAX - 1u) /* (no l's shape + 2: see the probes' keys) */
static int cut_always(const et_automaton *a, uint32_t t, uint32_t u)
{
    const uint32_t s0 = a->shape[(size_t)4u * t],
                   st = a->shape[(size_t)4u * u + 2u + !apos_before(a, t, AUT_ANY)];
    if (!a->probes || a->n_shapes + 3u > AUT_SHAPE_MAX || (s0 | st) >= AUT_SHAPE_MAX) return 0;
    const uint64_t key = ((uint64_t)AUT_ALWAYS << 19 | s0) << 19 | st;
    _Atomic uint64_t *const slot = probe_slot(a, key);
    const uint64_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v >> 4 == key) return (int)(v & AUT_CUT);
    atomic_fetch_add_explicit(&a->count[0], 1u, memory_order_relaxed);
    const uint8_t *q = NULL;
    et_tok(a->m, u, &q);
    const int always =
        !(probe(a->m, AUT_ANY, t, q, a->head[u] & ~AUT_HEAD_FLAGS, 1, AUT_NOCUT) & AUT_NOCUT);
    atomic_store_explicit(slot, key << 4 | AUT_CUT << 2 | (always ? AUT_CUT : 0u),
                          memory_order_relaxed);
    return always;
}

/* Whether t's bytes are ASCII. Classes of other tokens ask look_any only until cut_always has
 * run AUT_ALWAYS_CAP probes in the automaton: their shapes can be many (o200k's JSON pattern
 * asked ~200,000 keys of cut_always in 40 strings, 18% slower first masks than none, before
 * shapes shortened runs of characters beyond ASCII and kept only ſ named among them; now
 * fewer than the cap). Masks are the same either way. */
#define AUT_ALWAYS_CAP 20000u
/* And only once an automaton has made this many masks of long rows: its learning costs a first
 * mask that makes it 3-4 times as much (cl100k, a fresh automaton's first JSON masks 0.36 ->
 * 1.4 ms), where a decoding loop that keeps its automaton gains (later first masks of a state
 * -23%). Masks are the same either way. */
#ifndef AUT_ANY_AFTER
#define AUT_ANY_AFTER 16u /* (0 in the fuzzer and the sanitized tests: every mask asks) */
#endif
static int ascii_tok(const et_model *m, uint32_t t)
{
    const uint8_t *p = NULL;
    const uint32_t n = et_tok(m, t, &p);
    uint8_t any = 0;
    for (uint32_t k = 0; k < n; k++) any |= p[k];
    return any < 0x80u;
}

/* The first index >= lo of row entries [lo, hi) whose token is >= t (tok ascending): doubling
 * steps, then halving (a mask's slow tokens, in order). */
static inline uint32_t row_seek(const uint32_t *tok, uint32_t lo, uint32_t hi, uint32_t t)
{
    uint32_t step = 1u;
    while (lo < hi && tok[lo] < t) {
        const uint32_t probe = hi - lo > step ? lo + step : hi - 1u;
        if (tok[probe] < t) {
            lo = probe + 1u;
            step *= 2u;
        } else {
            hi = probe + 1u;
            step = 1u;
            while (lo < hi) {
                const uint32_t mid = lo + (hi - lo) / 2u;
                if (tok[mid] < t) lo = mid + 1u;
                else hi = mid;
            }
            return lo;
        }
    }
    return lo;
}

/* Whether entry j of t's next row proves look_any for t (dt: the run after t): its token is
 * live at AUT_LOOK - 1 and may follow t across a cut that falls whatever the token before t. */
static int any_witness(const et_automaton *a, uint32_t t, uint32_t j, uint32_t dt)
{
    if ((atomic_load_explicit(&a->live[j], memory_order_relaxed) & 15u) < AUT_LOOK - 1u) return 0;
    const uint32_t u = a->tok[j];
    const unsigned uv = dstep(a, dt, u);
    if (!uv || uv >> 4 == DM_JOIN || !(a->head[u] & ~AUT_HEAD_FLAGS)) return 0;
    return uv >> 4 == DM_CUT || cut_always(a, t, u);
}

/* Whether entry i of a long row (token t; dt: the run after t, whatever the run before: t has
 * no digit where runs are carried) is live after any token: live(AUT_ANY, i) by a witness j
 * (its own, or the space or newline token) whose token u is live at AUT_LOOK - 1
 * and may follow t across a cut that falls whatever the token before t (any_witness: the digit
 * run cuts, or cut_always). Then so is every entry of its class, as
 * look_by_cut proves it for one l. */
static int look_any(const et_automaton *a, struct memo *mm, uint32_t i, uint32_t dt)
{
    const uint32_t t = a->tok[i], r = a->nxt[i];
    if ((atomic_load_explicit(&a->live[i], memory_order_relaxed) & 15u) < AUT_LOOK &&
        entry_live(a, mm, AUT_ANY, i, AUT_LOOK, 0u) < 0)
        return 0;
    const uint32_t w = atomic_load_explicit(&a->wit[i], memory_order_relaxed),
                   j = a->row[r] + (w >> 1) - 1u;
    if (w && j < a->row[r + 1u] && any_witness(a, t, j, dt)) return 1;
    /* another witness: where its own (the first live entry of the next row, most often a mark)
     * joins t in one piece, a space or a newline after t is cut from it (a space before a
     * mark, a newline before anything: the patterns' runs of marks stop at \s; the probes of
     * cut_always tell) */
    static const uint8_t other[] = {' ', '\n'};
    for (unsigned q = 0; q < sizeof other; q++) {
        const uint32_t c = et_trie_next(a->m, 0, other[q]);
        const uint32_t u = c < a->m->n_cells ? et_value(a->m, c) : ET_NONE;
        if (u == ET_NONE) continue;
        const uint32_t k = row_seek(a->tok, a->row[r], a->row[r + 1u], u);
        if (k == a->row[r + 1u] || a->tok[k] != u ||
            ((atomic_load_explicit(&a->live[k], memory_order_relaxed) & 15u) < AUT_LOOK - 1u &&
             entry_live(a, mm, AUT_ANY, k, AUT_LOOK - 1u, 0u) < 0))
            continue;
        if (any_witness(a, t, k, dt)) return 1;
    }
    return 0;
}

static int entry_look(const et_automaton *a, struct memo *mm, const struct pctx *x, uint32_t i,
                      uint32_t dt);

/* Whether entry_look has proven entry i live by a witness that reads no l, no digit run: then
 * it is live after any token (a->lany). */
static inline int look_anyl(const et_automaton *a, uint32_t i)
{
    return (int)(atomic_load_explicit(&a->lany[i >> 6], memory_order_relaxed) >> (i & 63u) & 1u);
}

/* Whether entry i of state c's row may be taken in a canonical automaton: t may follow the
 * state's last two tokens, and the look-ahead (entry_look). valid: as pair_ok_c's; tv: dstep()
 * of t after the state's run (not 0). Where mm->look is set, look-aheads that cuts alone proved
 * (look_by_cut) are remembered by (next row, t's shape, t's digit_desc): the mask's tokens of
 * one shape then cost one look-up. Returns 1 (taken), 0 (t may not follow), or -1 (it may, but
 * is not live). */
static int entry_ok(const et_automaton *a, struct memo *mm, const struct pctx *x, uint32_t i,
                    int valid, unsigned tv)
{
    const uint32_t t = a->tok[i], dt = (tv & 15u) - 1u; /* the run after t */
    if (!pair_ok_c(a, mm, x, t, &valid, tv)) return 0;
    const uint32_t r = a->nxt[i];
    if (a->accept[r]) /* the text may end after t: live at every level */
        return accept_live(a, mm, x->l, i, dt) ? 1 : -1;
    uint64_t *lc = NULL, key = 0;
    if (mm->look && a->shape[(size_t)4u * t] < AUT_SHAPE_MAX) {
        if (!mm->look_set) {
            memset(mm->look, 0, ((size_t)1 << mm->look_bits) * sizeof *mm->look);
            mm->look_set = 1;
        }
        key = (((uint64_t)r << 19 | a->shape[(size_t)4u * t]) << 8 | a->dig[t]) << 1 | 1u;
        lc = &mm->look[(key * 0x9E3779B97F4A7C15ull) >> (64u - mm->look_bits)];
        if (*lc == key) return 1;
    }
    if (!entry_look(a, mm, x, i, dt)) return -1;
    if (lc) {
        const uint32_t w = atomic_load_explicit(&a->wit[i], memory_order_relaxed),
                       j = a->row[r] + (w >> 1) - 1u;
        if (w && j < a->row[r + 1u] && look_by_cut(a, x, t, j, dt)) *lc = key;
    }
    return 1;
}

/* entry_ok's look-ahead of entry i (t, after x->l; dt: the run after t; its row does not
 * accept): live(AUT_ANY, i) (remembered), then live(x->l, i). */
static int entry_look(const et_automaton *a, struct memo *mm, const struct pctx *x, uint32_t i,
                      uint32_t dt)
{
    const uint32_t t = a->tok[i], r = a->nxt[i];
    if (look_anyl(a, i)) {
#ifdef AUT_CHECK_PAIRS
        if (entry_live(a, mm, x->l, i, AUT_LOOK, dt) < 0) abort(); /* (a fact for every l) */
#endif
        return 1;
    }
    const unsigned m = atomic_load_explicit(&a->live[i], memory_order_relaxed);
    if ((m & 15u) < AUT_LOOK && entry_live(a, mm, AUT_ANY, i, AUT_LOOK, 0u) < 0) return 0;
    /* live(l, i): most often the witness of live(AUT_ANY, i) with its probe remembered */
    const uint32_t w = atomic_load_explicit(&a->wit[i], memory_order_relaxed);
    if (w && x->lk_packed) {
        const uint32_t j = a->row[r] + (w >> 1) - 1u;
        if (j < a->row[r + 1u] &&
            (atomic_load_explicit(&a->live[j], memory_order_relaxed) & 15u) >= AUT_LOOK - 1u) {
            const uint32_t u = a->tok[j];
            const unsigned uv = dstep(a, dt, u);
            if (!uv || (uv >> 4 == DM_JOIN && !(w & 1u))) goto scan;
            if (uv >> 4 != DM_PROBE) return 1;
            if (!(a->head[u] & ~AUT_HEAD_FLAGS)) {
                const int ok = !splits_char(a->m, t, u) || ((w & 1u) && split_whole(a, t, u));
                /* (u begins inside a character: uv is the same whatever the run, and what
                 * decides reads t and u alone) */
                if (ok && (a->dig[u] & DG_OPEN))
                    atomic_fetch_or_explicit(&a->lany[i >> 6], (uint64_t)1 << (i & 63u),
                                             memory_order_relaxed);
                return ok;
            }
            const uint32_t sl = a->shape[(size_t)4u * t + x->lk_free],
                           st = a->shape[(size_t)4u * u + 2u + !apos_before(a, t, x->l)];
            if ((sl | st) < AUT_SHAPE_MAX) {
                const uint64_t key = (x->lk_s2 << 19 | sl) << 19 | st;
                const uint64_t v = atomic_load_explicit(probe_slot(a, key), memory_order_relaxed);
                if (v >> 4 == key && (v & (w & 1u ? AUT_CUT | AUT_INSIDE : AUT_CUT))) return 1;
            }
        }
    }
scan:
    return entry_live(a, mm, x->l, i, AUT_LOOK, dt) >= 0;
}

/* A mask's decision for a class of entries (see classes()), from its first entry i (token t,
 * dstep() v after the state's run, not 0): what pair_ok_c answers for every entry of the class
 * with no pair test, or that it asks one. The look-ahead bit is set later (mask_class_look). */
#define MC_PASS 1u  /* pair_ok_c: 1 for every entry of the class */
#define MC_DENY 2u  /* 0 for every entry */
#define MC_VALID 3u /* et_valid_pair(l, t) */
#define MC_TOK 4u   /* pair_ok_c itself, entry by entry */
#define MC_VALIDC 5u /* et_valid_pair(l, t), or else whether a cut may fall (not known yet) */
#define MC_LOOK 8u  /* the look-ahead is proven for every entry whose pair passes */
static unsigned mask_class(const et_automaton *a, struct memo *mm, const struct pctx *x,
                           uint32_t i, unsigned v)
{
    const uint32_t t = a->tok[i];
    const unsigned mode = v >> 4,
                   look = a->accept[a->nxt[i]] && !end_needed(a, x->l, t) ? MC_LOOK : 0u;
    if (mode == DM_CUT) return MC_PASS | look;
    if (mode == DM_JOIN) return MC_VALID | look;
    if (x->l == ET_NONE) return MC_PASS | look;
    if (!(a->head[t] & ~AUT_HEAD_FLAGS)) /* (t begins inside a character: pair_ok_c asks only
                                           * whether l's last one goes on in it) */
        return (x->l < a->n_vocab && ends_open(a->m, x->l) ? MC_TOK : MC_PASS) | look;
    const unsigned k = probe_ok(a, mm, x, t, AUT_CUT | AUT_INSIDE);
    if (k & AUT_CUT) return MC_PASS | look;
    if (!(k & AUT_CUT << 2)) return MC_VALIDC | look; /* inside: possible; a cut: not known */
    return (k & AUT_INSIDE ? MC_VALID : MC_DENY) | look;
}

static int ws_run(const et_automaton *a, const struct cstate *c);
static int strict_empty(const et_automaton *a, const struct cstate *c);

int64_t et_automaton_next(const et_automaton *a, int64_t state, uint32_t token)
{
    struct cstate c;
    if (!a || !split_state(a, state, &c)) return -1;
    uint32_t lo = a->row[c.row], hi = a->row[c.row + 1u];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2u;
        if (a->tok[mid] < token) lo = mid + 1u;
        else hi = mid;
    }
    if (lo == a->row[c.row + 1u] || a->tok[lo] != token) return -1;
    unsigned v = 1; /* dstep(): the run after token is (v & 15) - 1 */
    if (a->flags & ET_AUT_CANONICAL) {
        struct memo mm;
        struct pctx x;
        if (!(v = dstep(a, c.d, token))) return -1;
        if (!a->probes) memset(mm.key, 0, sizeof mm.key);
        mm.look = NULL;
        pctx_init(a, &x, c.l2, c.l);
        const int is_short = a->row[c.row + 1u] - a->row[c.row] < AUT_LONG;
        if (is_short || ws_run(a, &c)) pctx_from(a, &x);
        pctx_whole(a, &x);
        pctx_look(a, &x);
        int ok = entry_ok(a, &mm, &x, lo, -1, v) > 0;
        if (!ok && (x.whole || (!is_short && x.from))) {
            /* (as et_automaton_allowed: every text, where the strict test allows nothing) */
            x.whole = 0;
            if (!is_short) x.from = 0;
            ok = entry_ok(a, &mm, &x, lo, -1, v) > 0 && strict_empty(a, &c);
        }
        if (!ok || !short_live(a, &mm, c.row, c.l, lo, v)) return -1;
    }
    return join_state(a, a->nxt[lo], c.l, token, (v & 15u) - 1u);
}

int et_automaton_accepting(const et_automaton *a, int64_t state)
{
    struct cstate c;
    if (!a || !split_state(a, state, &c) || !a->accept[c.row]) return 0;
    /* the text ends after l: (l2, l) must be a pair the end of the text allows */
    return !(a->flags & ET_AUT_CANONICAL) || end_ok(a, c.l2, c.l);
}

/* Look-aheads kept from mask to mask. Whether entry i of a row is live after l (entry_look),
 * and whether look_by_cut proves it for a class of the row, depend on l only through its first
 * shape (pctx_look: the probes are remembered by it, and by l's AUT_HEAD_FLAGS, which the
 * shape shows: apostrophes keep their byte, and a shape is one byte iff its token is; l's
 * bytes are read only by probe(), as the context before t) and on the digit run d: a slot keeps,
 * for one (row, d, l's shape), the entries proven live and proven not, and the classes proven
 * (facts: bits are only set). (Where a->probes is NULL, too many shapes, probe answers are
 * otherwise kept for one mask only: this leans on "texts of the same shape are cut alike"
 * (see shapes) for l's of one shape across masks too.)
 * lk_take returns the slot taken for the key (k1, k2) by this mask until it gives it back
 * (lk_busy), cleared where it held another key (slot_take: of the key's two places); -1 where
 * other masks hold both. */
static inline uint64_t *lk_cls(const et_automaton *a, int slot) /* a slot's class bits */
{
    return a->lk + (size_t)(slot + 1) * a->lk_words - AUT_CLS / 64u;
}

/* Of the places of key k (nk words) among n slots, ways of them (a power of two dividing n:
 * busy: taken, used: when last taken, [n] the clock; keys: nk words a slot), the one that
 * holds k, else the one taken least recently; -1 where other masks hold them all. The slot is
 * this mask's until it gives it back (busy); *fresh: it holds another key (the caller clears
 * it and sets k). */
#define AUT_WAYS 16u
static inline uint64_t key_hash(const uint64_t *k, unsigned nk)
{
    uint64_t h = 0;
    for (unsigned q = 0; q < nk; q++) h = (h ^ k[q]) * 0x9E3779B97F4A7C15ull;
    return (h ^ h >> 31) * 0xC2B2AE3D27D4EB4Full ^ h >> 29; /* (every bit of every word) */
}

static int slot_take(_Atomic uint8_t *busy, _Atomic uint32_t *used, const uint64_t *keys,
                     unsigned nk, unsigned n, unsigned ways, const uint64_t *k, int *fresh)
{
    const unsigned h = (unsigned)(key_hash(k, nk) >> 32) % n & ~(ways - 1u);
    int got[AUT_WAYS], pick = -1;
    for (unsigned p = 0; p < ways; p++) {
        got[p] = !atomic_exchange_explicit(&busy[h + p], 1, memory_order_acquire);
        if (got[p] && pick < 0 && !memcmp(keys + (size_t)nk * (h + p), k, nk * sizeof *k))
            pick = (int)p;
    }
    *fresh = pick < 0;
    for (unsigned p = 0; p < ways && *fresh; p++) /* the least recently taken of those got */
        if (got[p] && (pick < 0 || atomic_load_explicit(&used[h + p], memory_order_relaxed) <
                                       atomic_load_explicit(&used[h + (unsigned)pick],
                                                            memory_order_relaxed)))
            pick = (int)p;
    for (unsigned p = 0; p < ways; p++)
        if (got[p] && (int)p != pick) atomic_store_explicit(&busy[h + p], 0, memory_order_release);
    if (pick < 0) return -1;
    const unsigned slot = h + (unsigned)pick;
    const uint32_t now = atomic_fetch_add_explicit(&used[n], 1u, memory_order_relaxed);
    atomic_store_explicit(&used[slot], now, memory_order_relaxed);
    return (int)slot;
}

static int lk_take(const et_automaton *a, uint64_t k1, uint64_t k2, uint32_t n_row, uint32_t n_cls)
{
    const uint64_t k[2] = {k1, k2};
    int fresh = 0;
    const int slot = slot_take(a->lk_busy, a->lk_used, a->lk_key, 2u, AUT_LK, 2u, k, &fresh);
    if (slot >= 0 && fresh) {
        uint64_t *const lk = a->lk + (size_t)slot * a->lk_words;
        memset(lk, 0, ((size_t)n_row + 63u) / 64u * sizeof *lk);
        memset(lk + a->lk_half, 0, ((size_t)n_row + 63u) / 64u * sizeof *lk);
        memset(lk_cls(a, slot), 0, ((size_t)n_cls + 63u) / 64u * sizeof *a->lk);
        memcpy(a->lk_key + 2u * (unsigned)slot, k, sizeof k);
    }
    return slot;
}

/* What slot keeps of entry i (of row): LK_LIVE, LK_DEAD (its look-ahead proven, or proven to
 * fail), or 0; set (LK_LIVE or LK_DEAD): keep that. (Out of the mask's loop, where it would
 * hold registers: asked only of entries the class does not prove.) */
#define LK_LIVE 1
#define LK_DEAD 2
ET_NOINLINE static int lk_entry(const et_automaton *a, int slot, uint32_t row, uint32_t i, int set)
{
    uint64_t *w = a->lk + (size_t)slot * a->lk_words + (i - a->row[row]) / 64u;
    const uint64_t bit = (uint64_t)1 << ((i - a->row[row]) & 63u);
    if (set) w[set == LK_DEAD ? a->lk_half : 0u] |= bit;
    return w[0] & bit ? LK_LIVE : w[a->lk_half] & bit ? LK_DEAD : 0;
}

/* Puts token t in a mask (bits, ids, as et_automaton_allowed's; *w ids so far): 0 when ids is
 * full. */
static inline int mask_put(uint32_t t, uint8_t *bits, uint32_t *ids, size_t cap, size_t *w)
{
    if (bits) bits[t >> 3] |= (uint8_t)(1u << (t & 7u));
    if (ids) {
        if (*w == cap) return 0;
        ids[*w] = t;
    }
    ++*w;
    return 1;
}

/* The bits set in bits[0, nb): a mask's size, counted once at its end. x86-64 builds for any
 * CPU have no POPCNT (et_popcount64 adds by halves, ~12 instructions a word), so there it is
 * asked for at run time. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__POPCNT__)
#define AUT_POPCNT_ASKED 1
__attribute__((target("popcnt"))) static size_t count_popcnt(const uint8_t *bits, size_t nb)
{
    size_t n = 0, q = 0;
    for (uint64_t x; q + 8u <= nb; q += 8u) {
        memcpy(&x, bits + q, 8u);
        n += (size_t)__builtin_popcountll(x);
    }
    for (; q < nb; q++) n += (size_t)__builtin_popcount(bits[q]);
    return n;
}
#endif
static size_t count_bits(const uint8_t *bits, size_t nb)
{
#ifdef AUT_POPCNT_ASKED
    if (__builtin_cpu_supports("popcnt")) return count_popcnt(bits, nb);
#endif
    size_t n = 0, q = 0;
    for (uint64_t x; q + 8u <= nb; q += 8u) {
        memcpy(&x, bits + q, 8u);
        n += et_popcount64(x);
    }
    for (; q < nb; q++) n += et_popcount64(bits[q]);
    return n;
}

/* Word w of a mask, little-endian, into bits (nb bytes in all). */
static inline void store_word(uint8_t *bits, size_t nb, size_t w, uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (w * 8u + 8u <= nb) {
        memcpy(bits + w * 8u, &x, 8u);
        return;
    }
#endif
    for (size_t b = w * 8u; b < nb && b < w * 8u + 8u; b++, x >>= 8) bits[b] = (uint8_t)x;
}

/* Row row's bitset (row_bits) into bits (nb bytes in all: store_word's). */
static void row_copy(const et_automaton *a, uint32_t row, uint8_t *bits, size_t nb)
{
    const size_t words = ((size_t)a->n_vocab + 63u) / 64u;
    const uint64_t *const b = a->rb + (size_t)(a->rb_at[row] - 1u) * words;
    for (size_t q = 0; q < words; q++) store_word(bits, nb, q, b[q]);
}

/* A mask of a plain automaton: row's tokens (as et_automaton_allowed's; bits of nb bytes,
 * cleared unless the row has a bitset: row_bits). (A function of its own: the loop keeps its
 * registers.) */
ET_NOINLINE static int mask_plain(const et_automaton *a, uint32_t row, uint32_t *ids, size_t cap,
                                  uint8_t *bits, size_t nb, size_t *n)
{
    const uint32_t *const tok = a->tok, beg = a->row[row], end = a->row[row + 1u];
    if (a->rb_at && a->rb_at[row]) { /* a long row: its bitset, and its ids as they are */
        if (bits) {
            const size_t words = ((size_t)a->n_vocab + 63u) / 64u;
            row_copy(a, row, bits, nb);
            if (nb > words * 8u) memset(bits + words * 8u, 0, nb - words * 8u);
        }
        if (ids) {
            memcpy(ids, tok + beg, (end - beg < cap ? end - beg : cap) * sizeof *ids);
            if (end - beg > cap) return ET_E_FULL;
        }
        *n = end - beg;
        return ET_OK;
    }
    if (bits) memset(bits, 0, nb);
    size_t w = 0; /* (bits could alias a's) */
    for (uint32_t i = beg; i < end; i++)
        if (!mask_put(tok[i], bits, ids, cap, &w)) return ET_E_FULL;
    *n = w;
    return ET_OK;
}

/* What a canonical mask reads besides the entry (et_automaton_allowed): the state's row, its
 * classes' decisions (cst), the run's dstep() row (or NULL), the first bytes after l (pair by
 * pair), the pair set's bits for l, the look-aheads kept (lslot, or -1). */
struct mrun {
    struct memo *mm;
    struct pctx *x;
    uint8_t *cst;
    const uint8_t *drow;
    const uint64_t *after_l;
    const struct pinv *pi;
    const uint64_t *tinv; /* mask_long: pi's tokens by id (et_pairset_by_token), or NULL */
    uint64_t *tinv_at;    /* mask_long: where it makes tinv (a scratch bitset), or NULL */
    uint32_t row;
    int lslot;
    int any; /* look_any may be asked (the automaton has made AUT_ANY_AFTER long masks) */
};

/* Whether entry i (token t, class k) of a canonical mask's row is allowed (ME_TAKE), and what
 * the mask knows of its look-ahead: proven or known (ME_LIVE), not live (ME_DEAD), or not asked
 * (neither). */
#define ME_TAKE 1u
#define ME_LIVE 2u
#define ME_DEAD 4u
static inline int me_live(unsigned e) { return e & ME_LIVE ? 1 : e & ME_DEAD ? 0 : -1; }
ET_ALWAYS_INLINE static inline unsigned mask_entry(const et_automaton *a, const struct mrun r,
                                                   uint32_t i, uint32_t t, uint32_t k)
{
    uint8_t *const cst = r.cst;
    unsigned s = cst[k];
    if (s == (MC_PASS | MC_LOOK)) goto take;
    if (s == MC_DENY || s == (MC_DENY | MC_LOOK)) return 0;
    const struct pinv *pi = r.pi;
    if ((s == (MC_VALID | MC_LOOK) || s == (MC_VALIDC | MC_LOOK)) && pi->made > 0 &&
        !et_odd(a->odd, t)) { /* (most entries of long rows; odd: pair_of asks et_valid_pair) */
#ifdef AUT_CHECK_PAIRS
        if ((int)(~pi->bits[pi->pos[t] >> 6] >> (pi->pos[t] & 63u) & 1u) !=
            et_valid_pair(a->m, r.x->l, t))
            abort();
#endif
        if (!(pi->bits[pi->pos[t] >> 6] >> (pi->pos[t] & 63u) & 1u)) goto take; /* valid pair */
        if (s == (MC_VALID | MC_LOOK)) return 0; /* (VALIDC: the class asks the probes) */
    }
    const unsigned v = r.drow ? r.drow[a->dig[t]] : 1u;
    if (!v) {
        if (k < AUT_CLS) cst[k] = MC_DENY;
        return 0;
    }
    int apart = 0;
    if (!r.x->pi) {
        const et_model *m = a->m;
        const uint32_t o = m->tokoff[t];
        apart = o < m->tokoff[t + 1u] &&
                !(r.after_l[m->blob[o] >> 6] >> (m->blob[o] & 63u) & 1u);
    }
    if (k >= AUT_CLS) {
        const int e = entry_ok(a, r.mm, r.x, i, apart ? -2 : -1, v);
        return e > 0 ? ME_TAKE | ME_LIVE : e < 0 ? ME_DEAD : 0u;
    }
    if (!(s & 7u)) s = cst[k] = (uint8_t)(mask_class(a, r.mm, r.x, i, v) | (s & MC_LOOK));
    switch (s & 7u) {
    case MC_DENY:
        return 0;
    case MC_VALID:
        if (!pair_of(a, r.x, t, apart)) return 0;
        break;
    case MC_VALIDC:
        if (pair_of(a, r.x, t, apart)) break;
        /* a pair that is not valid: whether a cut may fall decides (the class's) */
        if (probe_ok(a, r.mm, r.x, t, AUT_CUT) & AUT_CUT) {
            cst[k] = (uint8_t)(MC_PASS | (s & MC_LOOK));
            break;
        }
        cst[k] = (uint8_t)(MC_VALID | (s & MC_LOOK));
        return 0;
    case MC_TOK: {
        int valid = apart ? -2 : -1;
        if (!pair_ok_c(a, r.mm, r.x, t, &valid, v)) return 0;
        break;
    }
    default:
        break;
    }
    if (s & MC_LOOK) goto take;
    if (a->accept[a->nxt[i]]) { /* (end_needed: kept only as verdicts and in a->endk) */
        if (accept_live(a, r.mm, r.x->l, i, (v & 15u) - 1u)) goto take;
        return ME_DEAD;
    }
    if (r.any && k < a->cgrp_at[r.row + 1u] - a->cgrp_at[r.row] && !(a->dig[t] & DG_N)) {
        /* a long row's class: its look-ahead after any token, once for every mask */
        _Atomic uint8_t *const ca = &a->cany[a->cgrp_at[r.row] + k];
        unsigned c = atomic_load_explicit(ca, memory_order_relaxed);
        if (!c) {
            c = (ascii_tok(a->m, t) ||
                 atomic_load_explicit(&a->count[0], memory_order_relaxed) < AUT_ALWAYS_CAP) &&
                        look_any(a, r.mm, i, (v & 15u) - 1u)
                    ? 1u
                    : 2u;
            atomic_store_explicit(ca, (uint8_t)c, memory_order_relaxed);
            if (c == 1u && a->rn_n) /* (mask_rn_in: rn may be cleared of them) */
                atomic_fetch_add_explicit(&a->rn_n[2u * r.row + 1u], 1u, memory_order_relaxed);
        }
        if (c == 1u) {
#ifdef AUT_CHECK_PAIRS
            if (!entry_look(a, r.mm, r.x, i, (v & 15u) - 1u)) abort(); /* (after this l too) */
#endif
            cst[k] |= MC_LOOK;
            goto take;
        }
    }
    const int kept = r.lslot >= 0 ? lk_entry(a, r.lslot, r.row, i, 0) : 0;
    if (kept == LK_LIVE) goto take;
    if (kept == LK_DEAD) {
#ifdef AUT_CHECK_PAIRS
        if (entry_look(a, r.mm, r.x, i, (v & 15u) - 1u)) abort(); /* (a fact, as live ones) */
#endif
        return ME_DEAD;
    }
    if (!entry_look(a, r.mm, r.x, i, (v & 15u) - 1u)) {
        if (r.lslot >= 0) lk_entry(a, r.lslot, r.row, i, LK_DEAD);
        return ME_DEAD;
    }
    if (r.lslot >= 0) lk_entry(a, r.lslot, r.row, i, LK_LIVE);
    if (a->probes) {
        const uint32_t nr = a->nxt[i], wt = atomic_load_explicit(&a->wit[i], memory_order_relaxed),
                       j = a->row[nr] + (wt >> 1) - 1u;
        if (wt && j < a->row[nr + 1u] && look_by_cut(a, r.x, t, j, (v & 15u) - 1u)) {
            cst[k] |= MC_LOOK;
            if (r.lslot >= 0) lk_cls(a, r.lslot)[k / 64u] |= (uint64_t)1 << (k & 63u);
        }
    }
take:
#ifdef AUT_CHECK_PAIRS
    /* what the look-aheads kept (lk_take) answer is a fact: entry_look proves it again */
    if (r.lslot >= 0 && !a->accept[a->nxt[i]]) {
        const unsigned cv = r.drow ? r.drow[a->dig[t]] : 1u;
        if (!cv || !entry_look(a, r.mm, r.x, i, (cv & 15u) - 1u)) abort();
    }
#endif
    if (!short_live(a, r.mm, r.row, r.x->l, i, r.drow ? r.drow[a->dig[t]] : 1u)) return ME_DEAD;
    return ME_TAKE | ME_LIVE;
}

/* What mask_class decides of entry i (token t) alone (MC_DENY where the digit run refuses t),
 * the probes asked where it leaves a cut not known (MC_VALIDC) if resolve: the decision of an
 * entry with no class (AUT_CLS), for its verdict; of a group, not resolved (mask_long asks the
 * probes only where a token of the class is no valid pair after l). */
static unsigned entry_cs(const et_automaton *a, const struct mrun r, uint32_t i, uint32_t t,
                         int resolve)
{
    const unsigned v = r.drow ? r.drow[a->dig[t]] : 1u;
    if (!v) return MC_DENY;
    unsigned s = mask_class(a, r.mm, r.x, i, v);
    if ((s & 7u) == MC_VALIDC && resolve)
        s = (probe_ok(a, r.mm, r.x, t, AUT_CUT) & AUT_CUT ? MC_PASS : MC_VALID) | (s & MC_LOOK);
    return s;
}

/* A canonical mask of entries [beg, end), entry by entry (bits, ids, cap, *w: as mask_put's),
 * noting each one's live + 1 in codes (from beg; an entry with no class: | its entry_cs() << 2)
 * unless codes is NULL: ET_OK or ET_E_FULL. */
ET_ALWAYS_INLINE static inline int mask_row(const et_automaton *a, const struct mrun r,
                                            uint32_t beg, uint32_t end, uint8_t *codes,
                                            uint8_t *bits, uint32_t *ids, size_t cap, size_t *w)
{
    const uint32_t *const tok = a->tok;
    const uint16_t *const cls = a->cls;
    size_t n = *w; /* (a local: bits' stores may alias *w) */
    for (uint32_t i = beg; i < end; i++) {
        const uint32_t t = tok[i];
        const unsigned e = mask_entry(a, r, i, t, cls[i]);
        if (codes)
            codes[i - beg] = (uint8_t)((unsigned)(me_live(e) + 1) |
                                       (cls[i] < AUT_CLS ? 0u : entry_cs(a, r, i, t, 1) << 2));
        if ((e & ME_TAKE) && !mask_put(t, bits, ids, cap, &n)) return ET_E_FULL;
    }
    *w = n;
    return ET_OK;
}

/* By a class's decision (cst), a byte shifted right by the pair set's bit for the entry (1: no
 * valid pair): bit 0, the pair passes; bits 4 and 5, the look-ahead is proven (MC_LOOK); bits 6
 * and 7, mask_entry decides (not decided, MC_TOK, and MC_VALIDC's tokens that are no valid pair:
 * the first asks the probes whether a cut may fall, for its class). (mask_long) */
static const uint8_t MC_CODE[16] = {0xC0, 0x03, 0x00, 0x01, 0xC0, 0x81, 0xC0, 0xC0,
                                    0xF0, 0x33, 0x30, 0x31, 0xF0, 0xB1, 0xF0, 0xF0};

/* What mask_long answers for entry i (token t) of code e (its class's, shifted by the pair
 * set's bit), the look-aheads kept for the key in live (and dead lk_half words on, where
 * lslot >= 0): whether it is taken. */
ET_NOINLINE static int whole_entry(const et_automaton *a, const struct mrun r, uint8_t *cc,
                                   const uint64_t *live, uint32_t i, uint32_t t, unsigned e,
                                   uint8_t *codes)
{
    const uint32_t o = i - a->row[r.row], k = a->cls[i];
    const unsigned pass = e & 1u, look = e >> 4 & 1u;
    unsigned slow = (e >> 6 & 1u) | (unsigned)et_odd(a->odd, t);
    if (!slow && pass && !look) { /* the look-ahead kept, where the key has it */
        int got = -1;
        if (r.lslot >= 0 && live[o >> 6] >> (o & 63u) & 1u) got = 1;
        else if (r.lslot >= 0 && live[a->lk_half + (o >> 6)] >> (o & 63u) & 1u) got = 0;
        /* (or proven after any token: mask_entry's entry_look answers so) */
        else if (!a->accept[a->nxt[i]] && look_anyl(a, i)) got = 1;
        if (got >= 0) {
            if (codes) codes[o] = (uint8_t)(got + 1); /* (live + 1, as mask_long notes) */
            return got;
        }
        slow = 1;
    }
    if (!slow) return (int)(pass & look);
    const unsigned got = mask_entry(a, r, i, t, k);
    if (k < AUT_CLS) cc[k] = MC_CODE[r.cst[k] & 15u]; /* (what it learned) */
    if (codes)
        codes[o] = (uint8_t)((unsigned)(me_live(got) + 1) |
                             (k < AUT_CLS ? 0u : entry_cs(a, r, i, t, 1) << 2));
    return (got & ME_TAKE) != 0;
}

/* Class verdicts. What mask_long answers of an entry from its class's code alone (MC_CODE of
 * the class's decision) is a function of the codes: taken, refused, or asked of whole_entry
 * (the look-ahead where the class does not prove it, odd tokens, classes that ask entry by
 * entry), with a valid pair after l and without. So a slot keeps, for one row and one vector of
 * its classes' codes (cv_cc), those answers as 4 bitsets by token id (word q of each at 4q:
 * CV_VT, CV_VA with a valid pair; CV_IT, CV_IA without), and a mask with the same codes takes a
 * word of 64 tokens at once (mask_cv_in). The vectors of new states' masks repeat, once every
 * "valid pair, else whether a cut may fall" (MC_VALIDC) is asked: the e-mail pattern on o200k
 * met 33 in 963 masks (51 before asking), as many as l's shapes, not l's. cv_take returns the
 * slot for the row's codes cc (the probes asked first, in r.cst and cc), to be made (*make)
 * where it held others, until the mask gives it back (cv_busy); -1 where the codes were not met
 * twice before (cv_seen, as they were before asking, a count in the hash's low bits:
 * mask_rn_in then, which costs by the entries it asks, not the row; JSON's string rows meet
 * most of their vectors once or twice, and a slot made for a second mask cost `[a-z ]{0,40}`'s
 * new states 8-10% more instructions) or where other masks hold every slot. */
#define CV_VT 1u
#define CV_VA 2u
#define CV_IT 4u
#define CV_IA 8u
static inline unsigned cv_act(unsigned c) /* code c: 1 taken, 2 asked, 0 refused */
{
    return (c & 0x51u) == 0x11u ? 1u : (c & 0x41u) ? 2u : 0u;
}

static uint64_t codes_hash(const uint8_t *cc, uint32_t n_cls)
{
    uint64_t h = 0;
    uint32_t k = 0;
    for (uint64_t x; k + 8u <= n_cls; k += 8u) {
        memcpy(&x, cc + k, 8u);
        h = (h ^ x) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    for (; k < n_cls; k++) h = (h ^ cc[k]) * 0xC2B2AE3D27D4EB4Full;
    return h;
}

static int cv_take(const et_automaton *a, const struct mrun r, uint8_t *cc, int *make)
{
    const uint32_t n_cls = a->n_cls[r.row];
    const uint64_t seen[2] = {(uint64_t)r.row << 32 | (n_cls + 1u), codes_hash(cc, n_cls)},
                   kh = key_hash(seen, 2u);
    _Atomic uint32_t *const sp = &a->cv_seen[kh % AUT_SEEN];
    const uint32_t tag = (uint32_t)(kh >> 32) & ~3u,
                   was = atomic_load_explicit(sp, memory_order_relaxed),
                   met = (was & ~3u) == tag ? was & 3u : 0u;
    if (met < 2u) { /* (met once or twice: mask_rn_in) */
        atomic_store_explicit(sp, tag | (met + 1u), memory_order_relaxed);
        return -1;
    }
    /* "valid pair, else whether a cut may fall" asked now (as mask_entry would of the class's
     * first token that is no valid pair; by its group's first, of the same probe shapes), so
     * that the codes repeat */
    const uint32_t *const rep = a->grep + a->grep_at[r.row];
    const uint16_t *const cg = a->cgrp + a->cgrp_at[r.row];
    for (uint32_t k = 0; k < n_cls; k++)
        if ((r.cst[k] & 7u) == MC_VALIDC) {
            const uint32_t t = a->tok[rep[cg[k]]];
            r.cst[k] = (uint8_t)((probe_ok(a, r.mm, r.x, t, AUT_CUT) & AUT_CUT ? MC_PASS
                                                                               : MC_VALID) |
                                 (r.cst[k] & MC_LOOK));
            cc[k] = MC_CODE[r.cst[k] & 15u];
        }
    const uint64_t key[2] = {seen[0], codes_hash(cc, n_cls)};
    int fresh = 0;
    const int slot = slot_take(a->cv_busy, a->cv_used, a->cv_key, 2u, AUT_CV, AUT_CV, key, &fresh);
    if (slot < 0) return -1;
    uint8_t *const sc = a->cv_cc + (size_t)slot * a->cv_ncls;
    *make = fresh || memcmp(sc, cc, n_cls); /* (a hash's: made again) */
    if (*make) {
        memcpy(sc, cc, n_cls);
        memcpy(a->cv_key + 2u * (unsigned)slot, key, sizeof key);
    }
    return slot;
}

#define MW_POPCOUNT(x) (hw ? (unsigned)__builtin_popcountll(x) : et_popcount64(x))
/* mask_long's mask of a row with a bitset (row_bits) into bits, by 64 token ids at a time: the
 * tokens of the word go in, but those mask_long would refuse. It asks whole_entry of the
 * tokens that are no valid pair after l (tinv) or odd, and of those whose class does not take
 * a valid pair outright; most of a long row's entries are neither. Bit for bit mask_long's,
 * and where codes is not NULL (the verdicts' stage 1) it notes what mask_long's blocks note.
 * (hw: the CPU has POPCNT, asked at run time: see mask_whole) */
ET_ALWAYS_INLINE static inline int mask_rn_in(const et_automaton *a, const struct mrun r,
                                                 uint8_t *cc, const uint64_t *live, int lean,
                                                 uint8_t *codes, uint8_t *bits, size_t *n, int hw)
{
    const size_t words = ((size_t)a->n_vocab + 63u) / 64u, nbytes = ((size_t)a->n_vocab + 7u) / 8u;
    const uint64_t *const rb = a->rb + (size_t)(a->rb_at[r.row] - 1u) * words, *const odd = a->odd,
                   *const tinv = r.tinv;
    _Atomic uint64_t *const rn = a->rn;
    const _Atomic uint8_t *const ca = a->cany + a->cgrp_at[r.row];
    const uint32_t *const tok = a->tok;
    const uint16_t *const cls = a->cls;
    uint32_t i0 = a->row[r.row];
    if (lean) { /* where rn holds a quarter of the row or less, or cany proved 32 classes
                 * since it was counted (a pass clears them; [a-z ]{0,40}'s classes take
                 * MC_LOOK from the keys' look-aheads, ask no cany and keep their rn: a pass
                 * over all of it costs more than the loop of every entry) */
        const uint32_t n_row = a->row[r.row + 1u] - i0,
                       counted = atomic_load_explicit(&a->rn_n[2u * r.row], memory_order_relaxed);
        lean = counted <= n_row / 4u ||
               atomic_load_explicit(&a->rn_n[2u * r.row + 1u], memory_order_relaxed) >= 32u;
        if (lean) atomic_store_explicit(&a->rn_n[2u * r.row + 1u], 0u, memory_order_relaxed);
    }
    uint32_t left = 0; /* (lean: rn's entries of the row after this mask) */
    size_t taken = 0;  /* (the mask's tokens: its words' bits) */
    for (size_t q = 0; q < words; q++) {
        const uint64_t R = rb[q];
        if (!R) continue; /* (bits: cleared by et_automaton_allowed) */
        uint64_t out = 0, done = 0; /* (done: by the word's entries, j-th at bit j) */
        const uint64_t inv = tinv[q];
        const uint64_t od = odd ? odd[q] : 0u;
        const uint32_t nj = (uint32_t)MW_POPCOUNT(R);
        for (uint64_t x = (inv | od) & R; x; x &= x - 1u) {
            const uint64_t b = x & (0 - x);
            const uint32_t j = (uint32_t)MW_POPCOUNT(R & (b - 1u)), i = i0 + j;
            const unsigned c = cc[cls[i]], e = inv & b ? c >> 1 : c;
            done |= (uint64_t)1 << j;
            if (!(e & 0x40u) && !(od & b) && (!(e & 1u) || (e & 0x10u))) { /* (none to ask) */
                if (!(e & 1u)) out |= b;
            } else if (!whole_entry(a, r, cc, live, i, tok[i], e, codes)) {
                out |= b;
            }
        }
        if (!lean) { /* (lean: rn's entries, below) */
            for (uint32_t j = 0; j < nj; j++) {
                const unsigned c = cc[cls[i0 + j]];
                if ((c & 0x51u) == 0x11u || (done >> j & 1u)) continue; /* (a valid pair taken) */
                if (!(c & 0x41u) || !whole_entry(a, r, cc, live, i0 + j, tok[i0 + j], c, codes))
                    out |= (uint64_t)1 << (tok[i0 + j] & 63u); /* (no pass, none to ask) */
            }
        }
        store_word(bits, nbytes, q, R & ~out);
        taken += (size_t)MW_POPCOUNT(R & ~out);
        i0 += nj;
    }
    if (lean) { /* only the entries whose class may lack MC_LOOK (rn), by rn's words (its
                 * entries are the row's order): those the loop above did not answer (no valid
                 * pair, odd) go out of bits where refused */
        const uint32_t r0 = a->row[r.row], r1 = a->row[r.row + 1u];
        for (uint32_t w = r0 >> 6; w <= (r1 - 1u) >> 6; w++) {
            uint64_t in_rn = atomic_load_explicit(&rn[w], memory_order_relaxed), proven = 0;
            if (w == r0 >> 6) in_rn &= ~0ull << (r0 & 63u);
            if (w == (r1 - 1u) >> 6 && (r1 & 63u)) in_rn &= ~0ull >> (64u - (r1 & 63u));
            for (uint64_t x = in_rn; x; x &= x - 1u) {
                const uint32_t j = (uint32_t)et_ctz64(x), i = w * 64u + j, t = tok[i],
                               k = cls[i];
                const uint64_t tb = (uint64_t)1 << (t & 63u);
                if ((tinv[t >> 6] | (odd ? odd[t >> 6] : 0u)) & tb) continue; /* (answered) */
                const unsigned c = cc[k];
                if (k < AUT_CLS && atomic_load_explicit(&ca[k], memory_order_relaxed) == 1u)
                    proven |= (uint64_t)1 << j;
                if ((c & 0x51u) == 0x11u) continue;
                if (!(c & 0x41u) || !whole_entry(a, r, cc, live, i, t, c, codes)) {
                    bits[t >> 3] &= (uint8_t)~(1u << (t & 7u));
                    taken--;
                }
            }
            if (proven)
                atomic_fetch_and_explicit(&rn[w], ~proven, memory_order_relaxed);
            left += (uint32_t)MW_POPCOUNT(in_rn & ~proven);
        }
        atomic_store_explicit(&a->rn_n[2u * r.row], left, memory_order_relaxed);
    }
    *n = taken;
    return ET_OK;
}

/* mask_long's mask of a row with a bitset (row_bits) into bits, by 64 token ids at a time: the
 * class verdicts of slot (made first where make: a word from the word's entries, in order)
 * answer each token with the pair set's bit for it (tinv), and whole_entry the tokens they ask.
 * Bit for bit mask_long's; where codes is not NULL (the verdicts' stage 1) it notes what
 * mask_long's blocks note. Gives the slot back. (hw: as mask_rn_in's) */
ET_ALWAYS_INLINE static inline int mask_cv_in(const et_automaton *a, const struct mrun r,
                                              uint8_t *cc, const uint64_t *live, int slot,
                                              int make, uint8_t *codes, uint8_t *bits, size_t *n,
                                              int hw)
{
    const size_t words = a->vk_words, nbytes = ((size_t)a->n_vocab + 7u) / 8u;
    const uint64_t *const rb = a->rb + (size_t)(a->rb_at[r.row] - 1u) * words, *const odd = a->odd,
                   *const tinv = r.tinv;
    uint64_t *const cv = a->cv + (size_t)slot * 4u * words;
    const uint32_t *const tok = a->tok;
    const uint16_t *const cls = a->cls;
    uint32_t i0 = a->row[r.row];
    uint8_t nib[256]; /* (make: each code's CV_ bits) */
    for (unsigned c = 0; make && c < 256u; c++)
        nib[c] = (uint8_t)((cv_act(c) == 1u ? CV_VT : cv_act(c) == 2u ? CV_VA : 0u) |
                           (cv_act(c >> 1) == 1u ? CV_IT : cv_act(c >> 1) == 2u ? CV_IA : 0u));
    size_t taken = 0; /* (the mask's tokens: its words' bits) */
    for (size_t q = 0; q < words; q++) {
        const uint64_t R = rb[q];
        if (!R) continue; /* (bits: cleared by et_automaton_allowed; cv: not read) */
        uint64_t *const v = cv + 4u * q;
        if (make) { /* the slot's word, from its entries' codes (bits by R's, in order) */
            uint64_t w[4] = {0, 0, 0, 0};
            uint32_t i = i0;
            for (uint64_t x = R; x; x &= x - 1u, i++) {
                const uint64_t b = x & (0 - x);
                const unsigned e = nib[cc[cls[i]]]; /* (cc[AUT_CLS]: no class, asked) */
                w[0] |= (0 - (uint64_t)(e & CV_VT)) & b;
                w[2] |= (0 - (uint64_t)(e >> 2 & 1u)) & b;
                if (e & (CV_VA | CV_IA)) { /* (few: the rest are taken or refused) */
                    w[1] |= (0 - (uint64_t)(e >> 1 & 1u)) & b;
                    w[3] |= (0 - (uint64_t)(e >> 3 & 1u)) & b;
                }
            }
            memcpy(v, w, sizeof w);
        }
        const uint64_t inv = tinv[q], od = odd ? odd[q] & R : 0u;
        uint64_t take = ((v[0] & ~inv) | (v[2] & inv)) & ~od;
        for (uint64_t x = (v[1] & ~inv) | (v[3] & inv) | od; x; x &= x - 1u) {
            const uint64_t b = x & (0 - x);
            const uint32_t i = i0 + (uint32_t)MW_POPCOUNT(R & (b - 1u));
            const unsigned c = cc[cls[i]]; /* (as whole_entry left it) */
            if (whole_entry(a, r, cc, live, i, tok[i], inv & b ? c >> 1 : c, codes)) take |= b;
        }
        store_word(bits, nbytes, q, take);
        taken += (size_t)MW_POPCOUNT(take);
        i0 += (uint32_t)MW_POPCOUNT(R);
    }
    atomic_store_explicit(&a->cv_busy[slot], 0, memory_order_release);
    *n = taken;
    return ET_OK;
}

/* mask_long's mask of a row with a bitset: by the class verdicts for its codes where they were
 * met before (cv_take), else by rn (new states of the e-mail pattern: 1.4x / 1.5x fewer
 * instructions on cl100k / o200k; by rn most go to the tokens that are no valid pair). */
ET_ALWAYS_INLINE static inline int mask_whole_in(const et_automaton *a, const struct mrun r,
                                                 uint8_t *cc, const uint64_t *live, int lean,
                                                 uint8_t *codes, uint8_t *bits, size_t *n, int hw)
{
    /* codes: 0 (live not known) where no entry is asked, whole_entry notes the rest. (Where
     * mask_long's blocks note 2, the class's MC_LOOK: vk_code reads the classes' decisions at
     * the mask's end, which keep it, and answers alike.) */
    if (codes) memset(codes, 0, a->row[r.row + 1u] - a->row[r.row]);
    int make = 0;
    const int slot = a->cv ? cv_take(a, r, cc, &make) : -1;
    const int rc = slot >= 0 ? mask_cv_in(a, r, cc, live, slot, make, codes, bits, n, hw)
                             : mask_rn_in(a, r, cc, live, lean, codes, bits, n, hw);
#ifdef AUT_CHECK_PAIRS
    /* each bit is mask_entry's */
    for (uint32_t i = a->row[r.row]; i < a->row[r.row + 1u]; i++)
        if (((mask_entry(a, r, i, a->tok[i], a->cls[i]) & ME_TAKE) != 0) !=
            (int)(bits[a->tok[i] >> 3] >> (a->tok[i] & 7u) & 1u))
            abort();
#endif
    return rc;
}
#undef MW_POPCOUNT

#ifdef AUT_POPCNT_ASKED
__attribute__((target("popcnt"))) static int mask_whole_hw(const et_automaton *a,
                                                           const struct mrun r, uint8_t *cc,
                                                           const uint64_t *live, int lean,
                                                           uint8_t *codes, uint8_t *bits,
                                                           size_t *n)
{
    return mask_whole_in(a, r, cc, live, lean, codes, bits, n, 1);
}
#endif

/* mask_whole_in, with POPCNT where the CPU has it and the build may not assume it (~12
 * instructions a count without: two a word, one an entry asked). */
static int mask_whole(const et_automaton *a, const struct mrun r, uint8_t *cc,
                      const uint64_t *live, int lean, uint8_t *codes, uint8_t *bits, size_t *n)
{
#ifdef AUT_POPCNT_ASKED
    if (__builtin_cpu_supports("popcnt"))
        return mask_whole_hw(a, r, cc, live, lean, codes, bits, n);
#endif
    return mask_whole_in(a, r, cc, live, lean, codes, bits, n, 0);
}

#define AUT_NO_PAIRS (-1) /* mask_long: the pair set for l could not be made (mask_row's) */
/* A canonical mask of a long row, into bits (and ids, as mask_put's, going on past cap:
 * ET_E_FULL), noting in codes what mask_row notes unless codes is NULL (the verdicts' stage 1:
 * see vk_code). Every group of classes is decided first (entry_cs of its first entry; "valid
 * pair, else whether a cut may fall" left so: mask_entry asks the probes only of a class with a
 * token that is no valid pair after l, cv_take of them all). Where every class passes with its
 * look-ahead proven, the row is the mask. Else the pair set for l is made (AUT_NO_PAIRS where
 * it cannot be: mask_row's then, cst as at first), and by token id where tinv_at is, then the
 * entries go by blocks of 64: where its class's decision, the pair set's bit and the
 * look-ahead kept for the key (lslot) answer an entry, a word of the block does; mask_entry
 * answers the others (classes that ask entry by entry, odd tokens, look-aheads not known); a
 * row with a bitset goes by mask_whole instead, where only the bitset is asked for. Bit for bit
 * mask_row's. */
static int mask_long(const et_automaton *a, struct mrun r, uint8_t *codes, uint8_t *bits,
                     uint32_t *ids, size_t cap, size_t *n)
{
    uint8_t *const cst = r.cst;
    const uint32_t beg = a->row[r.row], end = a->row[r.row + 1u], n_cls = a->n_cls[r.row];
    const uint32_t *const rep = a->grep + a->grep_at[r.row];
    const uint16_t *const cg = a->cgrp + a->cgrp_at[r.row];
    uint8_t *const cc = r.pi->cc; /* (first each group's decision: groups <= classes) */
    for (uint32_t g = 0; g < a->grep_at[r.row + 1u] - a->grep_at[r.row]; g++)
        cc[g] = (uint8_t)entry_cs(a, r, rep[g], a->tok[rep[g]], 0);
    const _Atomic uint8_t *const ca = a->cany + a->cgrp_at[r.row]; /* (look_any's) */
    int lean = a->rn != NULL; /* (mask_whole: every class proven after any token decides PASS,
                               * VALID or VALIDC) */
    for (uint32_t k = 0; k < n_cls; k++) {
        const int any = atomic_load_explicit(&ca[k], memory_order_relaxed) == 1u;
        const unsigned d = cc[cg[k]] & 7u;
        if (any && d != MC_PASS && d != MC_VALID && d != MC_VALIDC) lean = 0;
        cst[k] = (uint8_t)(cc[cg[k]] | (cst[k] & MC_LOOK) | (any ? MC_LOOK : 0u));
    }
    /* every class passes, its look-ahead proven (a row of digits after a group of three): the
     * row, every entry, with no pair test (odd tokens too: mask_entry takes them at once) */
    unsigned all = n_cls < AUT_CLS; /* (else entries with no class: AUT_CLS, asked one by one) */
    for (uint32_t k = 0; k < n_cls; k++) {
        cc[k] = MC_CODE[cst[k] & 15u];
        all &= cst[k] == (MC_PASS | MC_LOOK);
    }
    cc[AUT_CLS] = 0xC0u;
    /* a row with a bitset (row_bits): it goes in whole, and what the mask refuses goes out
     * (most of such a row is taken) */
    const int whole = bits && a->rb_at && a->rb_at[r.row];
    if (all) {
#ifdef AUT_CHECK_PAIRS
        for (uint32_t i = beg; i < end; i++)
            if (!(mask_entry(a, r, i, a->tok[i], a->cls[i]) & ME_TAKE)) abort();
#endif
        if (codes) memset(codes, 2, end - beg); /* (live + 1: proven, as the blocks note) */
        return mask_plain(a, r.row, ids, cap, bits, ((size_t)a->n_vocab + 7u) / 8u, n);
    }
    /* the pair set for l (and by token id: tinv), which that row does without */
    struct pinv *const pi = r.x->pi;
    if (!pi->made) pi->made = et_pairset_invalid(pi->ps, r.x->l, pi->bits) ? 1 : -1;
    if (pi->made < 0) return AUT_NO_PAIRS;
    if (r.tinv_at) {
        et_pairset_by_token(pi->ps, r.x->l, r.tinv_at); /* (as pi's: made) */
        r.tinv = r.tinv_at;
    }
    const uint32_t *const tok = a->tok, *const pos = pi->pos;
    const uint16_t *const cls = a->cls;
    const uint64_t *const inv = pi->bits, *const odd = a->odd, *const tinv = r.tinv;
    static const uint64_t none[1] = {0};
    const uint64_t *const live = r.lslot >= 0 ? a->lk + (size_t)r.lslot * a->lk_words : none;
    if (whole && tinv && !ids) return mask_whole(a, r, cc, live, lean, codes, bits, n);
    if (whole) row_copy(a, r.row, bits, ((size_t)a->n_vocab + 7u) / 8u);
    const uint64_t *const dead = r.lslot >= 0 ? live + a->lk_half : none;
    const size_t step = r.lslot >= 0; /* (none: one zero word for every block) */
    const uint64_t ones = 0x0101010101010101ull, gather = 0x0102040810204080ull;
    size_t w = 0;
    int rc = ET_OK;
    for (uint32_t o = 0; o < end - beg; o += 64u) { /* blocks of 64 entries, as lk's words */
        const uint32_t nb = end - beg - o < 64u ? end - beg - o : 64u, b0 = beg + o;
        uint8_t e[64];
        if (tinv) /* (by token id: the row's order) */
            for (uint32_t j = 0; j < nb; j++) {
                const uint32_t t = tok[b0 + j];
                e[j] = (uint8_t)(cc[cls[b0 + j]] >> (tinv[t >> 6] >> (t & 63u) & 1u));
            }
        else
            for (uint32_t j = 0; j < nb; j++) {
                const uint32_t p = pos[tok[b0 + j]];
                e[j] = (uint8_t)(cc[cls[b0 + j]] >> (inv[p >> 6] >> (p & 63u) & 1u));
            }
        memset(e + nb, 0, 64u - nb);
        uint64_t pass = 0, look = 0, slow = 0; /* the bits 0, 4 and 6 of e, entry j at bit j */
        for (unsigned q = 0; q < 8u; q++) {
            uint64_t x = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(&x, e + 8u * q, 8u);
#else
            for (unsigned b = 8u; b--;) x = x << 8 | e[8u * q + b];
#endif
            pass |= ((x & ones) * gather) >> 56 << 8u * q;
            look |= ((x >> 4 & ones) * gather) >> 56 << 8u * q;
            slow |= ((x >> 6 & ones) * gather) >> 56 << 8u * q;
        }
        if (odd)
            for (uint32_t j = 0; j < nb; j++) slow |= (uint64_t)et_odd(odd, tok[b0 + j]) << j;
        const uint64_t lv = look | live[(o >> 6) * step];
        slow |= pass & ~lv & ~dead[(o >> 6) * step];
        uint64_t take = pass & lv & ~slow;
#ifdef AUT_CHECK_PAIRS
        for (uint32_t j = 0; j < nb; j++) {
            const uint32_t i = b0 + j, t = tok[i];
            if (et_odd(odd, t)) continue;
            if ((int)!(inv[pos[t] >> 6] >> (pos[t] & 63u) & 1u) != et_valid_pair(a->m, r.x->l, t) ||
                (tinv && (tinv[t >> 6] >> (t & 63u) & 1u) != (inv[pos[t] >> 6] >> (pos[t] & 63u) & 1u)))
                abort();
            if (slow >> j & 1u || a->accept[a->nxt[i]]) continue;
            const unsigned cv = r.drow ? r.drow[a->dig[t]] : 1u;
            /* what the look-aheads kept (lk_take) answer is a fact, live or not: entry_look
             * proves it again */
            if (take >> j & 1u && !(look >> j & 1u) &&
                (!cv || !entry_look(a, r.mm, r.x, i, (cv & 15u) - 1u)))
                abort();
            if (pass >> j & 1u && !(lv >> j & 1u) && cv &&
                entry_look(a, r.mm, r.x, i, (cv & 15u) - 1u))
                abort();
        }
#endif
        if (codes) /* (live + 1: proven where taken, not live where the pair passes, else not
                    * known) */
            for (uint32_t j = 0; j < nb; j++)
                codes[o + j] = (uint8_t)(take >> j & 1u ? 2u : (unsigned)(pass >> j & 1u));
        for (; slow; slow &= slow - 1u) {
            const uint32_t j = (uint32_t)et_ctz64(slow), i = b0 + j;
            const unsigned got = mask_entry(a, r, i, tok[i], cls[i]);
            take |= (uint64_t)(got & ME_TAKE) << j;
            if (codes)
                codes[o + j] = (uint8_t)((unsigned)(me_live(got) + 1) |
                                         (cls[i] < AUT_CLS ? 0u
                                                           : entry_cs(a, r, i, tok[i], 1) << 2));
            if (cls[i] < AUT_CLS) cc[cls[i]] = MC_CODE[cst[cls[i]] & 15u]; /* (what it learned) */
        }
        if (ids)
            for (uint64_t q = take; q; q &= q - 1u, w++) {
                if (w < cap) ids[w] = tok[b0 + et_ctz64(q)];
                else rc = ET_E_FULL;
            }
        else
            w += et_popcount64(take);
        if (whole)
            for (uint64_t out = ~take & (~0ull >> (64u - nb)); out; out &= out - 1u) {
                const uint32_t t = tok[b0 + et_ctz64(out)];
                bits[t >> 3] &= (uint8_t)~(1u << (t & 7u));
            }
        else if (bits)
            for (; take; take &= take - 1u) {
                const uint32_t t = tok[b0 + et_ctz64(take)];
                bits[t >> 3] |= (uint8_t)(1u << (t & 7u));
            }
    }
    *n = w;
    return rc;
}

/* Verdicts kept from mask to mask. What mask_entry answers for entry i of a long row depends
 * on l only through (l's shape, the probes' shapes of l2 and l: the key of the classes'
 * decisions and of the look-ahead, with the row and the digit run; see lk_take) and on
 * whether (l, t) is a valid pair. So a slot keeps, for one key, a code per entry: VT where a
 * valid pair is taken, VS where it asks mask_entry again; IT and IS the same where the pair is
 * not valid; refused where neither (cs: the entry's class's decision after mask_entry, or its
 * own (entry_cs) where it has no class; plain: it is no odd token, whose pairs the pair set does
 * not answer; live: as mask_entry's). A key's first mask only leaves its hash in vk_seen
 * (most keys of new states are seen once, and a slot given to one would give up another's
 * verdicts); the next takes a slot, asks mask_entry of every entry and notes what it learned
 * (a byte an entry, and the classes' decisions it ended with); the next makes their codes
 * 4 bitsets by token id, and from then on a mask takes a word of 64 tokens at once with the pair
 * set's answers for l by token id (tinv), asks mask_entry only of the tokens marked so, and
 * notes what it learns of them. */
#define VK_VT 1u
#define VK_VS 2u
#define VK_IT 4u
#define VK_IS 8u
static inline unsigned vk_code(unsigned cs, int plain, int live)
{
    static const uint8_t tab[8][2] = { /* by cs & 7 (mask_class's), and whether live is known */
        {VK_VS | VK_IS, VK_VS | VK_IS},         /* (not decided) */
        {VK_VS | VK_IS, VK_VT | VK_IT},         /* MC_PASS */
        {0, 0},                                 /* MC_DENY */
        {VK_VS, VK_VT},                         /* MC_VALID: no cut, an invalid pair refused */
        {VK_VS | VK_IS, VK_VS | VK_IS},         /* MC_TOK: l's bytes decide (splits_char) */
        {VK_VS | VK_IS, VK_VT | VK_IS},         /* MC_VALIDC: whether a cut may fall, not known */
        {VK_VS | VK_IS, VK_VS | VK_IS}, {VK_VS | VK_IS, VK_VS | VK_IS}};
    if (!plain) return VK_VS | VK_IS;
    if (live == 0) return 0; /* not live for the key, whatever l */
    return tab[cs & 7u][(cs & MC_LOOK) || live == 1];
}

/* Notes code for token t in slot words v (4 a word of tokens: VT, VS, IT, IS). */
static inline void vk_note(uint64_t *v, uint32_t t, unsigned code)
{
    uint64_t *const q = v + 4u * (t >> 6);
    const uint64_t b = (uint64_t)1 << (t & 63u);
    for (unsigned j = 0; j < 4u; j++) q[j] &= ~b;
    for (; code; code &= code - 1u) q[et_ctz64(code)] |= b;
}

/* Whether a canonical state of a long row is within a run of white space that its last two
 * tokens split where they are no valid pair (l2 ends in white space and l is all white space,
 * end_needed): only a cut can lie between them, and its place moves with what follows l (a
 * run is cut before its last character only where a non-space follows). There the strict
 * pair test counts only texts cut between l2 and l (pctx_from, as short rows' always do:
 * after "   " " ", " frames" would make "    " " frames"). */
static int ws_run(const et_automaton *a, const struct cstate *c)
{
    return a->row[c->row + 1u] - a->row[c->row] >= AUT_LONG && c->l2 < a->n_vocab &&
           c->l < a->n_vocab && end_needed(a, c->l2, c->l) && !pair_valid(a, c->l2, c->l, 0);
}

static int mask_state(const et_automaton *a, const struct cstate *c0, int strict, uint32_t *ids,
                      size_t cap, uint8_t *bits, size_t nbytes, size_t *n);

/* Whether state c's strict mask (mask_state) allows nothing while the text may not end there:
 * then its mask is the one that counts every text. */
static int strict_empty(const et_automaton *a, const struct cstate *c)
{
    size_t n = 0;
    return !(a->accept[c->row] && end_ok(a, c->l2, c->l)) &&
           mask_state(a, c, 1, NULL, 0, NULL, 0, &n) == ET_OK && !n;
}

/* A canonical state's mask is its strict one: the pair test counts only texts that keep l
 * whole (pctx_whole) and, in runs of white space (ws_run), cut between l2 and l. Look-aheads
 * (kept by shapes, and proven after any token before) count every text, so where the strict
 * test allows nothing and the text may not end there, the mask counts every text (no walk
 * stuck where a look-ahead let it in); next() asks the same. */
int et_automaton_allowed(const et_automaton *a, int64_t state, uint32_t *ids, size_t cap,
                         uint8_t *bits, size_t nbytes, size_t *n)
{
    struct cstate c;
    if (!a || !n || (!ids && cap) || (bits && nbytes < ((size_t)a->n_vocab + 7u) / 8u))
        return ET_E_ARG;
    *n = 0;
    if (!split_state(a, state, &c)) return ET_E_ARG;
    if (!(a->flags & ET_AUT_CANONICAL)) return mask_plain(a, c.row, ids, cap, bits, nbytes, n);
    const int rc = mask_state(a, &c, 1, ids, cap, bits, nbytes, n);
    if (rc != ET_OK || *n || (a->accept[c.row] && end_ok(a, c.l2, c.l))) return rc;
    return mask_state(a, &c, 0, ids, cap, bits, nbytes, n); /* (strict_empty) */
}

int et_bitset_ids(const uint8_t *bits, size_t nbytes, uint32_t *ids, size_t cap, size_t *n)
{
    if (!n || (!bits && nbytes) || (!ids && cap) || nbytes > ((size_t)1 << 29)) return ET_E_ARG;
    size_t w = 0;
    for (size_t q = 0; q < nbytes; q++) {
        if (!bits[q]) {
            uint64_t x; /* (a word of zeros skipped: the order of its bytes does not matter) */
            while (q + 8u <= nbytes && (memcpy(&x, bits + q, 8u), !x)) q += 8u;
            if (q >= nbytes || !bits[q]) continue;
        }
        for (unsigned b = bits[q]; b; b &= b - 1u) {
            if (w < cap) ids[w] = (uint32_t)(q * 8u + et_ctz64(b));
            w++;
        }
    }
    *n = w;
    return w > cap ? ET_E_FULL : ET_OK;
}

/* A mask's classes' decisions at first (cst: see mask_state): none, but MC_LOOK for the classes
 * whose look-ahead is kept for the key (lslot, or -1). */
static void cst_init(const et_automaton *a, uint32_t row, int lslot, uint8_t *cst)
{
    memset(cst, 0, a->n_cls[row]);
    cst[AUT_CLS] = 0;
    if (lslot < 0) return;
    const uint64_t *lkc = lk_cls(a, lslot);
    for (uint32_t q = 0; q < ((uint32_t)a->n_cls[row] + 63u) / 64u; q++)
        for (uint64_t b = lkc[q]; b; b &= b - 1u) cst[q * 64u + (uint32_t)et_ctz64(b)] = MC_LOOK;
}

/* The tokens that are no valid pair after l, by token id (et_pairset_by_token), for the masks
 * of verdict slot vslot (held by the mask): kept with the slot while they are for the same l, so
 * that a state asked again does not make them again (~75,000 instructions on cl100k, a fifth
 * of a made JSON mask's); NULL where they cannot be made. */
static const uint64_t *vk_tinv(const et_automaton *a, int vslot, const struct et_pairset *ps,
                               uint32_t l)
{
    uint64_t *const t = a->vk_tinv + (size_t)vslot * a->vk_words;
    if (a->vk_tl[vslot] == l + 1u) return t;
    a->vk_tl[vslot] = 0;
    if (!et_pairset_by_token(ps, l, t)) return NULL;
    a->vk_tl[vslot] = l + 1u;
    return t;
}

/* et_automaton_allowed's canonical mask of state c0, strict or counting every text (short
 * rows: every text cut between l2 and l, pctx_from). */
static int mask_state(const et_automaton *a, const struct cstate *c0, int strict, uint32_t *ids,
                      size_t cap, uint8_t *bits, size_t nbytes, size_t *n)
{
    const struct cstate c = *c0;
    if (bits) memset(bits, 0, nbytes);
    struct memo mm;
    uint64_t looks[1u << AUT_LOOK_BITS];
    if (!a->probes) memset(mm.key, 0, sizeof mm.key);
    mm.look = NULL;
    mm.look_set = 0;
    const uint32_t n_row = a->row[c.row + 1u] - a->row[c.row];
    if (a->probes && n_row >= 64u) { /* a slot for every 8 tokens (small rows: none) */
        mm.look = looks;
        for (mm.look_bits = 3; mm.look_bits < AUT_LOOK_BITS && n_row >> mm.look_bits > 8u;)
            mm.look_bits++;
    }
    /* long rows: the first bytes after which l's bytes may go on in a token (l t can be a
     * token only if t begins with one) */
    uint64_t after_l[4] = {~0ull, ~0ull, ~0ull, ~0ull};
    const et_model *m = a->m;
    struct pctx x;
    uint32_t apart_memo[AUT_APART];
    const uint8_t *drow = NULL; /* dstep() after the state's run, where it may not be 1 */
    /* long rows: where the pretokenizer cuts before l whatever follows, the probes as if l
     * began the text (fewer keys: they answer alike, see cut_before) */
    pctx_init(a, &x,
              c.l2 != ET_NONE && c.l != ET_NONE && n_row >= AUT_LONG &&
                      cut_before_kept(a, c.l2, c.l)
                  ? ET_NONE
                  : c.l2,
              c.l);
    if (n_row < AUT_LONG || (strict && ws_run(a, &c))) pctx_from(a, &x);
    if (strict) pctx_whole(a, &x);
    pctx_look(a, &x);
    if (c.d || a->row_dig[c.row]) drow = a->dtab + (size_t)c.d * 256u;
    /* the pair set, where making it costs less than the row's pair tests could: each of its
     * ranges about as much as two pair tests (with its 25 KB clear; most tests stop at l's
     * first bytes: after_l). o200k float after "e": 963 ranges, 1,112 entries: tests take half
     * the instructions */
    int slot = -1; /* the scratch bitset taken for pi */
    struct pinv pi = {a->ps, a->ps ? et_pairset_pos(a->ps) : NULL, NULL, NULL, 0};
    if (a->inv && c.l != ET_NONE && n_row >= AUT_LONG &&
        2u * et_pairset_cost(a->ps, c.l) <= n_row) {
        for (unsigned k = 0; k < AUT_SCRATCH && slot < 0; k++)
            if (!atomic_exchange_explicit(&a->busy[k], 1, memory_order_acquire)) slot = (int)k;
        if (slot >= 0) {
            pi.bits = a->inv + (size_t)slot * et_pairset_words(a->ps);
            pi.cc = a->inv_cc + (size_t)slot * (AUT_CLS + 1u);
            x.pi = &pi;
        }
    }
    if (!x.pi && c.l != ET_NONE && n_row >= AUT_LONG && m->tnode[c.l] < m->n_cells) {
        memset(after_l, 0, sizeof after_l);
        memset(apart_memo, 0xFF, sizeof apart_memo);
        x.apart = apart_memo;
        for (unsigned b = 0; b < 256u; b++)
            if (et_trie_next(m, m->tnode[c.l], (uint8_t)b) != ET_NONE)
                after_l[b >> 6] |= (uint64_t)1 << (b & 63u);
    }
    size_t w = 0;
    uint8_t cst[AUT_CLS + 1u]; /* per class of the row (classes()): 0, or mask_class's | MC_LOOK;
                                * [AUT_CLS] (no class): 0 */
    /* the look-aheads kept for (row, d, l's shape or none) (lk_take): the entries' (lk) and the
     * classes' (lkc, put in cst) */
    int lslot = -1;
    if (a->lk && n_row >= AUT_LONG)
        lslot = lk_take(a, (uint64_t)c.row << 32 | c.d,
                        c.l == ET_NONE ? ~0ull : (uint64_t)a->shape[(size_t)4u * c.l] + 1u,
                        n_row, a->n_cls[c.row]);
    cst_init(a, c.row, lslot, cst);
    /* long rows with the pair set for l: the verdicts kept for the key (vk_code; vstage: 1 this
     * mask notes them, 2 it uses them), and the tokens that are no valid pair after l by token
     * id (tinv) */
    int vslot = -1, vstage = 0, vfresh = 0;
    uint64_t *vk = NULL;
    const uint64_t *tinv = NULL;
    uint8_t *codes = NULL;
    const size_t vw = a->vk_words;
    const uint64_t vkey[3] = {(uint64_t)c.row << 32 | (uint64_t)(x.from != 0) << 31 |
                                  (uint64_t)(x.whole != 0) << 30 | c.d,
                              c.l == ET_NONE ? ~0ull
                                             : ((uint64_t)a->shape[(size_t)4u * c.l] + 1u) |
                                                   (uint64_t)ends_open(m, c.l) << 62, /* (its
                                                   classes' decisions: mask_class) */
                              c.l == ET_NONE ? 0u : (uint64_t)x.s2 << 32 | x.sl};
    int seen = 0;
    if (a->vk && n_row >= vk_row(a->n_vocab) &&
        (c.l == ET_NONE || x.pi)) { /* (no l: no pair to test) */
        const uint64_t h = key_hash(vkey, 3u);
        const uint32_t tag = (uint32_t)(h >> 32) | 1u;
        _Atomic uint32_t *const sp = &a->vk_seen[h % AUT_SEEN];
        seen = atomic_load_explicit(sp, memory_order_relaxed) == tag;
        if (!seen) atomic_store_explicit(sp, tag, memory_order_relaxed);
    }
    if (seen && (vslot = slot_take(a->vk_busy, a->vk_used, a->vk_key, 3u, AUT_VK, AUT_VK, vkey,
                                   &vfresh)) >= 0) {
        vk = a->vk + (size_t)vslot * 4u * vw;
        codes = a->vk_codes + (size_t)vslot * a->vk_longest;
        if (vfresh) {
            memcpy(a->vk_key + 3u * (unsigned)vslot, vkey, sizeof vkey);
            a->vk_stage[vslot] = 0;
        }
        if (!a->vk_stage[vslot]) {
            vstage = 1; /* (noted below) */
        } else if (c.l == ET_NONE || /* (the tokens that are no valid pair after l, by id) */
                   (tinv = vk_tinv(a, vslot, pi.ps, c.l)) != NULL) {
            vstage = 2;
            if (a->vk_stage[vslot] == 1) { /* the words, from the codes */
                memset(vk, 0, 4u * vw * sizeof *vk);
                const uint8_t *const vc = a->vk_cst + (size_t)vslot * AUT_CLS;
                for (uint32_t i = a->row[c.row]; i < a->row[c.row + 1u]; i++) {
                    const uint32_t t = a->tok[i], k = a->cls[i];
                    uint64_t *const q = vk + 4u * (t >> 6);
                    const uint64_t b = (uint64_t)1 << (t & 63u);
                    const unsigned e = codes[i - a->row[c.row]];
                    for (unsigned code = vk_code(k < AUT_CLS ? vc[k] : e >> 2,
                                                 !et_odd(a->odd, t), (int)(e & 3u) - 1);
                         code; code &= code - 1u)
                        q[et_ctz64(code)] |= b;
                }
                a->vk_stage[vslot] = 2;
            }
        } else {
            tinv = NULL;
        }
    }
    /* long rows: look_any once the automaton has made AUT_ANY_AFTER of their masks (it learns
     * for every later mask; a fresh automaton's first masks do without) */
    int any = 0;
    if (n_row >= AUT_LONG) /* (counted until then: no store shared by threads after) */
        any = atomic_load_explicit(&a->count[1], memory_order_relaxed) + 1u > AUT_ANY_AFTER ||
              atomic_fetch_add_explicit(&a->count[1], 1u, memory_order_relaxed) + 1u >
                  AUT_ANY_AFTER;
    struct mrun run = {&mm, &x, cst, drow, after_l, &pi, NULL, NULL, c.row, lslot, any};
    int rc = ET_OK;
    const uint32_t *const tok = a->tok, beg = a->row[c.row], end = a->row[c.row + 1u];
    const uint16_t *const cls = a->cls;
    if (vstage == 2) { /* a word of tokens at a time; mask_entry for those the slot asks it of */
        const size_t nb = ((size_t)a->n_vocab + 7u) / 8u;
        uint32_t i = beg;
        for (size_t q = 0; q < vw; q++) {
            const uint64_t inv = tinv ? tinv[q] : 0u;
            const uint64_t *const v = vk + 4u * q;
            uint64_t take = (v[0] & ~inv) | (v[2] & inv), slow = (v[1] & ~inv) | (v[3] & inv);
            for (; slow; slow &= slow - 1u) {
                const uint32_t t = (uint32_t)(q * 64u + et_ctz64(slow));
                if ((i = row_seek(tok, i, end, t)) == end || tok[i] != t)
                    continue; /* (not reached: a slot's tokens are its row's) */
                const unsigned e = mask_entry(a, run, i, t, cls[i]);
                take |= (uint64_t)(e & ME_TAKE) << (t & 63u);
                vk_note(vk, t, vk_code(cls[i] < AUT_CLS ? cst[cls[i]] : entry_cs(a, run, i, t, 1),
                                       !et_odd(a->odd, t), me_live(e)));
            }
#ifdef AUT_CHECK_PAIRS
            /* each verdict is a fact: mask_entry answers it again */
            for (uint32_t j = row_seek(tok, beg, end, (uint32_t)(q * 64u));
                 j < end && tok[j] < (q + 1u) * 64u; j++) {
                if ((mask_entry(a, run, j, tok[j], cls[j]) & ME_TAKE) !=
                    (unsigned)(take >> (tok[j] & 63u) & 1u))
                    abort();
            }
#endif
            if (bits) store_word(bits, nb, q, take);
            if (!ids) {
                if (!bits) w += et_popcount64(take); /* (else counted at the end) */
                continue;
            }
            for (; take; take &= take - 1u, w++) {
                if (w == cap) rc = ET_E_FULL;
                else ids[w] = (uint32_t)(q * 64u + et_ctz64(take));
            }
        }
        if (!ids && bits) w = count_bits(bits, nb);
    } else {
        rc = AUT_NO_PAIRS;
        if (x.pi && n_row >= AUT_LONG) { /* (the pair set made there, where it needs one) */
            if (a->tinv && slot >= 0 && n_row >= vk_row(a->n_vocab)) /* (few refused: cheap) */
                run.tinv_at = a->tinv + (size_t)slot * vw;
            rc = mask_long(a, run, vstage ? codes : NULL, bits, ids, cap, &w);
            if (rc == AUT_NO_PAIRS) cst_init(a, c.row, lslot, cst); /* (its decisions undone) */
        }
        if (rc == AUT_NO_PAIRS)
            rc = vstage ? mask_row(a, run, beg, end, codes, bits, ids, cap, &w)
                 : ids  ? mask_row(a, run, beg, end, NULL, bits, ids, cap, &w)
                        : mask_row(a, run, beg, end, NULL, bits, NULL, 0, &w); /* (bits only) */
    }
    if (vstage == 1 && rc == ET_OK) { /* (cut short: noted again next time) */
        memcpy(a->vk_cst + (size_t)vslot * AUT_CLS, cst, a->n_cls[c.row]);
        a->vk_stage[vslot] = 1;
    }
    if (slot >= 0) atomic_store_explicit(&a->busy[slot], 0, memory_order_release);
    if (lslot >= 0) atomic_store_explicit(&a->lk_busy[lslot], 0, memory_order_release);
    if (vslot >= 0) atomic_store_explicit(&a->vk_busy[vslot], 0, memory_order_release);
    if (rc == ET_OK) *n = w;
    return rc;
}
