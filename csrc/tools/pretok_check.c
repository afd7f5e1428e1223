/* pretok_check: the regex-free pretokenizers on their own, for tests against the `regex`
 * module, sanitizer runs and timing.
 *
 *   pretok_check [-s] [-m] FAMILY [FILE]
 *       the byte end offset of each piece of FILE (default stdin), space-separated, on one line.
 *       -s: an end b < len that FAMILY's safe_cut accepts is followed by '*'; one that only
 *           its stream_cut accepts (text must go on past it) by '+'.
 *       -m: the input is many texts, each as its length in decimal, '\n', then its bytes; one
 *           line of output each (tests check thousands of texts with one process).
 *       -f: instead of piece ends, the shard cuts (FAMILY's forced_cut, as et_shard_cut
 *           finds them one after another).
 *   pretok_check -b N FAMILY [FILE]
 *       the scan repeated N times: pieces, bytes, bytes per second.
 *
 * FAMILY is cl100k (et_cl100k_next, at most 3 digits a piece), o200k, gpt2, gpt2-digits (gpt2
 * after each digit is split off), llama3 (the older cl100k pattern) or qwen2 (llama3 with one
 * digit a piece).
 * Exit status: 0 ok, 1 an I/O or memory error, 2 usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pretok/cl100k.h"
#include "pretok/gpt2.h"
#include "pretok/o200k.h"

enum { F_CL100K, F_O200K, F_GPT2, F_LLAMA3, F_QWEN2, F_GPT2D };

static size_t next_piece(int fam, const uint8_t *t, size_t len, size_t i)
{
    switch (fam) {
    case F_CL100K: return et_cl100k_next(t, len, i, 3, 1);
    case F_LLAMA3: return et_cl100k_next(t, len, i, 3, 0);
    case F_QWEN2: return et_cl100k_next(t, len, i, 1, 0);
    case F_O200K: return et_o200k_next(t, len, i);
    default: return et_gpt2_next(t, len, i, fam == F_GPT2D);
    }
}

/* The piece starts after i that et_cl100k_block or et_o200k_block finds in the 64 bytes from
 * i, as bits from i (0 for GPT-2's families, and with fewer than 64 bytes left). The loops below
 * take piece ends from them while they last, as the library's do, so the tests check both. */
static uint64_t block_starts(int fam, const uint8_t *t, size_t len, size_t i)
{
    if (len - i < 64) return 0;
    switch (fam) {
    case F_CL100K: case F_LLAMA3: return et_cl100k_block(t + i, 3);
    case F_QWEN2: return et_cl100k_block(t + i, 1);
    case F_O200K: return et_o200k_block(t + i);
    default: return 0;
    }
}

/* The end of the piece at i: from *starts (block_starts at *base) while it lasts. */
static size_t piece_end(int fam, const uint8_t *t, size_t len, size_t i, uint64_t *starts,
                        size_t *base)
{
    if (!*starts) {
        *starts = block_starts(fam, t, len, i);
        *base = i;
    }
    if (!*starts) return next_piece(fam, t, len, i);
    size_t e = *base + et_ctz64(*starts);
    *starts &= *starts - 1;
    return e;
}

static int safe_cut(int fam, const uint8_t *t, size_t len, size_t b)
{
    switch (fam) {
    case F_CL100K: case F_LLAMA3: case F_QWEN2: return et_cl100k_safe_cut(t, len, b);
    case F_O200K: return et_o200k_safe_cut(t, len, b);
    default: return et_gpt2_safe_cut(t, len, b, fam == F_GPT2D);
    }
}

static int stream_cut(int fam, const uint8_t *t, size_t len, size_t prev, size_t b)
{
    switch (fam) {
    case F_CL100K: case F_LLAMA3: case F_QWEN2: return et_cl100k_stream_cut(t, len, prev, b);
    case F_O200K: return et_o200k_stream_cut(t, len, prev, b);
    default: return et_gpt2_stream_cut(t, len, b, fam == F_GPT2D);
    }
}

static size_t forced_cut(int fam, const uint8_t *t, size_t len, size_t from)
{
    switch (fam) {
    case F_CL100K: case F_LLAMA3: case F_QWEN2: return et_cl100k_forced_cut(t, len, from, 0);
    case F_O200K: return et_cl100k_forced_cut(t, len, from, 1);
    default: return et_gpt2_forced_cut(t, len, from);
    }
}

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* The number of pieces; the family is a constant in each loop, so each inlines its scanner.
 * Not inlined itself: `valgrind --tool=callgrind --toggle-collect=count_pieces` counts it. */
NOINLINE static size_t count_pieces(int fam, const uint8_t *t, size_t len)
{
    size_t n = 0, i = 0, base = 0;
    uint64_t starts = 0;
    switch (fam) {
    case F_CL100K: case F_LLAMA3: case F_QWEN2: case F_O200K:
        for (; i < len; n++) i = piece_end(fam, t, len, i, &starts, &base);
        break;
    case F_GPT2D: for (; i < len; n++) i = et_gpt2_next(t, len, i, 1); break;
    default: for (; i < len; n++) i = et_gpt2_next(t, len, i, 0); break;
    }
    return n;
}

static uint8_t *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) return NULL;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *grown = realloc(buf, cap *= 2);
        if (!grown) { free(buf); return NULL; }
        buf = grown;
    }
    if (ferror(f)) { free(buf); return NULL; }
    *len = n;
    return buf;
}

static int usage(void)
{
    fprintf(stderr, "usage: pretok_check [-s|-f] [-m] cl100k|o200k|gpt2 [FILE]\n"
                    "       pretok_check -b N cl100k|o200k|gpt2 [FILE]\n");
    return 2;
}

/* One line: the end offset of every piece of t[0..len); if safe, '*' after the safe cuts and
 * '+' after the other streaming cuts. */
static int print_pieces(int fam, const uint8_t *t, size_t len, int safe)
{
    if (safe == 2) { /* -f */
        const char *sep = "";
        for (size_t b = forced_cut(fam, t, len, 0); b < len; b = forced_cut(fam, t, len, b + 1)) {
            printf("%s%zu", sep, b);
            sep = " ";
        }
        printf("\n");
        return 0;
    }
    const char *sep = "";
    size_t base = 0;
    uint64_t starts = 0;
    for (size_t i = 0; i < len;) {
        size_t e = piece_end(fam, t, len, i, &starts, &base);
        if (e <= i || e > len) { /* never: a piece is never empty nor past the end */
            fprintf(stderr, "pretok_check: bad piece end %zu at %zu\n", e, i);
            return 1;
        }
        const char *mark = !safe || e >= len ? ""
                           : safe_cut(fam, t, len, e) ? "*" : stream_cut(fam, t, len, i, e) ? "+" : "";
        printf("%s%zu%s", sep, e, mark);
        sep = " ";
        i = e;
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    int a = 1, safe = 0, multi = 0;
    long reps = 0;
    for (; a < argc && argv[a][0] == '-' && argv[a][1]; a++) {
        if (strcmp(argv[a], "-s") == 0) {
            safe = 1;
        } else if (strcmp(argv[a], "-f") == 0) {
            safe = 2;
        } else if (strcmp(argv[a], "-m") == 0) {
            multi = 1;
        } else if (strcmp(argv[a], "-b") == 0 && a + 1 < argc) {
            reps = strtol(argv[++a], NULL, 10);
            if (reps < 1) return usage();
        } else {
            return usage();
        }
    }
    if (argc - a < 1 || argc - a > 2 || (reps && (safe || multi))) return usage();
    int fam;
    if (strcmp(argv[a], "cl100k") == 0) fam = F_CL100K;
    else if (strcmp(argv[a], "o200k") == 0) fam = F_O200K;
    else if (strcmp(argv[a], "gpt2") == 0) fam = F_GPT2;
    else if (strcmp(argv[a], "gpt2-digits") == 0) fam = F_GPT2D;
    else if (strcmp(argv[a], "llama3") == 0) fam = F_LLAMA3;
    else if (strcmp(argv[a], "qwen2") == 0) fam = F_QWEN2;
    else return usage();
    FILE *f = argc - a == 2 ? fopen(argv[a + 1], "rb") : stdin;
    if (!f) { perror(argv[a + 1]); return 1; }
    size_t len = 0;
    uint8_t *t = read_all(f, &len);
    if (f != stdin) fclose(f);
    if (!t) { fprintf(stderr, "pretok_check: cannot read the input\n"); return 1; }

    int rc = 0;
    if (reps) {
        struct timespec t0, t1;
        size_t n = 0;
        timespec_get(&t0, TIME_UTC);
        for (long r = 0; r < reps; r++) n += count_pieces(fam, t, len);
        timespec_get(&t1, TIME_UTC);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        printf("%s: %zu pieces, %zu bytes, %.1f MB/s\n", argv[a], n / (size_t)reps, len,
               s > 0 ? (double)len * (double)reps / s / 1e6 : 0.0);
    } else if (!multi) {
        rc = print_pieces(fam, t, len, safe);
    } else {
        size_t i = 0;
        while (rc == 0 && i < len) {
            size_t n = 0, k = i;
            while (k < len && t[k] >= '0' && t[k] <= '9' && n <= len) n = n * 10 + (size_t)(t[k++] - '0');
            if (k == i || k >= len || t[k] != '\n' || n > len - k - 1) {
                fprintf(stderr, "pretok_check: bad record header at %zu\n", i);
                rc = 1;
                break;
            }
            /* each text in a buffer of its own, so that reading past its end is caught */
            uint8_t *one = malloc(n ? n : 1);
            if (!one) { rc = 1; break; }
            memcpy(one, t + k + 1, n);
            rc = print_pieces(fam, one, n, safe);
            free(one);
            i = k + 1 + n;
        }
    }
    free(t);
    if (fflush(stdout) || ferror(stdout)) rc = 1;
    return rc;
}
