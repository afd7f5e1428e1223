/* csrc/encode/ws.h: the workspace's layout, shared by encode.c (which makes workspaces) and the
 * model families that use its memory and caches (bpe.c: the piece and pair caches; unigram.c
 * and wordpiece.c: the first 256 KB of the piece cache as a word cache, the scratch memory). */
#ifndef ET_WS_H
#define ET_WS_H

#include <stdint.h>

#include "../model/model.h"

#define WS_PER_BYTE 49u  /* workspace bytes per piece byte (see heap_merge and piece_ids) */
#define WS_MIN_PIECE 256u

#define PAIR_CACHE 8192u /* valid_pair answers remembered per workspace (a power of 2) */

/* The ids of short pieces, remembered per workspace: most pieces of real text are a few
 * thousand frequent words, and one load from this table replaces a trie walk (a cache miss
 * per byte once the vocabulary outgrows the CPU's caches) and, for pieces that are no single
 * token, the merge. A slot holds one piece of up to PIECE_KEY bytes and up to PIECE_IDS ids;
 * the slots go in sets of two (one 64-byte line): a piece is looked for in both, a hit in the
 * second swaps the two (the piece used last first), and a miss computes the ids as usual,
 * moves the set's first slot to its second and fills the first. (Sets of two against one slot
 * each: 15-17% faster counts of repeated English, code and multilingual text, 13% on man
 * pages; a miss costs ~20 hits. Four, on two lines: 0.7% fewer instructions on a second pass
 * over the man pages, and a line more to fetch at every miss on text never seen.) Pieces of
 * up to LONG_KEY bytes, or with up to LONG_IDS ids (words of non-Latin scripts: two or three
 * bytes a letter), go in a second table of 64-byte slots, in sets of LONG_WAYS the same way
 * (a hit moves the piece to the front, a miss moves the set's slots one place back, the last
 * one's piece gone), one slot per LONG_PER short ones. (Four ways against two: a second pass
 * over the man pages merged ~1,150 long pieces again, now ~190: bench/cache.py; 3.5% fewer
 * instructions.)
 * The answer depends only on the piece's bytes and the workspace's model, so what the tables
 * hold never changes a result. Sizes by measurement (bench/cache.py: hit rates on repeated
 * and on unseen prose, code and multilingual text; then timed): 832 KB a workspace by default.
 * A caller that encodes long texts with many distinct pieces (a few MB of man pages in 20
 * languages hold ~49,000) may give a workspace more slots (et_ws_init_slots: up to
 * PIECE_CACHE_MAX short ones, a quarter as many long ones); the default is PIECE_CACHE.
 * A Unigram or WordPiece model uses the first 256 KB of the short table as its word cache. */
#define LONG_WAYS 4u
#define PIECE_CACHE 16384u /* slots by default (a power of 2) */
#define PIECE_CACHE_MAX ((size_t)1 << 20)
#define PIECE_KEY 16u
#define PIECE_IDS 3u
#define LONG_PER 4u /* short slots per long one (8: man pages in 20 languages 10% slower) */
#define LONG_KEY 32u
#define LONG_IDS 7u
struct piece_slot {
    uint64_t key[2];             /* the piece's bytes, zero-padded to 16 (see piece_key) */
    uint32_t info;               /* length | id count << 8; 0 = empty */
    uint32_t ids[PIECE_IDS];
};
/* Pieces of 8 to HUGE_KEY bytes that the tables above cannot hold (lines of dashes or stars,
 * long runs of spaces; words of non-Latin scripts of more than LONG_IDS ids, which were merged
 * again at every occurrence before), with up to HUGE_IDS ids: a third table, keyed by a hash of
 * their bytes. A slot's ids are the BPE of the piece they were made for, and spell it; so a
 * slot is taken only where its ids spell the piece's bytes exactly: a hash collision can cost
 * a merge, never an id. Sets of LONG_WAYS (the piece used last first), one slot per HUGE_PER
 * short ones (was one per 64, direct-mapped: a second pass over the man pages merged 1,100 such
 * pieces again, 39 KB; now ~70, 2 KB: bench/cache.py). */
#define HUGE_KEY 256u
#define HUGE_IDS 28u
#define HUGE_PER 32u
struct huge_slot {
    uint64_t hash;
    uint32_t info;               /* length | id count << 16; 0 = empty */
    uint32_t ids[HUGE_IDS + 1];  /* (the last unused: 128 bytes a slot) */
};
struct long_slot {
    uint64_t key[4];             /* the piece's bytes, zero-padded to 32 */
    uint32_t info;               /* length | id count << 8; 0 = empty */
    uint32_t ids[LONG_IDS];
};

struct et_ws {
    const et_model *m;
    size_t cap;  /* longest piece the workspace can merge */
    size_t need; /* set with ET_E_WORKSPACE */
    uint64_t *mem;
    struct piece_slot *pieces;  /* piece_mask + 1 slots, 64-byte aligned, in the caller's memory */
    struct long_slot *longs;    /* (piece_mask + 1) / LONG_PER slots, right after them */
    size_t piece_mask;          /* short slots - 1 */
    size_t long_mask;           /* long slots - LONG_WAYS (a set's first slot: a multiple of it) */
    struct huge_slot *huge;     /* (piece_mask + 1) / HUGE_PER slots, after the long ones */
    size_t huge_mask;           /* huge slots - LONG_WAYS (a set's first slot) */
    size_t evictions;           /* pieces put in the cache in place of another (et_ws_evictions) */
    uint64_t pairs[PAIR_CACHE]; /* a << 32 | b, with the answer in b's top bit; 0 = empty */
};

/* The workspace header and a piece cache of `slots` short slots (from a 64-byte boundary)
 * before ws->mem. */
#define WS_HEAD_SLOTS(slots) (((sizeof(struct et_ws) + 7u) & ~(size_t)7u) + 64u + \
                              (size_t)(slots) * sizeof(struct piece_slot) +       \
                              (size_t)(slots) / LONG_PER * sizeof(struct long_slot) + \
                              (size_t)(slots) / HUGE_PER * sizeof(struct huge_slot))

#endif
