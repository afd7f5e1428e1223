/* csrc/pretok: Peek2, the regex-free pretokenizer for the cl100k family.
 *
 * It splits text exactly as tiktoken's cl100k_base pattern does,
 *
 *   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
 *   |\s++$|\s*[\r\n]|\s+(?!\S)|\s
 *
 * in one left-to-right pass with O(1) state. Every character falls in one of 7 categories;
 * the categories of the first two characters of a piece (c0, c1) select, through a static 7x8
 * table (c1 may also be end of text), the one alternative of the pattern that can match there,
 * and a small branch function finds where that match ends. The regex never backtracks into
 * an earlier alternative once the table has chosen, because every alternative before the
 * chosen one fails on (c0, c1) alone -- except the contraction, which needs up to three
 * characters and so has its own branch that falls back to the punctuation alternatives.
 * Each character is decoded a bounded number of times, so time is linear in the text.
 *
 * `maxdig` is the longest digit group (3 for cl100k, 1 for models that split every digit).
 * `eot` selects tiktoken's current whitespace rule (\s++$|\s*[\r\n]|\s+(?!\S)|\s); without
 * it, the older \s*[\r\n]+|\s+(?!\S)|\s+ that Llama-3, Qwen2 and tokenizer.json files ship,
 * which differs only at the end of the text: trailing whitespace holding a line break ends
 * a piece after its last line break instead of running to the end.
 */
#ifndef ET_PRETOK_CL100K_H
#define ET_PRETOK_CL100K_H

#include <string.h>

#include "../unicode/ucd.h"

enum { C_L, C_N, C_SP, C_NL, C_WS, C_AP, C_P, C_END };

#define M_(c) (1u << (c))
#define M_LETTER M_(C_L)
#define M_PUNCT (M_(C_AP) | M_(C_P))        /* [^\s\p{L}\p{N}] */
#define M_NEWLINE M_(C_NL)                  /* [\r\n] */
#define M_SPACE (M_(C_SP) | M_(C_NL) | M_(C_WS)) /* \s */

/* Categories of ASCII: ' ' SP, \r \n NL, \t \v \f WS, ' AP, letters L, digits N, rest P. */
static const uint8_t et_cl_ascii[128] = {
    C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_WS, C_NL, C_WS, C_WS, C_NL, C_P,  C_P,
    C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,
    C_SP, C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_AP, C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,
    C_N,  C_N,  C_N,  C_N,  C_N,  C_N,  C_N,  C_N,  C_N,  C_N,  C_P,  C_P,  C_P,  C_P,  C_P,  C_P,
    C_P,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,
    C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_P,  C_P,  C_P,  C_P,  C_P,
    C_P,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,
    C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_L,  C_P,  C_P,  C_P,  C_P,  C_P,
};

/* The branches: which alternative of the pattern matches a piece starting with (c0, c1). */
enum {
    B_WORD,        /* \p{L}++ from c0 */
    B_PREFIXED,    /* [^\r\n\p{L}\p{N}] then \p{L}++ from c1 */
    B_DIGITS,      /* \p{N}{1,maxdig}+ */
    B_PUNCT,       /* [^\s\p{L}\p{N}]++[\r\n]*+ from c0 */
    B_SPACE_PUNCT, /* ' ' then [^\s\p{L}\p{N}]++[\r\n]*+ from c1 */
    B_SPACE,       /* \s++$ | \s*[\r\n] | \s+(?!\S) | \s */
    B_APOS         /* a contraction, else as B_PREFIXED / B_PUNCT */
};

static const uint8_t et_cl_branch[7][8] = {
    /*           L           N        SP       NL       WS       AP             P              END */
    /* L  */ {B_WORD,     B_WORD,  B_WORD,  B_WORD,  B_WORD,  B_WORD,        B_WORD,        B_WORD},
    /* N  */ {B_DIGITS,   B_DIGITS,B_DIGITS,B_DIGITS,B_DIGITS,B_DIGITS,      B_DIGITS,      B_DIGITS},
    /* SP */ {B_PREFIXED, B_SPACE, B_SPACE, B_SPACE, B_SPACE, B_SPACE_PUNCT, B_SPACE_PUNCT, B_SPACE},
    /* NL */ {B_SPACE,    B_SPACE, B_SPACE, B_SPACE, B_SPACE, B_SPACE,       B_SPACE,       B_SPACE},
    /* WS */ {B_PREFIXED, B_SPACE, B_SPACE, B_SPACE, B_SPACE, B_SPACE,       B_SPACE,       B_SPACE},
    /* AP */ {B_APOS,     B_APOS,  B_APOS,  B_APOS,  B_APOS,  B_APOS,        B_APOS,        B_APOS},
    /* P  */ {B_PREFIXED, B_PUNCT, B_PUNCT, B_PUNCT, B_PUNCT, B_PUNCT,       B_PUNCT,       B_PUNCT},
};

static inline unsigned et_cl_cat_slow(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    unsigned b = et_ucd_bits(et_utf8_decode(t, len, i, n));
    if (b & ET_U_L) return C_L;
    if (b & ET_U_N) return C_N;
    if (b & ET_U_S) return C_WS;
    return C_P;
}

ET_ALWAYS_INLINE static inline unsigned et_cl_cat(const uint8_t *t, size_t len, size_t i, size_t *n)
{
    if (t[i] < 0x80u) { *n = 1; return et_cl_ascii[t[i]]; }
    return et_cl_cat_slow(t, len, i, n);
}

/* First position >= i whose character's category is not in mask. ASCII runs take the inner
 * loop: one table load and one bit test per byte. */
ET_ALWAYS_INLINE static inline size_t et_cl_run(const uint8_t *t, size_t len, size_t i,
                                               unsigned mask)
{
    if (mask == M_LETTER) { /* ASCII letters end \p{L}+ unless a non-ASCII character follows */
        i = et_ascii_letters_end(t, len, i, 0);
        if (i >= len || t[i] < 0x80u) return i;
    }
    for (;;) {
        while (i < len && t[i] < 0x80u) {
            if (!((mask >> et_cl_ascii[t[i]]) & 1u)) return i;
            i++;
        }
        if (i >= len) return i;
        size_t n;
        if (!((mask >> et_cl_cat_slow(t, len, i, &n)) & 1u)) return i;
        i += n;
    }
}

/* \s++$ | \s*[\r\n] | \s+(?!\S) | \s, for a piece starting with whitespace at i (eot: the
 * first alternative exists). */
static inline size_t et_cl_space(const uint8_t *t, size_t len, size_t i, int eot)
{
    size_t nl_end = 0, k = et_ascii_spaces_end(t, len, i, &nl_end); /* one byte a character */
    size_t last = k > i ? k - 1 : i, nchars = k - i;
    while (k < len) {
        size_t n;
        unsigned c = et_cl_cat(t, len, k, &n);
        if (!((M_SPACE >> c) & 1u)) break;
        if (c == C_NL) nl_end = k + n;
        last = k;
        k += n;
        nchars++;
    }
    if (k == len && eot) return len; /* \s++$ */
    if (nl_end) return nl_end;  /* \s*[\r\n]: up to the last newline of the run */
    if (k == len) return len;   /* \s+(?!\S) at the end of the text */
    if (nchars >= 2) return last; /* \s+(?!\S): all but the last whitespace character */
    return k;                   /* \s */
}

/* The contraction letter at t[i] folded to ASCII lower case, or 0; *n = its length. */
static inline char et_cl_fold(const uint8_t *t, size_t len, size_t i, size_t *n)
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

/* '(?i:[sdmt]|ll|ve|re) after the apostrophe ending at j: the match end, or 0. */
static inline size_t et_cl_contraction(const uint8_t *t, size_t len, size_t j)
{
    size_t n1 = 0, n2 = 0;
    char a = et_cl_fold(t, len, j, &n1);
    if (a == 's' || a == 'd' || a == 'm' || a == 't') return j + n1;
    if (a != 'l' && a != 'v' && a != 'r') return 0;
    char b = et_cl_fold(t, len, j + n1, &n2);
    if ((a == 'l' && b == 'l') || (a != 'l' && b == 'e')) return j + n1 + n2;
    return 0;
}

/* End of the piece that starts at i (i < len). A space before an ASCII letter (" word", the
 * commonest start) goes straight to its branch, B_PREFIXED, with no categories and no table. */
ET_ALWAYS_INLINE static inline size_t et_cl100k_next(const uint8_t *t, size_t len, size_t i,
                                                     unsigned maxdig, int eot)
{
    if (t[i] == ' ' && i + 1 < len && et_ascii_letter(t[i + 1]))
        return et_cl_run(t, len, i + 2, M_LETTER);
    size_t n0, n1 = 0;
    unsigned c0 = et_cl_cat(t, len, i, &n0);
    size_t j = i + n0;
    unsigned c1 = j < len ? et_cl_cat(t, len, j, &n1) : C_END;
    switch (et_cl_branch[c0][c1]) {
    case B_WORD:
        return et_cl_run(t, len, j, M_LETTER);
    case B_PREFIXED:
        return et_cl_run(t, len, j + n1, M_LETTER);
    case B_DIGITS: {
        size_t k = j;
        for (unsigned d = 1; d < maxdig && k < len; d++) {
            size_t n;
            if (et_cl_cat(t, len, k, &n) != C_N) break;
            k += n;
        }
        return k;
    }
    case B_PUNCT:
        return et_cl_run(t, len, et_cl_run(t, len, j, M_PUNCT), M_NEWLINE);
    case B_SPACE_PUNCT:
        return et_cl_run(t, len, et_cl_run(t, len, j + n1, M_PUNCT), M_NEWLINE);
    case B_SPACE:
        return et_cl_space(t, len, i, eot);
    default: { /* B_APOS */
        size_t e = et_cl_contraction(t, len, j);
        if (e) return e;
        if (c1 == C_L) return et_cl_run(t, len, j + n1, M_LETTER);
        return et_cl_run(t, len, et_cl_run(t, len, j, M_PUNCT), M_NEWLINE);
    }
    }
}

/* The rules the cl100k and o200k families share, for et_cl100k_block and et_o200k_block. */

/* The digits that start a piece: a run's first, and every d-th after it (1 <= d <= 32). */
static inline uint64_t et_block_digits(uint64_t digit, unsigned d)
{
    if (!digit) return 0;
    uint64_t group = digit, starts = digit & ~(digit << 1);
    for (unsigned k = 1; k < d; k++) group &= digit << k; /* the digit ends a run of d */
    for (uint64_t g = starts; (g = (g << d) & group) != 0;) starts |= g;
    return starts;
}

/* The whitespace that starts a piece (space: \s but line breaks that punctuation took; blank:
 * ' ' \t \v \f; nl: space's line breaks): a run's first character, its last when not a line
 * break, and the one after its last line break. */
static inline uint64_t et_block_spaces(uint64_t space, uint64_t blank, uint64_t nl)
{
    uint64_t starts = (space & ~(space << 1)) | (blank & ~(space >> 1));
    for (uint64_t b = blank & (space >> 1) & (nl << 1); b; b &= b - 1) {
        const unsigned k = et_ctz64(b), e = k + et_ctz64(~(blank >> k)); /* after a line break */
        if (e < 64 && !(space >> e & 1u)) starts |= (uint64_t)1 << k; /* and none after */
    }
    return starts;
}

/* The bits of known (the low bits whose bytes the block's rules see whole) whose starts are
 * certain: a whitespace run that reaches the unknown bytes, or the block's end, is out from
 * its second character on (its end, and its last line break, lie past what the block sees;
 * the end of the text too: \s++$). */
static inline uint64_t et_block_keep(uint64_t space, uint64_t known)
{
    if (!(space & known & ~(known >> 1))) return known;
    const uint64_t other = ~space & known;
    return other ? ~(uint64_t)0 >> (et_clz64(other) - 1u) : 0;
}

/* The bytes of the characters that start at the bits of lead: a character's bytes carry its
 * class, so (x << 1) of these says a byte follows one. cont: et_uni64's. */
static inline uint64_t et_block_whole(uint64_t lead, uint64_t cont)
{
    lead |= (lead << 1) & cont;
    lead |= (lead << 1) & cont;
    return lead | ((lead << 1) & cont);
}

/* The piece starts in t[0..64), where a piece starts at t[0], from bit masks of the bytes'
 * classes (every byte of a character carries its class; the scalar et_cl100k_next for the
 * rest): bit k set where a piece starts at t[k], for 0 < k and every k up to the highest bit;
 * 0 where no piece start after t[0] is certain. The pattern has no look-behind, so the pieces
 * from t[0] on are those of the text t[0..) alone: a class mask shifted up one bit says what
 * precedes a byte, with nothing (a boundary) before t[0]. Per character at byte k:
 * - a letter starts a piece unless after a letter, after ' ' or \t \v \f (the prefix of
 *   " word", "\tword"), or after punctuation that starts a piece ([^\r\n\p{L}\p{N}]?+ takes
 *   it) -- except after a contraction ('s 'll ...: it ends the piece, the letter starts one);
 * - punctuation ([^\s\p{L}\p{N}], the apostrophe and marks included) starts one unless after
 *   punctuation (one run) or after ' ' ( ?[^\s\p{L}\p{N}]++);
 * - digits start one at the start of a run and every maxdig digits after it;
 * - \r \n right after punctuation, and after those, belong to its piece ([\r\n]*+); the other
 *   whitespace makes runs, which start a piece, and so do their last character when it is not
 *   a line break (\s+(?!\S) leaves it to the next piece, or \s to itself), and the one after
 *   the run's last line break (\s*[\r\n] ends there), the rest of the run going on.
 * Characters that are not ASCII are classed by et_uni_classes64. The bytes from the first
 * character it cannot class on (\p{N}, \s and a character that may run past t[63]), and a
 * whitespace run that reaches them or the end of the block (its end, and its last line break,
 * lie past what the block sees; the end of the text too: \s++$), are left out: their starts
 * are not set. */
ET_ALWAYS_INLINE static inline uint64_t et_cl100k_starts(const uint8_t *t,
                                                         const struct et_ascii64 *cp,
                                                         const struct et_uni64 *up,
                                                         uint64_t known, unsigned maxdig)
{
    const struct et_ascii64 c = *cp;
    const struct et_uni64 u = *up;
    const uint64_t letter = c.letter | u.letter;
    const uint64_t wt = c.ctl & ~c.newline;                                     /* \t \v \f */
    const uint64_t punct = ~(c.letter | c.digit | c.space | c.ctl | c.high) | u.other;
    const uint64_t nl = c.newline & (c.newline + (c.newline & (punct << 1))); /* not punct's */
    const uint64_t space = c.space | wt | nl, blank = c.space | wt;
    const uint64_t punct_start = punct & ~((punct | c.space) << 1);
    uint64_t letter_start =
        letter & ~((letter | blank | et_block_whole(punct_start, u.cont)) << 1);
    for (uint64_t a = c.apos & punct_start & known & 0x3FFFFFFFFFFFFFFFull; a; a &= a - 1) {
        const unsigned k = et_ctz64(a); /* a contraction ending before t[62] */
        const char x = (char)(t[k + 1] | 0x20u), y = (char)(t[k + 2] | 0x20u);
        size_t end = 0;
        if ((t[k + 1] | t[k + 2]) & 0x80u) end = et_cl_contraction(t, 64, k + 1); /* 0: none */
        else if (x == 's' || x == 'd' || x == 'm' || x == 't') end = k + 2;
        else if ((x == 'l' && y == 'l') || ((x == 'v' || x == 'r') && y == 'e')) end = k + 3;
        if (end && end < 64) letter_start |= letter & (uint64_t)1 << end;
    }
    const uint64_t starts = punct_start | letter_start |
                            et_block_digits(c.digit, maxdig > 1 ? maxdig : 1) |
                            et_block_spaces(space, blank, nl);
    return starts & et_block_keep(space, known) & ~(uint64_t)1;
}

/* et_uni_classes64 for et_cl100k_block: not inlined there, so that the code of ASCII blocks
 * keeps its registers (1-3% fewer instructions on ASCII text). */
ET_NOINLINE static uint64_t et_cl100k_uni(const uint8_t *t, uint64_t high, struct et_uni64 *u)
{
    return et_uni_classes64(t, high, ET_U_N | ET_U_S, 0, u, et_ucd_letter_set, ET_UCD_NLETTER_SET,
                            et_ucd_letter_group, ET_UCD_NLETTER_GROUP);
}

static inline uint64_t et_cl100k_block(const uint8_t *t, unsigned maxdig)
{
    if (maxdig > 32) return 0;
    struct et_ascii64 c;
    struct et_uni64 u = {0, 0, 0, 0, 0};
    et_ascii_classes64(t, &c);
    if (!c.high) return et_cl100k_starts(t, &c, &u, ~(uint64_t)0, maxdig); /* u folds away */
    const uint64_t known = et_cl100k_uni(t, c.high, &u);
    return et_cl100k_starts(t, &c, &u, known, maxdig);
}

static inline int et_cl_is_space(const uint8_t *t, size_t len, size_t i)
{
    size_t n;
    unsigned c = et_cl_cat(t, len, i, &n);
    return c == C_SP || c == C_NL || c == C_WS;
}

/* A cut at piece boundary b (0 < b < len) is safe when the character before it is not
 * whitespace, and the one at b is not a line break after punctuation: the piece that ends at b
 * (letters, digits, punctuation, a contraction) stops at the character at b whatever follows
 * -- only punctuation takes line breaks after it -- so no alternative that ended a piece at b
 * looked past the character at b, and the pattern has no look-behind, so the pieces from b on
 * depend only on text from b on. (Whitespace before b: \s+(?!\S) and \s++$ look further.)
 * Cutting before a space lets streaming cut prose at every word. */
/* The category of the character that ends at b (0 < b <= len): an invalid byte, or a byte of
 * an invalid sequence, is a character of its own. */
static inline unsigned et_cl_cat_before(const uint8_t *t, size_t len, size_t b)
{
    size_t k = b - 1, n;
    while (k > 0 && b - k < 4 && (t[k] & 0xC0u) == 0x80u) k--;
    unsigned c = et_cl_cat(t, len, k, &n);
    if (k + n != b) c = et_cl_cat(t, len, b - 1, &n);
    return c;
}

static inline int et_cl100k_safe_cut(const uint8_t *t, size_t len, size_t b)
{
    size_t n;
    unsigned c = et_cl_cat(t, len, b, &n), p = et_cl_cat_before(t, len, b);
    if (p == C_SP || p == C_NL || p == C_WS) return 0;
    return c != C_NL || p == C_L || p == C_N;
}

/* The branch that scans the piece t[start..end) (start < end), from its first two characters
 * (a one-character piece read as if the text ended there: the same kind of piece); c1: the
 * category of the second. */
static inline unsigned et_cl_piece_branch(const uint8_t *t, size_t start, size_t end,
                                          unsigned *c1)
{
    size_t n0, n1 = 0;
    unsigned c0 = et_cl_cat(t, end, start, &n0);
    *c1 = start + n0 < end ? et_cl_cat(t, end, start + n0, &n1) : C_END;
    return et_cl_branch[c0][*c1];
}

/* Whether the piece t[prev..b) is punctuation ( ?[^\s\p{L}\p{N}]++[\r\n]*+): its run and its
 * line breaks stop at the character at b whatever follows, so it ends at b. */
static inline int et_cl_punct_piece(const uint8_t *t, size_t prev, size_t b)
{
    unsigned c1, br = et_cl_piece_branch(t, prev, b, &c1);
    return br == B_PUNCT || br == B_SPACE_PUNCT || (br == B_APOS && c1 != C_L);
}

/* A cut the streaming encoder may make at boundary b (the piece before it starts at prev)
 * when text goes on past the character at b (it never cuts before the last piece): the safe
 * cuts; after a punctuation piece (its line breaks too: " !\n" " !\n"); and whitespace before
 * b with
 * none at b. A whitespace piece's extent depends on its run and the character after it, fixed
 * once that character is there; punctuation's line breaks stop at it too. (Not safe: the
 * text cut there ends in whitespace, which pieces differently.) */
static inline int et_cl100k_stream_cut(const uint8_t *t, size_t len, size_t prev, size_t b)
{
    if (et_cl100k_safe_cut(t, len, b)) return 1;
    if (et_cl_punct_piece(t, prev, b)) return 1;
    if (et_cl_is_space(t, len, b)) return 0;
    unsigned p = et_cl_cat_before(t, len, b);
    return p == C_SP || p == C_NL || p == C_WS;
}

/* The first position b >= from (0 < b < len) where a piece boundary is certain whatever text
 * comes before: after CR or LF followed by a non-space ASCII character (every piece that
 * holds a line break ends with it when non-space follows), or at a space between two ASCII
 * letters (the letter piece before ends there, the space starts " word"). len if none.
 * The same holds for the o200k and Llama-3 patterns (\s*[\r\n]+ takes a whitespace run up to
 * its last line break, here the one before b, with or without text after it), except that
 * o200k's punctuation pieces take '/' after their line breaks (slash_after_newline: not a cut
 * there). Not for GPT-2's: see et_gpt2_forced_cut. */
static inline size_t et_cl100k_forced_cut(const uint8_t *t, size_t len, size_t from,
                                          int slash_after_newline)
{
    for (size_t b = from ? from : 1; b + 1 < len; b++) {
        uint8_t p = t[b - 1], c = t[b];
        if ((p == '\n' || p == '\r') && c < 0x80u && et_cl_ascii[c] != C_SP &&
            et_cl_ascii[c] != C_NL && et_cl_ascii[c] != C_WS && (c != '/' || !slash_after_newline))
            return b;
        if (c == ' ' && et_ascii_letter(p) && et_ascii_letter(t[b + 1])) return b;
    }
    return len;
}

#endif
