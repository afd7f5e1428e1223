/* csrc/model: the .etok model format, shared by the loader, the compiler and the encoders.
 *
 * An .etok file is little-endian: a fixed header, then sections at 64-byte aligned offsets.
 *   CELLS    n_cells x {base, check, value} (unigram models: {base, check, value, score}, the
 *            score a float32 as in SCORES, NaN where no piece ends): the double-array trie
 *            over token bytes. The child of
 *            cell s on byte c is t = base[s] + c when check[t] == s. Cell 0 is the root.
 *            A cell's value is the token whose bytes spell the path to it, or ET_NONE. One
 *            cell's three words share a cache line (mostly): a trie step is one memory access.
 *   VALUES   empty (the values were a section of their own before format version 5).
 *   TOKOFF   (n_vocab + 1) x offset into BLOB: token id's bytes are BLOB[off[id]..off[id+1])
 *            (empty = no such id).
 *   BLOB     token bytes, ordinary and special, in id order.
 *   SPECIALS n_specials x id.
 *   BYTEIDS  256 x id: the token of each single byte (every byte is one).
 *   PATTERN  the pretokenizer's regex, NUL-terminated, for information.
 *   SPLIT    n_vocab x {left, right}: the two tokens whose merge made the token, found by
 *            merging its own bytes; {id, id} for single bytes and ids that are not tokens;
 *            {ET_NONE, ET_NONE} (ET_FLAG_WHOLE only) for a token merging does not make.
 *   PREFIX   n_vocab x id: the longest token that is a proper prefix of the token, or ET_NONE.
 *   TNODE    n_vocab x cell: the trie cell of the token's bytes, or ET_NONE.
 * SPLIT, PREFIX and TNODE serve the backtracking encoder; the header flag ET_FLAG_BACKTRACK
 * says the compiler proved them consistent (every token is the BPE of its own bytes, made
 * from lower-ranked parts).
 * Unigram models (kind ET_KIND_UNIGRAM) have no SPLIT/PREFIX/TNODE/PATTERN, and instead:
 *   SCORES   n_vocab x float32: what the piece adds to a Viterbi path: its score, NaN for
 *            unused pieces, 0.1 * (bytes - 1) for user-defined ones (sentencepiece 0.2.3's
 *            bonus); SentencePiece BPE: the piece's score (its merge priority)
 *   TYPES    n_vocab x uint8 piece type (ET_SP_*)
 *   UPARAM   one et_uparam;  CHARSMAP  SentencePiece's precompiled normaliser (may be empty)
 *   PATTERN  (optional) the text <unk> decodes to, NUL-terminated
 * Their trie holds the NORMAL, USER_DEFINED and UNUSED pieces; the other pieces (unknown,
 * control, byte) are "specials": in TOKOFF/BLOB only. BYTEIDS maps bytes to <0xNN> pieces.
 * The loader checks every offset and size against the file before use; values read from the
 * trie are bounds-checked where they are used, so a hostile file cannot cause a bad read.
 */
#ifndef ET_MODEL_H
#define ET_MODEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../include/edgetok.h"

#define ET_NONE 0xFFFFFFFFu
#define ET_FORMAT_VERSION 5u
#define ET_MAX_CELLS 0x0FFFFFFFu /* so that the CELLS section's size fits in 32 bits */
#define ET_BPE_CELL 3u /* words per trie cell: BPE models */
#define ET_UNI_CELL 4u /* unigram models (the piece's score in the cell too) */
#define ET_KIND_BPE 1u
#define ET_KIND_UNIGRAM 2u
#define ET_KIND_WORDPIECE 3u
#define ET_WP_CELL 4u /* WordPiece models: base, check, value, failure link */
#define ET_FLAG_BACKTRACK 1u
#define ET_SPECIAL_ADDED 0x80000000u /* in SPECIALS: an added token matched in ordinary text */
#define ET_FLAG_NFC 2u /* text is NFC-normalised before encoding (by the caller) */
#define ET_FLAG_WHOLE 8u /* never with ET_FLAG_BACKTRACK: SPLIT, PREFIX and TNODE are filled as
                           for it, but some tokens are not the BPE of their own bytes (ranks
                           as Llama-3's: a merge ranked below its parts, or a token BPE never
                           makes from its bytes, which only a whole piece can be: SPLIT
                           {ET_NONE, ET_NONE}); the pair test holds with them (et_odd_of) */
#define ET_FLAG_GAPS 4u /* some bytes have no token: they are dropped before merging, as
                           Hugging Face's BPE drops characters it has no token for */

/* Unigram (SentencePiece) models: piece types, as in sentencepiece_model.proto */
enum { ET_SP_NORMAL = 1, ET_SP_UNKNOWN = 2, ET_SP_CONTROL = 3, ET_SP_USER_DEFINED = 4,
       ET_SP_UNUSED = 5, ET_SP_BYTE = 6 };
/* Unigram normaliser and trainer flags (et_uparam.flags) */
#define ET_SP_ADD_DUMMY_PREFIX 1u
#define ET_SP_REMOVE_EXTRA_WS 2u
#define ET_SP_ESCAPE_WS 4u
#define ET_SP_BYTE_FALLBACK 8u
#define ET_SP_WS_SUFFIX 16u
#define ET_SP_HAS_USER 32u /* set by the compiler: some pieces are user-defined */
#define ET_SP_BPE 64u      /* a SentencePiece BPE model: merges by score, not Viterbi */
#define ET_SP_WORDS 128u   /* set by the compiler where U+2581 only leads pieces (a run of them,
                              then none; over normal and user-defined pieces, and for BPE
                              models, unused ones, which must not exist): no piece crosses the
                              start of a word. Unigram models have no user-defined pieces. */

typedef struct {
    uint32_t unk_id, flags;
    float min_score, max_score; /* over NORMAL pieces */
    uint32_t ascii_rules[4];    /* bit b: a charsmap rule may apply at ASCII byte b when the
                                   next byte is ASCII too, or the text ends there */
    uint32_t bos_id, eos_id;    /* the model's BOS and EOS pieces, or ET_NONE */
    uint32_t expand;            /* most normalised bytes per input byte (3 .. 0xFFFF) */
} et_uparam;

enum { ET_SEC_CELLS, ET_SEC_VALUES, ET_SEC_TOKOFF, ET_SEC_BLOB, ET_SEC_SPECIALS,
       ET_SEC_BYTEIDS, ET_SEC_PATTERN, ET_SEC_SPLIT, ET_SEC_PREFIX, ET_SEC_TNODE,
       ET_SEC_SCORES, ET_SEC_TYPES, ET_SEC_UPARAM, ET_SEC_CHARSMAP, ET_SEC_POPOFF,
       ET_SEC_POPS, ET_NSEC = 16 };

/* WordPiece models (kind ET_KIND_WORDPIECE; csrc/wordpiece): CELLS of ET_WP_CELL words, the
 * fourth a cell's failure link (LinMaxMatch: the cell to go on from when the next byte has no
 * child, or ET_NONE: the word is [UNK]); POPOFF (n_cells + 1) x offset and POPS: the tokens a
 * failure at cell s emits are POPS[POPOFF[s]..POPOFF[s+1]); UPARAM holds one et_wparam. The
 * trie holds every token as spelled from the root (cell 0) and, under the root's child on
 * byte 0xFF (wparam.cont, which no UTF-8 text reaches), every continuation token without its
 * prefix ("##"). */
typedef struct {
    uint32_t unk_id, cls_id, sep_id; /* [CLS] / [SEP]: ET_NONE when the model has none */
    uint32_t flags;                  /* ET_WP_* */
    uint32_t max_chars;              /* longer words are [UNK] (max_input_chars_per_word) */
    uint32_t cont;                   /* the continuation root's cell */
    uint32_t prefix_len;             /* bytes of the continuation prefix ("##": 2) */
} et_wparam;
#define ET_WP_CLEAN 1u /* BertNormalizer's clean_text */
#define ET_WP_CJK 2u   /* handle_chinese_chars */
#define ET_WP_STRIP 4u /* strip_accents (NFD, nonspacing marks dropped) */
#define ET_WP_LOWER 8u /* lowercase */
/* decoding, as the tokenizer.json's decoder: by default Hugging Face's WordPiece decoder with
 * its clean-up (what BERT files have; also vocab.txt and GGUF models) */
#define ET_WP_DECODE_JOIN 16u /* no decoder: the tokens joined with spaces, prefixes kept */
#define ET_WP_NO_CLEANUP 32u  /* the WordPiece decoder with cleanup=false */
#define ET_WP_FLAGS 63u

typedef struct {
    uint8_t magic[8]; /* "EDGETOK\0" */
    uint32_t version, header_size;
    uint64_t file_size;
    uint64_t checksum; /* et_image_checksum: header (this field as 0) and body */
    uint32_t kind, pretok, pretok_param, n_vocab;
    uint32_t n_cells, n_specials, max_token_len, flags;
    struct { uint64_t off, size; } sec[ET_NSEC];
} et_header;

struct et_model {
    const uint32_t *cells; /* base, check, value interleaved */
    const uint32_t *tokoff;
    const uint8_t *blob;
    const uint32_t *specials;
    const uint32_t *byteids;
    const char *pattern;
    const char *unk_surface; /* unigram: the text <unk> decodes to */
    const uint32_t *split;  /* left, right interleaved */
    const uint32_t *prefix;
    const uint32_t *tnode;
    const float *scores;
    const uint8_t *types;
    const uint8_t *charsmap;
    size_t charsmap_size;
    et_uparam up;
    const uint32_t *popoff, *pops; /* WordPiece */
    uint32_t n_pops;
    et_wparam wp;
    uint32_t kind, n_cells, n_vocab, n_specials, pretok, pretok_param, max_token_len, flags;
    size_t blob_size, size;
    const uint8_t *data;
    void *map;       /* what to unmap / free, or NULL for a caller's buffer */
    size_t map_len;
    int backing;     /* index into the names of et_model_backing() */
    _Atomic(struct et_pairset *) pairset; /* built on first use (et_pairset_of), or NULL */
    _Atomic int pairset_failed;           /* the tables do not allow one */
    _Atomic(uint64_t *) odd;              /* ET_FLAG_WHOLE: et_odd_of's bitset, or NULL */
    _Atomic(struct et_shapes *) shapes;   /* canonical automata's view of the tokens, made by
                                           * the first one's build (automata.c), or NULL */
};

/* csrc/automata/automata.c: frees a model's et_shapes (NULL: nothing). */
struct et_shapes;
void et_shapes_free(struct et_shapes *s);

/* csrc/bpe/pairset.c: the tokens that et_valid_pair refuses after a token l, for every token
 * at once (a bitset in the pair set's own order of tokens: test token t at bit pos[t]). */
struct et_pairset;
/* The model's pair set, built on the first call and kept until et_model_close (any thread);
 * NULL where the model's tables do not allow one (no consistent pair tables: see pairset.c) or
 * memory ran out. */
const struct et_pairset *et_pairset_of(const struct et_model *m);
void et_pairset_free(struct et_pairset *ps);
size_t et_pairset_bytes(const struct et_pairset *ps);
/* Words of a bitset of the pair set (n_vocab bits), and each token's bit in it. */
size_t et_pairset_words(const struct et_pairset *ps);
const uint32_t *et_pairset_pos(const struct et_pairset *ps);
/* out (et_pairset_words) := et_pairset_invalid(ps, l, ...)'s tokens by id (bit t for token t),
 * from its ranges (no bitset in the pair set's order); returns what it would. */
int et_pairset_by_token(const struct et_pairset *ps, uint32_t l, uint64_t *out);
/* What et_pairset_invalid(ps, l, ...) costs: the ranges it fills (one a token c that extends a
 * token of l's right spine below its parent there). */
size_t et_pairset_cost(const struct et_pairset *ps, uint32_t l);
/* bits (et_pairset_words) := the tokens t with !et_valid_pair(l, t), but for the odd tokens
 * of ET_FLAG_WHOLE models that BPE makes (et_odd_of, SPLIT not ET_NONE: not set here, ask
 * et_valid_pair); 0 when l >= n_vocab or l is such a token. */
int et_pairset_invalid(const struct et_pairset *ps, uint32_t l, uint64_t *bits);

/* The trie child of cell s on byte c, or ET_NONE, for w words per cell. */
static inline uint32_t et_trie_step(const struct et_model *m, uint32_t s, uint8_t c, size_t w)
{
    uint32_t t = m->cells[w * s] + c;
    return (t < m->n_cells && m->cells[w * t + 1u] == s) ? t : ET_NONE;
}

/* The cell reached from s over p[0..n), or ET_NONE, for w words per cell. */
static inline uint32_t et_trie_walk_w(const struct et_model *m, uint32_t s, const uint8_t *p,
                                      size_t n, size_t w)
{
    for (size_t i = 0; i < n && s != ET_NONE; i++) s = et_trie_step(m, s, p[i], w);
    return s;
}

/* BPE models: the child of s on c; the cell reached over p[0..n); the token id at cell s
 * (s < n_cells), or ET_NONE. */
static inline uint32_t et_trie_next(const struct et_model *m, uint32_t s, uint8_t c)
{
    return et_trie_step(m, s, c, ET_BPE_CELL);
}
static inline uint32_t et_trie_walk(const struct et_model *m, uint32_t s, const uint8_t *p,
                                    size_t n)
{
    return et_trie_walk_w(m, s, p, n, ET_BPE_CELL);
}
static inline uint32_t et_value(const struct et_model *m, uint32_t s)
{
    return m->cells[(size_t)ET_BPE_CELL * s + 2u];
}

/* Unigram models: the same, and the score at cell s (NaN where no piece ends). */
static inline uint32_t et_uni_next(const struct et_model *m, uint32_t s, uint8_t c)
{
    return et_trie_step(m, s, c, ET_UNI_CELL);
}
static inline uint32_t et_uni_walk(const struct et_model *m, uint32_t s, const uint8_t *p,
                                   size_t n)
{
    return et_trie_walk_w(m, s, p, n, ET_UNI_CELL);
}
static inline uint32_t et_uni_value(const struct et_model *m, uint32_t s)
{
    return m->cells[(size_t)ET_UNI_CELL * s + 2u];
}
static inline float et_uni_score(const struct et_model *m, uint32_t s)
{
    float f;
    memcpy(&f, &m->cells[(size_t)ET_UNI_CELL * s + 3u], sizeof f);
    return f;
}

/* Bytes of token id (bounds-checked against the blob): length, and *p; 0 if none. */
static inline uint32_t et_tok(const struct et_model *m, uint32_t id, const uint8_t **p)
{
    if (id >= m->n_vocab) return 0;
    uint32_t a = m->tokoff[id], b = m->tokoff[id + 1];
    if (a > b || b > m->blob_size) return 0;
    *p = m->blob + a;
    return b - a;
}

/* One step of the pair-validity test (bpe.c valid_pair) down the merge trees of a pair: the
 * later of the two merges across the boundary is undone (*a's last or *b's first), *limit
 * becomes the rank BPE must not merge the new pair below; 1 when neither can be undone (the
 * pair is valid). Ids < n_vocab (the callers check). */
static inline int et_pair_unwind(const struct et_model *m, uint32_t *a, uint32_t *b,
                                 uint32_t *limit)
{
    if (*a > *b) {
        *limit = *a;
        *a = m->split[2u * *a + 1u];
        if (*a != *limit) return 0;
        *limit = *b + 1u;
        *b = m->split[2u * *b];
        return *b + 1u == *limit;
    }
    *limit = *b + 1u;
    *b = m->split[2u * *b];
    if (*b + 1u != *limit) return 0;
    *limit = *a;
    *a = m->split[2u * *a + 1u];
    return *a == *limit;
}

/* Fills the SPLIT, PREFIX and TNODE tables of a model whose other sections are complete;
 * returns ET_FLAG_BACKTRACK when they are consistent for the backtracking encoder,
 * ET_FLAG_WHOLE when they are but for tokens that are not the BPE of their own bytes or are
 * made by a merge ranked below a part, 0 when neither, -1 when memory ran out. */
int et_bpe_tables(const struct et_model *m, uint32_t *split, uint32_t *prefix, uint32_t *tnode);

/* ET_FLAG_WHOLE models: a bitset of the tokens the pair walk (et_pair_unwind) cannot take,
 * built on the first call and kept until et_model_close (any thread): those with SPLIT
 * {ET_NONE, ET_NONE} (whole pieces only) and those whose merge tree has a merge ranked below
 * a part (valid_pair asks BPE itself); NULL for other models or where memory ran out. */
const uint64_t *et_odd_of(const struct et_model *m);
/* Whether token t (< n_vocab) is in odd, et_odd_of's bitset (NULL: no token is). */
static inline int et_odd(const uint64_t *odd, uint32_t t)
{
    return odd && (odd[t >> 6] >> (t & 63u) & 1u);
}

/* In token end offsets (ends[]): the last token of a piece (BPE) or a word (WordPiece). */
#define ET_PIECE_END ((size_t)1 << (sizeof(size_t) * 8 - 1))

/* BPE's encode loop behind the public functions (csrc/encode): out == NULL counts only; ends
 * (if not NULL) gets each token's end offset, with ET_PIECE_END on the last token of each
 * piece. Work stops after the piece that takes the count past limit (SIZE_MAX: no limit). */
int et_bpe_run(struct et_ws *ws, const uint8_t *t, size_t len, unsigned flags, uint32_t *out,
               size_t *ends, size_t cap, size_t limit, size_t *n_out, size_t *consumed);
/* Whether BPE model m's piece boundary b of t[0..len) is a cut no context can move. */
int et_bpe_safe_cut(const struct et_model *m, const uint8_t *t, size_t len, size_t b);
/* Whether b is a character boundary of t[0..len): not inside a valid UTF-8 sequence. */
int et_char_boundary(const uint8_t *t, size_t len, size_t b);

/* The workspace's scratch memory, its size in bytes, and the et_ws_need() answer to give. */
void *et_ws_mem(struct et_ws *ws);
const struct et_model *et_ws_model(const struct et_ws *ws);
size_t et_ws_bytes(const struct et_ws *ws);
void et_ws_set_need(struct et_ws *ws, size_t need);
/* Unigram and WordPiece models: the workspace's cache memory (64-byte aligned, zeroed by
 * et_ws_init, kept between calls) and its size in bytes; NULL for BPE models, whose piece
 * cache it is. */
void *et_ws_cache(struct et_ws *ws, size_t *bytes);

/* Whether a key of the precompiled charsmap cm[0..size) is the byte b alone or starts with b
 * and then an ASCII byte (else no rule applies at b when an ASCII byte or the end follows). */
int et_charsmap_ascii_rule(const uint8_t *cm, size_t size, uint8_t b);
/* The most bytes the normaliser writes per input byte with charsmap cm[0..size) (at least 3:
 * a space becomes U+2581), or 0 when out of memory. For the compiler. */
uint32_t et_charsmap_expansion(const uint8_t *cm, size_t size);

/* Unigram encoding of text[0..len) (complete) into out[0..cap) / counting (out NULL);
 * flags: ET_NO_DUMMY or 0. */
int et_unigram_run(struct et_ws *ws, const struct et_model *m, const uint8_t *text, size_t len,
                   unsigned flags, uint32_t *out, size_t cap, size_t *n_out);

/* WordPiece encoding of text[0..len) into out[0..cap) / counting (out NULL), as et_bpe_run:
 * without final, only up to the last cut that no following text can move (after ASCII
 * whitespace or punctuation); ends (if not NULL; out too) gets each token's end offset, with
 * ET_PIECE_END on each word's last token; work stops after the word that takes the count past
 * limit. *consumed: the bytes the ids cover. */
int et_wordpiece_run(struct et_ws *ws, const struct et_model *m, const uint8_t *text,
                     size_t len, int final, uint32_t *out, size_t *ends, size_t cap,
                     size_t limit, size_t *n_out, size_t *consumed);

/* What a model family adds to the common image (et_compile_image): its kind, pretokenizer,
 * flags, pattern, byte ids, extra sections; keys (if nk): the trie's keys and their values,
 * when they differ from the tokens; fill (if set): the cells' fourth word, computed from the
 * built trie (base/check/value over n cells; ctx is the caller's). */
typedef struct et_image_extra {
    uint32_t kind, pretok, pretok_param, flags;
    const char *pattern;             /* BPE */
    const uint32_t *byteids;         /* unigram: <0xNN> pieces; BPE: NULL (single-byte tokens) */
    const void *data[ET_NSEC];       /* unigram: SCORES, TYPES, UPARAM, CHARSMAP */
    size_t size[ET_NSEC];
    const uint8_t *kbytes;
    const uint32_t *koff, *kids;
    uint32_t nk;
    int (*fill)(void *ctx, struct et_image_extra *x, const uint32_t *base, const uint32_t *check,
                const uint32_t *value, uint32_t n, uint32_t *fourth);
    void *ctx;
} et_image_extra;

/* Lays out an .etok image (see et_compile_bpe for the token arguments). */
int et_compile_image(const uint8_t *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                     const uint8_t *sbytes, const uint32_t *soff, const uint32_t *sids,
                     const uint8_t *sadded, uint32_t ns, et_image_extra *x, uint8_t **out,
                     size_t *out_len);

uint64_t et_checksum(const uint8_t *p, size_t n);
/* The checksum of a whole image: header (checksum field as zero) and body; the header's
 * header_size must already be checked to be sizeof(et_header) and <= size. */
uint64_t et_image_checksum(const uint8_t *img, size_t size);

#endif
