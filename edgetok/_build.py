"""cffi build script: compiles the C core (csrc/) into the extension module edgetok._native.

Out-of-line API mode over the real sources, so nothing depends on a system library. The cdef
below is edgetok.h's API written by hand; handles stay opaque and Python never sees a struct.
"""
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
SOURCES = ["model/model.c", "model/compile.c", "encode/encode.c", "bpe/bpe.c", "bpe/pairset.c",
           "unigram/unigram.c", "wordpiece/wordpiece.c", "wordpiece/wp_compile.c",
           "automata/automata.c"]

CDEF = """
typedef struct et_model et_model;
typedef struct et_ws et_ws;
#define ET_FINAL ...
#define ET_SETTLE ...
#define ET_NO_DUMMY ...
#define ET_MODEL_BPE ...
#define ET_MODEL_UNIGRAM ...
#define ET_MODEL_SP_BPE ...
#define ET_MODEL_WORDPIECE ...
#define ET_LOAD_HUGEPAGES ...
#define ET_LOAD_VERIFY ...
#define ET_PRETOK_CL100K ...
#define ET_PRETOK_O200K ...
#define ET_PRETOK_GPT2 ...
#define ET_PRETOK_LLAMA3 ...
#define ET_PRETOK_REGEX ...
#define ET_COMPILE_NFC ...
#define ET_MAX_UNUSED_IDS ...
enum { ET_OK, ET_E_IO, ET_E_FORMAT, ET_E_VERSION, ET_E_NOMEM, ET_E_ARG, ET_E_WORKSPACE,
       ET_E_FULL, ET_E_TOKEN, ET_E_VOCAB, ET_E_CHECKSUM };
const char *et_strerror(int status);                 /* message for a status */
int et_model_open(const char *path, unsigned flags, et_model **out);  /* mmap + validate */
int et_model_from_buffer(const void *buf, size_t len, unsigned flags, et_model **out);
void et_model_close(et_model *m);
int et_model_verify(const et_model *m);              /* checksum over the whole file */
uint32_t et_model_n_vocab(const et_model *m);
uint32_t et_model_n_specials(const et_model *m);
uint32_t et_model_special(const et_model *m, uint32_t i);
int et_model_special_is_added(const et_model *m, uint32_t i);
uint32_t et_model_pretok(const et_model *m, uint32_t *param);
const char *et_model_pattern(const et_model *m);    /* the regex recorded in the model */
const char *et_model_backing(const et_model *m);     /* mmap, hugetlb, thp, heap, buffer */
size_t et_model_size(const et_model *m);
uint32_t et_model_max_token_len(const et_model *m);
int et_model_backtracks(const et_model *m);
int et_model_pair_tables(const et_model *m);
int et_model_nfc(const et_model *m);
int et_model_drops_bytes(const et_model *m);
int et_model_bos_eos(const et_model *m, uint32_t *bos, uint32_t *eos);
uint32_t et_model_kind(const et_model *m);
int et_model_wordpiece(const et_model *m, uint32_t *unk, uint32_t *cls, uint32_t *sep);
int et_encode_piece(et_ws *ws, const char *text, size_t len, uint32_t *out, size_t cap,
                    size_t *n_out);             /* BPE: text as one piece */
int et_encode_spans(et_ws *ws, const char *text, size_t len, uint32_t *out, size_t *spans,
                    size_t cap, size_t *n_out);   /* WordPiece: ids and their text ranges */
int et_compile_wordpiece(const char *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                         const char *sbytes, const uint32_t *soff, const uint32_t *sids,
                         uint32_t ns, const char *prefix, uint32_t unk_id, uint32_t cls_id,
                         uint32_t sep_id, uint32_t max_chars, uint32_t flags, uint8_t **out,
                         size_t *out_len);         /* BERT WordPiece -> .etok image */
size_t et_encode_bound(const et_model *m, size_t len);
int et_compile_unigram(const char *bytes, const uint32_t *off, uint32_t n, const float *scores,
                       const uint8_t *types, const char *charsmap, size_t charsmap_len,
                       uint32_t flags, uint32_t unk_id, uint32_t bos_id, uint32_t eos_id,
                       const char *unk_surface,
                       uint8_t **out, size_t *out_len);
int et_token_bytes(const et_model *m, uint32_t id, const uint8_t **ptr, size_t *len);
int et_token_lookup(const et_model *m, const char *s, size_t len, uint32_t *id);
size_t et_ws_size(size_t max_piece);                 /* workspace bytes for pieces <= max */
et_ws *et_ws_init(const et_model *m, void *mem, size_t size);
size_t et_ws_need(const et_ws *ws);                  /* piece size after ET_E_WORKSPACE */
size_t et_ws_size_slots(size_t max_piece, size_t slots);  /* with `slots` piece-cache slots */
et_ws *et_ws_init_slots(const et_model *m, void *mem, size_t size, size_t slots);
size_t et_ws_slots(const et_ws *ws);
size_t et_ws_take(et_ws *to, const et_ws *from);     /* a grown workspace keeps the cache */
size_t et_ws_evictions(const et_ws *ws);             /* in the last call */
int et_encode(et_ws *ws, const char *text, size_t len, unsigned flags,
              uint32_t *out, size_t cap, size_t *n_out, size_t *consumed);
int et_count(et_ws *ws, const char *text, size_t len, unsigned flags,
             size_t *count, size_t *consumed);
int et_count_limit(et_ws *ws, const char *text, size_t len, size_t limit, size_t *count,
                   size_t *consumed);
int et_split_at(et_ws *ws, const char *text, size_t len, size_t n, uint32_t *ids,
                size_t *ends, size_t cap, size_t *cut, size_t *k);
int et_prefix_counts(et_ws *ws, const char *text, size_t len, uint32_t *cum);
int et_count_range(et_ws *ws, const char *text, size_t len, const uint32_t *cum, size_t i,
                   size_t j, size_t *count);
size_t et_shard_cut(const et_model *m, const char *text, size_t len, size_t from);
int et_piece_grow(et_ws *ws, const char *p, size_t from, size_t to, uint32_t *last,
                  uint32_t *cnt, uint32_t *walks, size_t *n_walks);
#define ET_RUN_SPACE 1
#define ET_RUN_UPPER 2
int et_run_extends(const et_model *m, const char *text, size_t from, size_t len, unsigned kind,
                   size_t *split);
int et_piece_extends(const et_model *m, const char *text, size_t start, size_t old_end,
                     size_t len);
int et_encode_batch(et_ws *ws, const char *const *texts, const size_t *lens, size_t n,
                    uint32_t *out, size_t cap, size_t *counts, size_t *done);
int et_pretokenize(const et_model *m, const char *text, size_t len, unsigned flags,
                   size_t *ends, size_t cap, size_t *n_out, size_t *consumed);
int et_decode_len(const et_model *m, const uint32_t *ids, size_t n, size_t *len);
int et_decode(const et_model *m, const uint32_t *ids, size_t n,
              char *out, size_t cap, size_t *n_out);
int et_decode_part(const et_model *m, const uint32_t *ids, size_t n, unsigned flags,
                   uint64_t *state, char *out, size_t cap, size_t *n_out);
int et_compile_bpe(const char *bytes, const uint32_t *off, const uint32_t *ids, uint32_t n,
                   const char *sbytes, const uint32_t *soff, const uint32_t *sids,
                   const uint8_t *sadded, uint32_t ns, uint32_t pretok, uint32_t pretok_param,
                   uint32_t flags, const char *pattern,
                   uint8_t **out, size_t *out_len);    /* vocabulary -> .etok image */
void et_free(void *p);
int et_valid_pair(const et_model *m, uint32_t a, uint32_t b);
typedef struct et_automaton et_automaton;
#define ET_AUT_CANONICAL ...
int et_automaton_build(const et_model *m, const int32_t *trans, const uint8_t *accept,
                       uint32_t n, unsigned flags, et_automaton **out);  /* byte DFA x trie */
void et_automaton_free(et_automaton *a);
uint32_t et_automaton_rows(const et_automaton *a);
size_t et_automaton_bytes(const et_automaton *a);
int64_t et_automaton_next(const et_automaton *a, int64_t state, uint32_t token);  /* -1: no */
int et_automaton_accepting(const et_automaton *a, int64_t state);
int et_automaton_allowed(const et_automaton *a, int64_t state, uint32_t *ids, size_t cap,
                         uint8_t *bits, size_t nbytes, size_t *n);  /* ids and/or bitset */
int et_bitset_ids(const uint8_t *bits, size_t nbytes, uint32_t *ids, size_t cap,
                  size_t *n);                 /* a bitset's ids, ascending */
int et_is_canonical(et_ws *ws, const uint32_t *ids, size_t n, char *buf, size_t cap,
                    int *verdict);            /* encode(decode(ids)) == ids, no encoding */
void *scratch_huge(size_t n);                 /* the binding's own: see SCRATCH below */
void scratch_free(void *p);
"""

# Scratch memory in 2 MB pages where the kernel gives them (transparent huge pages, asked for
# with MADV_HUGEPAGE): a first use faults one page per 2 MB instead of 512 (_ffi._scratch says
# when and what it measured). Not cleared; freed with scratch_free.
SCRATCH = r"""
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#define SCRATCH_PAGE ((size_t)1 << 21)
static void *scratch_huge(size_t n)
{
    void *p = NULL;
    if (n > SIZE_MAX - SCRATCH_PAGE) return NULL;
    n = (n + SCRATCH_PAGE - 1) & ~(SCRATCH_PAGE - 1);
    if (posix_memalign(&p, SCRATCH_PAGE, n)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE); /* (4 KB pages when it fails, as malloc's) */
#endif
    return p;
}
static void scratch_free(void *p) { free(p); }
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "edgetok._native",
    '#include "edgetok.h"\n' + SCRATCH,
    sources=[str((CSRC / s).relative_to(ROOT)) for s in SOURCES],
    include_dirs=[str((CSRC / "include").relative_to(ROOT))],
    extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
