/* csrc/pretok: Peek2 for the GPT-2 family (gpt2, r50k_base, p50k_base, p50k_edit).
 *
 * It splits text exactly as tiktoken's r50k pattern does,
 *
 *   '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
 *
 * (the same pieces as the original GPT-2 pattern, whose last two alternatives are
 * \s+(?!\S)|\s+), in one left-to-right pass with O(1) state, in the manner of cl100k.h: 6
 * character categories, a static 6x7 table over those of the first two characters of a piece,
 * and a branch function per alternative. The contractions are case-sensitive and ASCII only
 * ("'S" is "'" "S"); a contraction is a piece of its own ("'sa" is "'s" "a"), and an apostrophe
 * that starts none is punctuation ("'lx" is "'" "lx"). Marks are not \p{L}: "e\u0301" is "e"
 * "\u0301". Every character is decoded a bounded number of times: time is linear.
 *
 * With `nd` (StarCoder, Refact, Command-R: \p{N} split off first, then this pattern on each
 * stretch between digits), every digit is a piece of its own and ends the stretch before it
 * as the end of the text would: " 1" is " " "1", "x  1" is "x" "  " "1".
 */
#ifndef ET_PRETOK_GPT2_H
#define ET_PRETOK_GPT2_H

#include <string.h>

#include "../unicode/ucd.h"

/* L: \p{L}. N: \p{N}. SP: ' '. WS: other \s (\r and \n included). AP: '. P: the rest of
 * [^\s\p{L}\p{N}], marks and invalid UTF-8 bytes included. */
enum { G2_L, G2_N, G2_SP, G2_WS, G2_AP, G2_P, G2_END };

#define G2M_(c) (1u << (c))
#define G2M_PUNCT (G2M_(G2_AP) | G2M_(G2_P))                /* [^\s\p{L}\p{N}] */
#define G2M_SPACE (G2M_(G2_SP) | G2M_(G2_WS))               /* \s */

static const uint8_t et_g2_ascii[128] = {
    G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_WS, G2_WS, G2_WS, G2_WS, G2_WS, G2_P,  G2_P,
    G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,
    G2_SP, G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_AP, G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,
    G2_N,  G2_N,  G2_N,  G2_N,  G2_N,  G2_N,  G2_N,  G2_N,  G2_N,  G2_N,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,
    G2_P,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,
    G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,
    G2_P,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,
    G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_L,  G2_P,  G2_P,  G2_P,  G2_P,  G2_P,
};

enum {
    G2B_WORD,         /* \p{L}++ from c0 */
    G2B_SPACE_WORD,   /* ' ' then \p{L}++ from c1 */
    G2B_DIGITS,       /* \p{N}++ from c0 */
    G2B_SPACE_DIGITS, /* ' ' then \p{N}++ from c1 */
    G2B_PUNCT,        /* [^\s\p{L}\p{N}]++ from c0 */
    G2B_SPACE_PUNCT,  /* ' ' then [^\s\p{L}\p{N}]++ from c1 */
    G2B_SPACE,        /* \s++$ | \s+(?!\S) | \s */
    G2B_APOS          /* a contraction, else as G2B_PUNCT */
};

static const uint8_t et_g2_branch[6][7] = {
    /*              L               N                 SP         WS         AP               P                END */
    /* L  */ {G2B_WORD,       G2B_WORD,         G2B_WORD,  G2B_WORD,  G2B_WORD,        G2B_WORD,        G2B_WORD},
    /* N  */ {G2B_DIGITS,     G2B_DIGITS,       G2B_DIGITS,G2B_DIGITS,G2B_DIGITS,      G2B_DIGITS,      G2B_DIGITS},
    /* SP */ {G2B_SPACE_WORD, G2B_SPACE_DIGITS, G2B_SPACE, G2B_SPACE, G2B_SPACE_PUNCT, G2B_SPACE_PUNCT, G2B_SPACE},
    /* WS */ {G2B_SPACE,      G2B_SPACE,        G2B_SPACE, G2B_SPACE, G2B_SPACE,       G2B_SPACE,       G2B_SPACE},
    /* AP */ {G2B_APOS,       G2B_APOS,         G2B_APOS,  G2B_APOS,  G2B_APOS,        G2B_APOS,        G2B_APOS},
    /* P  */ {G2B_PUNCT,      G2B_PUNCT,        G2B_PUNCT, G2B_PUNCT, G2B_PUNCT,       G2B_PUNCT,       G2B_PUNCT},
};

static inline unsigned et_g2_cat_slow(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    unsigned b = et_ucd_bits(et_utf8_decode(t, len, i, n));
    if (b & ET_U_L) return G2_L;
    if (b & ET_U_N) return G2_N;
    if (b & ET_U_S) return G2_WS;
    return G2_P;
}

ET_ALWAYS_INLINE static inline unsigned et_g2_cat(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    if (t[i] < 0x80u) { *n = 1; return et_g2_ascii[t[i]]; }
    return et_g2_cat_slow(t, len, i, n);
}

/* First position >= i whose character's category is not in mask. */
ET_ALWAYS_INLINE static inline size_t et_g2_run(const uint8_t *t, size_t len, size_t i,
                                               unsigned mask)
{
    if (mask == G2M_(G2_L)) { /* ASCII letters end \p{L}+ unless a non-ASCII character follows */
        i = et_ascii_letters_end(t, len, i, 0);
        if (i >= len || t[i] < 0x80u) return i;
    }
    for (;;) {
        while (i < len && t[i] < 0x80u) {
            if (!((mask >> et_g2_ascii[t[i]]) & 1u)) return i;
            i++;
        }
        if (i >= len) return i;
        size_t n;
        if (!((mask >> et_g2_cat_slow(t, len, i, &n)) & 1u)) return i;
        i += n;
    }
}

/* \s++$ | \s+(?!\S) | \s, for a piece starting with whitespace at i (nd: a digit ends the
 * text). */
static inline size_t et_g2_space(const uint8_t *t, size_t len, size_t i, int nd)
{
    size_t nl_end = 0, k = et_ascii_spaces_end(t, len, i, &nl_end); /* one byte a character */
    size_t last = k > i ? k - 1 : i, nchars = k - i;
    unsigned c = G2_END;
    while (k < len) {
        size_t n;
        c = et_g2_cat(t, len, k, &n);
        if (!((G2M_SPACE >> c) & 1u)) break;
        last = k;
        k += n;
        nchars++;
        c = G2_END;
    }
    if (c == G2_END || (nd && c == G2_N)) return k; /* \s++$ */
    if (nchars >= 2) return last; /* \s+(?!\S): all but the last whitespace character */
    return k;                     /* \s */
}

/* '(?:[sdmt]|ll|ve|re) at the apostrophe at i: the end of the contraction, or 0. */
static inline size_t et_g2_contraction(const uint8_t *t, size_t len, size_t i)
{
    if (len - i < 2) return 0;
    uint8_t a = t[i + 1];
    if (a == 's' || a == 'd' || a == 'm' || a == 't') return i + 2;
    if (len - i < 3) return 0;
    uint8_t b = t[i + 2];
    if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e')) return i + 3;
    return 0;
}

/* End of the piece that starts at i (i < len); nd: digits one by one (see the top). */
ET_ALWAYS_INLINE static inline size_t et_gpt2_next(const uint8_t *t, size_t len, size_t i,
                                                   int nd)
{
    if (t[i] == ' ' && i + 1 < len && et_ascii_letter(t[i + 1])) /* " word": G2B_SPACE_WORD */
        return et_g2_run(t, len, i + 2, G2M_(G2_L));
    size_t n0, n1 = 0;
    unsigned c0 = et_g2_cat(t, len, i, &n0);
    size_t j = i + n0;
    unsigned c1 = j < len ? et_g2_cat(t, len, j, &n1) : G2_END;
    if (nd) {
        if (c0 == G2_N) return j;
        if (c1 == G2_N) c1 = G2_END; /* the stretch ends there */
    }
    switch (et_g2_branch[c0][c1]) {
    case G2B_WORD:
        return et_g2_run(t, len, j, G2M_(G2_L));
    case G2B_SPACE_WORD:
        return et_g2_run(t, len, j + n1, G2M_(G2_L));
    case G2B_DIGITS:
        return et_g2_run(t, len, j, G2M_(G2_N));
    case G2B_SPACE_DIGITS:
        return et_g2_run(t, len, j + n1, G2M_(G2_N));
    case G2B_PUNCT:
        return et_g2_run(t, len, j, G2M_PUNCT);
    case G2B_SPACE_PUNCT:
        return et_g2_run(t, len, j + n1, G2M_PUNCT);
    case G2B_SPACE:
        return et_g2_space(t, len, i, nd);
    default: { /* G2B_APOS */
        size_t e = et_g2_contraction(t, len, i);
        return e ? e : et_g2_run(t, len, j, G2M_PUNCT);
    }
    }
}

/* The category of the character that ends at b (0 < b <= len): an invalid byte, or a byte of
 * an invalid sequence, is a character of its own. */
static inline unsigned et_g2_cat_before(const uint8_t *t, size_t len, size_t b)
{
    size_t k = b - 1, n;
    while (k > 0 && b - k < 4 && (t[k] & 0xC0u) == 0x80u) k--;
    unsigned c = et_g2_cat(t, len, k, &n);
    if (k + n != b) c = et_g2_cat(t, len, b - 1, &n);
    return c;
}

/* Whether the piece boundary b (0 < b < len) of t[0..len) is a safe cut: for every text X that
 * is empty or starts with the character at b, t[0..b) + X has a boundary at b and the same
 * pieces before it. The rule: the character before b is not whitespace, and not (it is ' and
 * the one at b is l, v or r). Why: the pattern has no
 * look-behind, so only what a piece before b looked at can change. A letter, number or
 * punctuation piece ends where its possessive run ends and looks at the character there only;
 * a contraction looks at nothing past its end. A whitespace piece looks at the rest of its run
 * and one character more (\s+(?!\S) stops one short of a run that non-space follows, and \s++$
 * takes the whole run at the end of the text): excluded by the first condition; whitespace at
 * b ends every other piece, which never takes any (so prose cuts at every word). An apostrophe
 * that starts no contraction looks at up to two characters after it ("'lx" is "'" "lx", "'ll"
 * one piece): the second condition. Otherwise a run that ends at b ends there at the end of
 * the text too. A character at b that is an invalid byte close to len may be the start of a
 * character not yet complete: not safe either. With nd (digits split off), a digit on either
 * side of b is a cut too: the stretch before it ends there whatever follows. */
static inline int et_gpt2_safe_cut(const uint8_t *t, size_t len, size_t b, int nd)
{
    size_t n;
    if (b == 0 || b >= len) return 0; /* no piece boundary to cut at */
    unsigned c = et_g2_cat(t, len, b, &n);
    if (c == G2_P && t[b] >= 0x80u && n == 1 && len - b < 4) return 0;
    unsigned p = et_g2_cat_before(t, len, b);
    if (nd && (c == G2_N || p == G2_N)) return 1;
    if ((G2M_SPACE >> p) & 1u) return 0;
    if (p == G2_AP && (t[b] == 'l' || t[b] == 'v' || t[b] == 'r')) return 0;
    return 1;
}

/* A cut the streaming encoder may make at boundary b when text goes on past the character at
 * b: the safe cuts, and also whitespace before b with none at b (see et_cl100k_stream_cut). */
static inline int et_gpt2_stream_cut(const uint8_t *t, size_t len, size_t b, int nd)
{
    size_t n;
    if (et_gpt2_safe_cut(t, len, b, nd)) return 1;
    if (b == 0 || b >= len) return 0;
    unsigned c = et_g2_cat(t, len, b, &n);
    if ((G2M_SPACE >> c) & 1u) return 0;
    if (c == G2_P && t[b] >= 0x80u && n == 1 && len - b < 4) return 0;
    return (G2M_SPACE >> et_g2_cat_before(t, len, b)) & 1u;
}

/* The first position b >= from (0 < b < len) where a piece boundary is certain whatever text
 * comes before, and the pieces of t[0..b) on its own are those of t before b (so the two
 * sides can be encoded apart), or len if none: a space between two ASCII characters that are
 * not whitespace. The piece holding the character before b is no whitespace piece, and no
 * other piece takes a space after its first character, so it ends at b; it looked at nothing
 * past b, so it ends there at the end of the text too (a contraction's apostrophe looks
 * further only at l, v or r); and " " followed by non-space starts a " ?X++" piece.
 * cl100k's rule after a line break does not hold here: with no \s*[\r\n] alternative, a
 * whitespace run before b is one piece at the end of the text (\s++$) but two when non-space
 * follows (\s+(?!\S) leaves its last character), "  \n\n" + "#" against "  \n\n#". With nd
 * (digits split off) a digit next to the space ends the stretch there: the same holds. */
static inline size_t et_gpt2_forced_cut(const uint8_t *t, size_t len, size_t from)
{
    for (size_t b = from ? from : 1; b + 1 < len; b++) {
        uint8_t p = t[b - 1], c = t[b + 1];
        if (t[b] == ' ' && p < 0x80u && c < 0x80u && !((G2M_SPACE >> et_g2_ascii[p]) & 1u) &&
            !((G2M_SPACE >> et_g2_ascii[c]) & 1u))
            return b;
    }
    return len;
}

#endif
