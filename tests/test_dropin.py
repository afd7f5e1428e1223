"""tiktoken's whole surface, compared with tiktoken itself: the model table, its other
encodings, Encoding(...) from constructor arguments, the private helpers, and the
exceptions on misuse."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import edgetok
import reference

TEXTS = ["hello world", "hello fanta", " \x850", "today\n \n", "我非常渴望与人工智能一起工作",
         "நடிகர் சூர்யா", "  !", "x\n\n", "don't  ", "<|endoftext|> hi <|fim_prefix|>", "",
         "12345 abc\t\t", "hello <|endofprompt|>"]


def test_model_table_is_tiktokens() -> None:
    import tiktoken.model as tm

    from edgetok import model_names

    assert model_names.MODEL_TO_ENCODING == tm.MODEL_TO_ENCODING
    assert list(model_names.MODEL_PREFIX_TO_ENCODING.items()) == list(tm.MODEL_PREFIX_TO_ENCODING.items())
    names = list(tm.MODEL_TO_ENCODING) + [p + "x-2025" for p in tm.MODEL_PREFIX_TO_ENCODING]
    names += [p for p in tm.MODEL_PREFIX_TO_ENCODING] + ["gpt-4o-mini", "gpt-3.5-turbo-16k",
                                                         "ft:gpt-4o:org:x", "gpt-5.1", "o3-pro"]
    for n in names:
        assert edgetok.encoding_name_for_model(n) == tm.encoding_name_for_model(n), n
        assert edgetok.encoding_for_model(n).name == tm.encoding_name_for_model(n), n
    for bad in ["", "llama", "gpt", "o2", "GPT-4"]:
        with pytest.raises(KeyError) as ours:
            edgetok.encoding_name_for_model(bad)
        with pytest.raises(KeyError) as theirs:
            tm.encoding_name_for_model(bad)
        assert str(ours.value) == str(theirs.value)


def test_list_encoding_names() -> None:
    import tiktoken

    assert sorted(edgetok.list_encoding_names()) == sorted(tiktoken.list_encoding_names())


@pytest.mark.parametrize("name", ["gpt2", "p50k_edit", "o200k_harmony"])
def test_derived_encodings(name: str) -> None:
    base = {"gpt2": "r50k_base", "p50k_edit": "p50k_base", "o200k_harmony": "o200k_base"}[name]
    import tiktoken

    ref = reference.tiktoken_encoding(base)  # seeds tiktoken's cache with the vocabulary
    if name != "gpt2":  # (tiktoken's gpt2 reads GPT-2's original files: the same ids as r50k)
        ref = tiktoken.get_encoding(name)
    enc = edgetok.get_encoding(name)
    assert enc.name == name
    assert enc._special_tokens == ref._special_tokens
    assert enc.n_vocab == ref.n_vocab and enc.max_token_value == ref.max_token_value
    specials = sorted(ref._special_tokens)[:40]
    texts = TEXTS + ["".join(specials), "a" + " b ".join(specials)]
    for t in texts:
        assert enc.encode(t, allowed_special="all") == ref.encode(t, allowed_special="all")
        assert enc.encode(t, disallowed_special=()) == ref.encode(t, disallowed_special=())
        ids = ref.encode(t, allowed_special="all")
        assert enc.decode(ids) == ref.decode(ids)
    for i in sorted(set(ref._special_tokens.values())):
        assert enc.decode_single_token_bytes(i) == ref.decode_single_token_bytes(i)
        assert enc.is_special_token(i) and ref.is_special_token(i)


def test_constructed_encoding_matches_tiktoken() -> None:
    import tiktoken

    ref = reference.tiktoken_encoding("cl100k_base")
    chatml = {**ref._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265}
    kw = dict(pat_str=ref._pat_str, mergeable_ranks=ref._mergeable_ranks, special_tokens=chatml)
    theirs = tiktoken.Encoding("cl100k_im", **kw)
    ours = edgetok.Encoding("cl100k_im", **kw)
    text = "<|im_start|>user\nhello<|im_end|><|endoftext|>"
    for t in TEXTS + [text]:
        assert ours.encode(t, allowed_special="all") == theirs.encode(t, allowed_special="all")
    ids = theirs.encode(text, allowed_special="all")
    assert ours.decode(ids) == theirs.decode(ids) and ours.n_vocab == theirs.n_vocab
    with pytest.raises(ValueError):
        ours.encode(text)


def test_constructed_from_scratch() -> None:
    """A vocabulary no built-in has, its own regex: compiled (the regex path) and cached."""
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    for k, pair in enumerate([b"ab", b"abc", b"  ", b"hello", b"he", b"ll", b"o w"]):
        ranks.setdefault(pair, 256 + k)
    kw = dict(pat_str=r"\w+|[^\w\s]+|\s+", mergeable_ranks=ranks, special_tokens={"<|x|>": 1000})
    theirs, ours = tiktoken.Encoding("tiny", **kw), edgetok.Encoding("tiny", **kw)
    for t in TEXTS + ["abcabc hello  world<|x|>", "ababab"]:
        assert ours.encode(t, allowed_special="all") == theirs.encode(t, allowed_special="all")
        assert ours.encode_ordinary(t) == theirs.encode_ordinary(t)
    assert ours.n_vocab == theirs.n_vocab == 1001
    assert ours.decode([1000, 256]) == theirs.decode([1000, 256])


def test_constructor_errors_like_tiktoken() -> None:
    import tiktoken

    ref = reference.tiktoken_encoding("r50k_base")
    base = dict(pat_str=ref._pat_str, mergeable_ranks=ref._mergeable_ranks)
    cases = [dict(base, special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50000),
             dict(base, special_tokens={"<|endoftext|>": 60000}, explicit_n_vocab=50257),
             dict(pat_str=ref._pat_str, mergeable_ranks={}, special_tokens={}),
             dict(base),
             dict(base, special_tokens={}, pat_str="(unclosed")]
    for kw in cases:
        with pytest.raises(Exception) as theirs:
            tiktoken.Encoding("bad", **kw)
        with pytest.raises(Exception) as ours:
            edgetok.Encoding("bad", **kw)
        assert isinstance(ours.value, type(theirs.value)) or issubclass(type(theirs.value), type(ours.value)) \
            or (isinstance(ours.value, ValueError) and isinstance(theirs.value, ValueError)), kw


MISUSE = {
    "allowed list": lambda e: e.encode("hi", allowed_special=["<|endoftext|>"]),
    "allowed tuple": lambda e: e.encode("hi <|endoftext|>", allowed_special=("<|endoftext|>",)),
    "allowed str": lambda e: e.encode("hi", allowed_special="<|endoftext|>"),
    "allowed None": lambda e: e.encode("hi", allowed_special=None),
    "disallowed None": lambda e: e.encode("hi<|endoftext|>", disallowed_special=None),
    "ordinary bytes": lambda e: e.encode_ordinary(b"x"),
    "ordinary None": lambda e: e.encode_ordinary(None),
    "encode bytes": lambda e: e.encode(b"x"),
    "decode iterator": lambda e: e.decode(iter([1, 2])),
    "decode_bytes generator": lambda e: e.decode_bytes(t for t in [1]),
    "decode negative": lambda e: e.decode([-1]),
    "decode 2^32": lambda e: e.decode([1 << 32]),
    "decode unknown": lambda e: e.decode([100261]),
    "decode past the end": lambda e: e.decode([10**6]),
    "single negative": lambda e: e.decode_single_token_bytes(-1),
    "single unknown": lambda e: e.decode_single_token_bytes(10**6),
    "single 2^33": lambda e: e.decode_single_token_bytes(1 << 33),
    "encode_single_token int": lambda e: e.encode_single_token(5),
    "encode_single_token missing": lambda e: e.encode_single_token("qqqqqqqqq"),
    "is_special_token str": lambda e: e.is_special_token("1"),
    "offsets of broken UTF-8": lambda e: e.decode_with_offsets([126]),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_like_tiktoken(case: str) -> None:
    def run(enc):  # type: ignore[no-untyped-def]
        try:
            return "ok", MISUSE[case](enc)
        except BaseException as e:  # noqa: BLE001
            return type(e), None

    theirs = run(reference.tiktoken_encoding("cl100k_base"))
    ours = run(edgetok.get_encoding("cl100k_base"))
    assert ours == theirs


@pytest.mark.parametrize("name", ["cl100k_base", "r50k_base"])
def test_private_helpers(name: str) -> None:
    ref, enc = reference.tiktoken_encoding(name), edgetok.get_encoding(name)
    assert enc._pat_str == ref._pat_str
    assert enc._special_tokens == ref._special_tokens
    assert enc._mergeable_ranks == ref._mergeable_ranks
    for t in TEXTS:
        b = t.encode()
        if b:  # (tiktoken panics on an empty piece)
            assert enc._encode_single_piece(t) == ref._encode_single_piece(t)
        assert enc._encode_only_native_bpe(t) == ref._encode_only_native_bpe(t)
        for cut in range(len(b) + 1):
            assert enc._encode_bytes(b[:cut] + b"\x80\xe6") == ref._encode_bytes(b[:cut] + b"\x80\xe6")
            assert enc._encode_bytes(b[:cut]) == ref._encode_bytes(b[:cut])


@pytest.mark.parametrize("name", ["cl100k_base", "r50k_base"])
def test_encode_with_unstable(name: str) -> None:
    ref, enc = reference.tiktoken_encoding(name), edgetok.get_encoding(name)
    for t in TEXTS[:-2] + ["hello fant", "x\n", "a  ", "12", "<|endoftext|>", "hi<|endoftext|>"]:
        s1, c1 = ref.encode_with_unstable(t, allowed_special="all")
        s2, c2 = enc.encode_with_unstable(t, allowed_special="all")
        assert s2 == s1 and sorted(map(tuple, c2)) == sorted(map(tuple, c1)), t


@given(st.text(max_size=30), st.binary(max_size=12))
@settings(max_examples=150, deadline=None)
def test_hyp_private_helpers(text: str, junk: bytes) -> None:
    ref, enc = reference.tiktoken_encoding("cl100k_base"), edgetok.get_encoding("cl100k_base")
    b = text.encode("utf-8", "replace") + junk
    assert enc._encode_bytes(b) == ref._encode_bytes(b)
    if b:
        assert enc._encode_single_piece(b) == ref._encode_single_piece(b)
    ids = ref.encode(text, disallowed_special=())
    try:
        want = ref.decode_with_offsets(ids)
    except UnicodeDecodeError:
        with pytest.raises(UnicodeDecodeError):
            enc.decode_with_offsets(ids)
    else:
        assert enc.decode_with_offsets(ids) == want


def test_import_does_not_load_the_model_table() -> None:
    import subprocess
    import sys

    code = "import sys, edgetok; print('edgetok.model_names' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
