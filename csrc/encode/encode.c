/* csrc/encode: what every model family shares. The workspace (its layout in ws.h), and the
 * public encode functions, which hand the text to the model's family: BPE (csrc/bpe), WordPiece
 * (csrc/wordpiece), Unigram and SentencePiece BPE (csrc/unigram). No family calls another;
 * token budgets that need no family's internals (et_split_at) are made here from their runs.
 */
#include <string.h>

#include "../unicode/ucd.h"
#include "ws.h"

/* Whether slots is a piece-cache size et_ws_init_slots takes. */
static int slots_ok(size_t slots)
{
    return slots >= PIECE_CACHE && slots <= PIECE_CACHE_MAX && !(slots & (slots - 1));
}

size_t et_ws_size_slots(size_t max_piece, size_t slots)
{
    if (!slots_ok(slots)) return SIZE_MAX;
    if (max_piece < WS_MIN_PIECE) max_piece = WS_MIN_PIECE;
    if (max_piece > (SIZE_MAX - WS_HEAD_SLOTS(slots)) / WS_PER_BYTE - 1) return SIZE_MAX;
    return WS_HEAD_SLOTS(slots) + WS_PER_BYTE * (max_piece + 1);
}

size_t et_ws_size(size_t max_piece) { return et_ws_size_slots(max_piece, PIECE_CACHE); }

et_ws *et_ws_init_slots(const et_model *m, void *mem, size_t size, size_t slots)
{
    if (!m || !mem || ((uintptr_t)mem & 7u) || !slots_ok(slots) ||
        size < et_ws_size_slots(0, slots))
        return NULL;
    et_ws *ws = mem;
    ws->m = m;
    ws->cap = (size - WS_HEAD_SLOTS(slots)) / WS_PER_BYTE - 1;
    if (ws->cap > 0xFFFFFFF0u) ws->cap = 0xFFFFFFF0u; /* positions are 32-bit */
    ws->need = 0;
    ws->mem = (uint64_t *)((uint8_t *)mem + WS_HEAD_SLOTS(slots));
    uintptr_t at = (uintptr_t)((uint8_t *)mem + ((sizeof(struct et_ws) + 7u) & ~(size_t)7u));
    ws->pieces = (struct piece_slot *)((at + 63u) & ~(uintptr_t)63u);
    ws->longs = (struct long_slot *)(ws->pieces + slots);
    ws->piece_mask = slots - 1;
    ws->long_mask = slots / LONG_PER - LONG_WAYS;
    ws->huge = (struct huge_slot *)(ws->longs + slots / LONG_PER);
    ws->huge_mask = slots / HUGE_PER - LONG_WAYS;
    ws->evictions = 0;
    memset(ws->pieces, 0, slots * sizeof *ws->pieces);
    memset(ws->longs, 0, slots / LONG_PER * sizeof *ws->longs);
    memset(ws->huge, 0, slots / HUGE_PER * sizeof *ws->huge);
    memset(ws->pairs, 0, sizeof ws->pairs);
    return ws;
}

et_ws *et_ws_init(const et_model *m, void *mem, size_t size)
{
    return et_ws_init_slots(m, mem, size, PIECE_CACHE);
}

size_t et_ws_need(const et_ws *ws) { return ws->need; }
size_t et_ws_slots(const et_ws *ws) { return ws->piece_mask + 1; }
size_t et_ws_evictions(const et_ws *ws) { return ws->evictions; }
void *et_ws_cache(et_ws *ws, size_t *bytes)
{
    *bytes = 8192u * sizeof(struct piece_slot); /* 256 KB (unigram.c, wordpiece.c) */
    return ws->m->kind != ET_KIND_BPE ? ws->pieces : NULL; /* BPE models: the piece cache */
}
void *et_ws_mem(et_ws *ws) { return ws->mem; }
const et_model *et_ws_model(const et_ws *ws) { return ws->m; }
size_t et_ws_bytes(const et_ws *ws) { return WS_PER_BYTE * (ws->cap + 1); }
void et_ws_set_need(et_ws *ws, size_t need) { ws->need = need; }

/* One family's encode loop (see et_bpe_run for the arguments): BPE and WordPiece take every
 * flag, a limit and token ends; Unigram and SentencePiece BPE complete text only. */
static int run(et_ws *ws, const uint8_t *t, size_t len, unsigned flags, uint32_t *out,
               size_t *ends, size_t cap, size_t limit, size_t *n_out, size_t *consumed)
{
    const et_model *m = ws->m;
    const int final = (flags & ET_FINAL) != 0;
    ws->evictions = 0; /* counted for this call (et_ws_evictions) */
    if (m->kind == ET_KIND_BPE)
        return et_bpe_run(ws, t, len, flags, out, ends, cap, limit, n_out, consumed);
    if (m->kind == ET_KIND_WORDPIECE)
        return et_wordpiece_run(ws, m, t, len, final, out, ends, cap, limit, n_out, consumed);
    *consumed = *n_out = 0; /* one sentence: no cut, no limit, no offsets */
    if (!final || ends || limit != SIZE_MAX) return final ? ET_E_ARG : ET_OK;
    int rc = et_unigram_run(ws, m, t, len, flags & ET_NO_DUMMY, out, cap, n_out);
    if (rc == ET_OK) *consumed = len;
    else *n_out = 0;
    return rc;
}

int et_encode(et_ws *ws, const char *text, size_t len, unsigned flags, uint32_t *out,
              size_t cap, size_t *n_out, size_t *consumed)
{
    if (!ws || (!text && len) || (!out && cap) || !n_out || !consumed) return ET_E_ARG;
    uint32_t none;
    return run(ws, (const uint8_t *)text, len, flags, out ? out : &none, NULL, cap, SIZE_MAX,
               n_out, consumed);
}

int et_count(et_ws *ws, const char *text, size_t len, unsigned flags, size_t *count,
             size_t *consumed)
{
    if (!ws || (!text && len) || !count || !consumed) return ET_E_ARG;
    return run(ws, (const uint8_t *)text, len, flags, NULL, NULL, 0, SIZE_MAX, count, consumed);
}

int et_count_limit(et_ws *ws, const char *text, size_t len, size_t limit, size_t *count,
                   size_t *consumed)
{
    if (!ws || (!text && len) || !count || !consumed) return ET_E_ARG;
    return run(ws, (const uint8_t *)text, len, ET_FINAL, NULL, NULL, 0, limit, count, consumed);
}

/* Whether b is a character boundary of t[0..len): not inside a valid UTF-8 sequence. */
int et_char_boundary(const uint8_t *t, size_t len, size_t b)
{
    if (b == 0 || b >= len) return 1;
    size_t k = b - 1, n;
    while (k > 0 && b - k < 4 && (t[k] & 0xC0u) == 0x80u) k--;
    (void)et_utf8_decode(t, len, k, &n);
    return k + n <= b;
}

int et_split_at(et_ws *ws, const char *text_, size_t len, size_t n, uint32_t *ids,
                size_t *ends, size_t cap, size_t *cut, size_t *k_out)
{
    const uint8_t *t = (const uint8_t *)text_;
    if (!ws || (!t && len) || !ids || !ends || !cut || !k_out) return ET_E_ARG;
    if (ws->m->flags & ET_FLAG_GAPS) return ET_E_ARG; /* token ends would skip dropped bytes */
    size_t m = 0, used = 0;
    int rc = run(ws, t, len, ET_FINAL, ids, ends, cap, n, &m, &used);
    if (rc) return rc;
    if (m <= n) { /* all of it fits */
        for (size_t x = 0; x < m; x++) ends[x] &= ~ET_PIECE_END;
        *cut = len;
        *k_out = m;
        return ET_OK;
    }
    /* WordPiece: after a word's last token first (every word end is a safe cut there; a word
     * is cut in two only when no whole word fits), then after any token */
    const int wp = ws->m->kind == ET_KIND_WORDPIECE;
    for (int pass = wp ? 0 : 1; pass < 2; pass++) {
        for (size_t k = n; k > 0; k--) {
            size_t c = ends[k - 1] & ~ET_PIECE_END;
            if ((pass == 0 && !(ends[k - 1] & ET_PIECE_END)) || !et_char_boundary(t, len, c)) continue;
            /* the latest safe piece boundary q <= c among the first k tokens: the pieces
             * before it are the same in text[0..c) as in text, so only text[q..c) needs
             * checking */
            size_t j = k, q = 0;
            while (j > 0) {
                size_t e = ends[j - 1];
                if ((e & ET_PIECE_END) && (wp || et_bpe_safe_cut(ws->m, t, len, e & ~ET_PIECE_END))) {
                    q = e & ~ET_PIECE_END;
                    break;
                }
                j--;
            }
            int same = 1;
            if (q < c) {
                size_t got = 0, u = 0;
                if (cap - m < c - q) return ET_E_FULL;
                rc = run(ws, t + q, c - q, ET_FINAL, ids + m, NULL, cap - m, SIZE_MAX, &got, &u);
                if (rc) return rc;
                same = got == k - j && memcmp(ids + m, ids + j, got * sizeof *ids) == 0;
            }
            if (same) {
                for (size_t x = 0; x < k; x++) ends[x] &= ~ET_PIECE_END;
                *cut = c;
                *k_out = k;
                return ET_OK;
            }
        }
    }
    *cut = 0;
    *k_out = 0;
    return ET_OK;
}

int et_encode_batch(et_ws *ws, const char *const *texts, const size_t *lens, size_t n,
                    uint32_t *out, size_t cap, size_t *counts, size_t *done)
{
    if (!ws || (n && (!texts || !lens || !counts)) || !done || (!out && cap)) return ET_E_ARG;
    size_t w = 0;
    *done = 0;
    for (size_t k = 0; k < n; k++) {
        size_t got = 0, used = 0;
        int rc = run(ws, (const uint8_t *)texts[k], lens[k], ET_FINAL, out + w, NULL, cap - w,
                     SIZE_MAX, &got, &used);
        if (rc) return rc;
        counts[k] = got;
        w += got;
        *done = k + 1;
    }
    return ET_OK;
}
