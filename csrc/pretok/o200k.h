/* csrc/pretok: Peek2 for the o200k family, the regex-free pretokenizer of tiktoken's o200k_base.
 *
 * It splits text exactly as tiktoken's o200k_base pattern does (seven alternatives, tried in
 * order; UP = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], LO = [\p{Ll}\p{Lm}\p{Lo}\p{M}], CONTR =
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)):
 *
 *   A1  [^\r\n\p{L}\p{N}]?UP*LO+CONTR?
 *   A2  [^\r\n\p{L}\p{N}]?UP+LO*CONTR?
 *   A3  \p{N}{1,3}
 *   A4   ?[^\s\p{L}\p{N}]+[\r\n/]*
 *   A5  \s*[\r\n]+
 *   A6  \s+(?!\S)
 *   A7  \s+
 *
 * in one left-to-right pass with O(1) state, in the manner of cl100k.h: every character falls
 * in one of 11 categories, and the categories of the first two characters of a piece (c0, c1)
 * select, through a static 11x12 table, the branch that finds where the match ends.
 *
 * None of the quantifiers is possessive, so the backtracking of A1 and A2 is part of the
 * behaviour. Write s for where the letters start (after the optional prefix) and e_u for the
 * end of the longest UP run from s. A1 backtracks UP* from e_u towards s until LO+ can start:
 *   - if the character at e_u is LO (so Ll: it is not UP), LO+ runs on from e_u;
 *   - else LO+ starts at the LAST character of [s, e_u) that is LO too (Lm, Lo or a mark) and,
 *     as the next character is not LO, ends right after it. So "中A." is "中" "A" "." and
 *     "x\u02b0Y." is "x\u02b0" "Y" ".": the piece stops inside the upper-case run;
 *   - else (the run is all Lu/Lt) A1 fails; A2 then takes the whole run (LO* is empty, since
 *     the character at e_u is not LO), plus a contraction: "HELLO's", "YOU'RE".
 * The contraction is tried once, after the end so found; it never makes LO+ give letters back.
 * The prefix is tried before no prefix. A mark is both a prefix (not \p{L}) and UP and LO, so a
 * piece starting with a mark is A1 with the mark as prefix if that succeeds, else A1 without
 * prefix, which is the mark alone (plus a contraction) -- before A2 with prefix is ever tried:
 * "\u0301AB." is "\u0301" "AB" ".", "\u0301's" is one piece, "!\u0301" is one piece.
 * Unlike cl100k, a contraction is not a piece of its own (" 's" is " '" "s"), and A5 comes
 * before the end-of-text rule: "\n " at the end is "\n" " ".
 *
 * Time is linear: a piece that ends inside an upper-case run (A1's second case, or a lone mark)
 * leaves the rest of the run, all Lu/Lt, to the next piece, which scans it once more and ends
 * at e_u (A2); every other scan stops at the end of its piece plus a bounded lookahead.
 */
#ifndef ET_PRETOK_O200K_H
#define ET_PRETOK_O200K_H

#include <string.h>

#include "../unicode/ucd.h"
#include "cl100k.h" /* the block rules the families share */

/* Categories. LU: Lu, Lt (UP only). LL: Ll (LO only). LB: Lm, Lo (letters in UP and LO).
 * MK: \p{M} (UP and LO, but not \p{L}: a prefix and part of [^\s\p{L}\p{N}]). NL: \r \n.
 * SP: ' '. WS: other \s. AP: '. SL: '/'. P: anything else, invalid UTF-8 bytes included. */
enum { O2_LU, O2_LL, O2_LB, O2_MK, O2_N, O2_SP, O2_NL, O2_WS, O2_AP, O2_SL, O2_P, O2_END };

#define O2M_(c) (1u << (c))
#define O2M_UP (O2M_(O2_LU) | O2M_(O2_LB) | O2M_(O2_MK))              /* UP */
#define O2M_LO (O2M_(O2_LL) | O2M_(O2_LB) | O2M_(O2_MK))              /* LO */
#define O2M_PUNCT (O2M_(O2_MK) | O2M_(O2_AP) | O2M_(O2_SL) | O2M_(O2_P)) /* [^\s\p{L}\p{N}] */
#define O2M_TAIL (O2M_(O2_NL) | O2M_(O2_SL))                            /* [\r\n/] */
#define O2M_SPACE (O2M_(O2_SP) | O2M_(O2_NL) | O2M_(O2_WS))             /* \s */

static const uint8_t et_o2_ascii[128] = {
    O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_WS, O2_NL, O2_WS, O2_WS, O2_NL, O2_P,  O2_P,
    O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,
    O2_SP, O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_AP, O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_SL,
    O2_N,  O2_N,  O2_N,  O2_N,  O2_N,  O2_N,  O2_N,  O2_N,  O2_N,  O2_N,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,  O2_P,
    O2_P,  O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU,
    O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_LU, O2_P,  O2_P,  O2_P,  O2_P,  O2_P,
    O2_P,  O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL,
    O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_LL, O2_P,  O2_P,  O2_P,  O2_P,  O2_P,
};

/* The branches: which alternatives can match a piece starting with (c0, c1). */
enum {
    O2B_WORD,        /* c0 a letter: A1 else A2, from c0 */
    O2B_MARK,        /* c0 a mark: A1 with the mark as prefix, else the mark alone (+ CONTR) */
    O2B_PREFIXED,    /* c0 a prefix, c1 a letter or mark: A1 else A2, from c1 */
    O2B_DIGITS,      /* \p{N}{1,3} */
    O2B_PUNCT,       /* [^\s\p{L}\p{N}]+[\r\n/]* from c0 */
    O2B_SPACE_PUNCT, /* ' ' then [^\s\p{L}\p{N}]+[\r\n/]* from c1 */
    O2B_SPACE        /* \s*[\r\n]+ | \s+(?!\S) | \s+ */
};

#define O2B_W_ O2B_WORD
#define O2B_M_ O2B_MARK
#define O2B_X_ O2B_PREFIXED
#define O2B_D_ O2B_DIGITS
#define O2B_P_ O2B_PUNCT
#define O2B_Q_ O2B_SPACE_PUNCT
#define O2B_S_ O2B_SPACE
static const uint8_t et_o2_branch[11][12] = {
    /*          LU      LL      LB      MK      N       SP      NL      WS      AP      SL      P       END */
    /* LU */ {O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_},
    /* LL */ {O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_},
    /* LB */ {O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_, O2B_W_},
    /* MK */ {O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_, O2B_M_},
    /* N  */ {O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_, O2B_D_},
    /* SP */ {O2B_X_, O2B_X_, O2B_X_, O2B_X_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_Q_, O2B_Q_, O2B_Q_, O2B_S_},
    /* NL */ {O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_},
    /* WS */ {O2B_X_, O2B_X_, O2B_X_, O2B_X_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_, O2B_S_},
    /* AP */ {O2B_X_, O2B_X_, O2B_X_, O2B_X_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_},
    /* SL */ {O2B_X_, O2B_X_, O2B_X_, O2B_X_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_},
    /* P  */ {O2B_X_, O2B_X_, O2B_X_, O2B_X_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_, O2B_P_},
};
#undef O2B_W_
#undef O2B_M_
#undef O2B_X_
#undef O2B_D_
#undef O2B_P_
#undef O2B_Q_
#undef O2B_S_

static inline unsigned et_o2_cat_slow(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    unsigned b = et_ucd_bits(et_utf8_decode(t, len, i, n));
    if (b & ET_U_M) return O2_MK;
    if (b & ET_U_L) {
        if (!(b & ET_U_LO)) return O2_LU;
        return (b & ET_U_UP) ? O2_LB : O2_LL;
    }
    if (b & ET_U_N) return O2_N;
    if (b & ET_U_S) return O2_WS;
    return O2_P;
}

ET_ALWAYS_INLINE static inline unsigned et_o2_cat(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    if (t[i] < 0x80u) { *n = 1; return et_o2_ascii[t[i]]; }
    return et_o2_cat_slow(t, len, i, n);
}

/* First position >= i whose character's category is not in mask. */
ET_ALWAYS_INLINE static inline size_t et_o2_run(const uint8_t *t, size_t len, size_t i,
                                               unsigned mask)
{
    if (mask == O2M_LO) { /* ASCII lower case ends LO+ unless a non-ASCII character follows */
        i = et_ascii_letters_end(t, len, i, 1);
        if (i >= len || t[i] < 0x80u) return i;
    }
    for (;;) {
        while (i < len && t[i] < 0x80u) {
            if (!((mask >> et_o2_ascii[t[i]]) & 1u)) return i;
            i++;
        }
        if (i >= len) return i;
        size_t n;
        if (!((mask >> et_o2_cat_slow(t, len, i, &n)) & 1u)) return i;
        i += n;
    }
}

/* \s*[\r\n]+ | \s+(?!\S) | \s+, for a piece starting with whitespace at i. */
static inline size_t et_o2_space(const uint8_t *t, size_t len, size_t i)
{
    size_t nl_end = 0, k = et_ascii_spaces_end(t, len, i, &nl_end); /* one byte a character */
    size_t last = k > i ? k - 1 : i, nchars = k - i;
    while (k < len) {
        size_t n;
        unsigned c = et_o2_cat(t, len, k, &n);
        if (!((O2M_SPACE >> c) & 1u)) break;
        if (c == O2_NL) nl_end = k + n;
        last = k;
        k += n;
        nchars++;
    }
    if (nl_end) return nl_end;    /* \s*[\r\n]+: up to the last line break of the run */
    if (k == len) return len;     /* \s+(?!\S) at the end of the text */
    if (nchars >= 2) return last; /* \s+(?!\S): all but the last whitespace character */
    return k;                     /* \s+: one whitespace character before non-space */
}

/* The contraction letter at t[i] folded to ASCII lower case, or 0; *n = its length. */
static inline char et_o2_fold(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    if (i >= len) return 0;
    if (t[i] < 0x80u) {
        *n = 1;
        char c = (char)(t[i] | 0x20u);
        return (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z') ? c : 0;
    }
    uint32_t cp = et_utf8_decode(t, len, i, n);
    for (size_t k = 0; k < ET_UCD_NFOLD; k++)
        if (et_ucd_fold[k].cp == cp) return et_ucd_fold[k].ascii;
    return 0;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) after the apostrophe at e: the end of the contraction, or e if
 * there is none. */
static inline size_t et_o2_contraction_slow(const uint8_t *t, size_t len, size_t e)
{
    size_t j = e + 1, n1 = 0, n2 = 0;
    char a = et_o2_fold(t, len, j, &n1);
    if (a == 's' || a == 'd' || a == 'm' || a == 't') return j + n1;
    if (a != 'l' && a != 'v' && a != 'r') return e;
    char b = et_o2_fold(t, len, j + n1, &n2);
    if ((a == 'l' && b == 'l') || (a != 'l' && b == 'e')) return j + n1 + n2;
    return e;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)? at e: the end of the contraction, or e if there is none. */
static inline size_t et_o2_contraction(const uint8_t *t, size_t len, size_t e)
{
    return e < len && t[e] == '\'' ? et_o2_contraction_slow(t, len, e) : e;
}

/* A1 from s (the letters after the prefix, if any), else A2 if a2: the end of the match, or 0
 * if neither matches. See the top of the file for the backtracking this reproduces. */
ET_ALWAYS_INLINE static inline size_t et_o2_word(const uint8_t *t, size_t len, size_t s, int a2)
{
    size_t k = s, n = 0, lo_end = 0;
    unsigned c = O2_END;
    while (k < len) { /* the UP run [s, k); lo_end: the end of its last LO character */
        c = et_o2_cat(t, len, k, &n);
        if (c == O2_LU) {
            k += n;
        } else if (c == O2_LB || c == O2_MK) {
            k += n;
            lo_end = k;
        } else {
            break;
        }
        c = O2_END;
    }
    size_t e;
    if (c == O2_LL) e = et_o2_run(t, len, k + n, O2M_LO); /* A1: LO+ from e_u */
    else if (lo_end) e = lo_end;   /* A1: LO+ is the last LO character of the UP run */
    else if (a2 && k > s) e = k;   /* A2: the Lu/Lt run, LO* empty */
    else return 0;
    return et_o2_contraction(t, len, e);
}

/* End of the piece that starts at i (i < len). */
ET_ALWAYS_INLINE static inline size_t et_o200k_next(const uint8_t *t, size_t len, size_t i)
{
    size_t n0, n1 = 0;
    unsigned c0 = et_o2_cat(t, len, i, &n0);
    size_t j = i + n0;
    unsigned c1 = j < len ? et_o2_cat(t, len, j, &n1) : O2_END;
    unsigned br = et_o2_branch[c0][c1];
    if (br <= O2B_PREFIXED) { /* one call site: the word scanner inlines once */
        size_t e = et_o2_word(t, len, br == O2B_WORD ? i : j, br != O2B_MARK);
        return e ? e : et_o2_contraction(t, len, j); /* O2B_MARK: the mark alone */
    }
    switch (br) {
    case O2B_DIGITS: {
        size_t k = j;
        for (unsigned d = 1; d < 3 && k < len; d++) {
            size_t n;
            if (et_o2_cat(t, len, k, &n) != O2_N) break;
            k += n;
        }
        return k;
    }
    case O2B_PUNCT:
        return et_o2_run(t, len, et_o2_run(t, len, j, O2M_PUNCT), O2M_TAIL);
    case O2B_SPACE_PUNCT:
        return et_o2_run(t, len, et_o2_run(t, len, j + n1, O2M_PUNCT), O2M_TAIL);
    default: /* O2B_SPACE */
        return et_o2_space(t, len, i);
    }
}

/* The piece starts in t[0..64) where a piece starts at t[0], as et_cl100k_block finds them
 * (see there), for o200k's rules: a letter starts a piece unless after a letter, after ' ' or
 * \t \v \f, or after punctuation that starts a piece -- and an upper-case one (Lu, Lt) after a
 * lower-case one (Ll) does (A1 and A2 end a word at an upper-case letter after lower case,
 * "camelCase"); a contraction after a letter belongs to the word (CONTR?), the character after
 * it starts a piece; \r \n after punctuation, and '/' after those, belong to its piece
 * ([\r\n/]*); digits and whitespace as in cl100k. Lm and Lo letters are upper and lower case
 * both: a word runs on over them, except that where an upper-case letter follows one, the word
 * may end there or run on, as the letters after decide (the backtracking of A1, see the top of
 * the file): bits from there on are not set, nor from a mark on (\p{M}: a prefix, and in both
 * word classes), nor from an apostrophe after a contraction on ("a's's": the second is no
 * contraction of a word), nor from one whose contraction the block cannot see whole. */
ET_ALWAYS_INLINE static inline uint64_t et_o200k_starts(const uint8_t *t,
                                                        const struct et_ascii64 *cp,
                                                        const struct et_uni64 *up, uint64_t known)
{
    const struct et_ascii64 c = *cp;
    const struct et_uni64 u = *up;
    const uint64_t letter = c.letter | u.letter, lower = c.lower | u.lower;
    const uint64_t upper = (c.letter & ~c.lower) | u.upper;
    const uint64_t ambiguous = upper & ((u.letter & ~(u.upper | u.lower)) << 1); /* after Lm Lo */
    if (ambiguous) known &= (ambiguous & (0 - ambiguous)) - 1;
    const uint64_t wt = c.ctl & ~c.newline;                                     /* \t \v \f */
    const uint64_t punct = ~(c.letter | c.digit | c.space | c.ctl | c.high) | u.other; /* ' / */
    uint64_t tail = c.newline & (punct << 1), within = c.newline | c.slash; /* punct's [\r\n/]* */
    for (unsigned k = 1; tail && k < 64; k <<= 1) { /* from each line break after punct on */
        tail |= (tail << k) & within;
        within &= within << k;
    }
    const uint64_t nl = c.newline & ~tail, run = punct & ~tail; /* run: ' ?[^\s\p{L}\p{N}]+ */
    const uint64_t space = c.space | wt | nl, blank = c.space | wt;
    const uint64_t punct_start = run & ~((run | c.space) << 1);
    uint64_t starts = punct_start |
                      (letter & ~((letter | blank | et_block_whole(punct_start, u.cont)) << 1)) |
                      (upper & (lower << 1));
    for (uint64_t a = c.apos & (letter << 1) & known; a; a &= a - 1) {
        const unsigned k = et_ctz64(a); /* after a word: a contraction, or a piece start */
        size_t end = 0;
        if (k > 61 || (k > 55 && ((t[k + 1] | t[k + 2]) & 0x80u))) { /* it may run past t[63] */
            known &= ((uint64_t)1 << k) - 1;
            break;
        }
        const char x = (char)(t[k + 1] | 0x20u), y = (char)(t[k + 2] | 0x20u);
        if ((t[k + 1] | t[k + 2]) & 0x80u) end = et_o2_contraction_slow(t, 64, k); /* k: none */
        else if (x == 's' || x == 'd' || x == 'm' || x == 't') end = k + 2;
        else if ((x == 'l' && y == 'l') || ((x == 'v' || x == 'r') && y == 'e')) end = k + 3;
        if (end <= k) continue;
        if (end < 64 && t[end] == '\'') {
            known &= ((uint64_t)1 << k) - 1;
            break;
        }
        starts &= ~((((uint64_t)1 << (end - k)) - 1) << k); /* the word takes it */
        if (end < 64) starts |= (uint64_t)1 << end;
    }
    starts |= et_block_digits(c.digit, 3) | et_block_spaces(space, blank, nl);
    return starts & et_block_keep(space, known) & ~(uint64_t)1;
}

/* et_uni_classes64 for et_o200k_block (not inlined there: see et_cl100k_uni). */
ET_NOINLINE static uint64_t et_o200k_uni(const uint8_t *t, uint64_t high, struct et_uni64 *u)
{
    return et_uni_classes64(t, high, ET_U_N | ET_U_S | ET_U_M, 1, u, et_ucd_case_set,
                            ET_UCD_NCASE_SET, et_ucd_case_group, ET_UCD_NCASE_GROUP);
}

static inline uint64_t et_o200k_block(const uint8_t *t)
{
    struct et_ascii64 c;
    struct et_uni64 u = {0, 0, 0, 0, 0};
    et_ascii_classes64(t, &c);
    if (!c.high) return et_o200k_starts(t, &c, &u, ~(uint64_t)0); /* ASCII: u folds away */
    const uint64_t known = et_o200k_uni(t, c.high, &u);
    return et_o200k_starts(t, &c, &u, known);
}

/* The category of the character that ends at b (0 < b <= len): an invalid byte, or a byte of
 * an invalid sequence, is a character of its own. */
static inline unsigned et_o2_cat_before(const uint8_t *t, size_t len, size_t b)
{
    size_t k = b - 1, n;
    while (k > 0 && b - k < 4 && (t[k] & 0xC0u) == 0x80u) k--;
    unsigned c = et_o2_cat(t, len, k, &n);
    if (k + n != b) c = et_o2_cat(t, len, b - 1, &n);
    return c;
}

/* Whether the piece boundary b (0 < b < len) of t[0..len) is a safe cut: for every text X that
 * is empty or starts with the character at b, t[0..b) + X has a boundary at b and the same
 * pieces before it. The rule, on the categories p of the character before b and c of the one
 * at b, is: p is not whitespace, c is no line break unless p is a letter or digit, and not (c
 * is ' and p is a letter or mark), and not (c is Lu/Lt and p is Lm/Lo/mark). Why that
 * suffices: the pattern has no look-behind, so only what a
 * piece before b looked at can change. Every piece ends where a run of its class ends, after at
 * most 3 digits, or after a contraction; what it looks at past its end is the character there,
 * plus:
 *   - a whitespace piece: the rest of the whitespace run and the character after it (A5 stops at
 *     the last line break, A6 one character short of the run's end, and its (?!\S) would match
 *     at the end of the text) -- excluded by "p is not whitespace";
 *   - a punctuation piece: the line breaks and slashes after it -- a line break at b is
 *     excluded by the second condition (a slash is punctuation: no boundary before it);
 *   - a word piece not followed by a contraction: the character at b is ', then up to two more
 *     ("ab'lx" is "ab" "'lx", but "ab'll" one piece) -- excluded by the second condition;
 *   - an A1 piece that ends at its last Lm/Lo/mark inside an upper-case run ("中" of "中AB."),
 *     or a lone mark: the Lu/Lt letters after b and the character after them ("中ABc" is one
 *     piece) -- excluded by the third. Such a run, when it goes on past b, is one piece (A2) up
 *     to its end, so no boundary lies inside it.
 * Otherwise nothing past the character at b was looked at, and a run that ends at b ends there
 * at the end of the text too. A character at b that is an invalid byte close to len may be
 * the start of a character not yet complete: not safe either. */
static inline int et_o200k_safe_cut(const uint8_t *t, size_t len, size_t b)
{
    size_t n;
    if (b == 0 || b >= len) return 0; /* no piece boundary to cut at */
    unsigned c = et_o2_cat(t, len, b, &n);
    if (c == O2_P && t[b] >= 0x80u && n == 1 && len - b < 4) return 0;
    unsigned p = et_o2_cat_before(t, len, b);
    if ((O2M_SPACE >> p) & 1u) return 0;
    if (c == O2_NL) return p == O2_LU || p == O2_LL || p == O2_LB || p == O2_N;
    if (c == O2_AP && p <= O2_MK) return 0; /* LU, LL, LB, MK */
    if (c == O2_LU && (p == O2_LB || p == O2_MK)) return 0;
    return 1;
}

/* Whether the character at k (k < len) may be the start of one that t[0..len) holds only in
 * part (an invalid byte this close to the end). */
static inline int et_o2_partial(const uint8_t *t, size_t len, size_t k)
{
    size_t n;
    return t[k] >= 0x80u && len - k < 4 && et_o2_cat(t, len, k, &n) == O2_P && n == 1;
}

/* The branch that scans the piece t[start..end) (start < end): from its first two characters,
 * as et_o200k_next chose it (a one-character piece is read as if the text ended there, which
 * gives the same kind of piece). */
static inline unsigned et_o2_piece_branch(const uint8_t *t, size_t start, size_t end)
{
    size_t n0, n1 = 0;
    unsigned c0 = et_o2_cat(t, end, start, &n0);
    return et_o2_branch[c0][start + n0 < end ? et_o2_cat(t, end, start + n0, &n1) : O2_END];
}

/* Whether the word piece t[prev..b) ended in its contraction ("x's", "A'LL"; not "'s", whose
 * apostrophe is the word's prefix): it ends at b whatever follows. */
static inline int et_o2_took_contraction(const uint8_t *t, size_t len, size_t prev, size_t b)
{
    for (size_t a = b >= 6 ? b - 6 : 0; a + 1 < b; a++) /* a contraction is at most 6 bytes */
        if (a > prev && t[a] == '\'' && et_o2_contraction(t, len, a) == b) return 1;
    return 0;
}

/* A cut the streaming encoder may make at boundary b (the piece before it starts at prev),
 * given that the text goes on past
 * t[0..len) (whatever follows): the safe cuts; whitespace before b with none at b (see
 * et_cl100k_stream_cut); and an apostrophe after a letter or mark when what t already holds
 * after it rules a contraction out ("a'b": the word cannot take "'b" whatever comes next), or
 * when the word before it ended in a contraction already ("x's's": "x's" "'s"); after a
 * punctuation piece (its run and its [\r\n/]* stop at the character at b); after a word
 * before anything but an apostrophe or an upper-case letter ("\u0301" "\n"); and before an
 * upper-case letter after a word whose LO+ began at a lower-case one ("Aa\u4e2d" "A": only a
 * word still in its upper-case run can end inside it). */
static inline int et_o200k_stream_cut(const uint8_t *t, size_t len, size_t prev, size_t b)
{
    size_t n;
    if (et_o200k_safe_cut(t, len, b)) return 1;
    if (b == 0 || b >= len) return 0;
    unsigned c = et_o2_cat(t, len, b, &n);
    if (c == O2_P && t[b] >= 0x80u && n == 1 && len - b < 4) return 0;
    const unsigned br = et_o2_piece_branch(t, prev, b); /* the piece before b */
    if (br == O2B_PUNCT || br == O2B_SPACE_PUNCT) return 1; /* stops at b whatever follows */
    /* a word ends where its run does; only an apostrophe (a contraction) or an upper-case
     * letter (after a Lm/Lo letter or mark: the run may be upper case) can move that */
    if (br <= O2B_PREFIXED && c != O2_AP && c != O2_LU) return 1;
    if ((O2M_SPACE >> c) & 1u) return 0;
    unsigned p = et_o2_cat_before(t, len, b);
    if ((O2M_SPACE >> p) & 1u) return 1;
    if (c == O2_LU && (p == O2_LB || p == O2_MK) && br <= O2B_PREFIXED) {
        /* a word whose LO+ began at a lower-case letter ends where the LO run does */
        for (size_t k = prev, w; k < b; k += w)
            if (et_o2_cat(t, b, k, &w) == O2_LL) return 1;
        return 0;
    }
    if (c != O2_AP || p > O2_MK) return 0; /* the apostrophe rule: p is LU, LL, LB or MK */
    if (br <= O2B_PREFIXED && et_o2_took_contraction(t, len, prev, b)) return 1;
    /* (?i:'s|'t|'re|'ve|'m|'ll|'d) needs up to two characters after the apostrophe: each one
     * it looks at must be complete, and no contraction found */
    size_t j = b + 1, n1 = 0;
    if (j >= len || et_o2_partial(t, len, j)) return 0;
    char a = et_o2_fold(t, len, j, &n1);
    if ((a == 'l' || a == 'v' || a == 'r') && (j + n1 >= len || et_o2_partial(t, len, j + n1)))
        return 0;
    return et_o2_contraction(t, len, b) == b;
}

#endif
