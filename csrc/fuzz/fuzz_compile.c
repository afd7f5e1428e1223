/* fuzz_compile: the compiler on generated vocabularies, then load and encode what it made.
 *
 * Input: byte 0 picks the family and options, byte 1 a pretokenizer or flags, then tokens,
 * each a length byte (1 + b % 12) and its bytes. BPE: ids in the order given, after the 256
 * single bytes when byte 0 says so (else some bytes are dropped); Unigram / SentencePiece BPE:
 * each token also takes a type byte and a score byte. Whatever et_compile_* accepts must load,
 * pass et_model_verify, and encode: count == len(encode), decode(encode(x)) == x for BPE
 * models that drop no byte, and the merges agree (tiktoken's, the heap's, and the
 * backtracking encoder's where the compiler proved it exact). */
#include "../bpe/bpe.c"
#include "fuzz_common.h"
#include "fuzz_merge.h"

#define MAX_TOKENS 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_model(const uint8_t *img, size_t img_len, const uint8_t *text, size_t len)
{
    uint64_t *buf = fz_alloc(img_len);
    memcpy(buf, img, img_len);
    et_model *m = NULL;
    int rc = et_model_from_buffer(buf, img_len, ET_LOAD_VERIFY, &m);
    if (rc) fprintf(stderr, "compiled model: %s\n", et_strerror(rc));
    CHECK(rc == ET_OK); /* what the compiler makes loads, and passes the table checks */
    et_ws *ws = fz_ws(m, len + 16);
    size_t cap = et_encode_bound(m, len) + 1, n = 0, used = 0, c = 0;
    uint32_t *ids = fz_alloc(cap * 4);
    rc = fz_encode(&ws, m, text, len, ids, cap, &n, &used);
    if (rc) fprintf(stderr, "encode: %s\n", et_strerror(rc));
    CHECK(rc == ET_OK && used == len);
    CHECK(fz_encode(&ws, m, text, len, NULL, 0, &c, &used) == ET_OK && c == n);
    size_t dl = 0, dn = 0;
    CHECK(et_decode_len(m, ids, n, &dl) == ET_OK);
    char *out = fz_alloc(dl + 1);
    CHECK(et_decode(m, ids, n, out, dl, &dn) == ET_OK && dn == dl);
    if (m->kind == ET_KIND_BPE) {
        if (!(m->flags & ET_FLAG_GAPS)) {
            CHECK(dl == len && (len == 0 || memcmp(out, text, len) == 0));
            if (len >= 2) merge_checks(m, text, (uint32_t)len);
        }
    }
    free(out);
    free(ids);
    free(ws);
    et_model_close(m);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 4096) return 0;
    const uint8_t *text = data;
    const size_t text_len = size;
    const unsigned opt = fz_take(&data, &size, 1), arg = fz_take(&data, &size, 1);
    const int unigram = opt & 1, all_bytes = (opt & 2) != 0;
    uint8_t *bytes = fz_alloc(256 + size);
    uint32_t *off = fz_alloc((MAX_TOKENS + 257) * 4), *ids = fz_alloc((MAX_TOKENS + 257) * 4);
    float *scores = fz_alloc((MAX_TOKENS + 257) * 4);
    uint8_t *types = fz_alloc(MAX_TOKENS + 257);
    uint32_t n = 0, w = 0;
    off[0] = 0;
    if (!unigram && all_bytes) {
        for (unsigned b = 0; b < 256; b++) {
            bytes[w++] = (uint8_t)b;
            ids[n] = n;
            off[++n] = w;
        }
    }
    if (unigram) { /* the unknown piece first, as sentencepiece's trainer puts it */
        memcpy(bytes, "<unk>", 5);
        w = 5;
        types[0] = ET_SP_UNKNOWN;
        scores[0] = 0;
        off[++n] = w;
    }
    while (size && n < MAX_TOKENS + 256) {
        unsigned l = 1 + fz_take(&data, &size, 1) % 12;
        if (l > size) break;
        memcpy(bytes + w, data, l);
        data += l;
        size -= l;
        w += l;
        if (unigram) {
            types[n] = (uint8_t)(1 + fz_take(&data, &size, 1) % 6);
            if (types[n] == ET_SP_UNKNOWN) types[n] = ET_SP_NORMAL;
            scores[n] = -(float)fz_take(&data, &size, 1) / 8.0f;
        }
        ids[n] = n + (opt & 4 ? 7u : 0u); /* (a gap in the ids) */
        off[++n] = w;
    }
    uint8_t *img = NULL;
    size_t img_len = 0;
    int rc;
    if (unigram) {
        uint32_t flags = arg & (1 | 2 | 4 | 8 | 16 | 64);
        rc = et_compile_unigram((const char *)bytes, off, n, scores, types, NULL, 0, flags, 0,
                                ET_NONE, ET_NONE, " \xE2\x81\x87 ", &img, &img_len);
    } else {
        uint32_t pretok = ET_PRETOK_CL100K + arg % 5, param = pretok == ET_PRETOK_GPT2 ? (arg >> 3) & 1 : 1 + (arg >> 3) % 9;
        uint32_t soff[2] = {0, 5}, sids[1] = {n + 20};
        rc = et_compile_bpe((const char *)bytes, off, ids, n, "<eot>", soff, sids, NULL,
                            opt & 8 ? 1u : 0u, pretok, param, 0, "pattern", &img, &img_len);
    }
    CHECK(rc == ET_OK || rc == ET_E_VOCAB);
    if (rc == ET_OK) use_model(img, img_len, text, text_len);
    et_free(img);
    free(bytes);
    free(off);
    free(ids);
    free(scores);
    free(types);
    return 0;
}
