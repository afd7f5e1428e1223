/* edgetok.h - the whole public C API of edgetok.
 *
 * Conventions: every function returns an et_status (0 = ET_OK) unless it says otherwise;
 * et_strerror() turns a status into a message. Texts are UTF-8 bytes with explicit lengths
 * (NUL is an ordinary character). Models are read-only once loaded and may be shared by any
 * number of threads; a workspace (et_ws) belongs to one thread at a time. Nothing here
 * allocates on the encode/count/decode paths: the caller owns workspaces and output buffers
 * and sizes them with the *_size / *_bound functions.
 */
#ifndef EDGETOK_H
#define EDGETOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ET_OK = 0,
    ET_E_IO = 1,        /* the file cannot be opened, read or mapped */
    ET_E_FORMAT = 2,    /* not an .etok model, or a truncated / inconsistent one */
    ET_E_VERSION = 3,   /* an .etok model of a format version this build does not read */
    ET_E_NOMEM = 4,     /* out of memory (loading and compiling only) */
    ET_E_ARG = 5,       /* an argument is out of its documented range */
    ET_E_WORKSPACE = 6, /* the workspace is too small for the next piece: see et_ws_need() */
    ET_E_FULL = 7,      /* the output buffer is full: see the function's bound */
    ET_E_TOKEN = 8,     /* a token id that the model does not have */
    ET_E_VOCAB = 9,     /* the vocabulary cannot be compiled (see et_compile_bpe) */
    ET_E_CHECKSUM = 10  /* the model's checksum does not match its contents */
} et_status;

/* A static, human-readable message for a status code (never NULL). */
const char *et_strerror(int status);

/* ---- models ------------------------------------------------------------------------ */

typedef struct et_model et_model;

#define ET_LOAD_HUGEPAGES 1u /* copy the model into huge pages (hugetlb, else THP) if possible */
#define ET_LOAD_VERIFY    2u /* also et_model_verify (reads the whole file) */

/* Maps an .etok file read-only and validates its header and every section offset and size.
 * On success *out owns the mapping; release it with et_model_close(). */
int et_model_open(const char *path, unsigned flags, et_model **out);

/* Same as et_model_open over bytes already in memory (8-byte aligned, kept alive and
 * unchanged by the caller until et_model_close). */
int et_model_from_buffer(const void *buf, size_t len, unsigned flags, et_model **out);

/* Releases a model (NULL is fine). No workspace of it may be used afterwards. */
void et_model_close(et_model *m);

/* Recomputes the checksum over the whole file (ET_E_CHECKSUM), then checks every table the
 * encoders follow, which loading leaves to bounds checks and bounded walks (ET_E_FORMAT):
 * a model made or altered by someone else, its checksum re-sealed, fails here. */
int et_model_verify(const et_model *m);

/* One past the largest token id, ordinary or special (tiktoken's n_vocab). */
uint32_t et_model_n_vocab(const et_model *m);

/* Number of special tokens; et_model_special() returns the i-th one's id (i < that number). */
uint32_t et_model_n_specials(const et_model *m);
uint32_t et_model_special(const et_model *m, uint32_t i);
/* Whether the i-th special is an added token that ordinary text matches (see et_compile_bpe). */
int et_model_special_is_added(const et_model *m, uint32_t i);

/* The pretokenizer kind (ET_PRETOK_*) and its parameter (max digits per group for cl100k). */
#define ET_PRETOK_NONE 0u   /* unigram models: the normaliser, no pretokenizer */
#define ET_PRETOK_CL100K 1u  /* tiktoken's cl100k_base pattern (param: digits per group) */
#define ET_PRETOK_O200K 2u   /* tiktoken's o200k_base pattern */
#define ET_PRETOK_GPT2 3u    /* the GPT-2 / r50k_base / p50k_base pattern (param 1: each digit
                                split off first, as StarCoder, Refact and Command-R do) */
#define ET_PRETOK_LLAMA3 4u  /* the older cl100k pattern of Llama-3, Qwen2 and tokenizer.json
                                files (\s*[\r\n]+ instead of \s++$; param: digits per group) */
#define ET_PRETOK_REGEX 5u   /* none in C: the caller cuts pieces with the recorded pattern and
                                passes one piece per text (et_encode_batch); budgets don't apply */
uint32_t et_model_pretok(const et_model *m, uint32_t *param);

/* Whether text must be in Unicode NFC before encoding (the caller normalises; C does not). */
int et_model_nfc(const et_model *m);

/* Whether some bytes have no token (BPE models imported from Hugging Face: MPT, StarCoder, ...):
 * encoding drops them before merging, as tokenizers does; et_split_at is then refused. */
int et_model_drops_bytes(const et_model *m);

/* A SentencePiece model's BOS and EOS piece ids (ET_NONE where it has none); ET_E_ARG for
 * other models. Encoding never adds them: the caller puts them around the ids it wants. */
int et_model_bos_eos(const et_model *m, uint32_t *bos, uint32_t *eos);

/* How the model's memory is backed: "mmap", "hugetlb", "thp", "heap" or "buffer". */
const char *et_model_backing(const et_model *m);

/* The pretokenizer's regex, as recorded in the model (for information). */
const char *et_model_pattern(const et_model *m);

/* Size of the model in bytes, and of its longest token. */
size_t et_model_size(const et_model *m);
uint32_t et_model_max_token_len(const et_model *m);

/* Whether long pieces take the linear backtracking encoder (1) or the O(n log n) heap (0):
 * the compiler enables backtracking when every token is the BPE of its own bytes. */
int et_model_backtracks(const et_model *m);

/* Whether et_valid_pair, et_is_canonical and canonical automata have the tables they need (1):
 * backtracking models, and those whose other tokens are not the BPE of their bytes (Llama-3's
 * 128k: such a token only ever is a whole piece). */
int et_model_pair_tables(const et_model *m);

/* The model family: ET_MODEL_BPE (tiktoken-style byte-level BPE), ET_MODEL_UNIGRAM
 * (SentencePiece Unigram: normaliser, Viterbi over piece scores, byte fallback) or
 * ET_MODEL_SP_BPE (SentencePiece BPE: the same normaliser, merges by piece score). */
#define ET_MODEL_BPE 1u
#define ET_MODEL_UNIGRAM 2u
#define ET_MODEL_SP_BPE 3u
#define ET_MODEL_WORDPIECE 4u /* BERT WordPiece: BertNormalizer, BertPreTokenizer, MaxMatch */
uint32_t et_model_kind(const et_model *m);

/* A WordPiece model's [UNK], [CLS] and [SEP] ids (the last two ET_NONE where it has none);
 * ET_E_ARG for other models. Encoding never adds [CLS] / [SEP]: the caller puts them around. */
int et_model_wordpiece(const et_model *m, uint32_t *unk, uint32_t *cls, uint32_t *sep);

/* The bytes of token id (ordinary or special): *ptr points into the model, valid while it is
 * loaded. ET_E_TOKEN when the model has no such id. */
int et_token_bytes(const et_model *m, uint32_t id, const uint8_t **ptr, size_t *len);

/* The id of the ordinary token whose bytes are exactly s[0..len), or ET_E_TOKEN. */
int et_token_lookup(const et_model *m, const char *s, size_t len, uint32_t *id);

/* ---- workspaces ---------------------------------------------------------------------- */

typedef struct et_ws et_ws;

/* Bytes a workspace needs to encode pieces of up to max_piece bytes (BPE models: any text
 * whose pieces are all that short; the whole text length is always enough). SentencePiece
 * models may need more than the text's length (normalising expands it): after ET_E_WORKSPACE,
 * take et_ws_size(et_ws_need()) bytes. Every workspace holds a cache of piece ids, 832 KB by
 * default (et_ws_size(0) is about 910 KB; see et_ws_size_slots): keep one per thread and
 * reuse it. */
size_t et_ws_size(size_t max_piece);

/* Lays a workspace for model m out in caller memory mem[0..size) (8-byte aligned, at least
 * et_ws_size(0) bytes). Returns NULL if mem is unaligned or too small. */
et_ws *et_ws_init(const et_model *m, void *mem, size_t size);

/* The same for a workspace whose piece cache has `slots` short slots (a power of two from
 * 16384, the default, to 1 << 20), slots / 4 long ones and slots / 32 for pieces of 33 to
 * 256 bytes: 52 bytes a slot (16384: 832 KB).
 * More slots pay where one text has more distinct pieces than the default holds (a few MB of
 * varied text encoded again and again). et_ws_size_slots returns SIZE_MAX and
 * et_ws_init_slots NULL for another slots. */
size_t et_ws_size_slots(size_t max_piece, size_t slots);
et_ws *et_ws_init_slots(const et_model *m, void *mem, size_t size, size_t slots);

/* Puts what workspace `from` learned (its cached pieces) in `to`, a workspace for the same
 * model laid out since (a larger cache, or for longer pieces), before from's memory is let go:
 * a grown workspace goes on hitting where the old one did. Returns how many pieces `to` holds
 * more (0 for models other than BPE), or SIZE_MAX for bad arguments. */
size_t et_ws_take(et_ws *to, const et_ws *from);

/* A workspace's short slots; and how many pieces a BPE model's last call with it (et_encode,
 * et_count, ...) put in its cache in place of another: where that is a large part of a long
 * text's pieces, the text has more distinct pieces than the cache holds, and if it is encoded
 * again, more slots pay. */
size_t et_ws_slots(const et_ws *ws);
size_t et_ws_evictions(const et_ws *ws);

/* After ET_E_WORKSPACE: the et_ws_size() argument that the piece which stopped work needs. */
size_t et_ws_need(const et_ws *ws);

/* ---- encoding ------------------------------------------------------------------------ */

/* Flags for the encode family. */
#define ET_FINAL 1u /* the text is complete. Without it, work stops at the last cut that no
                       following text can move, and *consumed says where it is (WordPiece:
                       after ASCII whitespace or punctuation; SentencePiece: none, 0). */
#define ET_SETTLE 2u /* without ET_FINAL: when the text after that cut is one long piece (a
                        line of one letter, no cut for megabytes), also encode the leading part
                        of it whose tokens no following text can change (BPE models with
                        backtracking tables). *consumed may then fall inside that piece, on a
                        character boundary: pass the text from there next time, and the ids
                        are exactly those of the whole text. Memory stays bounded. */
#define ET_NO_DUMMY 4u /* SentencePiece models: no dummy whitespace (add_dummy_prefix) around
                          the text, as for text that goes on from a special token (Hugging
                          Face's Metaspace with prepend_scheme "first" past the text's start).
                          Other models ignore it. */

/* Upper bound on the ids that encoding len bytes with model m produces: len for BPE models
 * (no token is empty); more for unigram models (normalisation and byte fallback expand). */
size_t et_encode_bound(const et_model *m, size_t len);

/* Encodes text[0..len) as ordinary text (special tokens are not recognised) into out[0..cap).
 * *n_out = ids written, *consumed = bytes they cover (always a piece boundary). Returns
 * ET_OK when all of text (ET_FINAL) or all up to the last safe cut was encoded; ET_E_FULL or
 * ET_E_WORKSPACE when it stopped early: grow that buffer and call again from *consumed.
 * Invalid UTF-8 never fails: each invalid byte counts as one punctuation character. */
int et_encode(et_ws *ws, const char *text, size_t len, unsigned flags,
              uint32_t *out, size_t cap, size_t *n_out, size_t *consumed);

/* Like et_encode, but only counts: *count = number of ids, no output buffer. */
int et_count(et_ws *ws, const char *text, size_t len, unsigned flags,
             size_t *count, size_t *consumed);

/* ---- token budgets (the text is complete: ET_FINAL is implied) -------------------------- */
/* BPE and WordPiece models (a WordPiece "piece" is a word; et_split_at cuts a word in two only
 * when no whole word fits). */

/* Counts like et_count, but stops after the piece that takes the count past limit: then
 * *count > limit (not the total) and *consumed < len unless that piece ended the text. */
int et_count_limit(et_ws *ws, const char *text, size_t len, size_t limit, size_t *count,
                   size_t *consumed);

/* The longest prefix text[0..*cut) that ends on a character boundary, where the text's own
 * encoding can be cut after *k <= n tokens, and whose own encoding is exactly those first *k
 * tokens (left in ids[0..*k), their end offsets in ends[0..*k)). *cut == 0 when no such
 * prefix exists (n == 0, or the first character alone takes more than n tokens). ids and ends
 * need room for n + 1 tokens plus the last piece's: ET_E_FULL asks for a larger cap. */
int et_split_at(et_ws *ws, const char *text, size_t len, size_t n, uint32_t *ids,
                size_t *ends, size_t cap, size_t *cut, size_t *k);

/* One linear pass for et_count_range: cum[0..len] gets, at each piece boundary b, the number
 * of tokens before b, and ET_NONE (0xFFFFFFFF) elsewhere. The text must encode to fewer than
 * 2^32 - 1 tokens (else ET_E_ARG). After ET_E_WORKSPACE, grow the workspace and call again. */
int et_prefix_counts(et_ws *ws, const char *text, size_t len, uint32_t *cum);

/* *count = the number of tokens of text[i..j) on its own, from the table of et_prefix_counts:
 * only the pieces at either end are encoded (constant time unless a piece there is long). */
int et_count_range(et_ws *ws, const char *text, size_t len, const uint32_t *cum, size_t i,
                   size_t j, size_t *count);

/* BPE models: text[0..len) encoded as one piece (no pretokenizer split; a piece that is a token
 * is that token), as tiktoken's _encode_single_piece. Errors as et_encode; ET_E_ARG otherwise. */
int et_encode_piece(et_ws *ws, const char *text, size_t len, uint32_t *out, size_t cap,
                    size_t *n_out);

/* ---- one piece that grows (appending; models where et_model_backtracks() is 1) ----------- */

/* Extends the encoding of every prefix of a piece from p[0..from) to p[0..to): last[i] = the
 * last token of BPE(p[0..i]), cnt[i] = its token count. walks[0..2 * *n_walks) carries the
 * trie walks between calls (room for 2 * (max_token_len + 1); *n_walks = 0 at first).
 * Amortised constant time per byte. ET_E_ARG for models without backtracking tables. */
int et_piece_grow(et_ws *ws, const char *p, size_t from, size_t to, uint32_t *last,
                  uint32_t *cnt, uint32_t *walks, size_t *n_walks);

/* 1 if text[start..len) is still one piece, given that text[start..old_end) (16 bytes or
 * more) was the last piece of text[0..old_end): the characters added continue its run (letters,
 * punctuation, whitespace as the pattern allows). 0 when it may not be (then pretokenize). */
int et_piece_extends(const et_model *m, const char *text, size_t start, size_t old_end,
                     size_t len);

/* Runs whose last pieces are split inside them, for the appending counter: under o200k and
 * Llama-3 patterns a trailing whitespace run is one piece up to its last line break, then one
 * piece; under o200k an upper-case run (after an optional prefix) is one piece up to its last
 * Lm/Lo letter or mark, then one piece. */
#define ET_RUN_SPACE 1u
#define ET_RUN_UPPER 2u

/* 1 if every character of text[from..len) continues a run of that kind for model m; then
 * *split = the end of the run's last line break (ET_RUN_SPACE) or Lm/Lo/mark (ET_RUN_UPPER)
 * in text[from..len), or from if it has none. 0 for other characters, kinds and models. */
int et_run_extends(const et_model *m, const char *text, size_t from, size_t len, unsigned kind,
                   size_t *split);

/* ---- parallel work ---------------------------------------------------------------------- */

/* Encodes n complete texts (texts[k][0..lens[k])) one after another into out[0..cap), their
 * ids back to back; counts[k] = ids of text k. One call for a whole slice of a batch, so a
 * binding holds its interpreter lock once per slice, not once per text. On ET_E_FULL or
 * ET_E_WORKSPACE, *done texts are complete: grow and call again from text *done. */
int et_encode_batch(et_ws *ws, const char *const *texts, const size_t *lens, size_t n,
                    uint32_t *out, size_t cap, size_t *counts, size_t *done);

/* The first position >= from where the pretokenizer starts a new piece whatever comes before,
 * or len if there is none: encoding text[0..b) and text[b..len) apart and joining the ids
 * gives exactly the ids of the whole text, so shards cut there can be encoded on any core. */
size_t et_shard_cut(const et_model *m, const char *text, size_t len, size_t from);

/* Pretokenizes text[0..len): writes the end offset of each piece to ends[0..cap).
 * Same flags, stopping rules and *consumed as et_encode; at most len pieces. */
int et_pretokenize(const et_model *m, const char *text, size_t len, unsigned flags,
                   size_t *ends, size_t cap, size_t *n_out, size_t *consumed);

/* ---- decoding ------------------------------------------------------------------------ */

/* Total byte length of the tokens ids[0..n). ET_E_TOKEN if one is unknown; then *len is the
 * index of the first unknown id. */
int et_decode_len(const et_model *m, const uint32_t *ids, size_t n, size_t *len);

/* Writes the bytes of ids[0..n) to out[0..cap) (cap from et_decode_len); *n_out = bytes.
 * ET_E_TOKEN as et_decode_len, ET_E_FULL if cap is short (nothing past cap is written). */
int et_decode(const et_model *m, const uint32_t *ids, size_t n,
              char *out, size_t cap, size_t *n_out);

/* et_decode of ids that come in parts, with the bytes of decoding them all at once: for
 * SentencePiece models a piece's text depends on those before (a leading U+2581 is dropped
 * until text is output; byte pieces join into characters, U+FFFD for a byte that starts none),
 * which *state carries (0 before the first part; up to 3 bytes are held back until a part
 * with ET_FINAL). out NULL measures; *state is updated either way (measure with a copy). */
int et_decode_part(const et_model *m, const uint32_t *ids, size_t n, unsigned flags,
                   uint64_t *state, char *out, size_t cap, size_t *n_out);

/* ---- canonical token sequences ---------------------------------------------------------- */

/* *verdict = 1 if ids[0..n) are exactly et_encode of their own bytes (written to buf[0..cap),
 * cap from et_decode_len), 0 if not, -1 if the bytes are not UTF-8 (not decided here), in one
 * linear pass with no encoding: piece boundaries against the pretokenizer, pairs inside pieces
 * with the pair test (et_valid_pair). ET_E_ARG for models without pair tables,
 * with a regex pretokenizer, NFC, dropped bytes or added tokens (re-encode to decide). */
int et_is_canonical(et_ws *ws, const uint32_t *ids, size_t n, char *buf, size_t cap,
                    int *verdict);

/* 1 if BPE of token a's bytes followed by token b's gives exactly [a, b] (both ordinary
 * tokens of a model where et_model_pair_tables() is 1; not a token that only a whole piece
 * can be), else 0. */
int et_valid_pair(const et_model *m, uint32_t a, uint32_t b);

/* ---- token-level automata (constrained decoding) ----------------------------------------- */

typedef struct et_automaton et_automaton;
#define ET_AUT_CANONICAL 1u /* allow only tokens that BPE could put after the last one and
                               after which canonical text can go on (three tokens' look-ahead) */

/* Builds the token automaton of a byte DFA over model m's ordinary tokens (BPE models): n
 * states, trans[256 * q + byte] the next state or -1, accept[q]; state 0 is the start and
 * every other state must be able to reach acceptance. A token is allowed where the DFA reads
 * all its bytes. ET_AUT_CANONICAL needs pair tables (et_model_pair_tables), a C pretokenizer and states that
 * fit an int64 (else ET_E_ARG). Allocates (ET_E_NOMEM); freed with et_automaton_free. Threads may share *out:
 * canonical ones keep what their masks learn (facts, by key), which changes no answer. What a
 * model's canonical automata share (pair set, tokens' shapes, probes) is kept by the model. */
int et_automaton_build(const et_model *m, const int32_t *trans, const uint8_t *accept,
                       uint32_t n, unsigned flags, et_automaton **out);
void et_automaton_free(et_automaton *a);

/* The DFA states that token boundaries reach (rows), and the bytes the automaton holds (not
 * what canonical ones share with the model's others: its pair set, its tokens' shapes). */
uint32_t et_automaton_rows(const et_automaton *a);
size_t et_automaton_bytes(const et_automaton *a);

/* The state after token from state (0 is the start), or -1 when the token is not allowed. */
int64_t et_automaton_next(const et_automaton *a, int64_t state, uint32_t token);

/* 1 if the text read to state is in the language (the DFA state accepts), else 0. */
int et_automaton_accepting(const et_automaton *a, int64_t state);

/* The allowed tokens of state: ascending ids to ids[0..cap) (NULL, 0: count only), and as a
 * bitset (bit i of bits[i / 8], least significant first; nbytes >= (n_vocab + 7) / 8) unless
 * bits is NULL; *n = their number. ET_E_FULL when cap is short. No allocation. */
int et_automaton_allowed(const et_automaton *a, int64_t state, uint32_t *ids, size_t cap,
                         uint8_t *bits, size_t nbytes, size_t *n);

/* The ids whose bits are set in bits[0..nbytes) (as et_automaton_allowed writes them),
 * ascending, to ids[0..cap); *n = their number. ET_E_FULL when cap is short. No allocation. */
int et_bitset_ids(const uint8_t *bits, size_t nbytes, uint32_t *ids, size_t cap, size_t *n);

/* ---- compiling ----------------------------------------------------------------------- */

/* Builds an .etok BPE model where rank == id (tiktoken files; imported merges are checked to
 * follow id order). Token i has bytes
 * bytes[off[i]..off[i+1]) and id ids[i]; specials likewise (sbytes, soff, sids, ns).
 * Bytes that are no token are dropped when encoding; ids must be unique and < 2^31 - 1, with at
 * most ET_MAX_UNUSED_IDS ids below the largest left without a token. pattern is stored for
 * information; flags: ET_COMPILE_NFC (text is NFC-normalised first). sadded (may be NULL):
 * non-zero for a special that is an added token matched in ordinary text (Hugging Face's
 * non-special added tokens; the caller does the matching). On success *out is a malloc'd image of *out_len bytes (free with et_free).
 * ET_E_VOCAB for a vocabulary that cannot be one (no ordinary token, duplicates, empty tokens). */
int et_compile_bpe(const char *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                   const char *sbytes, const uint32_t *soff, const uint32_t *sids,
                   const uint8_t *sadded, uint32_t ns, uint32_t pretok, uint32_t pretok_param,
                   uint32_t flags, const char *pattern, uint8_t **out, size_t *out_len);
#define ET_COMPILE_NFC 1u
#define ET_MAX_UNUSED_IDS (1u << 20) /* an .etok model has tables per id: a vocabulary whose ids
                                      * leave more unused is refused (ET_E_VOCAB), not compiled
                                      * into gigabytes */

/* Compiles a SentencePiece Unigram model: n pieces (bytes[off[i]..off[i+1]), id i), their
 * scores and types (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), the
 * precompiled normaliser charsmap (may be empty), flags (1 add dummy prefix, 2 remove extra
 * whitespace, 4 escape whitespace, 8 byte fallback, 16 whitespace as suffix, 64 a BPE model:
 * merges by score instead of the Viterbi), the unknown, BOS and EOS pieces' ids (the last
 * two ET_NONE when absent), and the text <unk> decodes to. Output as et_compile_bpe;
 * ET_E_VOCAB when no piece is normal, user-defined or unused (nothing for the trie). */
int et_compile_unigram(const char *bytes, const uint32_t *off, uint32_t n, const float *scores,
                       const uint8_t *types, const char *charsmap, size_t charsmap_len,
                       uint32_t flags, uint32_t unk_id, uint32_t bos_id, uint32_t eos_id,
                       const char *unk_surface, uint8_t **out, size_t *out_len);

/* WordPiece models: et_encode of the whole text (ET_FINAL) that also writes where each token
 * comes from: token k covers text[spans[2k]..spans[2k+1]) (a normalised character spans the
 * character it came from; [UNK] its whole word). ET_E_ARG for other models or len >= 2^32 - 1;
 * ET_E_FULL (cap ids) and ET_E_WORKSPACE (a word longer than the workspace holds) as et_encode. */
int et_encode_spans(et_ws *ws, const char *text, size_t len, uint32_t *out, size_t *spans,
                    size_t cap, size_t *n_out);

/* Compiles a WordPiece model: n tokens (bytes[off[i]..off[i+1]), id ids[i]; valid UTF-8),
 * specials as et_compile_bpe (not matched by WordPiece), the continuation prefix ("##"), the
 * [UNK], [CLS] and [SEP] ids (the last two may be ET_NONE), max_input_chars_per_word, and
 * BertNormalizer's flags: 1 clean_text, 2 handle_chinese_chars, 4 strip_accents, 8 lowercase.
 * Output as et_compile_bpe; ET_E_VOCAB for empty or duplicate tokens or ids out of range. */
int et_compile_wordpiece(const char *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                         const char *sbytes, const uint32_t *soff, const uint32_t *sids,
                         uint32_t ns, const char *prefix, uint32_t unk_id, uint32_t cls_id,
                         uint32_t sep_id, uint32_t max_chars, uint32_t flags, uint8_t **out,
                         size_t *out_len);

/* Frees memory returned by edgetok (et_compile_bpe). */
void et_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* EDGETOK_H */
