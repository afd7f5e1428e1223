/* Loading .etok models: map, validate every offset and size, expose read-only accessors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "../unicode/ucd.h"

enum { BACK_MMAP, BACK_HUGETLB, BACK_THP, BACK_HEAP, BACK_BUFFER };
static const char *const backing_names[] = {"mmap", "hugetlb", "thp", "heap", "buffer"};

const char *et_strerror(int status)
{
    switch (status) {
    case ET_OK: return "ok";
    case ET_E_IO: return "cannot open, read or map the file";
    case ET_E_FORMAT: return "not an edgetok model, or a truncated or corrupt one";
    case ET_E_VERSION: return "edgetok model of an unsupported format version";
    case ET_E_NOMEM: return "out of memory";
    case ET_E_ARG: return "invalid argument";
    case ET_E_WORKSPACE: return "workspace too small for a piece";
    case ET_E_FULL: return "output buffer too small";
    case ET_E_TOKEN: return "unknown token id";
    case ET_E_VOCAB: return "vocabulary cannot be compiled";
    case ET_E_CHECKSUM: return "model checksum mismatch";
    default: return "unknown status";
    }
}

uint64_t et_checksum(const uint8_t *p, size_t n)
{
    /* 64-bit multiply-xorshift over little-endian words; not cryptographic, catches damage */
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    h ^= h >> 29;
    return h;
}

uint64_t et_image_checksum(const uint8_t *img, size_t size)
{
    /* the header (its checksum field as zero) and everything after it */
    et_header h;
    memcpy(&h, img, sizeof h);
    h.checksum = 0;
    uint64_t a = et_checksum((const uint8_t *)&h, sizeof h);
    return (a * 0xC2B2AE3D27D4EB4Full) ^ et_checksum(img + h.header_size, size - h.header_size);
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Points *p at section k if it has exactly `want` bytes (or, for want == 0, any size). Sizes
 * are 64-bit here so that counts from the header cannot wrap a 32-bit size_t. */
static int section(const et_header *h, size_t size, int k, uint64_t want, const void **p,
                   size_t *got)
{
    uint64_t off = h->sec[k].off, len = h->sec[k].size;
    if (off % 8 || off < h->header_size || off > size || len > size - off) return ET_E_FORMAT;
    if (want && len != want) return ET_E_FORMAT;
    *p = (const uint8_t *)h + off;
    if (got) *got = (size_t)len;
    return ET_OK;
}

static int validate(et_model *m, const uint8_t *d, size_t size, unsigned flags)
{
    if (!host_is_little_endian()) return ET_E_FORMAT;
    if (size < sizeof(et_header)) return ET_E_FORMAT;
    const et_header *h = (const et_header *)d;
    if (memcmp(h->magic, "EDGETOK", 8) != 0) return ET_E_FORMAT;
    if (h->version != ET_FORMAT_VERSION) return ET_E_VERSION;
    if (h->header_size != sizeof(et_header) || h->file_size != size) return ET_E_FORMAT;
    if (h->kind == ET_KIND_BPE) {
        if (h->pretok < ET_PRETOK_CL100K || h->pretok > ET_PRETOK_REGEX) return ET_E_VERSION;
        if ((h->pretok == ET_PRETOK_CL100K || h->pretok == ET_PRETOK_LLAMA3) &&
            (h->pretok_param < 1 || h->pretok_param > 9))
            return ET_E_FORMAT;
        if (h->pretok == ET_PRETOK_GPT2 && h->pretok_param > 1) return ET_E_FORMAT;
    } else if (h->kind == ET_KIND_UNIGRAM || h->kind == ET_KIND_WORDPIECE) {
        if (h->pretok != ET_PRETOK_NONE) return ET_E_VERSION;
    } else {
        return ET_E_VERSION;
    }
    if (h->n_vocab < 1 || h->n_vocab > 0x7FFFFFFFu || h->n_cells < 1 ||
        h->n_cells > ET_MAX_CELLS || h->n_specials > h->n_vocab)
        return ET_E_FORMAT;
    const void *p;
    size_t got;
    int rc;
    const uint64_t cell = 4u * (h->kind == ET_KIND_BPE ? ET_BPE_CELL : ET_UNI_CELL);
    if ((rc = section(h, size, ET_SEC_CELLS, (uint64_t)h->n_cells * cell, &p, NULL))) return rc;
    m->cells = p;
    if ((rc = section(h, size, ET_SEC_TOKOFF, ((uint64_t)h->n_vocab + 1u) * 4u, &p, NULL)))
        return rc;
    m->tokoff = p;
    if ((rc = section(h, size, ET_SEC_BLOB, 0, &p, &got))) return rc;
    m->blob = p;
    m->blob_size = got;
    if (h->max_token_len > got) return ET_E_FORMAT; /* no token is longer than all their bytes */
    if (h->n_specials) {
        if ((rc = section(h, size, ET_SEC_SPECIALS, (uint64_t)h->n_specials * 4u, &p, NULL)))
            return rc;
        m->specials = p;
    }
    if ((rc = section(h, size, ET_SEC_BYTEIDS, 256u * 4u, &p, NULL))) return rc;
    m->byteids = p;
    m->kind = h->kind;
    m->n_cells = h->n_cells;
    m->n_vocab = h->n_vocab;
    m->n_specials = h->n_specials;
    m->pretok = h->pretok;
    m->pretok_param = h->pretok_param;
    m->max_token_len = h->max_token_len;
    m->flags = h->flags;
    m->data = d;
    m->size = size;
    if (h->kind == ET_KIND_UNIGRAM) {
        m->pattern = "";
        m->unk_surface = " \xE2\x81\x87 ";
        if (h->sec[ET_SEC_PATTERN].size) { /* unigram: the unknown piece's surface */
            if ((rc = section(h, size, ET_SEC_PATTERN, 0, &p, &got))) return rc;
            if (((const char *)p)[got - 1] != '\0') return ET_E_FORMAT;
            m->unk_surface = p;
        }
        if ((rc = section(h, size, ET_SEC_SCORES, (uint64_t)h->n_vocab * 4u, &p, NULL))) return rc;
        m->scores = p;
        if ((rc = section(h, size, ET_SEC_TYPES, (uint64_t)h->n_vocab, &p, NULL))) return rc;
        m->types = p;
        if ((rc = section(h, size, ET_SEC_UPARAM, sizeof(et_uparam), &p, NULL))) return rc;
        memcpy(&m->up, p, sizeof m->up);
        if ((rc = section(h, size, ET_SEC_CHARSMAP, 0, &p, &got))) return rc;
        m->charsmap = p;
        m->charsmap_size = got;
        if (m->up.unk_id >= m->n_vocab || m->up.expand < 3 || m->up.expand > 0xFFFFu)
            return ET_E_FORMAT;
        if ((m->up.bos_id != ET_NONE && m->up.bos_id >= m->n_vocab) ||
            (m->up.eos_id != ET_NONE && m->up.eos_id >= m->n_vocab))
            return ET_E_FORMAT;
        for (unsigned b = 0; b < 256; b++) /* <0xNN> pieces, where the model has them */
            if (m->byteids[b] != ET_NONE && m->byteids[b] >= m->n_vocab) return ET_E_FORMAT;
    } else if (h->kind == ET_KIND_WORDPIECE) {
        m->pattern = "";
        if ((rc = section(h, size, ET_SEC_UPARAM, sizeof(et_wparam), &p, NULL))) return rc;
        memcpy(&m->wp, p, sizeof m->wp);
        if ((rc = section(h, size, ET_SEC_POPOFF, ((uint64_t)h->n_cells + 1u) * 4u, &p, NULL)))
            return rc;
        m->popoff = p;
        if ((rc = section(h, size, ET_SEC_POPS, 0, &p, &got))) return rc;
        if (got % 4u || got / 4u > 0xFFFFFFFFu) return ET_E_FORMAT;
        m->pops = p;
        m->n_pops = (uint32_t)(got / 4u);
        const et_wparam *w = &m->wp;
        if (w->unk_id >= m->n_vocab || (w->cls_id != ET_NONE && w->cls_id >= m->n_vocab) ||
            (w->sep_id != ET_NONE && w->sep_id >= m->n_vocab) || (w->flags & ~ET_WP_FLAGS) ||
            w->cont == 0 || w->cont >= m->n_cells || m->cells[ET_WP_CELL * w->cont + 1u] != 0 ||
            w->prefix_len > m->max_token_len ||
            m->popoff[m->n_cells] > m->n_pops)
            return ET_E_FORMAT;
    } else {
        if (h->n_vocab < 256) return ET_E_FORMAT;
        if ((rc = section(h, size, ET_SEC_PATTERN, 0, &p, &got))) return rc;
        if (got == 0 || ((const char *)p)[got - 1] != '\0') return ET_E_FORMAT;
        m->pattern = p;
        if ((rc = section(h, size, ET_SEC_SPLIT, (uint64_t)h->n_vocab * 8u, &p, NULL))) return rc;
        m->split = p;
        if ((rc = section(h, size, ET_SEC_PREFIX, (uint64_t)h->n_vocab * 4u, &p, NULL))) return rc;
        m->prefix = p;
        if ((rc = section(h, size, ET_SEC_TNODE, (uint64_t)h->n_vocab * 4u, &p, NULL))) return rc;
        m->tnode = p;
        /* the BPE encoders rely on every single byte being a token reachable from the root,
         * except the bytes a model with ET_FLAG_GAPS drops before merging */
        for (unsigned b = 0; b < 256; b++) {
            if (m->byteids[b] == ET_NONE && (m->flags & ET_FLAG_GAPS)) continue;
            uint32_t t = et_trie_next(m, 0, (uint8_t)b);
            if (t == ET_NONE || et_value(m, t) != m->byteids[b] || m->byteids[b] >= m->n_vocab)
                return ET_E_FORMAT;
        }
    }
    for (uint32_t i = 0; i < m->n_specials; i++)
        if ((m->specials[i] & ~ET_SPECIAL_ADDED) >= m->n_vocab) return ET_E_FORMAT;
    if (flags & ET_LOAD_VERIFY) return et_model_verify(m);
    return ET_OK;
}

static int finish(et_model *m, const uint8_t *d, size_t size, unsigned flags, et_model **out)
{
    int rc = validate(m, d, size, flags);
    if (rc != ET_OK) {
        et_model_close(m);
        return rc;
    }
    *out = m;
    return ET_OK;
}

int et_model_from_buffer(const void *buf, size_t len, unsigned flags, et_model **out)
{
    if (!buf || !out || ((uintptr_t)buf & 7u)) return ET_E_ARG;
    et_model *m = calloc(1, sizeof *m);
    if (!m) return ET_E_NOMEM;
    m->backing = BACK_BUFFER;
    return finish(m, buf, len, flags, out);
}

/* Reads the whole file into anonymous memory backed by huge pages; NULL if none can be had. */
static void *load_huge(int fd, size_t size, size_t *map_len, int *backing)
{
#if defined(MAP_HUGETLB) || defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20;
    size_t len = (size + huge - 1) & ~(huge - 1);
    void *p = MAP_FAILED;
#ifdef MAP_HUGETLB
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    *backing = BACK_HUGETLB;
#endif
#ifdef MADV_HUGEPAGE
    if (p == MAP_FAILED) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED && madvise(p, len, MADV_HUGEPAGE) != 0) {
            munmap(p, len);
            p = MAP_FAILED;
        }
        *backing = BACK_THP;
    }
#endif
    if (p == MAP_FAILED) return NULL;
    size_t done = 0;
    while (done < size) {
        ssize_t r = pread(fd, (uint8_t *)p + done, size - done, (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            munmap(p, len);
            return NULL;
        }
        done += (size_t)r;
    }
    mprotect(p, len, PROT_READ);
    *map_len = len;
    return p;
#else
    (void)fd; (void)size; (void)map_len; (void)backing;
    return NULL;
#endif
}

int et_model_open(const char *path, unsigned flags, et_model **out)
{
    if (!path || !out) return ET_E_ARG;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ET_E_IO;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ET_E_IO;
    }
    size_t size = (size_t)st.st_size;
    if (size < sizeof(et_header)) {
        close(fd);
        return ET_E_FORMAT;
    }
    et_model *m = calloc(1, sizeof *m);
    if (!m) {
        close(fd);
        return ET_E_NOMEM;
    }
    void *p = NULL;
    if (flags & ET_LOAD_HUGEPAGES) p = load_huge(fd, size, &m->map_len, &m->backing);
    if (!p) {
        p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            free(m);
            return ET_E_IO;
        }
        m->map_len = size;
        m->backing = BACK_MMAP;
    }
    close(fd);
    m->map = p;
    return finish(m, p, size, flags, out);
}

void et_model_close(et_model *m)
{
    if (!m) return;
    et_pairset_free(atomic_load_explicit(&m->pairset, memory_order_acquire));
    free(atomic_load_explicit(&m->odd, memory_order_acquire));
    et_shapes_free(atomic_load_explicit(&m->shapes, memory_order_acquire));
    if (m->map) munmap(m->map, m->map_len);
    free(m);
}

/* The tables the encoders follow, checked whole (what loading leaves to bounds checks and
 * bounded walks, to keep et_model_open O(1)): token offsets ascend within the blob; every
 * trie value is a token whose own bytes lead back to its cell (so a token's length is its
 * depth); BPE: TNODE names the token's cell, PREFIX a shorter token that the token starts
 * with, SPLIT two
 * lower ids whose lengths add up (the walks of the backtracking encoder end). */
/* WordPiece: a cell's value is a token whose bytes end with the cell's path, from the root
 * (as spelled) or from the continuation root; failure links are cells and pop one token at
 * least, every popped id a token. */
static int check_wordpiece(const et_model *m)
{
    const size_t w = ET_WP_CELL;
    for (uint32_t s = 0; s < m->n_cells; s++) {
        uint32_t v = m->cells[w * s + 2u], f = m->cells[w * s + 3u];
        uint32_t a = m->popoff[s], b = m->popoff[s + 1u];
        if (a > b || b > m->n_pops) return ET_E_FORMAT;
        if (f != ET_NONE && (f >= m->n_cells || a == b)) return ET_E_FORMAT;
        for (uint32_t k = a; k < b; k++)
            if (m->pops[k] >= m->n_vocab) return ET_E_FORMAT;
        if (v == ET_NONE) continue;
        const uint8_t *p = NULL;
        uint32_t l = et_tok(m, v, &p), c = s, d = 0;
        while (c != 0 && c != m->wp.cont && d < l) { /* up to a root, matching bytes */
            uint32_t up = m->cells[w * c + 1u];
            if (up >= m->n_cells || m->cells[w * up] + p[l - 1u - d] != c) return ET_E_FORMAT;
            c = up;
            d++;
        }
        if (!l || l > m->max_token_len || d == 0 || (c == 0 && d != l) || (c != 0 && c != m->wp.cont))
            return ET_E_FORMAT;
    }
    return ET_OK;
}

static int check_tables(const et_model *m)
{
    const int uni = m->kind == ET_KIND_UNIGRAM, wpc = m->kind == ET_KIND_WORDPIECE;
    const size_t w = m->kind == ET_KIND_BPE ? ET_BPE_CELL : ET_UNI_CELL;
    if (wpc) return check_wordpiece(m);
    if (m->tokoff[0] > m->tokoff[m->n_vocab] || m->tokoff[m->n_vocab] > m->blob_size)
        return ET_E_FORMAT;
    for (uint32_t i = 0; i < m->n_vocab; i++)
        if (m->tokoff[i] > m->tokoff[i + 1]) return ET_E_FORMAT;
    for (uint32_t s = 0; s < m->n_cells; s++) {
        uint32_t v = m->cells[w * s + 2u];
        if (v == ET_NONE) continue;
        const uint8_t *p = NULL;
        uint32_t l = et_tok(m, v, &p);
        if (!l || l > m->max_token_len || et_trie_walk_w(m, 0, p, l, w) != s) return ET_E_FORMAT;
    }
    if (uni) {
        for (uint32_t i = 0; i < m->n_vocab; i++)
            if (m->types[i] < ET_SP_NORMAL || m->types[i] > ET_SP_BYTE) return ET_E_FORMAT;
        return ET_OK;
    }
    const int whole = (m->flags & ET_FLAG_WHOLE) != 0;
    if (whole && (m->flags & ET_FLAG_BACKTRACK)) return ET_E_FORMAT; /* (never both) */
    for (uint32_t t = 0; t < m->n_vocab; t++) {
        const uint8_t *p = NULL;
        uint32_t l = et_tok(m, t, &p), s = m->tnode[t];
        if (s != ET_NONE && (s >= m->n_cells || et_value(m, s) != t)) return ET_E_FORMAT;
        if (!et_model_pair_tables(m)) continue; /* PREFIX, SPLIT: not else */
        uint32_t pre = m->prefix[t], a = m->split[2u * t], b = m->split[2u * t + 1u];
        if (pre != ET_NONE) { /* a shorter token that t's bytes start with */
            const uint8_t *q = NULL;
            uint32_t lp = pre < m->n_vocab ? et_tok(m, pre, &q) : 0;
            if (!lp || lp >= l || memcmp(p, q, lp) != 0) return ET_E_FORMAT;
        }
        if (a == t && b == t) continue;
        if (whole && a == ET_NONE && b == ET_NONE && s != ET_NONE) continue; /* a whole piece only */
        /* (ET_FLAG_WHOLE: parts may rank above the token; they are shorter all the same) */
        if ((whole ? a >= m->n_vocab || b >= m->n_vocab || a == t || b == t : a >= t || b >= t) ||
            (uint64_t)et_tok(m, a, &p) + et_tok(m, b, &p) != l)
            return ET_E_FORMAT;
    }
    return ET_OK;
}

int et_model_verify(const et_model *m)
{
    const et_header *h = (const et_header *)m->data;
    if (et_image_checksum(m->data, m->size) != h->checksum) return ET_E_CHECKSUM;
    return check_tables(m);
}

uint32_t et_model_n_vocab(const et_model *m) { return m->n_vocab; }
uint32_t et_model_n_specials(const et_model *m) { return m->n_specials; }
uint32_t et_model_special(const et_model *m, uint32_t i)
{
    return i < m->n_specials ? m->specials[i] & ~ET_SPECIAL_ADDED : ET_NONE;
}
uint32_t et_model_pretok(const et_model *m, uint32_t *param)
{
    if (param) *param = m->pretok_param;
    return m->pretok;
}
const char *et_model_pattern(const et_model *m) { return m->pattern; }
const char *et_model_backing(const et_model *m) { return backing_names[m->backing]; }
size_t et_model_size(const et_model *m) { return m->size; }
uint32_t et_model_max_token_len(const et_model *m) { return m->max_token_len; }
int et_model_backtracks(const et_model *m) { return (m->flags & ET_FLAG_BACKTRACK) != 0; }
int et_model_pair_tables(const et_model *m)
{
    return m->kind == ET_KIND_BPE && (m->flags & (ET_FLAG_BACKTRACK | ET_FLAG_WHOLE)) != 0;
}
int et_model_nfc(const et_model *m) { return (m->flags & ET_FLAG_NFC) != 0; }
int et_model_drops_bytes(const et_model *m) { return (m->flags & ET_FLAG_GAPS) != 0; }
int et_model_special_is_added(const et_model *m, uint32_t i)
{
    return i < m->n_specials && (m->specials[i] & ET_SPECIAL_ADDED) != 0;
}

int et_model_bos_eos(const et_model *m, uint32_t *bos, uint32_t *eos)
{
    if (!m || !bos || !eos || m->kind != ET_KIND_UNIGRAM) return ET_E_ARG;
    *bos = m->up.bos_id;
    *eos = m->up.eos_id;
    return ET_OK;
}
uint32_t et_model_kind(const et_model *m)
{
    if (m->kind == ET_KIND_WORDPIECE) return ET_MODEL_WORDPIECE;
    return m->kind == ET_KIND_UNIGRAM && (m->up.flags & ET_SP_BPE) ? ET_MODEL_SP_BPE : m->kind;
}

int et_model_wordpiece(const et_model *m, uint32_t *unk, uint32_t *cls, uint32_t *sep)
{
    if (!m || !unk || !cls || !sep || m->kind != ET_KIND_WORDPIECE) return ET_E_ARG;
    *unk = m->wp.unk_id;
    *cls = m->wp.cls_id;
    *sep = m->wp.sep_id;
    return ET_OK;
}

size_t et_encode_bound(const et_model *m, size_t len)
{
    /* unigram: normalised text is at most up.expand bytes per input byte plus a dummy
     * prefix, and each of its bytes yields at most one id */
    if (!m || m->kind != ET_KIND_UNIGRAM) return len;
    return len > (SIZE_MAX - 8) / m->up.expand ? SIZE_MAX : m->up.expand * len + 8;
}

int et_token_bytes(const et_model *m, uint32_t id, const uint8_t **ptr, size_t *len)
{
    if (id >= m->n_vocab) return ET_E_TOKEN;
    uint32_t a = m->tokoff[id], b = m->tokoff[id + 1];
    if (a >= b || b > m->blob_size) return ET_E_TOKEN;
    *ptr = m->blob + a;
    *len = b - a;
    return ET_OK;
}

int et_token_lookup(const et_model *m, const char *s, size_t len, uint32_t *id)
{
    const int uni = m->kind != ET_KIND_BPE; /* unigram and WordPiece cells: four words */
    const uint8_t *p = (const uint8_t *)s;
    uint32_t t = !len ? ET_NONE : uni ? et_uni_walk(m, 0, p, len) : et_trie_walk(m, 0, p, len);
    uint32_t v = t == ET_NONE ? ET_NONE : uni ? et_uni_value(m, t) : et_value(m, t);
    if (v == ET_NONE) return ET_E_TOKEN;
    *id = v;
    return ET_OK;
}

/* SentencePiece decoding, as sentencepiece's Decode does it: control pieces are empty, <unk>
 * is the unknown surface; a run of byte pieces is read one UTF-8 character at a time, a byte
 * that starts none becoming U+FFFD; in other pieces U+2581 is a space, and while nothing has
 * been output and no leading U+2581 has been dropped yet (with a dummy prefix or extra
 * whitespace removed), a leading U+2581 is dropped (always, while nothing is output, when
 * extra whitespace is removed). What a part leaves for the next is in a 64-bit state: flags,
 * then up to 3 byte-piece bytes that may still begin a character. */
#define DS_STARTED 1u  /* some piece was seen past the start: no more dropping */
#define DS_DROPPED 2u  /* the last non-byte piece dropped a leading U+2581 */
#define DS_OUTPUT 4u   /* some text was output */
#define DS_NPEND(s) ((unsigned)((s) >> 4) & 3u)
#define DS_PEND(s, k) ((uint8_t)((s) >> (8 + 8 * (k))))

struct sink {
    char *out;
    size_t cap, w;
};

static int put(struct sink *o, const uint8_t *p, size_t l)
{
    if (o->out) {
        if (o->cap - o->w < l) return ET_E_FULL;
        memcpy(o->out + o->w, p, l);
    }
    o->w += l;
    return ET_OK;
}

/* Emits what of pend[0..*np) is settled: whole characters, U+FFFD for a byte that starts
 * none; with flush, everything (no more bytes can follow). Leaves the rest in pend. */
static int put_bytes(struct sink *o, uint8_t *pend, unsigned *np, int flush, uint64_t *st)
{
    static const uint8_t fffd[3] = {0xEF, 0xBF, 0xBD};
    while (*np) {
        size_t n, need = pend[0] < 0xC0u ? 1 : pend[0] < 0xE0u ? 2 : pend[0] < 0xF0u ? 3 : 4;
        if (!flush && *np < need) { /* wait while the bytes so far may still be a character */
            unsigned k = 1;
            while (k < *np && (pend[k] & 0xC0u) == 0x80u) k++;
            if (k == *np && pend[0] < 0xF8u) break;
        }
        int bad = et_utf8_decode(pend, *np, 0, &n) == 0xFFFFFFFFu;
        int rc = bad ? put(o, fffd, 3) : put(o, pend, n);
        if (rc) return rc;
        *st |= DS_OUTPUT;
        memmove(pend, pend + n, *np - n);
        *np -= (unsigned)n;
    }
    return ET_OK;
}

static int decode_sp(const et_model *m, const uint32_t *ids, size_t n, unsigned flags,
                     uint64_t *state, struct sink *o, size_t *bad)
{
    uint64_t st = *state;
    uint8_t pend[4];
    unsigned np = DS_NPEND(st);
    for (unsigned k = 0; k < np; k++) pend[k] = DS_PEND(st, k);
    st &= 0xFu;
    const int drop = (m->up.flags & (ET_SP_ADD_DUMMY_PREFIX | ET_SP_REMOVE_EXTRA_WS)) != 0;
    int rc = ET_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const uint8_t *p;
        size_t l;
        if (et_token_bytes(m, ids[i], &p, &l) != ET_OK) {
            *bad = i;
            return ET_E_TOKEN;
        }
        uint8_t type = m->types[ids[i]];
        if (type == ET_SP_BYTE) { /* "<0xAB>", checked at load */
            unsigned v = 0;
            for (size_t k = 3; k < 5 && l == 6; k++) {
                uint8_t c = p[k];
                v = v * 16u + (c >= '0' && c <= '9' ? (unsigned)(c - '0') : (c | 0x20u) - 'a' + 10u);
            }
            pend[np++] = (uint8_t)v;
            rc = put_bytes(o, pend, &np, 0, &st);
            continue;
        }
        if ((rc = put_bytes(o, pend, &np, 1, &st))) break;
        if (st & (DS_DROPPED | DS_OUTPUT)) st |= DS_STARTED;
        st &= ~(uint64_t)DS_DROPPED;
        if (type == ET_SP_CONTROL) continue;
        if (type == ET_SP_UNKNOWN) {
            p = (const uint8_t *)m->unk_surface;
            l = strlen(m->unk_surface);
        } else if (!(st & DS_STARTED) && drop && l >= 3 && memcmp(p, "\xE2\x96\x81", 3) == 0) {
            p += 3;
            l -= 3;
            if (!(m->up.flags & ET_SP_REMOVE_EXTRA_WS)) st |= DS_DROPPED;
        }
        for (size_t k = 0; k < l && !rc;) { /* U+2581 is a space (not in <unk>'s surface) */
            size_t run = k;
            if (type != ET_SP_UNKNOWN)
                while (run < l && !(l - run >= 3 && memcmp(p + run, "\xE2\x96\x81", 3) == 0)) run++;
            else
                run = l;
            if ((rc = put(o, p + k, run - k))) break;
            if (run < l) rc = put(o, (const uint8_t *)" ", 1);
            k = run < l ? run + 3 : l;
        }
        if (l) st |= DS_OUTPUT;
    }
    if (!rc && (flags & ET_FINAL)) rc = put_bytes(o, pend, &np, 1, &st);
    if (rc) return rc;
    for (unsigned k = 0; k < np; k++) st |= (uint64_t)pend[k] << (8 + 8 * k);
    *state = st | (uint64_t)np << 4;
    return ET_OK;
}

/* WordPiece: whether token id (bytes p[0..l)) is a continuation token, spelled with the
 * prefix ("##"): the trie holds it without the prefix under the continuation root. */
static int wp_continuation(const et_model *m, uint32_t id, const uint8_t *p, size_t l)
{
    const size_t pl = m->wp.prefix_len;
    if (id >= m->n_vocab || l <= pl) return 0;
    uint32_t s = m->wp.cont;
    for (size_t i = pl; i < l && s != ET_NONE; i++) s = et_trie_step(m, s, p[i], ET_WP_CELL);
    return s != ET_NONE && m->cells[(size_t)ET_WP_CELL * s + 2u] == id;
}

/* WordPiece: whether Hugging Face's WordPiece decoder (cleanup on) writes no space before a
 * word-initial token that starts with p[0..l): its clean-up turns " ." into "." and so on. */
static int wp_no_space(const uint8_t *p, size_t l)
{
    static const char *const glue[] = {".", "?", "!", ",", "n't", "'m", "'s", "'ve", "'re"};
    for (size_t k = 0; k < sizeof glue / sizeof *glue; k++) {
        size_t g = strlen(glue[k]);
        if (l >= g && memcmp(p, glue[k], g) == 0) return 1;
    }
    return 0;
}

/* Decodes into out[0..cap) (out NULL: only measures). */
static int decode_into(const et_model *m, const uint32_t *ids, size_t n, unsigned flags,
                       uint64_t *state, char *out, size_t cap, size_t *n_out)
{
    struct sink o = {out, cap, 0};
    if (m->kind == ET_KIND_UNIGRAM) {
        size_t bad = 0;
        int rc = decode_sp(m, ids, n, flags, state, &o, &bad);
        *n_out = rc == ET_E_TOKEN && !out ? bad : o.w;
        return rc;
    }
    const int wp = m->kind == ET_KIND_WORDPIECE;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p;
        size_t l;
        if (et_token_bytes(m, ids[i], &p, &l) != ET_OK) {
            *n_out = out ? o.w : i;
            return ET_E_TOKEN;
        }
        if (wp) { /* Hugging Face's WordPiece decoder: after the first token, a continuation
                   * loses its prefix and any other token gets a space before it (state: a
                   * token was seen, for et_decode_part) */
            const uint32_t f = m->wp.flags;
            if (*state & 1u) {
                if (!(f & ET_WP_DECODE_JOIN) && wp_continuation(m, ids[i], p, l)) {
                    p += m->wp.prefix_len;
                    l -= m->wp.prefix_len;
                } else if (((f & (ET_WP_DECODE_JOIN | ET_WP_NO_CLEANUP)) || !wp_no_space(p, l)) &&
                           put(&o, (const uint8_t *)" ", 1)) {
                    *n_out = o.w;
                    return ET_E_FULL;
                }
            }
            *state |= 1u;
        }
        if (put(&o, p, l)) {
            *n_out = o.w;
            return ET_E_FULL;
        }
    }
    *n_out = o.w;
    return ET_OK;
}

int et_decode_len(const et_model *m, const uint32_t *ids, size_t n, size_t *len)
{
    uint64_t st = 0;
    return decode_into(m, ids, n, ET_FINAL, &st, NULL, 0, len);
}

int et_decode(const et_model *m, const uint32_t *ids, size_t n, char *out, size_t cap,
              size_t *n_out)
{
    uint64_t st = 0;
    return decode_into(m, ids, n, ET_FINAL, &st, out, cap, n_out);
}

int et_decode_part(const et_model *m, const uint32_t *ids, size_t n, unsigned flags,
                   uint64_t *state, char *out, size_t cap, size_t *n_out)
{
    return decode_into(m, ids, n, flags, state, out, cap, n_out);
}

void et_free(void *p) { free(p); }
