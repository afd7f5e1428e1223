/* csrc/model: the .etok model format, shared by the loader, the compiler and the encoders.
 *
 * An .etok file is little-endian: a fixed header, then sections at 64-byte aligned offsets.
 *   CELLS    n_cells x {base, check}: the double-array trie over token bytes. The child of
 *            cell s on byte c is t = base[s] + c when check[t] == s. Cell 0 is the root.
 *   VALUES   n_cells x id: the token whose bytes spell the path to the cell, or ET_NONE.
 *   TOKOFF   (n_vocab + 1) x offset into BLOB: token id's bytes are BLOB[off[id]..off[id+1])
 *            (empty = no such id).
 *   BLOB     token bytes, ordinary and special, in id order.
 *   SPECIALS n_specials x id.
 *   BYTEIDS  256 x id: the token of each single byte (every byte is one).
 *   PATTERN  the pretokenizer's regex, NUL-terminated, for information.
 *   SPLIT    n_vocab x {left, right}: the two tokens whose merge made the token, found by
 *            merging its own bytes; {id, id} for single bytes and ids that are not tokens.
 *   PREFIX   n_vocab x id: the longest token that is a proper prefix of the token, or ET_NONE.
 *   TNODE    n_vocab x cell: the trie cell of the token's bytes, or ET_NONE.
 * SPLIT, PREFIX and TNODE serve the backtracking encoder; the header flag ET_FLAG_BACKTRACK
 * says the compiler proved them consistent (every token is the BPE of its own bytes, made
 * from lower-ranked parts).
 * The loader checks every offset and size against the file before use; values read from the
 * trie are bounds-checked where they are used, so a hostile file cannot cause a bad read.
 */
#ifndef ET_MODEL_H
#define ET_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../include/edgetok.h"

#define ET_NONE 0xFFFFFFFFu
#define ET_FORMAT_VERSION 2u
#define ET_KIND_BPE 1u
#define ET_FLAG_BACKTRACK 1u

enum { ET_SEC_CELLS, ET_SEC_VALUES, ET_SEC_TOKOFF, ET_SEC_BLOB, ET_SEC_SPECIALS,
       ET_SEC_BYTEIDS, ET_SEC_PATTERN, ET_SEC_SPLIT, ET_SEC_PREFIX, ET_SEC_TNODE,
       ET_NSEC = 12 };

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
    const uint32_t *cells; /* base, check interleaved */
    const uint32_t *values;
    const uint32_t *tokoff;
    const uint8_t *blob;
    const uint32_t *specials;
    const uint32_t *byteids;
    const char *pattern;
    const uint32_t *split;  /* left, right interleaved */
    const uint32_t *prefix;
    const uint32_t *tnode;
    uint32_t n_cells, n_vocab, n_specials, pretok, pretok_param, max_token_len, flags;
    size_t blob_size, size;
    const uint8_t *data;
    void *map;       /* what to unmap / free, or NULL for a caller's buffer */
    size_t map_len;
    int backing;     /* index into the names of et_model_backing() */
};

/* The trie child of cell s on byte c, or ET_NONE. */
static inline uint32_t et_trie_next(const struct et_model *m, uint32_t s, uint8_t c)
{
    uint32_t t = m->cells[2u * s] + c;
    return (t < m->n_cells && m->cells[2u * t + 1u] == s) ? t : ET_NONE;
}

/* The cell reached from s over p[0..n), or ET_NONE. */
static inline uint32_t et_trie_walk(const struct et_model *m, uint32_t s, const uint8_t *p,
                                    size_t n)
{
    for (size_t i = 0; i < n && s != ET_NONE; i++) s = et_trie_next(m, s, p[i]);
    return s;
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

/* Fills the SPLIT, PREFIX and TNODE tables of a model whose other sections are complete;
 * returns 1 when they are consistent for the backtracking encoder (see ET_FLAG_BACKTRACK). */
int et_bpe_tables(const struct et_model *m, uint32_t *split, uint32_t *prefix, uint32_t *tnode);

uint64_t et_checksum(const uint8_t *p, size_t n);
/* The checksum of a whole image: header (checksum field as zero) and body; the header's
 * header_size must already be checked to be sizeof(et_header) and <= size. */
uint64_t et_image_checksum(const uint8_t *img, size_t size);

#endif
