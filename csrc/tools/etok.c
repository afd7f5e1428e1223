/* etok: the C core with no Python, for sanitizer runs, profiling and as an example of the API.
 *
 *   etok encode MODEL [FILE]   ids of FILE (default stdin), space-separated
 *   etok count MODEL [FILE]    number of ids
 *   etok pretok MODEL [FILE]   byte end offset of each piece
 *   etok split MODEL [FILE]    successive cuts of at most N tokens (N = $ETOK_N, default 7)
 *   etok range MODEL [FILE]    counts of ranges [i, j) for i, j on a grid of $ETOK_STEP bytes
 *   etok grow MODEL [FILE]     FILE as one piece growing $ETOK_STEP bytes at a time (default 7):
 *                              the token count after each step (et_piece_grow)
 *   etok lines MODEL [FILE]    each line (without its newline) encoded on its own, in one
 *                              et_encode_batch call: the id count of each line
 *   etok verify MODEL          full validation and checksum
 *
 * $ETOK_SLOTS: piece-cache slots of the workspace (et_ws_init_slots; Python grows them so on
 * long texts with many distinct pieces), the library's default when unset.
 *
 * Exit status: 0 ok, 1 a library error (message on stderr), 2 usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgetok.h"

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) return NULL;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = realloc(buf, cap *= 2);
        if (!grown) { free(buf); return NULL; }
        buf = grown;
    }
    *len = n;
    return buf;
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "etok: %s: %s\n", what, et_strerror(rc));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: etok encode|count|pretok|verify MODEL [FILE]\n");
        return 2;
    }
    const char *cmd = argv[1];
    et_model *m = NULL;
    int rc = et_model_open(argv[2], strcmp(cmd, "verify") == 0 ? ET_LOAD_VERIFY : 0, &m);
    if (rc) return fail(argv[2], rc);
    if (strcmp(cmd, "verify") == 0) {
        printf("ok: %u tokens, %zu bytes, %s\n", et_model_n_vocab(m), et_model_size(m), et_model_backing(m));
        et_model_close(m);
        return 0;
    }
    FILE *f = argc == 4 ? fopen(argv[3], "rb") : stdin;
    if (!f) { perror(argv[3]); et_model_close(m); return 1; }
    size_t len = 0;
    char *text = read_all(f, &len);
    if (f != stdin) fclose(f);
    size_t cap = et_encode_bound(m, len) + 1, done = 0, total = 0;
    const char *slots_env = getenv("ETOK_SLOTS"); /* piece-cache slots (as Python grows them) */
    const size_t slots = slots_env ? strtoull(slots_env, NULL, 10) : 0;
    const size_t piece = strcmp(cmd, "range") == 0 || strcmp(cmd, "lines") == 0 ? len : 0;
    size_t wsize = slots ? et_ws_size_slots(piece, slots) : et_ws_size(piece);
    if (wsize == SIZE_MAX) {
        fprintf(stderr, "etok: ETOK_SLOTS must be a power of two from 16384 to 1048576\n");
        return 2;
    }
    uint32_t *ids = malloc(cap * sizeof *ids);
    size_t *ends = malloc(cap * sizeof *ends);
    void *mem = malloc(wsize);
    if (!text || !ids || !ends || !mem) { fprintf(stderr, "etok: out of memory\n"); return 1; }
    while (rc == 0 && done < len) {
        et_ws *ws = slots ? et_ws_init_slots(m, mem, wsize, slots) : et_ws_init(m, mem, wsize);
        size_t n = 0, used = 0;
        if (strcmp(cmd, "count") == 0) {
            rc = et_count(ws, text + done, len - done, ET_FINAL, &n, &used);
        } else if (strcmp(cmd, "encode") == 0) {
            rc = et_encode(ws, text + done, len - done, ET_FINAL, ids, cap, &n, &used);
            for (size_t i = 0; i < n; i++) printf(total + i ? " %u" : "%u", ids[i]);
        } else if (strcmp(cmd, "split") == 0) {
            const char *env = getenv("ETOK_N");
            size_t budget = env ? strtoul(env, NULL, 10) : 7, cut = 0, k = 0;
            size_t *tends = malloc(cap * sizeof *tends);
            if (!tends) return 1;
            rc = et_split_at(ws, text + done, len - done, budget, ids, tends, cap, &cut, &k);
            free(tends);
            if (rc == 0) {
                if (cut == 0) { fprintf(stderr, "etok: no cut\n"); rc = -1; break; }
                printf(total ? " %zu" : "%zu", done + cut);
                n = k;
                used = cut;
            }
        } else if (strcmp(cmd, "range") == 0) {
            const char *env = getenv("ETOK_STEP");
            size_t step = env ? strtoul(env, NULL, 10) : 13;
            uint32_t *cum = malloc((len + 1) * sizeof *cum);
            if (!cum || step == 0) return 1;
            rc = et_prefix_counts(ws, text, len, cum);
            for (size_t i = 0; rc == 0 && i <= len; i += step)
                for (size_t j = i; rc == 0 && j <= len; j += step) {
                    size_t c = 0;
                    rc = et_count_range(ws, text, len, cum, i, j, &c);
                    if (rc == 0) printf(i || j ? " %zu" : "%zu", c);
                }
            free(cum);
            if (rc == 0) used = len - done;
            else if (rc == ET_E_WORKSPACE) { fprintf(stderr, "etok: range needs a larger workspace\n"); rc = -1; break; }
        } else if (strcmp(cmd, "grow") == 0) {
            const char *env = getenv("ETOK_STEP");
            size_t step = env ? strtoul(env, NULL, 10) : 7, nw = 0;
            uint32_t *last = malloc((len + 1) * sizeof *last), *cnt = malloc((len + 1) * sizeof *cnt);
            uint32_t *walks = malloc(2 * ((size_t)et_model_max_token_len(m) + 1) * sizeof *walks);
            if (!last || !cnt || !walks || step == 0) return 1;
            for (size_t at = 0; rc == 0 && at < len;) {
                size_t to = len - at < step ? len : at + step;
                rc = et_piece_grow(ws, text, at, to, last, cnt, walks, &nw);
                if (rc == 0) printf(at ? " %u" : "%u", cnt[to - 1]);
                at = to;
            }
            free(last); free(cnt); free(walks);
            used = len - done;
        } else if (strcmp(cmd, "lines") == 0) {
            size_t nl = 1, k = 0, got = 0;
            for (size_t x = 0; x < len; x++) nl += text[x] == '\n';
            const char **texts = malloc(nl * sizeof *texts);
            size_t *lens = malloc(nl * sizeof *lens), *counts = malloc(nl * sizeof *counts);
            if (!texts || !lens || !counts) return 1;
            for (size_t a = 0, x = 0; x <= len; x++)
                if (x == len || text[x] == '\n') {
                    texts[k] = text + a;
                    lens[k++] = x - a;
                    a = x + 1;
                }
            rc = et_encode_batch(ws, texts, lens, k, ids, cap, counts, &got);
            for (size_t x = 0; rc == 0 && x < got; x++) printf(x ? " %zu" : "%zu", counts[x]);
            free(texts); free(lens); free(counts);
            if (rc == ET_E_WORKSPACE) { fprintf(stderr, "etok: lines needs a larger workspace\n"); rc = -1; break; }
            used = len - done;
        } else if (strcmp(cmd, "pretok") == 0) {
            rc = et_pretokenize(m, text + done, len - done, ET_FINAL, ends, cap, &n, &used);
            for (size_t i = 0; i < n; i++) printf(total + i ? " %zu" : "%zu", done + ends[i]);
        } else {
            fprintf(stderr, "etok: unknown command %s\n", cmd);
            rc = -1;
            break;
        }
        total += n;
        done += used;
        if (rc == ET_E_WORKSPACE) {  /* a long piece: grow the workspace and go on */
            wsize = et_ws_size(et_ws_need(ws));
            free(mem);
            if (!(mem = malloc(wsize))) { fprintf(stderr, "etok: out of memory\n"); return 1; }
            rc = 0;
        }
    }
    if (strcmp(cmd, "count") == 0) printf("%zu", total);
    printf("\n");
    free(text); free(ids); free(ends); free(mem);
    et_model_close(m);
    if (rc > 0) return fail("encode", rc);
    return rc ? 2 : 0;
}
