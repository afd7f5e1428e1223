"""SentencePiece Unigram and BPE models, compiled by edgetok, against the `sentencepiece` package on
the same .model files: models trained here on real text with sentencepiece's own trainer."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import edgetok
from edgetok._ffi import ModelError
from strategies import any_text, texts

spm = pytest.importorskip("sentencepiece")

# (name, vocab size, trainer options): the normaliser and trainer settings that change encoding
MODELS = [
    ("en1k_bytes", 1000, {"byte_fallback": True}),
    ("multi4k", 4000, {"character_coverage": 0.9995}),
    ("identity_keepws", 800, {"normalization_rule_name": "identity", "add_dummy_prefix": False,
                              "remove_extra_whitespaces": False}),
    ("user_symbols_cf", 800, {"user_defined_symbols": ["<sep>", "edgetok", "\u2581New"],
                              "normalization_rule_name": "nmt_nfkc_cf", "byte_fallback": True}),
    ("ws_suffix", 600, {"treat_whitespace_as_suffix": True}),
    # pieces across spaces ("of▁the"): no word-by-word Viterbi, no word cache
    ("phrases", 2000, {"split_by_whitespace": False}),
    # SentencePiece BPE (Llama-2, Mistral): merges by piece score over the same normaliser
    ("bpe_bytes", 1000, {"model_type": "bpe", "byte_fallback": True}),
    ("bpe_unk", 2000, {"model_type": "bpe", "character_coverage": 0.9995}),
    ("bpe_user_cf", 800, {"model_type": "bpe", "user_defined_symbols": ["<sep>", "edgetok"],
                          "normalization_rule_name": "nmt_nfkc_cf", "byte_fallback": True}),
]


@pytest.fixture(scope="session")
def trained(tmp_path_factory, corpora):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("spm")
    train = d / "train.txt"
    train.write_text(corpora["english"][:300000] + "\n" + corpora["multilingual"][:200000])
    out = {}
    for name, size, opts in MODELS:
        spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(d / name),
                                       vocab_size=size, num_threads=2, minloglevel=2,
                                       **{"model_type": "unigram", **opts})
        path = str(d / f"{name}.model")
        out[name] = (spm.SentencePieceProcessor(model_file=path), edgetok.load(path))
    return out


@pytest.mark.parametrize("name", [m[0] for m in MODELS])
def test_real_text(trained, corpora, name):  # type: ignore[no-untyped-def]
    sp, enc = trained[name]
    assert enc.model.kind == ("sp-bpe" if name.startswith("bpe") else "unigram")
    for kind, text in corpora.items():
        lines = text[:60000].splitlines()
        assert [enc.encode(line) for line in lines] == sp.encode(lines), kind
        whole = text[:20000]
        assert enc.encode(whole) == sp.encode(whole)
        ids = sp.encode(whole)
        assert enc.decode(ids) == sp.decode(ids)
    line = corpora["english"][:200]
    assert enc.encode(line, add_bos=True, add_eos=True) == sp.encode(line, add_bos=True, add_eos=True)


def test_pieces_across_words(trained, corpora):  # type: ignore[no-untyped-def]
    """Where pieces span words, the Viterbi must run over whole sentences, not word by word."""
    sp, enc = trained["phrases"]
    inner = [p for p in (sp.id_to_piece(i) for i in range(sp.get_piece_size()))
             if "\u2581" in p.lstrip("\u2581")]
    assert len(inner) > 50, inner
    lines = corpora["english"][:100000].splitlines()
    ids = sp.encode(lines)
    assert [enc.encode(line) for line in lines] == ids
    assert any(sp.id_to_piece(i) in inner for line in ids for i in line)


@given(st.one_of(texts, any_text, st.text(st.sampled_from(" \t\n\u3000\u00a0abcÀﬁ①ｶﾞ<sep>edgetok"), max_size=40)))
@settings(max_examples=600, deadline=None)
def test_generated(trained, text):  # type: ignore[no-untyped-def]
    for sp, enc in trained.values():
        ids = sp.encode(text)
        assert enc.encode(text) == ids, text
        assert enc.decode(ids) == sp.decode(ids)


def test_normaliser_edge_cases(trained):  # type: ignore[no-untyped-def]
    """Rules that write far more than 3 bytes per input byte (NFKC: U+FDFA is 3 bytes, its
    expansion 33), in texts long and short, where a fixed 3x buffer once looped for ever; and
    ASCII letters followed by combining marks (rules start at the letter: "e" + U+0301 -> "é"),
    which the normaliser's ASCII fast path must leave to the rules."""
    cases = ["\ufdfa", "\ufdfa" * 500, "a\ufdfa b  \ufdfa\ufdfa c " * 40, "\u3392" * 300,
             "Cafe\u0301 nai\u0308ve A\u030a e\u0301" * 20, "x" * 3000 + "\u0301", "<\u0338 =\u0338 >\u0338",
             "  Q\u0301  \t\n e\u0301", "e" + "\u0301" * 50]
    for sp, enc in trained.values():
        for text in cases:
            assert enc.encode(text) == sp.encode(text), text[:40]


def test_cli_and_compile(trained, tmp_path):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    sp, enc = trained["en1k_bytes"]
    src = enc.model.source
    out = tmp_path / "m.etok"
    p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "compile", src, "-o", str(out)],
                       capture_output=True)
    assert p.returncode == 0, p.stderr
    text = "Compiled once, loaded by mmap: Ünïcödé and emoji \U0001f600.\n"
    for model in (src, str(out)):
        p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "encode", "--model", model],
                           input=text.encode(), capture_output=True)
        assert p.returncode == 0, p.stderr
        assert list(map(int, p.stdout.split())) == sp.encode(text)
        p = subprocess.run([sys.executable, "-m", "edgetok_cli.main", "encode", "--model", model,
                            "--bos", "--eos"], input=text.encode(), capture_output=True)
        assert list(map(int, p.stdout.split())) == sp.encode(text, add_bos=True, add_eos=True)


def test_damaged_model_is_an_error(trained, tmp_path):  # type: ignore[no-untyped-def]
    data = open(trained["en1k_bytes"][1].model.source, "rb").read()
    bad = tmp_path / "bad.model"
    bad.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelError):
        edgetok.load(bad)


def test_control_text_is_text(trained):  # type: ignore[no-untyped-def]
    sp, enc = trained["en1k_bytes"]
    for text in ("<s> and </s> and <unk> and <0x41>", "<|endoftext|>"):
        assert enc.encode(text) == sp.encode(text)


def test_bpe_only_operations_say_so(trained):  # type: ignore[no-untyped-def]
    _, enc = trained["en1k_bytes"]
    for op in (lambda: enc.count_till_limit("x y", 3), lambda: enc.split_at("x y", 2),
               lambda: enc.range_counter("x y"), lambda: enc.pretokenize("x y")):
        with pytest.raises(ModelError, match="BPE encodings only"):
            op()
    assert enc.count("x y") == len(enc.encode("x y"))


def test_expanding_rules_from_a_small_workspace(trained):  # type: ignore[no-untyped-def]
    # each count of U+FDFA from a fresh model (the smallest workspace): the encoder must ask for
    # a workspace larger than the one it has, or it is asked again for ever (found in review:
    # 40 for a SentencePiece BPE model, 290-295 for Unigram)
    import edgetok

    for sp, enc in trained.values():
        for n in (1, 4, 40, 290, 295, 1000):
            fresh = edgetok.load(enc.model.source)
            assert fresh.encode("\ufdfa" * n) == sp.encode("\ufdfa" * n), n


SDIST_MODELS = ["test/botchan_en_unigram_1000.model", "test/botchan_en_bpe_1000.model",
                "test/kyoto_ja_unigram_8000.model"]


@pytest.fixture(scope="session")
def sdist_models():  # type: ignore[no-untyped-def]
    """sentencepiece's own test models, from its sdist (fetched once into the cache)."""
    from edgetok.fetch import sdist_members

    try:
        got = sdist_members("sentencepiece", spm.__version__, SDIST_MODELS)
    except RuntimeError as e:
        pytest.fail(f"sentencepiece's test models are not available: {e}")
    return {name: (spm.SentencePieceProcessor(model_file=str(p)), edgetok.load(p))
            for name, p in got.items()}


def test_decode_drops_leading_spaces_like_sentencepiece(trained, sdist_models):  # type: ignore[no-untyped-def]
    # outside testing: sentencepiece drops a leading U+2581 from every piece until text is
    # output (with extra whitespace removed), not only from the first; with no dummy prefix
    sp, enc = sdist_models["test/botchan_en_unigram_1000.model"]
    space = sp.piece_to_id("\u2581")
    for ids in ([space, space], [space, space, sp.piece_to_id("\u2581a")], [1, space, 2, space]):
        assert enc.decode(ids) == sp.decode(ids), ids
    sp, enc = trained["identity_keepws"]  # add_dummy_prefix and remove_extra_whitespaces off
    words = [i for i in range(sp.get_piece_size()) if sp.id_to_piece(i).startswith("\u2581")][:20]
    for i in words:
        assert enc.decode([i]) == sp.decode([i]), sp.id_to_piece(i)
        assert enc.decode([i, i]) == sp.decode([i, i]), sp.id_to_piece(i)


def decode_cases(sp) -> st.SearchStrategy[list[int]]:  # type: ignore[no-untyped-def]
    """Id sequences of any pieces, with the ones decoding turns on (spaces, controls, <unk>,
    byte pieces that make characters or not) more often."""
    n = sp.get_piece_size()
    special = [i for i in range(n) if sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i)
               or sp.id_to_piece(i) in ("\u2581", "\u2581\u2581")][:300]
    return st.lists(st.one_of(st.integers(0, n - 1), st.sampled_from(special or [0])), max_size=24)


@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_decode_any_ids(trained, sdist_models, data):  # type: ignore[no-untyped-def]
    decode_any_ids(trained, sdist_models, data)


@pytest.mark.slow
@given(data=st.data())
@settings(max_examples=400, deadline=None)
def test_decode_any_ids_long(trained, sdist_models, data):  # type: ignore[no-untyped-def]
    decode_any_ids(trained, sdist_models, data)


def decode_any_ids(trained, sdist_models, data) -> None:  # type: ignore[no-untyped-def]
    # decode must equal sentencepiece's DecodeIds for any id sequence, not only encoder output,
    # and decoding it in parts (the CLI's streaming decode) the same
    from edgetok.stream import Decoder

    for sp, enc in [*trained.values(), *sdist_models.values()]:
        ids = data.draw(decode_cases(sp))
        want = sp.decode(ids)
        assert enc.decode(ids) == want, ids
        assert enc.decode_bytes(ids) == want.encode(), ids
        cut = data.draw(st.lists(st.integers(0, len(ids)), max_size=3).map(sorted))
        dec = Decoder(enc, "strict")
        parts = [ids[a:b] for a, b in zip([0, *cut], [*cut, len(ids)])]
        assert "".join(dec.feed(p) for p in parts) + dec.flush() == want, (ids, cut)
