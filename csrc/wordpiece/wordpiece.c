/* csrc/wordpiece: BERT's WordPiece, token for token what Hugging Face tokenizers gives for a
 * tokenizer.json with BertNormalizer, BertPreTokenizer and a WordPiece model, in one pass:
 *
 * 1. BertNormalizer, one character at a time from generated tables (bert_tables.h, probed
 *    from tokenizers itself): clean_text drops control characters (and U+0000, U+FFFD; an
 *    invalid UTF-8 byte reads as U+FFFD) and makes whitespace a space; handle_chinese_chars
 *    puts spaces around CJK ideographs; strip_accents (NFD, nonspacing marks dropped) and
 *    lowercase map a character to a short string. NFD sorts each run of combining marks by
 *    combining class; of the marks strip_accents keeps, the few with a nonzero class wait
 *    until the run ends, and come out sorted (the others it drops), read again from the text
 *    (see flush: tokenizers gives the characters of a sorted run places by position).
 * 2. BertPreTokenizer on the characters that come out: whitespace ends a word, punctuation is
 *    a word of its own.
 * 3. MaxMatch (greedy longest match first, "##" continuations) as LinMaxMatch (Song et al.
 *    2021, Fast WordPiece): the bytes of a word walk the trie; where a byte has no child, the
 *    cell's precomputed failure pops are emitted and the walk goes on from its failure link,
 *    so every byte is stepped over once and each failure emits a token: linear time. A word
 *    that cannot be matched, or has more than max_chars characters, is one [UNK].
 * Words of up to 16 bytes (most of them) are looked up first in a cache of their ids in the
 * caller's workspace (et_ws_cache: 8192 slots, direct-mapped); a miss walks the trie and
 * fills the slot. What a slot holds depends only on the word's bytes and the workspace's
 * model, so the cache never changes a result.
 * Nothing is allocated; the state is a trie cell, a few counters and the current short word.
 */
#include <string.h>

#include "../model/model.h"
#include "../unicode/ucd.h"
#include "bert_tables.h"

/* class bits (gen_bert.py) */
#define C_CTRL 1u
#define C_WS 2u
#define C_CJK 4u
#define C_SPACE 8u
#define C_PUNCT 16u
#define C_HANGUL 32u
#define C_REORDER 64u
#define C_MARK 128u
#define KEY 16u    /* words of up to KEY bytes are cached */
#define IDS 3u     /* with up to IDS ids */
#define NO_IDS 0x80000000u /* in a slot's info: only the count is known (filled by counting) */

typedef struct {
    uint64_t key[2];   /* the word's bytes, zero-padded */
    uint32_t info;     /* length | id count << 8 | NO_IDS; 0 = empty */
    uint32_t ids[IDS];
} wp_slot;

/* ASCII as the fast path keys a word: [0] as it is, [1] lowercased (ET_WP_LOWER) */
static const uint8_t ascii_fold[2][128] = {
    {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
        32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
        48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
        64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
        80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95,
        96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127,
    },
    {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
        16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
        32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
        48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
        64, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 91, 92, 93, 94, 95,
        96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127,
    },
};

static inline const et_bert_rec *rec_of(uint32_t cp)
{
    return &et_bert_recs[et_bert_stage2[(size_t)et_bert_stage1[cp >> 7] * 128u + (cp & 127u)]];
}

typedef struct {
    const et_model *m;
    uint32_t *out; /* NULL: count only */
    size_t cap, n;
    size_t word_n;        /* n where the word started */
    uint32_t u;           /* trie cell */
    size_t chars, bytes, pops; /* of the word so far */
    int in_word, unk, rc;
    const uint8_t *text;       /* the text (a run of marks is read again from it) */
    size_t len;
    int run, run_kept;         /* strip_accents: a run of marks is open; it has a kept one */
    size_t run_start;          /* the offset of the character the run's first mark came from */
    size_t *spans;             /* et_encode_spans: each token's text range; NULL: none */
    size_t *ends;              /* each token's end offset, ET_PIECE_END on a word's last; or NULL */
    size_t limit;              /* stop after the word that takes the count past it */
    int stop;                  /* (then nothing more is emitted) */
    size_t done;               /* with stop: the text up to the end of that word */
    size_t word_end;           /* the end of the word's last character in the text */
    uint32_t (*src)[2];        /* with spans: the text range of each character of the word */
    size_t src_cap;            /* characters src holds */
    size_t src_a, src_b;       /* the text range of the input character being normalised */
    size_t tok_char;           /* with spans: the word's characters that tokens cover so far */
    size_t word_a, word_b;     /* with spans: the word's text range */
    wp_slot *cache;            /* NULL: none */
    size_t n_slots;            /* a power of 2 */
    unsigned wlen;             /* the word's bytes so far, while they fit key (then not walked) */
    int walking;               /* the word is being walked (too long for the cache) */
    union { uint8_t b[KEY]; uint64_t w[2]; } key;
} wp;

static inline void emit(wp *s, uint32_t id)
{
    if (s->out) {
        if (s->n >= s->cap) {
            s->rc = ET_E_FULL;
            return;
        }
        s->out[s->n] = id;
    }
    s->n++;
}

/* A token of the word (spans, ends): the text range of the characters it covers. */
static inline void emit_tok(wp *s, uint32_t id)
{
    if ((s->spans || s->ends) && s->out && s->n < s->cap) {
        const uint8_t *p = NULL;
        uint32_t l = et_tok(s->m, id, &p), skip = s->tok_char ? s->m->wp.prefix_len : 0, c = 0;
        for (uint32_t i = skip; i < l; i++) c += (p[i] & 0xC0u) != 0x80u;
        if (!c || s->tok_char + c > s->chars || s->tok_char + c > s->src_cap) {
            s->rc = ET_E_FORMAT; /* a damaged model: its tokens do not tile the word */
            return;
        }
        if (s->spans) {
            s->spans[2 * s->n] = s->src[s->tok_char][0];
            s->spans[2 * s->n + 1] = s->src[s->tok_char + c - 1][1];
        }
        if (s->ends) s->ends[s->n] = s->src[s->tok_char + c - 1][1];
        s->tok_char += c;
    }
    emit(s, id);
}

/* Emits the failure pops of cell v and returns its failure link (ET_NONE: none). */
static inline uint32_t fail(wp *s, uint32_t v)
{
    const et_model *m = s->m;
    uint32_t f = m->cells[(size_t)ET_WP_CELL * v + 3u];
    if (f == ET_NONE) return f;
    uint32_t a = m->popoff[v], b = m->popoff[v + 1u];
    if (f >= m->n_cells || a >= b || b > m->n_pops || (s->pops += b - a) > s->bytes) {
        s->rc = ET_E_FORMAT; /* a damaged model: valid ones pop at most a token per byte */
        return ET_NONE;
    }
    for (uint32_t k = a; k < b; k++) {
        uint32_t id = m->pops[k];
        if (id >= m->n_vocab) {
            s->rc = ET_E_FORMAT;
            return ET_NONE;
        }
        emit_tok(s, id);
    }
    return f;
}

static inline void step(wp *s, uint8_t c)
{
    for (;;) {
        uint32_t t = et_trie_step(s->m, s->u, c, ET_WP_CELL);
        if (t != ET_NONE) {
            s->u = t;
            s->bytes++;
            return;
        }
        uint32_t f = fail(s, s->u);
        if (f == ET_NONE) {
            s->unk = 1;
            return;
        }
        s->u = f;
    }
}

static inline void walk_key(wp *s)
{
    s->walking = 1;
    for (unsigned i = 0; i < s->wlen && !s->unk && s->rc == ET_OK; i++) step(s, s->key.b[i]);
}

static inline wp_slot *slot_of(const wp *s)
{
    uint64_t h = (s->key.w[0] * 0x9E3779B97F4A7C15ull) ^ (s->key.w[1] * 0xC2B2AE3D27D4EB4Full);
    h ^= s->wlen;
    return &s->cache[(h ^ (h >> 29)) & (s->n_slots - 1u)];
}

/* The word's tokens are out: its last one is marked (ends), the limit checked. */
static inline void word_done(wp *s)
{
    if (s->ends && s->out && s->n > s->word_n && s->n <= s->cap)
        s->ends[s->n - 1] = s->word_end | ET_PIECE_END;
    if (s->n > s->limit) {
        s->stop = 1;
        s->done = s->word_end;
    }
}

static void end_word(wp *s)
{
    if (!s->in_word || s->stop) return;
    wp_slot *slot = NULL;
    if (!s->walking) { /* a short word: its ids from the cache, or walk it and keep them */
        slot = slot_of(s);
        if ((slot->info & 0xFFu) == s->wlen && slot->key[0] == s->key.w[0] &&
            slot->key[1] == s->key.w[1] && (!s->out || !(slot->info & NO_IDS))) {
            uint32_t k = (slot->info >> 8) & 0xFFu;
            if (s->out) {
                for (uint32_t x = 0; x < k; x++) emit(s, slot->ids[x]);
            } else {
                s->n += k;
            }
            word_done(s);
            s->in_word = s->unk = 0;
            s->u = 0;
            s->chars = s->bytes = s->pops = 0;
            s->wlen = 0;
            s->key.w[0] = s->key.w[1] = 0;
            return;
        }
        walk_key(s);
    }
    while (!s->unk && s->rc == ET_OK && s->u != s->m->wp.cont) {
        uint32_t f = fail(s, s->u);
        if (f == ET_NONE) s->unk = 1;
        s->u = f;
    }
    if (s->unk && s->rc == ET_OK) {
        s->n = s->word_n;
        if (s->spans && s->out && s->n < s->cap) {
            s->spans[2 * s->n] = s->word_a;
            s->spans[2 * s->n + 1] = s->word_b;
        }
        emit(s, s->m->wp.unk_id);
    }
    if (slot && s->rc == ET_OK && s->n - s->word_n <= IDS) {
        size_t k = s->n - s->word_n;
        slot->key[0] = s->key.w[0];
        slot->key[1] = s->key.w[1];
        slot->info = s->wlen | (uint32_t)k << 8 | (s->out ? 0u : NO_IDS);
        for (size_t x = 0; x < k; x++) slot->ids[x] = s->out ? s->out[s->word_n + x] : 0;
    }
    if (s->rc == ET_OK) word_done(s);
    s->in_word = s->unk = 0;
    s->u = 0;
    s->chars = s->bytes = s->pops = 0;
    s->tok_char = 0;
    s->walking = !s->cache;
    s->wlen = 0;
    s->key.w[0] = s->key.w[1] = 0;
}

/* One character of the word (its UTF-8 bytes). */
static inline void feed(wp *s, const uint8_t *p, size_t k)
{
    if (s->stop) return;
    if (!s->in_word) {
        s->in_word = 1;
        s->word_n = s->n;
        s->word_a = s->src_a;
        s->word_end = 0;
    }
    if (s->src_b > s->word_end) s->word_end = s->src_b; /* (marks may come out of order) */
    if (s->spans || s->ends) {
        s->word_b = s->src_b;
        if (s->chars < s->src_cap) {
            s->src[s->chars][0] = (uint32_t)s->src_a;
            s->src[s->chars][1] = (uint32_t)s->src_b;
        } else if (s->chars < s->m->wp.max_chars) { /* a word longer than the workspace holds */
            s->rc = ET_E_WORKSPACE;
        }
    }
    if (++s->chars > s->m->wp.max_chars) s->unk = 1;
    if (!s->walking) {
        if (s->wlen + k <= KEY) {
            memcpy(s->key.b + s->wlen, p, k);
            s->wlen += (unsigned)k;
            return;
        }
        walk_key(s);
    }
    for (size_t i = 0; i < k && !s->unk; i++) step(s, p[i]);
}

/* A character out of the normaliser, with its class bits: the pretokenizer's move. */
static inline void put_char(wp *s, const uint8_t *p, size_t k, unsigned cls)
{
    if (cls & C_SPACE) {
        end_word(s);
    } else if (cls & C_PUNCT) {
        end_word(s);
        feed(s, p, k);
        end_word(s);
    } else {
        feed(s, p, k);
    }
}

static size_t utf8_put(uint8_t *q, uint32_t cp)
{
    if (cp < 0x800u) {
        q[0] = (uint8_t)(0xC0u | (cp >> 6));
        q[1] = (uint8_t)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    q[0] = (uint8_t)(0xE0u | (cp >> 12));
    q[1] = (uint8_t)(0x80u | ((cp >> 6) & 0x3Fu));
    q[2] = (uint8_t)(0x80u | (cp & 0x3Fu));
    return 3;
}

static size_t utf8_put4(uint8_t *q, uint32_t cp)
{
    if (cp < 0x10000u) return utf8_put(q, cp);
    q[0] = (uint8_t)(0xF0u | (cp >> 18));
    q[1] = (uint8_t)(0x80u | ((cp >> 12) & 0x3Fu));
    q[2] = (uint8_t)(0x80u | ((cp >> 6) & 0x3Fu));
    q[3] = (uint8_t)(0x80u | (cp & 0x3Fu));
    return 4;
}

/* The combining class of a C_REORDER or C_MARK character (from et_bert_ccc). */
static uint32_t ccc_of(uint32_t cp)
{
    size_t lo = 0, hi = sizeof et_bert_ccc / sizeof et_bert_ccc[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((et_bert_ccc[mid] >> 8) < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof et_bert_ccc / sizeof et_bert_ccc[0] && (et_bert_ccc[lo] >> 8) == cp
               ? et_bert_ccc[lo] & 0xFFu : 0u;
}

/* The marks of a run, read again from the text between its first character and its end, in
 * text order (characters clean_text drops skipped, the starter of the first one's NFD too). */
typedef struct {
    const wp *s;
    size_t at, end;        /* the next character's offset; the run's end */
    const uint8_t *d;      /* the current character's NFD (or the character itself) */
    size_t dlen, di;
    size_t a, b;           /* the current character's place */
    uint32_t cp, ccc;      /* the mark */
    int first, kept;       /* it is the first character of its character's NFD; it is kept */
} marks;

static int next_mark(marks *it)
{
    for (;;) {
        while (it->di < it->dlen) {
            size_t k;
            const uint32_t c = et_utf8_decode(it->d, it->dlen, it->di, &k);
            it->first = it->di == 0;
            it->di += k;
            const unsigned cls = c < 0x110000u ? rec_of(c)->cls : 0u;
            if (!(cls & (C_REORDER | C_MARK))) continue;
            it->cp = c;
            it->ccc = ccc_of(c);
            it->kept = (cls & C_REORDER) != 0;
            return 1;
        }
        if (it->at >= it->end) return 0;
        size_t k;
        const uint32_t c = et_utf8_decode(it->s->text, it->s->len, it->at, &k);
        if (c >= 0x110000u) return 0; /* (an invalid byte is U+FFFD: a starter, never here) */
        const et_bert_rec *r = rec_of(c);
        it->a = it->at;
        it->b = it->at + k;
        it->at += k;
        if ((it->s->m->wp.flags & ET_WP_CLEAN) && (r->cls & C_CTRL)) continue;
        it->d = r->len[3] != 0xFFu ? et_bert_pool + r->off[3] : it->s->text + it->a;
        it->dlen = r->len[3] != 0xFFu ? r->len[3] : k;
        it->di = 0;
    }
}

/* The run of marks ends at end: the kept ones out in the order of their combining classes
 * (stable), each at the place tokenizers gives its position in the sorted run. There the
 * first character of each character's NFD takes the place of the next character of the run,
 * in text order, and the others the place taken last (before the run: its first character's).
 * A pass over the run counts the first characters per class; then a pass per class of kept
 * marks lets them out, a second cursor finding the place: linear time, no memory per mark. */
static void flush(wp *s, size_t end)
{
    const int any = s->run_kept;
    s->run = s->run_kept = 0;
    if (!any) return;
    uint32_t n_first[256] = {0};
    uint8_t classes[32] = {0};
    const marks start = {s, s->run_start, end, NULL, 0, 0, 0, 0, 0, 0, 0, 0};
    marks it = start;
    while (next_mark(&it)) {
        n_first[it.ccc] += (uint32_t)it.first;
        if (it.kept) classes[it.ccc >> 3] |= (uint8_t)(1u << (it.ccc & 7u));
    }
    size_t k0;
    (void)et_utf8_decode(s->text, s->len, s->run_start, &k0);
    const size_t a = s->src_a, b = s->src_b;
    uint32_t below = 0; /* first characters of lower classes */
    for (uint32_t x = 0; x < 256u; x++) {
        if (classes[x >> 3] >> (x & 7u) & 1u) {
            marks m = start, q = start; /* q: the first characters in text order */
            uint32_t seen = 0, taken = 0;
            size_t qa = s->run_start, qb = s->run_start + k0;
            while (next_mark(&m) && s->rc == ET_OK) {
                if (m.ccc != x) continue;
                seen += (uint32_t)m.first;
                if (!m.kept) continue;
                while (taken < below + seen && next_mark(&q)) {
                    if (!q.first) continue;
                    taken++;
                    qa = q.a;
                    qb = q.b;
                }
                uint8_t u[4];
                s->src_a = qa;
                s->src_b = qb;
                put_char(s, u, utf8_put4(u, m.cp), rec_of(m.cp)->cls);
            }
        }
        below += n_first[x];
    }
    /* the word's text goes on to the run's end, whatever places its marks took: a cut (a
     * limit's stop, split_at's word end) inside the run would leave kept marks behind */
    if (s->in_word && end > s->word_end) s->word_end = end;
    s->src_a = a;
    s->src_b = b;
}

/* Anything but a mark, at offset end: the run ends. */
static inline void end_run(wp *s, size_t end)
{
    if (s->run) flush(s, end);
}

/* A mark of the run, kept or dropped (cls), from the character being normalised. */
static inline void hold(wp *s, unsigned cls)
{
    if (!s->run) {
        s->run = 1;
        s->run_start = s->src_a;
    }
    s->run_kept |= (cls & C_REORDER) != 0;
}

/* A character out of NFD (strip_accents): a kept mark waits for the end of its run; anything
 * else ends the run first. */
static inline void put_nfd(wp *s, const uint8_t *p, size_t k, unsigned cls)
{
    if (cls & C_REORDER) {
        hold(s, cls);
        return;
    }
    end_run(s, s->src_a);
    put_char(s, p, k, cls);
}

/* The characters of the string p[0..len) (valid UTF-8, from the tables), each classified. */
static void put_string(wp *s, const uint8_t *p, size_t len, int nfd)
{
    for (size_t i = 0; i < len && s->rc == ET_OK;) {
        size_t k;
        uint32_t cp = et_utf8_decode(p, len, i, &k);
        unsigned cls = cp < 0x110000u ? rec_of(cp)->cls : 0u;
        if (nfd) put_nfd(s, p + i, k, cls);
        else put_char(s, p + i, k, cls);
        i += k;
    }
}

/* A character's whole NFD d[0..len) (it has a mark of a nonzero class): marks join the run,
 * dropped or kept; other characters end it and come out (lowercased with lower). */
static void put_whole_nfd(wp *s, const uint8_t *d, size_t len, int lower)
{
    for (size_t i = 0; i < len && s->rc == ET_OK;) {
        size_t k;
        const uint32_t cp = et_utf8_decode(d, len, i, &k);
        const et_bert_rec *r = rec_of(cp & 0x1FFFFFu);
        if (r->cls & (C_REORDER | C_MARK)) {
            hold(s, r->cls);
        } else {
            end_run(s, s->src_a);
            if (r->len[1] != 0u) { /* kept (strip_accents drops what maps to nothing) */
                if (lower && r->len[0] != 0xFFu) {
                    put_string(s, et_bert_pool + r->off[0], r->len[0], 0);
                } else {
                    put_char(s, d + i, k, r->cls);
                }
            }
        }
        i += k;
    }
}

static int wordpiece(et_ws *ws, const et_model *m, const uint8_t *t, size_t len, uint32_t *out,
                     size_t *spans, size_t *ends, size_t cap, size_t limit, size_t *n_out,
                     size_t *consumed)
{
    static const uint8_t space = ' ', fffd[3] = {0xEF, 0xBF, 0xBD};
    wp s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.text = t;
    s.len = len;
    s.out = out;
    s.cap = cap;
    s.spans = spans;
    s.ends = ends;
    s.limit = limit;
    if (spans || ends) { /* each character's place: in the workspace's scratch memory; no cache */
        s.src = (uint32_t (*)[2])et_ws_mem(ws);
        s.src_cap = et_ws_bytes(ws) / sizeof *s.src;
    } else if (ws) {
        size_t bytes = 0;
        s.cache = et_ws_cache(ws, &bytes);
        s.n_slots = bytes / sizeof(wp_slot);
        while (s.n_slots & (s.n_slots - 1u)) s.n_slots &= s.n_slots - 1u;
        if (!s.n_slots) s.cache = NULL;
    }
    s.walking = !s.cache;
    const uint32_t fl = m->wp.flags;
    const int clean = (fl & ET_WP_CLEAN) != 0, cjk = (fl & ET_WP_CJK) != 0;
    const int map = (fl & ET_WP_STRIP) ? ((fl & ET_WP_LOWER) ? 2 : 1) : (fl & ET_WP_LOWER) ? 0 : -1;
    const uint8_t *const fold = ascii_fold[(fl & ET_WP_LOWER) != 0];
    size_t i = 0;
    while (i < len && s.rc == ET_OK && !s.stop) {
        size_t k;
        if (t[i] < 0x80u) { /* a run of ASCII: a character a byte, classes from a table */
            /* the classes that end a word (what clean_text drops does not) */
            const unsigned ends = C_SPACE | C_PUNCT | (clean ? C_WS : 0u), drop = clean ? C_CTRL : 0u;
            if (s.run) { /* ASCII characters are starters (but what clean_text drops is gone) */
                size_t j = i;
                while (j < len && t[j] < 0x80u && (et_bert_ascii[t[j]] & drop)) j++;
                if (j < len && t[j] < 0x80u) end_run(&s, j);
            }
            do {
                uint8_t c = t[i];
                unsigned cls = et_bert_ascii[c];
                s.src_a = i;
                s.src_b = i + 1;
                if (!s.in_word && !cls && s.cache) { /* a whole ASCII word: at once */
                    /* its key (case folded) is written as it is scanned; the key is all
                     * zeros between words, and is zeroed again if the word does not fit */
                    size_t j = i;
                    const size_t lim = len - i > KEY ? i + KEY : len; /* (longer: refused) */
                    do {
                        s.key.b[j - i] = fold[t[j]];
                    } while (++j < lim && t[j] < 0x80u && !et_bert_ascii[t[j]]);
                    if (j - i <= KEY && j - i <= m->wp.max_chars &&
                        (j == len || (t[j] < 0x80u && (et_bert_ascii[t[j]] & ends) &&
                                      !(et_bert_ascii[t[j]] & drop)))) {
                        s.in_word = 1;
                        s.word_n = s.n;
                        s.word_end = j;
                        s.wlen = (unsigned)(j - i);
                        s.chars = j - i;
                        end_word(&s);
                        i = j - 1;
                        continue;
                    }
                    s.key.w[0] = s.key.w[1] = 0;
                }
                if (cls & (C_CTRL | C_WS | C_SPACE | C_PUNCT)) {
                    if (clean && (cls & C_CTRL)) continue;
                    if ((clean && (cls & C_WS)) || (cls & C_SPACE)) {
                        end_word(&s);
                        continue;
                    }
                }
                c = fold[c];
                if (cls & C_PUNCT) end_word(&s);
                if (s.in_word && !s.walking && s.wlen < KEY && s.chars < m->wp.max_chars) {
                    s.key.b[s.wlen++] = c; /* the common case: a letter of a short word */
                    s.chars++;
                } else {
                    feed(&s, &c, 1);
                }
                if (cls & C_PUNCT) end_word(&s);
            } while (++i < len && t[i] < 0x80u && !s.stop);
            continue;
        }
        uint32_t cp = et_utf8_decode(t, len, i, &k);
        const uint8_t *p = t + i;
        s.src_a = i;
        s.src_b = i + k;
        if (cp == 0xFFFFFFFFu) {
            cp = 0xFFFDu;
            p = fffd;
        }
        i += k;
        k = cp < 0x80u ? 1 : cp < 0x800u ? 2 : cp < 0x10000u ? 3 : 4;
        const et_bert_rec *r = rec_of(cp);
        if (clean && (r->cls & C_CTRL)) continue;
        const int nfd = map >= 1;
        if (nfd && !(r->cls & (C_REORDER | C_MARK))) end_run(&s, s.src_a); /* a starter */
        if (clean && (r->cls & C_WS)) {
            put_char(&s, &space, 1, C_SPACE);
            continue;
        }
        const int pad = cjk && (r->cls & C_CJK);
        if (pad) end_word(&s);
        if (nfd && r->len[3] != 0xFFu) { /* the marks of its NFD join the run */
            put_whole_nfd(&s, et_bert_pool + r->off[3], r->len[3], map == 2);
        } else if (nfd && (r->cls & C_MARK)) { /* a mark strip_accents drops */
            hold(&s, r->cls);
        } else if (map >= 0 && r->len[map] != 0xFFu) {
            put_string(&s, et_bert_pool + r->off[map], r->len[map], nfd);
        } else if (nfd && (r->cls & C_HANGUL)) { /* NFD: leading, vowel, trailing jamo */
            uint8_t q[9];
            uint32_t x = cp - 0xAC00u, tr = x % 28u;
            size_t w = utf8_put(q, 0x1100u + x / 588u);
            w += utf8_put(q + w, 0x1161u + (x % 588u) / 28u);
            if (tr) w += utf8_put(q + w, 0x11A7u + tr);
            put_string(&s, q, w, 0);
        } else if (nfd) {
            put_nfd(&s, p, k, r->cls);
        } else {
            put_char(&s, p, k, r->cls);
        }
        if (pad) end_word(&s);
    }
    if (s.rc == ET_OK) end_run(&s, len);
    if (s.rc == ET_OK) end_word(&s);
    if (s.rc == ET_E_WORKSPACE && ws) { /* room for the longest word there can be */
        size_t chars = m->wp.max_chars < len ? m->wp.max_chars : len;
        et_ws_set_need(ws, 8u * (chars + 1u));
    }
    *n_out = s.n;
    *consumed = s.stop ? s.done : len;
    return s.rc;
}

/* Whether no text that follows can change the ids of a text that ends with the ASCII byte c:
 * whitespace that ends a word (not a control character clean_text drops) or punctuation (a
 * word of its own). Before c, marks waiting to be sorted were let out (c is a starter). */
static inline int wp_cut_after(uint8_t c, int clean)
{
    if (c >= 0x80u) return 0;
    const unsigned cls = et_bert_ascii[c];
    if (cls & C_PUNCT) return 1;
    return (cls & C_SPACE) && !(clean && (cls & C_CTRL));
}

int et_wordpiece_run(et_ws *ws, const et_model *m, const uint8_t *t, size_t len, int final,
                     uint32_t *out, size_t *ends, size_t cap, size_t limit, size_t *n_out,
                     size_t *consumed)
{
    if (ends && len > 0xFFFFFFFEu) return ET_E_ARG; /* (character places are 32-bit) */
    if (!final) { /* up to the last cut no following text can move */
        const int clean = (m->wp.flags & ET_WP_CLEAN) != 0;
        while (len > 0 && !wp_cut_after(t[len - 1], clean)) len--;
    }
    int rc = wordpiece(ws, m, t, len, out, NULL, ends, cap, limit, n_out, consumed);
    if (rc != ET_OK) *n_out = *consumed = 0;
    return rc;
}

int et_encode_spans(et_ws *ws, const char *text, size_t len, uint32_t *out, size_t *spans,
                    size_t cap, size_t *n_out)
{
    if (!ws || (!text && len) || !out || !spans || !n_out || len > 0xFFFFFFFEu) return ET_E_ARG;
    const et_model *m = et_ws_model(ws);
    if (m->kind != ET_KIND_WORDPIECE) return ET_E_ARG;
    *n_out = 0;
    size_t used = 0;
    int rc = wordpiece(ws, m, (const uint8_t *)text, len, out, spans, NULL, cap, SIZE_MAX, n_out,
                       &used);
    if (rc != ET_OK) *n_out = 0;
    return rc;
}
