"""edgetok's Encoding against tiktoken's, on real text and generated text."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import edgetok
import reference
from strategies import any_text, texts
from test_pretok import DIFFERS


@pytest.mark.parametrize("kind", ["english", "code", "multilingual"])
def test_real_text(enc, ref, corpora, kind):  # type: ignore[no-untyped-def]
    text = corpora[kind]
    got = enc.encode_ordinary(text)
    want = ref.encode_ordinary(text)
    assert got == want
    assert enc.count(text, disallowed_special=()) == len(want)
    assert enc.decode(got) == text


@given(st.one_of(texts, any_text))
@settings(max_examples=1000, deadline=None)
def test_generated(enc, ref, text):  # type: ignore[no-untyped-def]
    same_as_tiktoken(enc, ref, text)


@pytest.mark.slow
@given(st.one_of(texts, any_text))
@settings(max_examples=10000, deadline=None)
def test_generated_long(enc, ref, text):  # type: ignore[no-untyped-def]
    same_as_tiktoken(enc, ref, text)


def same_as_tiktoken(enc, ref, text: str) -> None:  # type: ignore[no-untyped-def]
    ids = ref.encode_ordinary(text)
    assert enc.encode_ordinary(text) == ids
    assert enc.count(text, disallowed_special=()) == len(ids)
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids)


BUILTIN = ["cl100k_base", "o200k_base", "r50k_base", "p50k_base"]
# contexts where each class of the character matters: words, case runs, marks before a
# contraction (outside testing: "\u1acf's", a Unicode 17 mark, was "'s" in one token), numbers
CONTEXTS = ["a{c}b", " {c}{c}", "1{c}2", "x'{c}", "{c} ", " {c}\n", "{c}'s", "A{c}B.", "{c}AB.",
            "\u4e2d{c}'LL", "!{c}x"]


@pytest.mark.parametrize("name", BUILTIN)
def test_unicode_version_differences(name):  # type: ignore[no-untyped-def]
    # code points the regex module knows but tiktoken's engine does not, or classes otherwise
    # (U+0295 is Ll there, Lo in the regex module): tiktoken decides
    enc, ref = edgetok.get_encoding(name), reference.tiktoken_encoding(name)
    for cp in sorted(DIFFERS):
        for t in CONTEXTS:
            t = t.format(c=chr(cp))
            assert enc.encode_ordinary(t) == ref.encode_ordinary(t), (name, hex(cp), t)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILTIN)
def test_every_code_point(name):  # type: ignore[no-untyped-def]
    # every code point (but surrogates) in each context, one long text a context
    enc, ref = edgetok.get_encoding(name), reference.tiktoken_encoding(name)
    chars = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    for context in CONTEXTS:
        text = "\n".join(context.format(c=c) for c in chars)
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), (name, context)


@pytest.mark.parametrize("text", [
    "", " ", "\n", "hello world", "Hello, World!\n", "  leading", "trailing   ", "a\r\n\r\nb",
    "I'll we've they're it's DON'T", "1234567890", "emoji 😀👍🏽 and ZWJ 👨‍👩‍👧",
    "\u00e9\u0301", "\x00\x01\x7f", "日本語のテキスト", "Ελληνικά Русский עברית العربية हिन्दी",
    "=" * 10000, "a" * 100000, "😀" * 3000, " " * 5000 + "x", "1" * 9999, "ab" * 40000,
])
def test_edge_cases(enc, ref, text):  # type: ignore[no-untyped-def]
    assert enc.encode(text) == ref.encode(text)
    assert enc.decode(enc.encode(text)) == text


def test_surrogates_replaced_like_tiktoken(enc, ref):  # type: ignore[no-untyped-def]
    for t in ("a\ud800b", "\udfff", "x\ud83d\ude00y"):
        assert enc.encode(t) == ref.encode(t)


SPECIAL_CASES = [
    ("hi <|endoftext|> there", {"allowed_special": "all"}),
    ("hi <|endoftext|> there", {"disallowed_special": ()}),
    ("<|fim_prefix|>a<|fim_middle|>b<|fim_suffix|>", {"allowed_special": {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"}}),
    ("x<|endofprompt|><|endoftext|>", {"allowed_special": {"<|endofprompt|>"}, "disallowed_special": ()}),
    ("<|endoftext|><|endoftext|>", {"allowed_special": {"<|endoftext|>"}}),
    ("a <|endoftext", {}),
    ("<|unknown|>", {}),
    ("<|endoftext|>", {"allowed_special": {"<|endoftext|>"}, "disallowed_special": "all"}),
]


@pytest.mark.parametrize("text,kw", SPECIAL_CASES)
def test_specials(enc, ref, text, kw):  # type: ignore[no-untyped-def]
    assert enc.encode(text, **kw) == ref.encode(text, **kw)
    assert enc.count(text, **kw) == len(ref.encode(text, **kw))


@pytest.mark.parametrize("text,kw", [
    ("hi <|endoftext|>", {}),
    ("<|fim_middle|> and <|endoftext|>", {"allowed_special": {"<|endoftext|>"}}),
    ("<|endofprompt|>", {"disallowed_special": {"<|endofprompt|>"}}),
])
def test_disallowed_special_raises_like_tiktoken(enc, ref, text, kw):  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError) as want:
        ref.encode(text, **kw)
    with pytest.raises(ValueError) as got:
        enc.encode(text, **kw)
    assert str(got.value) == str(want.value)


def test_surface(enc, ref):  # type: ignore[no-untyped-def]
    assert enc.name == ref.name
    assert enc.n_vocab == ref.n_vocab
    assert enc.max_token_value == ref.max_token_value
    assert enc.eot_token == ref.eot_token
    assert enc.special_tokens_set == ref.special_tokens_set
    assert enc._pat_str == ref._pat_str
    assert enc.token_byte_values() == ref.token_byte_values()
    for t in [0, 1, 255, 1000, 100255, 100257, 100276]:
        assert enc.decode_single_token_bytes(t) == ref.decode_single_token_bytes(t)
    for s in ["hello", " world", "<|endoftext|>", b"\xff"]:
        assert enc.encode_single_token(s) == ref.encode_single_token(s)
    with pytest.raises(KeyError):
        ref.encode_single_token("not one token")
    with pytest.raises(KeyError):
        enc.encode_single_token("not one token")
    assert "cl100k_base" in edgetok.list_encodings()


@pytest.mark.parametrize("bad", [100256, 100261, 10**6])
def test_decode_invalid_ids(enc, ref, bad):  # type: ignore[no-untyped-def]
    with pytest.raises(KeyError):
        ref.decode_single_token_bytes(bad)
    with pytest.raises(KeyError):
        enc.decode_single_token_bytes(bad)
    with pytest.raises(KeyError):
        enc.decode([1, bad])


def test_bytes_like_input(enc, ref, corpora):  # type: ignore[no-untyped-def]
    # the C core reads any buffer: bytes, bytearray, memoryview, on a warm workspace and cold
    from edgetok import budget

    data = corpora["english"][:3000].encode()
    want = ref.encode_ordinary(data.decode())
    model = enc._model
    for make in (bytes, bytearray, memoryview, bytearray):
        assert model.encode(make(data))[0] == want
    assert list(budget.chunks(enc, bytearray(data), 50)) == list(budget.chunks(enc, data, 50))


def test_batches(enc, ref, corpora):  # type: ignore[no-untyped-def]
    docs = corpora["english"].split("\n\n")[:2000] + ["<|endoftext|> x"]
    assert enc.encode_batch(docs, allowed_special="all") == ref.encode_batch(docs, allowed_special="all")
    assert enc.encode_ordinary_batch(docs) == ref.encode_ordinary_batch(docs)
    ids = ref.encode_ordinary_batch(docs)
    assert enc.decode_batch(ids) == ref.decode_batch(ids)
    assert enc.decode_tokens_bytes(ids[0]) == ref.decode_tokens_bytes(ids[0])


def test_threads_share_one_model(enc, ref, corpora):  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    text = corpora["code"][:300000]
    chunks = [text[i:i + 5000] for i in range(0, len(text), 5000)]
    with ThreadPoolExecutor(8) as ex:
        got = list(ex.map(enc.encode_ordinary, chunks))
    assert got == [ref.encode_ordinary(c) for c in chunks]


# Long pieces take the backtracking encoder (more than 64 bytes without a pretokenizer cut).
long_pieces = st.builds(
    lambda parts, n: "".join(parts) * n,
    st.lists(st.sampled_from(["a", "b", "ab", "=", "-", "*", "e", "ll", "\u00e9", "\u4e2d", "\U0001f600",
                              "x", "Q", "0"]), min_size=1, max_size=6),
    st.integers(20, 400),
)


@given(long_pieces)
@settings(max_examples=400, deadline=None)
def test_long_pieces(enc, ref, text):  # type: ignore[no-untyped-def]
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


@given(st.text(st.sampled_from("abcdefghijklmnop=-_*#!\u00e9\u00fc"), min_size=65, max_size=3000))
@settings(max_examples=300, deadline=None)
def test_long_random_pieces(enc, ref, text):  # type: ignore[no-untyped-def]
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


def test_megabyte_pieces(enc, ref):  # type: ignore[no-untyped-def]
    import random

    rng = random.Random(5)
    for text in ("a" * 1_000_000, "=" * 300_000,
                 "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") for _ in range(300_000))):
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text)



def test_disallowed_strings_that_are_not_special(enc, ref):  # type: ignore[no-untyped-def]
    # tiktoken looks for any string given as disallowed, special token or not
    for f in (ref, enc):
        with pytest.raises(ValueError):
            f.encode("hello foo", disallowed_special={"foo"})
    assert enc.encode("no match", disallowed_special={"foo"}) == ref.encode("no match", disallowed_special={"foo"})


# The C core remembers the ids of short pieces (up to 16 bytes) per workspace. Pieces that
# differ only in a trailing NUL, in length around 8 and 16 bytes, or that end the text (fewer
# than 16 bytes left to read) must never be taken for one another, however the table fills.
_SHORT = st.lists(st.sampled_from(["\0", "a", "b", "é", "中", " ", "'", "0", "!", "\n", "\0a"]),
                  min_size=1, max_size=18).map("".join)


@given(st.lists(_SHORT, min_size=1, max_size=60))
@settings(max_examples=400, deadline=None)
def test_short_piece_cache(enc, ref, words):  # type: ignore[no-untyped-def]
    text = " ".join(words)
    want = ref.encode_ordinary(text)
    assert enc.encode_ordinary(text) == want
    # the same pieces again, warm, in another order, and each alone at the end of a text
    assert enc.encode_ordinary(" ".join(reversed(words))) == ref.encode_ordinary(" ".join(reversed(words)))
    for w in words[:8]:
        assert enc.encode_ordinary(w) == ref.encode_ordinary(w)
    assert enc.encode_ordinary(text) == want


# Without final, the C core stops at the last cut no later text can move, looking only at the
# bytes it has, which may end inside a character ("\xc5" may become U+017F, which o200k's
# case-insensitive contractions take as "s"). Whatever follows, the ids so far plus the ids
# of the rest on its own are the ids of the whole.
_FRAGMENTS = [b"a", b"'", b"l", b"s", b"\xc5", b"\xbf", b"\xc5\xbf", b" ", b"A", b"\n", b"e",
              b"v", b"R", b"\xe4\xb8\xad", b"1", b"!"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base"])
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=24).map(b"".join))
@settings(max_examples=150, deadline=None)
def test_streaming_cuts_hold_for_any_continuation(name, data):  # type: ignore[no-untyped-def]
    model = edgetok.get_encoding(name).model
    full = model.encode(data)[0]
    for k in range(1, len(data)):
        ids, used = model.encode(data[:k], final=False)
        assert used <= k and ids + model.encode(data[used:])[0] == full, (data[:k], data)
