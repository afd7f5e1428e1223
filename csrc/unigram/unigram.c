/* csrc/unigram: SentencePiece Unigram encoding, token for token what the `sentencepiece`
 * package's encode(text, out_type=int) gives.
 *
 * 1. Normalise as sentencepiece's Normalizer does: user-defined pieces pass through; else the
 *    longest rule of the precompiled charsmap (a darts-clone double array over UTF-8 keys,
 *    then NUL-terminated replacement strings) replaces a prefix; else one UTF-8 character
 *    passes (an invalid byte becomes U+FFFD). Extra whitespace is removed (leading, trailing,
 *    repeated), spaces become U+2581, and a dummy U+2581 prefix (or suffix) is added, as the
 *    model's flags say.
 * 2. Viterbi over the normalised bytes, as sentencepiece's EncodeOptimized (viterbi_word),
 *    word by word where no piece crosses a word's start, with a per-workspace cache of the
 *    words whose best path is certain whatever score they start from (cached_word).
 * 3. Unknown pieces become their bytes' <0xNN> pieces when the model has byte fallback;
 *    without it, a run of unknown pieces is one <unk>.
 * SentencePiece BPE models (ET_SP_BPE) share steps 1 and 3; step 2 is the merge loop below.
 * All arrays live in the caller's workspace; nothing is allocated.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../model/model.h"
#include "../unicode/ucd.h"

#define UNK_PENALTY 10.0f
#define SCORE_RESET 100000.0f /* sentencepiece's kScoreResetThreshold */

/* One lookup in the darts-clone double array a[0..n): the value of the longest key that
 * s[0..len) starts with, and its length; 0 if none (at most the first 32 matches count, as in
 * sentencepiece). Every index is checked. */
static size_t darts_longest(const uint32_t *a, size_t n, const uint8_t *s, size_t len,
                            uint32_t *value)
{
    if (n == 0) return 0;
    size_t best = 0, found = 0;
    uint32_t unit = a[0];
    size_t pos = (unit >> 10) << ((unit & (1u << 9)) >> 6);
    for (size_t i = 0; i < len; i++) {
        pos ^= s[i];
        if (pos >= n) break;
        unit = a[pos];
        if ((unit & ((1u << 31) | 0xFFu)) != s[i]) break;
        pos ^= (unit >> 10) << ((unit & (1u << 9)) >> 6);
        if (pos >= n) break;
        if ((unit >> 8) & 1u) {
            if (found++ < 32) {
                best = i + 1;
                *value = a[pos] & ((1u << 31) - 1);
            }
        }
    }
    return best;
}

/* The charsmap's double array: its units, or NULL if the blob is empty or malformed. */
static const uint32_t *darts_of(const uint8_t *cm, size_t size, size_t *n_units,
                                const char **strings, size_t *strings_len)
{
    uint32_t trie_size;
    if (size < 4) return NULL;
    memcpy(&trie_size, cm, 4);
    if (trie_size > size - 4 || trie_size % 4) return NULL;
    *n_units = trie_size / 4;
    *strings = (const char *)cm + 4 + trie_size;
    *strings_len = size - 4 - trie_size;
    return (const uint32_t *)(const void *)(cm + 4); /* sections are 64-byte aligned */
}

int et_charsmap_ascii_rule(const uint8_t *cm, size_t size, uint8_t b)
{
    size_t n = 0, sl = 0;
    const char *st;
    const uint32_t *a = darts_of(cm, size, &n, &st, &sl);
    if (!a || n == 0) return 0;
    size_t pos = ((a[0] >> 10) << ((a[0] & (1u << 9)) >> 6)) ^ b;
    if (pos >= n || (a[pos] & ((1u << 31) | 0xFFu)) != b) return 0; /* no key starts with b */
    const uint32_t unit = a[pos];
    if ((unit >> 8) & 1u) return 1;                                  /* the key "b" itself */
    const size_t base = pos ^ ((unit >> 10) << ((unit & (1u << 9)) >> 6));
    for (unsigned d = 0; d < 0x80; d++)                              /* a key "b d ..." */
        if ((base ^ d) < n && (a[base ^ d] & ((1u << 31) | 0xFFu)) == d) return 1;
    return 0;
}

uint32_t et_charsmap_expansion(const uint8_t *cm, size_t size)
{
    size_t n = 0, sl = 0;
    const char *st;
    const uint32_t *a = darts_of(cm, size, &n, &st, &sl);
    uint32_t most = 3; /* a space becomes U+2581, an invalid byte U+FFFD */
    if (!a || n == 0) return most;
    /* depth-first over the double array, each unit once (a malformed array may share or
     * loop; normalize() then reports ET_E_FORMAT rather than overflow) */
    uint32_t *stack = malloc(n * 2 * sizeof *stack);
    uint8_t *seen = calloc(n, 1);
    if (!stack || !seen) { free(stack); free(seen); return 0; }
    size_t top = 0;
    stack[top++] = 0, stack[top++] = 0;
    seen[0] = 1;
    while (top) {
        const uint32_t depth = stack[--top], pos = stack[--top];
        const uint32_t unit = a[pos];
        const size_t base = pos ^ ((unit >> 10) << ((unit & (1u << 9)) >> 6));
        if (depth > 0 && (unit >> 8) & 1u && base < n) {
            const uint32_t v = a[base] & ((1u << 31) - 1);
            if (v < sl) {
                /* output bytes: the replacement, each of its spaces as 3 */
                uint64_t out = 0;
                for (size_t k = v; k < sl && st[k]; k++) out += st[k] == ' ' ? 3 : 1;
                const uint64_t r = (out + depth - 1) / depth;
                if (r > most) most = r > 0xFFFFu ? 0xFFFFu : (uint32_t)r;
            }
        }
        for (unsigned d = 1; d < 256; d++) {
            const size_t c = base ^ d;
            if (c < n && !seen[c] && (a[c] & ((1u << 31) | 0xFFu)) == d) {
                seen[c] = 1;
                stack[top++] = (uint32_t)c, stack[top++] = depth + 1;
            }
        }
    }
    free(stack);
    free(seen);
    return most;
}

typedef struct {
    uint8_t *out;
    size_t n, cap;
    int prev_space;
} norm_buf;

static inline int put(norm_buf *b, const uint8_t *p, size_t len)
{
    if (len > b->cap - b->n) return 0;
    memcpy(b->out + b->n, p, len);
    b->n += len;
    return 1;
}

static const uint8_t SPACE_SYMBOL[3] = {0xE2, 0x96, 0x81};

/* The longest user-defined piece that s[0..len) starts with: its length, or 0. */
static size_t user_defined_prefix(const et_model *m, const uint8_t *s, size_t len)
{
    uint32_t st = 0;
    size_t best = 0;
    for (size_t i = 0; i < len && i < m->max_token_len; i++) {
        st = et_uni_next(m, st, s[i]);
        if (st == ET_NONE) break;
        uint32_t v = et_uni_value(m, st);
        if (v < m->n_vocab && m->types[v] == ET_SP_USER_DEFINED) best = i + 1;
    }
    return best;
}

/* p[0..8) as a little-endian word: byte k in bits 8k..8k+7 whatever the CPU's order. */
static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56; /* (one load where the CPU is little-endian) */
}

/* Stores w at p[0..8), little-endian. */
static inline void store_le64(uint8_t *p, uint64_t w)
{
    p[0] = (uint8_t)w, p[1] = (uint8_t)(w >> 8), p[2] = (uint8_t)(w >> 16);
    p[3] = (uint8_t)(w >> 24), p[4] = (uint8_t)(w >> 32), p[5] = (uint8_t)(w >> 40);
    p[6] = (uint8_t)(w >> 48), p[7] = (uint8_t)(w >> 56);
}

/* Whether every byte of w is printable ASCII, 0x20-0x7E (no byte carries into the next). */
static inline int all_printable(uint64_t w)
{
    const uint64_t high = 0x8080808080808080ull;
    return ((w | (w + 0x0101010101010101ull)) & high) == 0 &&
           ((w + 0x6060606060606060ull) & high) == high;
}

/* Normalises t[0..len) into b; 0 if b is too small. Without dummy, no dummy whitespace is
 * added (ET_NO_DUMMY). */
static int normalize(const et_model *m, const uint8_t *t, size_t len, norm_buf *b, int dummy)
{
    const uint32_t flags = dummy ? m->up.flags : m->up.flags & ~ET_SP_ADD_DUMMY_PREFIX;
    size_t n_units = 0, strings_len = 0;
    const char *strings = NULL;
    const uint32_t *darts = darts_of(m->charsmap, m->charsmap_size, &n_units, &strings, &strings_len);
    const int has_user = (flags & ET_SP_HAS_USER) != 0;
    const int remove_ws = (flags & ET_SP_REMOVE_EXTRA_WS) != 0, escape = (flags & ET_SP_ESCAPE_WS) != 0;
    /* whether no charsmap rule applies at printable ASCII (0x20-0x7E) when ASCII follows */
    const int printable_plain = !has_user && m->up.ascii_rules[1] == 0 && m->up.ascii_rules[2] == 0 &&
                                (m->up.ascii_rules[3] & 0x7FFFFFFFu) == 0;
    size_t i = 0;
    int first = 1;
    b->prev_space = remove_ws;
    while (i < len) {
        const uint8_t *rep;
        size_t rep_len, used = 0;
        uint32_t value = 0;
        const uint8_t c = t[i];
        if (c < 0x80u && !has_user && !(m->up.ascii_rules[c >> 5] >> (c & 31) & 1u) &&
            (i + 1 == len || t[i + 1] < 0x80u)) {
            /* ASCII that no rule changes (none applies at it when ASCII follows): the common
             * case, without a trie lookup. The same steps as below for a one-byte replacement,
             * over the run of such bytes. */
            if (first) {
                if (c == ' ' && remove_ws) { i++; continue; } /* leading spaces */
                first = 0;
                if ((flags & ET_SP_ADD_DUMMY_PREFIX) && !(flags & ET_SP_WS_SUFFIX) &&
                    !(escape ? put(b, SPACE_SYMBOL, 3) : put(b, (const uint8_t *)" ", 1)))
                    return 0;
            }
            uint8_t *o = b->out + b->n;
            int prev = b->prev_space;
            const size_t i0 = i;
            if (printable_plain) {
                /* eight printable bytes at a time, while the output has room for 24 and the
                 * 8 a copy may write past what it keeps */
                const uint8_t *end = b->out + b->cap;
                while (len - i >= 8 && end - o >= 32) {
                    const uint64_t w = load_le64(t + i);
                    if (!all_printable(w) || (len - i > 8 && t[i + 8] >= 0x80u)) break;
                    const uint64_t x = w ^ 0x2020202020202020ull; /* spaces become 0 */
                    uint64_t spaces = ((x + 0x7F7F7F7F7F7F7F7Full) & 0x8080808080808080ull) ^
                                      0x8080808080808080ull;
                    size_t a = 0; /* the chunk's bytes before a are written */
                    while (spaces) {
                        const size_t at = (size_t)et_ctz64(spaces) >> 3;
                        store_le64(o, w >> (8 * a)); /* bytes a.. (keeps at - a of them) */
                        o += at - a;
                        prev = at > a ? 0 : prev;
                        if (!prev) {
                            if (escape) { memcpy(o, SPACE_SYMBOL, 3); o += 3; }
                            else *o++ = ' ';
                        }
                        prev = remove_ws;
                        a = at + 1;
                        spaces &= spaces - 1;
                    }
                    if (a < 8) {
                        store_le64(o, w >> (8 * a));
                        o += 8 - a;
                        prev = 0;
                    }
                    i += 8;
                }
            }
            const size_t room = (b->cap - (size_t)(o - b->out)) / 3; /* input that surely fits */
            const size_t stop = len - i < room ? len : i + room;
            while (i < stop && t[i] < 0x80u && !(m->up.ascii_rules[t[i] >> 5] >> (t[i] & 31) & 1u)
                   && (i + 1 == len || t[i + 1] < 0x80u)) {
                const uint8_t x = t[i++];
                if (x != ' ') {
                    *o++ = x;
                    prev = 0;
                } else {
                    if (!prev) {
                        if (escape) { memcpy(o, SPACE_SYMBOL, 3); o += 3; }
                        else *o++ = ' ';
                    }
                    prev = remove_ws;
                }
            }
            if (i == i0) return 0; /* no room for one more byte */
            b->n = (size_t)(o - b->out);
            b->prev_space = prev;
            continue;
        }
        size_t ud = has_user ? user_defined_prefix(m, t + i, len - i) : 0;
        size_t k = ud ? 0 : darts_longest(darts, n_units, t + i, len - i, &value);
        if (ud) {
            rep = t + i;
            rep_len = used = ud;
        } else if (k && value < strings_len) {
            rep = (const uint8_t *)strings + value;
            const uint8_t *z = memchr(rep, 0, strings_len - value);
            rep_len = z ? (size_t)(z - rep) : strings_len - value;
            used = k;
        } else {
            size_t cl;
            uint32_t cp = et_utf8_decode(t, len, i, &cl);
            used = cl;
            if (cp == 0xFFFFFFFFu) {
                static const uint8_t fffd[3] = {0xEF, 0xBF, 0xBD};
                rep = fffd;
                rep_len = 3;
            } else {
                rep = t + i;
                rep_len = cl;
            }
        }
        i += used;
        if (first && remove_ws && rep_len == 1 && rep[0] == ' ') continue; /* leading spaces */
        if (first) {
            first = 0;
            if ((flags & ET_SP_ADD_DUMMY_PREFIX) && !(flags & ET_SP_WS_SUFFIX) &&
                !(escape ? put(b, SPACE_SYMBOL, 3) : put(b, (const uint8_t *)" ", 1)))
                return 0;
        }
        size_t s = 0;
        while (b->prev_space && s < rep_len && rep[s] == ' ') s++;
        if (s < rep_len) {
            for (; s < rep_len; s++) {
                if (escape && rep[s] == ' ') {
                    if (!put(b, SPACE_SYMBOL, 3)) return 0;
                } else if (!put(b, rep + s, 1)) {
                    return 0;
                }
            }
            b->prev_space = rep[rep_len - 1] == ' ';
        }
        if (!remove_ws) b->prev_space = 0;
    }
    if (first) return 1; /* nothing but whitespace: empty */
    if (remove_ws) {
        if (escape)
            while (b->n >= 3 && memcmp(b->out + b->n - 3, SPACE_SYMBOL, 3) == 0) b->n -= 3;
        else
            while (b->n >= 1 && b->out[b->n - 1] == ' ') b->n--;
    }
    if ((flags & ET_SP_ADD_DUMMY_PREFIX) && (flags & ET_SP_WS_SUFFIX) &&
        !(escape ? put(b, SPACE_SYMBOL, 3) : put(b, (const uint8_t *)" ", 1)))
        return 0;
    return 1;
}

/* Length of the UTF-8 character at s[0..len), len > 0, as sentencepiece's OneCharLen: by
 * the lead byte alone (the normalised text is valid UTF-8), at most len. */
static size_t one_char_len(const uint8_t *s, size_t len)
{
    static const uint8_t by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    const size_t n = by_high_nibble[s[0] >> 4];
    return n < len ? n : len;
}

typedef struct {
    float score;  /* the best path's score to here (-inf: none yet) */
    float second; /* the best other candidate's (a path that lost here), or -inf */
    uint32_t start, id;
} path_node;

/* The output stage shared by Unigram and BPE: pieces in order, unknown ones as their bytes'
 * <0xNN> pieces with byte fallback, else a run of unknown pieces as one <unk> (as
 * sentencepiece's PopulateSentencePieceText). */
typedef struct {
    const et_model *m;
    const uint8_t *s;
    uint32_t *out;
    size_t cap, w;
    int prev_unk;
} emitter;

static inline int emit(emitter *e, uint32_t start, uint32_t end, uint32_t id)
{
    const et_model *m = e->m;
    const int unk = id == m->up.unk_id;
    if (unk && (m->up.flags & ET_SP_BYTE_FALLBACK)) {
        for (uint32_t x = start; x < end; x++) {
            uint32_t b = m->byteids[e->s[x]];
            if (e->out) {
                if (e->w >= e->cap) return 0;
                e->out[e->w] = b == ET_NONE ? m->up.unk_id : b;
            }
            e->w++;
        }
        e->prev_unk = 1;
        return 1;
    }
    if (unk && e->prev_unk) return 1; /* a run of unknowns is one <unk> */
    e->prev_unk = unk;
    if (e->out) {
        if (e->w >= e->cap) return 0;
        e->out[e->w] = id;
    }
    e->w++;
    return 1;
}

/* ---- SentencePiece BPE ---------------------------------------------------------------------
 * As sentencepiece's bpe::Model: the normalised text is cut into characters (a user-defined
 * piece is one symbol, never merged); every adjacent pair whose concatenation is a piece
 * (normal, user-defined or unused) goes on a heap; the best pair (highest score, then leftmost)
 * merges, if both symbols are still as they were, and the new neighbours' pairs go on the
 * heap. A final symbol that is not a piece is unknown; an unused piece is split back into the
 * pair last pushed with its text (rev_merge there), recursively. */

typedef struct {
    uint32_t start, len; /* len's top bit: frozen (a user-defined piece) */
    int32_t prev, next;
    uint32_t node;       /* the trie cell its bytes reach, or ET_NONE */
} sp_sym;

typedef struct {
    uint64_t key;        /* the score's bits ordered as floats, then the left index inverted */
    uint32_t left, right, size, node;
} sp_pair;

typedef struct {
    uint32_t start, left_len, size;
} sp_unused;

#define SYM_FROZEN 0x80000000u

/* The heap order of sentencepiece's SymbolPairComparator as one unsigned key: the higher
 * score first (floats ordered by their bits, -0 below +0), then the leftmost. */
static uint64_t pair_key(float f, uint32_t left)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    b = (b & 0x80000000u) ? ~b : b | 0x80000000u;
    return (uint64_t)b << 32 | (uint32_t)~left;
}

static void pair_push(sp_pair *h, size_t *n, sp_pair v)
{
    size_t i = (*n)++;
    while (i > 0 && v.key > h[(i - 1) / 2].key) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static sp_pair pair_pop(sp_pair *h, size_t *n)
{
    sp_pair top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1].key > h[c].key) c++;
        if (h[c].key <= last.key) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* The piece id at trie cell st if it is a normal, user-defined or unused piece (the pieces
 * sentencepiece's BPE merges into), else ET_NONE. */
static uint32_t sp_id_at(const et_model *m, uint32_t st)
{
    if (st == ET_NONE) return ET_NONE;
    uint32_t id = et_uni_value(m, st);
    if (id >= m->n_vocab || id == m->up.unk_id) return ET_NONE;
    uint8_t t = m->types[id];
    return t == ET_SP_NORMAL || t == ET_SP_USER_DEFINED || t == ET_SP_UNUSED ? id : ET_NONE;
}

typedef struct {
    const et_model *m;
    const uint8_t *s;
    sp_sym *sym;
    sp_pair *heap;
    size_t nheap;
    sp_unused *unused;
    size_t nunused;
} sp_bpe;

static void maybe_pair(sp_bpe *b, int32_t left, int32_t right)
{
    if (left < 0 || right < 0) return;
    const sp_sym *l = &b->sym[left], *r = &b->sym[right];
    if (((l->len | r->len) & SYM_FROZEN) || l->node == ET_NONE) return;
    uint32_t size = l->len + r->len;
    if (size > b->m->max_token_len) return;
    /* the pair's piece: from the left symbol's cell over the right symbol's bytes */
    uint32_t st = et_uni_walk(b->m, l->node, b->s + r->start, r->len);
    uint32_t id = sp_id_at(b->m, st);
    if (id == ET_NONE) return;
    pair_push(b->heap, &b->nheap,
              (sp_pair){pair_key(et_uni_score(b->m, st), (uint32_t)left), (uint32_t)left,
                        (uint32_t)right, size, st});
    if (b->m->types[id] == ET_SP_UNUSED)
        b->unused[b->nunused++] = (sp_unused){l->start, l->len, size};
}

/* Whether an unmerged symbol is U+2581. */
static int is_space_symbol(const uint8_t *s, const sp_sym *y)
{
    return y->len == 3 && memcmp(s + y->start, SPACE_SYMBOL, 3) == 0;
}

#define RESEGMENT_DEPTH 100 /* as sentencepiece's kMaxBpeResegmentDepth */

/* Emits the piece s[start..start+len) with id (ET_NONE: unknown), splitting an unused piece
 * into the pair last pushed with its text, as sentencepiece's resegment. */
static int sp_emit(sp_bpe *b, emitter *e, uint32_t start, uint32_t len, uint32_t id, int depth)
{
    if (id == ET_NONE) return emit(e, start, start + len, b->m->up.unk_id);
    if (depth > RESEGMENT_DEPTH || b->m->types[id] != ET_SP_UNUSED)
        return emit(e, start, start + len, id);
    for (size_t k = b->nunused; k-- > 0;) {
        const sp_unused *u = &b->unused[k];
        if (u->size == len && memcmp(b->s + u->start, b->s + start, len) == 0) {
            uint32_t l = u->left_len;
            uint32_t a = sp_id_at(b->m, et_uni_walk(b->m, 0, b->s + start, l));
            uint32_t c = sp_id_at(b->m, et_uni_walk(b->m, 0, b->s + start + l, len - l));
            return sp_emit(b, e, start, l, a, depth + 1) &&
                   sp_emit(b, e, start + l, len - l, c, depth + 1);
        }
    }
    return emit(e, start, start + len, b->m->up.unk_id);
}

/* Bytes of workspace sp_bpe_run needs for n normalised bytes. */
static uint64_t sp_bpe_bytes(uint64_t n)
{
    return ((n + 1) * sizeof(sp_sym) + 7) / 8 * 8 + (3 * n + 1) * (sizeof(sp_pair) + sizeof(sp_unused)) + 64;
}

static int sp_bpe_run(const et_model *m, const uint8_t *s, size_t n, uint8_t *mem,
                      uint32_t *out, size_t cap, size_t *n_out)
{
    if (n >= 0x7FFFFFFFu / 4) return ET_E_ARG; /* symbol links are 32-bit */
    sp_bpe b = {m, s, (sp_sym *)(void *)mem, NULL, 0, NULL, 0};
    b.heap = (sp_pair *)(void *)(mem + ((n + 1) * sizeof(sp_sym) + 7) / 8 * 8);
    b.unused = (sp_unused *)(void *)(b.heap + 3 * n + 1);
    const int has_user = (m->up.flags & ET_SP_HAS_USER) != 0;
    int32_t count = 0;
    for (size_t at = 0; at < n; count++) {
        size_t ud = has_user ? user_defined_prefix(m, s + at, n - at) : 0;
        size_t len = ud ? ud : one_char_len(s + at, n - at);
        b.sym[count] = (sp_sym){(uint32_t)at, (uint32_t)len | (ud ? SYM_FROZEN : 0u), count - 1,
                                at + len < n ? count + 1 : -1, et_uni_walk(m, 0, s + at, len)};
        at += len;
    }
    /* With ET_SP_WORDS no merge crosses the start of a word (U+2581 after another character,
     * or a user-defined piece), and each word's merges come in the same order as on one heap
     * for all: words are merged one at a time, on small heaps. */
    const int by_word = (m->up.flags & ET_SP_WORDS) != 0;
    for (int32_t a = 0; a < count;) {
        int32_t z = count;
        if (by_word) {
            for (z = a + 1; z < count; z++)
                if (((b.sym[z].len | b.sym[z - 1].len) & SYM_FROZEN) ||
                    (is_space_symbol(s, &b.sym[z]) && !is_space_symbol(s, &b.sym[z - 1])))
                    break;
            b.sym[z - 1].next = -1;
        }
        for (int32_t i = a + 1; i < z; i++) maybe_pair(&b, i - 1, i);
        while (b.nheap) {
            sp_pair top = pair_pop(b.heap, &b.nheap);
            sp_sym *l = &b.sym[top.left], *r = &b.sym[top.right];
            if (l->len == 0 || r->len == 0 || l->len + r->len != top.size) continue; /* stale */
            l->len += r->len;
            l->node = top.node;
            l->next = r->next;
            if (r->next >= 0) b.sym[r->next].prev = (int32_t)top.left;
            r->len = 0;
            maybe_pair(&b, l->prev, (int32_t)top.left);
            maybe_pair(&b, (int32_t)top.left, l->next);
        }
        if (z < count) { /* link the word's last symbol to the next word, for the output */
            int32_t i = a;
            while (b.sym[i].next >= 0) i = b.sym[i].next;
            b.sym[i].next = z;
            b.sym[z].prev = -1;
        }
        a = z;
    }
    emitter e = {m, s, out, cap, 0, 0};
    for (int32_t i = count ? 0 : -1; i >= 0; i = b.sym[i].next)
        if (!sp_emit(&b, &e, b.sym[i].start, b.sym[i].len & ~SYM_FROZEN,
                     sp_id_at(m, b.sym[i].node), 0))
            return ET_E_FULL;
    *n_out = e.w;
    return ET_OK;
}

/* Workspace bytes for ncap normalised bytes: the text, then the Viterbi or BPE arrays. */
static uint64_t work_bytes(uint64_t ncap, int bpe)
{
    return ncap + 8 + (bpe ? sp_bpe_bytes(ncap) : (ncap + 1) * (sizeof(path_node) + 4));
}

/* ET_E_WORKSPACE, asking for bytes (in et_ws_size() units). */
static int need_workspace(struct et_ws *ws, uint64_t bytes)
{
    const uint64_t piece = bytes / 48 + 1;
    et_ws_set_need(ws, piece > SIZE_MAX ? SIZE_MAX : (size_t)piece);
    return ET_E_WORKSPACE;
}

/* ---- Unigram Viterbi, word by word -----------------------------------------------------
 * With ET_SP_WORDS no piece crosses the start of a word (U+2581 after another character), so
 * the best path through the text is the best path through each word in turn, each from the
 * score the path reached at the word's start.
 *
 * A word's path is also remembered, per workspace, and reused when the word comes again, but
 * only where it is certain to be the path the full Viterbi would find there: scores are float
 * sums, and a candidate that loses by a hair from one starting score could win from another.
 * Each score in a word of C bytes (no fewer than the steps of any path through it) is within
 * C rounding steps of its exact value (a step:
 * half a unit in the last place at the largest magnitude the sums reach, M = |start| + C *
 * the largest piece score magnitude, so at most M * 2^-24), and a decision's computed margin
 * is within 2C steps of the exact one. So cert, the smallest computed margin on the path less
 * 2C steps at the starting score then, bounds the exact margins from below, and any start
 * whose 2C steps are below cert finds the same path. The slot keeps the largest such |start|
 * (also below where a rebase could happen inside the word). Words with unknown pieces are
 * not remembered. */
#define WORD_KEY 24u
#define WORD_IDS 8u
typedef struct {
    uint64_t key[3]; /* the word's bytes, zero-padded */
    uint32_t info;   /* length | id count << 8; 0: empty */
    float reach;     /* the path holds from any start score h with |h| < reach */
    uint32_t ids[WORD_IDS];
} word_slot;
_Static_assert(sizeof(word_slot) == 64, "a word slot is one cache line");

typedef struct {
    const et_model *m;
    const uint8_t *s;
    size_t n;
    path_node *best;
    uint32_t *back;
    float here;         /* the best path's score at the current word's start */
    double step;        /* the largest |score| a piece (or <unk>) adds */
    word_slot *cache;   /* NULL: no word cache */
    size_t cache_mask;
} viterbi;

/* The start of the word after the one at j: the next U+2581 that follows another character,
 * or n. */
static size_t next_word(const uint8_t *s, size_t n, size_t j)
{
    for (size_t p = j + 1; p + 3 <= n; p++) {
        const uint8_t *x = memchr(s + p, 0xE2, n - 2 - p);
        if (!x) break;
        p = (size_t)(x - s);
        if (x[1] == 0x96 && x[2] == 0x81 && !(p >= 3 && memcmp(x - 3, SPACE_SYMBOL, 3) == 0))
            return p;
    }
    return n;
}

static double magnitude(float x) { return x < 0 ? -(double)x : (double)x; }

/* An upper bound on rounding steps in a word of c bytes from start score h: M * 2^-23 (twice
 * the bound above, for slack), or +inf where a rebase could happen inside the word. */
static double round_step(const viterbi *v, float h, size_t c)
{
    const double mag = magnitude(h) + (double)c * v->step + 1.0;
    return mag < SCORE_RESET ? mag * 0x1p-23 : INFINITY;
}

/* The first slot of the word's set of two. */
static word_slot *word_slot_of(const viterbi *v, const uint64_t key[3], size_t len)
{
    uint64_t h = key[0] * 0x9E3779B97F4A7C15ull ^ key[1] * 0xC2B2AE3D27D4EB4Full ^
                 key[2] * 0x165667B19E3779F9ull ^ len;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    return &v->cache[(h >> 32) & v->cache_mask & ~(size_t)1];
}

static inline int slot_holds(const word_slot *w, const uint64_t key[3], size_t len)
{
    return (w->info & 0xFFu) == len && w->key[0] == key[0] && w->key[1] == key[1] &&
           w->key[2] == key[2];
}

/* The word's key: its bytes, zero-padded to WORD_KEY (len <= WORD_KEY). */
static void word_key(const uint8_t *p, size_t len, size_t room, uint64_t key[3])
{
    static const uint8_t ones[2 * WORD_KEY] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                               0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                               0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    if (room >= WORD_KEY) { /* whole words of text, then the bytes past len masked off */
        uint64_t mask[3];
        memcpy(key, p, WORD_KEY);
        memcpy(mask, ones + WORD_KEY - len, WORD_KEY);
        key[0] &= mask[0], key[1] &= mask[1], key[2] &= mask[2];
    } else {
        key[0] = key[1] = key[2] = 0;
        memcpy(key, p, len);
    }
}

/* The word s[j..j2) from the cache: ET_OK (emitted, v->here moved to its end), ET_E_FULL, or
 * -1 when the cache cannot answer. */
static int cached_word(viterbi *v, emitter *e, size_t j, size_t j2)
{
    const size_t len = j2 - j;
    if (!v->cache || len > WORD_KEY) return -1;
    uint64_t key[3];
    word_key(v->s + j, len, v->n - j, key);
    const word_slot *w = word_slot_of(v, key, len); /* a set of two: the newer first */
    if (!slot_holds(w, key, len) && !slot_holds(++w, key, len)) return -1;
    float h = v->here;
    if (!((h < 0 ? -h : h) < w->reach)) return -1;
    const uint32_t k = w->info >> 8;
    for (uint32_t i = 0; i < k; i++) {
        const uint32_t id = w->ids[i];
        h += v->m->scores[id]; /* the same float sums as the Viterbi below */
        if (!emit(e, 0, 0, id)) return ET_E_FULL;
    }
    v->here = h;
    return ET_OK;
}

/* What an unknown piece adds to a path. */
static float unk_score(const et_model *m) { return m->up.min_score - UNK_PENALTY; }

/* Offers node tn a path with score cand from start (a NaN never wins). */
static inline void offer(path_node *tn, float cand, uint32_t start, uint32_t id)
{
    if (cand > tn->score) {
        *tn = (path_node){cand, tn->score, start, id};
    } else if (cand > tn->second) {
        tn->second = cand;
    }
}

/* Remembers the path through the word p[0..len) found from start score v->here: its k ids
 * (best[back[k - 1]].id first), whose decisions won by margin or more. */
static void remember(viterbi *v, const uint8_t *p, size_t len, double margin,
                     const uint32_t *back, size_t k)
{
    const double c = (double)len, cert = margin * (1.0 - 0x1p-40) - 2.0 * c * round_step(v, v->here, len);
    if (!(cert > 0)) return; /* (a rebase possible inside the word: cert is -inf) */
    /* the largest |h| with 2 * c * round_step(h) < cert, and none past a rebase */
    double reach = cert / (2.0 * c * 0x1p-23) - c * v->step - 1.0;
    if (reach > SCORE_RESET - c * v->step - 1.0) reach = SCORE_RESET - c * v->step - 1.0;
    float r = (float)reach;
    if ((double)r > reach) { /* rounded up: the next float down */
        uint32_t bits;
        memcpy(&bits, &r, 4);
        bits--;
        memcpy(&r, &bits, 4);
    }
    if (!(r > 0)) return;
    uint64_t key[3];
    word_key(p, len, v->n - (size_t)(p - v->s), key);
    word_slot *w = word_slot_of(v, key, len);
    if (slot_holds(w, key, len) || slot_holds(w + 1, key, len)) {
        /* remembered already, from a start that did not reach this one: the one that
         * reaches further stays */
        w += !slot_holds(w, key, len);
        if (!(r > w->reach)) return;
    } else {
        w[1] = w[0]; /* the older one goes */
        memcpy(w->key, key, sizeof key);
    }
    w->info = (uint32_t)len | (uint32_t)k << 8;
    w->reach = r;
    for (size_t i = 0; i < k; i++) w->ids[i] = v->best[back[k - 1 - i]].id;
}

/* Viterbi over the word s[j..j2) from score v->here at j, as sentencepiece's EncodeOptimized:
 * at each character start, walk the piece trie; each piece ending at k offers best[start] +
 * score (unused pieces: NaN, never taken); if no piece covers exactly the next character, the
 * unknown piece does, at min_score - 10. Scores add in single precision and are rebased past
 * +-100000, as there (sentencepiece 0.2.3). Ties keep the earlier one. Then the path is
 * emitted, remembered if it can be, and v->here moves to j2. */
static int viterbi_word(viterbi *v, emitter *e, size_t j, size_t j2)
{
    const et_model *m = v->m;
    const uint8_t *s = v->s;
    path_node *best = v->best;
    const float unk = unk_score(m);
    const size_t longest = m->max_token_len > 4 ? m->max_token_len : 4; /* the longest step */
    for (size_t k = j; k <= j2; k++) best[k] = (path_node){-INFINITY, -INFINITY, ET_NONE, ET_NONE};
    best[j].score = v->here;
    for (size_t at = j; at < j2;) {
        float here = best[at].score;
        if (here < -SCORE_RESET || here > SCORE_RESET) {
            /* rebase the scores a path has reached (the others are -inf and stay so), so that
             * float sums keep their precision over long texts: the same roundings as there */
            const size_t end = j2 - at < longest ? j2 : at + longest;
            for (size_t i = at; i <= end; i++) best[i].score -= here;
            here = 0.0f;
        }
        const size_t mblen = one_char_len(s + at, j2 - at);
        /* the first character: whether a piece covers exactly it, else <unk> does */
        uint32_t st = 0;
        size_t k = at;
        for (; k < at + mblen && st != ET_NONE; k++) st = et_uni_next(m, st, s[k]);
        const float score = st != ET_NONE ? et_uni_score(m, st) : NAN; /* NaN: no piece */
        if (score == score)
            offer(&best[at + mblen], score + here, (uint32_t)at, et_uni_value(m, st));
        else
            offer(&best[at + mblen], unk + here, (uint32_t)at, m->up.unk_id);
        /* then the longer pieces */
        for (; st != ET_NONE && k < j2; k++) {
            if ((st = et_uni_next(m, st, s[k])) == ET_NONE) break;
            offer(&best[k + 1], et_uni_score(m, st) + here, (uint32_t)at, et_uni_value(m, st));
        }
        at += mblen;
    }
    /* backtrace from the word's end, then emit in order (unknowns as bytes with byte
     * fallback) */
    size_t k = 0, pos = j2;
    double margin = INFINITY;
    int has_unk = 0;
    while (pos > j) {
        const path_node *b = &best[pos];
        if (b->start < j || b->start >= pos || b->id >= m->n_vocab) return ET_E_FORMAT;
        const double d = (double)b->score - (double)b->second;
        if (!(d >= margin)) margin = d; /* (a NaN stays: no certificate) */
        has_unk |= b->id == m->up.unk_id;
        v->back[k++] = (uint32_t)pos;
        pos = b->start;
    }
    for (size_t i = k; i > 0; i--) {
        const uint32_t end = v->back[i - 1];
        if (!emit(e, best[end].start, end, best[end].id)) return ET_E_FULL;
    }
    const size_t len = j2 - j;
    if (v->cache && !has_unk && k <= WORD_IDS && len <= WORD_KEY)
        remember(v, s + j, len, margin, v->back, k);
    v->here = best[j2].score;
    return ET_OK;
}

int et_unigram_run(struct et_ws *ws, const et_model *m, const uint8_t *text, size_t len,
                   unsigned flags, uint32_t *out, size_t cap, size_t *n_out)
{
    /* workspace: normalised bytes, then (N + 1) path nodes and the backtrace (or the BPE's
     * arrays). Room for 3 normalised bytes per input byte is required and usually enough;
     * charsmap rules that expand more (U+FDFA: 3 bytes -> 33) may need up to up.expand, and
     * ask for a larger workspace when they do. */
    uint8_t *mem = (uint8_t *)et_ws_mem(ws);
    const uint64_t room = et_ws_bytes(ws);
    const int bpe = (m->up.flags & ET_SP_BPE) != 0;
    const uint64_t lo = 3 * (uint64_t)len + 8, hi = (uint64_t)m->up.expand * len + 8;
    uint64_t ncap = lo;
    if (work_bytes(lo, bpe) > room) return need_workspace(ws, work_bytes(lo, bpe));
    if (work_bytes(hi, bpe) <= room) {
        ncap = hi;
    } else { /* the most of [lo, hi) the workspace holds (work_bytes grows with ncap) */
        uint64_t a = lo, b = hi; /* work_bytes(a) <= room < work_bytes(b) */
        while (b - a > 1) {
            const uint64_t mid = a + (b - a) / 2;
            if (work_bytes(mid, bpe) <= room) a = mid;
            else b = mid;
        }
        ncap = a;
    }
    norm_buf b = {mem, 0, (size_t)ncap, 0};
    if (!normalize(m, text, len, &b, !(flags & ET_NO_DUMMY))) {
        if (ncap >= hi) return ET_E_FORMAT; /* the model's expansion bound is wrong */
        /* more than this workspace holds (work_bytes(ncap + 1) > room), at most hi */
        return need_workspace(ws, work_bytes(2 * ncap < hi ? 2 * ncap : hi, bpe));
    }
    const uint8_t *s = b.out;
    const size_t n = b.n;
    const size_t at8 = ((size_t)ncap + 7) & ~(size_t)7;
    if (bpe) return sp_bpe_run(m, s, n, mem + at8, out, cap, n_out);
    path_node *best = (path_node *)(void *)(mem + at8);
    uint32_t *back = (uint32_t *)(void *)(best + ncap + 1);
    viterbi v = {m, s, n, best, back, 0.0f, 0.0, NULL, 0};
    if (m->up.flags & ET_SP_WORDS) {
        size_t bytes;
        v.cache = (word_slot *)et_ws_cache(ws, &bytes);
        v.cache_mask = bytes / sizeof(word_slot) - 1;
        const double low = magnitude(m->up.min_score), unk = magnitude(unk_score(m)),
                     high = magnitude(m->up.max_score);
        v.step = low > high ? low : high;
        if (unk > v.step) v.step = unk;
        if (!(v.step < 1e30)) v.cache = NULL; /* (no normal piece) */
    }
    emitter e = {m, s, out, cap, 0, 0};
    for (size_t j = 0; j < n;) {
        /* with ET_SP_WORDS, no piece crosses the start of a word: each word's best path is
         * found on its own, from the best score at its start */
        const size_t j2 = v.cache ? next_word(s, n, j) : n;
        if (v.here < -SCORE_RESET || v.here > SCORE_RESET) v.here = 0.0f; /* as in the DP */
        int rc = cached_word(&v, &e, j, j2);
        if (rc < 0) rc = viterbi_word(&v, &e, j, j2);
        if (rc != ET_OK) return rc;
        j = j2;
    }
    *n_out = e.w;
    return ET_OK;
}
