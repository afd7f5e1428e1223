"""Token-level automata side by side in one run: edgetok's regex_automaton (plain and
canonical), outlines-core's Index (compile), llguidance's LLMatcher and xgrammar's
GrammarMatcher (compile, mask per token), on the structured-output patterns, for cl100k_base, o200k_base and Llama-3's 128k
vocabulary (llama3: its tokens are not all made by its merges; pair tables without
backtracking give it canonical automata too, README).

    python bench/automata.py [--encodings cl100k_base,o200k_base,llama3] [--repeat 20]

Compile: the best of --compile-repeat runs, from a pattern to a ready automaton (outlines-core
and edgetok build every state's mask up front; llguidance compiles lazily and makes masks on
demand, so its compile is small and its masks cost more; xgrammar's compile, one thread, no
cache, keeps a mask per grammar state of the tokens it can decide up front and checks the rest
at each step). Mask: the mean time to produce the
allowed-token bitset at each step of a string of the pattern (its canonical encoding), as a
decoding loop asks for it, Python call included: edgetok's allowed_into (a reused buffer),
llguidance's and xgrammar's fill_next_token_bitmask (a reused numpy array; xgrammar's masks
are checked equal to edgetok's plain ones at each step). edgetok's canonical masks: "canon"
asked again (--repeat rounds: its bitset cache answers), "made" asked again of the C core
itself (no bitset cache: every mask made, with what the automaton learned in earlier masks,
after two untimed rounds: the steady cost), "cold" each state the first time on a fresh
automaton (the median of 5), "new" each state the first time on an automaton that has served
20 other strings of the pattern (sampled from the plain automaton, seed 1; what a decoding
loop that keeps its automaton meets), and "llg new" llguidance's masks at those same steps (its
matcher walking the same 40 strings). Peers missing: their columns say
"-" (xgrammar imports torch: `pip install xgrammar` brings it, some GB, so the bench extra
does not).
Memory: edgetok's automata, plain and canonical (et_automaton_bytes, at build: a canonical
one's learning tables are fixed then; its bitset cache adds at most mask_cache bytes, and the
model's pair set, shared by every canonical automaton of the model, is not counted).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import edgetok  # noqa: E402
import reference  # noqa: E402
from parallel import best  # noqa: E402  (the best of n timed runs)

CASES = [  # (name, pattern, a string of it)
    ("iso_date", r"[0-9]{4}-[0-9]{2}-[0-9]{2}", "2026-11-24"),
    ("email", r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", "jane.doe+news@example.co.uk"),
    ("phone", r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}", "(555) 123-4567"),
    ("enum", r"(yes|no|maybe|unknown)", "maybe"),
    ("integer", r"-?(0|[1-9][0-9]*)", "-1234567"),
    ("float", r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", "-12.375e-3"),
    ("json", r'\{"name": "[^"]{1,20}", "age": [0-9]{1,3}\}', '{"name": "Ann Lee", "age": 42}'),
    ("lower_words", r"[a-z ]{0,40}", "the quick brown fox jumps over a dog"),
]


COLD_RUNS = 5  # fresh automata whose first masks are timed (one sample is noise: a first call)


def per_step(steps: "list[object]", mask, repeat: int) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    for _ in range(repeat):
        for s in steps:
            mask(s)
    return (time.perf_counter() - t) / (repeat * len(steps))


def new_states(enc: "edgetok.Encoding", pattern: str, buf: bytearray,
               llg: "tuple[object, object, object] | None" = None,
               n: int = 20) -> "tuple[float | None, float | None]":
    """The mean time of a canonical mask (C core) of a state never asked before, on an automaton
    that has made the masks of n other strings of the pattern: 2n strings sampled from the plain
    automaton (seed 1), the first n walked to warm it, the states of the rest timed once each
    (None where they hold none: a finite language the first n covered). And where llg is
    (matcher, bitmask, fill): llguidance's mean mask at the same steps, its matcher walking
    the same strings (most of these states are a JSON string's or an address's, whose masks
    cost a mask-per-token engine more than the bench string's steps do on average)."""
    plain = enc.regex_automaton(pattern)
    rng = random.Random(1)
    texts: "list[str]" = []
    while len(texts) < 2 * n:
        ids = plain.sample(rng, max_tokens=40)
        if ids:
            texts.append(enc.decode(ids))
    a = enc.regex_automaton(pattern, canonical=True)._native
    seen: "set[int]" = set()
    total, total_llg, timed = 0.0, 0.0, 0
    for k, text in enumerate(texts):
        s = 0
        if llg is not None:
            llg[0].reset()  # type: ignore[attr-defined]
        for t in enc.encode_ordinary(text):
            if s not in seen:
                seen.add(s)
                t0 = time.perf_counter()
                a.allowed_into(s, buf)
                t1 = time.perf_counter()
                if llg is not None:
                    llg[2](llg[0], llg[1], 0)  # type: ignore[operator]
                if k >= n:
                    total += t1 - t0
                    total_llg += time.perf_counter() - t1
                    timed += 1
            s = a.next(s, t)
            assert s >= 0, (pattern, text)
            if llg is not None:
                assert llg[0].consume_token(t), (pattern, text, t)  # type: ignore[attr-defined]
    if not timed:
        return None, None
    return total / timed, (total_llg / timed if llg is not None else None)


def xgrammar_masks(xgr, np, compiled, plain, ids: "list[int]",  # type: ignore[no-untyped-def]
                   repeat: int, stop: int) -> float:
    """The mean time of xgrammar's fill_next_token_bitmask at each step of ids (repeat rounds),
    its masks checked equal to the plain automaton's (edgetok's bit order; xgrammar's int32
    words are little-endian; its bits past the vocabulary, and its stop token, which it allows
    where the text may end, are not compared: edgetok allows no special token)."""
    m = xgr.GrammarMatcher(compiled)
    bm = np.zeros((1, (plain.n_vocab + 31) // 32), dtype=np.int32)
    nb, tail = (plain.n_vocab + 7) // 8, plain.n_vocab % 8
    total = 0.0
    for r in range(repeat):
        m.reset()
        s = plain.start
        for t in ids:
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bm, 0)
            total += time.perf_counter() - t0
            if r == 0:
                got = bytearray(bm[0].view(np.uint8).tobytes()[:nb])
                if tail:
                    got[-1] &= (1 << tail) - 1
                got[stop >> 3] &= ~(1 << (stop & 7)) & 0xFF
                assert bytes(got) == bytes(plain.allowed(s)), ("xgrammar's mask differs", t)
                s = plain.next(s, t)
            assert m.accept_token(t), t
    return total / (repeat * len(ids))


def encoding(name: str) -> "tuple[edgetok.Encoding, object]":
    """edgetok's encoding and a tiktoken Encoding with the same ids: a built-in and tiktoken's,
    or llama3: Llama-3's 128k vocabulary (the llama-bpe GGUF of the llama-cpp-python sdist,
    fetched once like the tests' data) and a tiktoken Encoding of its ranks and pattern (for
    llguidance; the strings timed are ones where its ids are edgetok's)."""
    if name != "llama3":
        return edgetok.get_encoding(name), reference.tiktoken_encoding(name)
    import tiktoken
    from edgetok.fetch import sdist_members

    path = next(iter(sdist_members("llama-cpp-python", "0.3.36",
                                   ["models/ggml-vocab-llama-bpe.gguf"]).values()))
    enc = edgetok.load(str(path))
    ranks = {enc.model.token_bytes(i): i for i in range(enc.model.n_vocab)
             if enc.model.token_bytes(i) and not enc.is_special_token(i)}
    eos = enc._special_tokens.get("<|end_of_text|>", enc.n_vocab - 1)
    return enc, tiktoken.Encoding("llama3", pat_str=enc._pat_str, mergeable_ranks=ranks,
                                  special_tokens={"<|endoftext|>": eos})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encodings", default="cl100k_base,o200k_base,llama3")
    ap.add_argument("--repeat", type=int, default=20, help="mask rounds over a string's steps")
    ap.add_argument("--compile-repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        import outlines_core as oc
    except ImportError:
        oc = None
    try:
        import llguidance
        import llguidance.tiktoken
        from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask
    except ImportError:
        llguidance = None
    try:
        import numpy as np
        import xgrammar as xgr
    except ImportError:
        xgr = None
    for name in args.encodings.split(","):
        enc, ref = encoding(name)
        print(f"\n{name}  (compile ms; mask us per step; memory KB)")
        voc = lt = None
        if oc is not None:
            t = time.perf_counter()
            vocab: dict[bytes, list[int]] = {}
            for i in range(enc.model.n_vocab):
                b = enc.model.token_bytes(i)
                if b and not enc.is_special_token(i):
                    vocab.setdefault(b, []).append(i)
            voc = oc.Vocabulary(ref.eot_token, vocab)
            print(f"  outlines-core Vocabulary: {(time.perf_counter() - t) * 1e3:.0f} ms (once)")
        if llguidance is not None:
            t = time.perf_counter()
            lt = llguidance.tiktoken.lltokenizer_from_encoding(ref)
            print(f"  llguidance tokenizer: {(time.perf_counter() - t) * 1e3:.0f} ms (once)")
        xcomp = None
        if xgr is not None:
            t = time.perf_counter()
            info = xgr.TokenizerInfo(
                [b"" if enc.is_special_token(i) else enc.model.token_bytes(i) or b""
                 for i in range(enc.n_vocab)],
                xgr.VocabType.RAW, vocab_size=enc.n_vocab, stop_token_ids=[ref.eot_token])
            xcomp = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
            print(f"  xgrammar tokenizer info: {(time.perf_counter() - t) * 1e3:.0f} ms (once)")
        head = (f"  {'pattern':12} {'edgetok':>8} {'canon':>8} {'outlines':>9} {'llg':>7} "
                f"{'xgr':>7} | {'edgetok':>8} {'canon':>8} {'made':>8} {'cold':>8} {'new':>8} "
                f"{'llg':>8} {'llg new':>8} {'xgr':>8} | "
                f"{'plain KB':>8} {'canon KB':>8} {'made/plain':>11} {'new/plain':>10} "
                f"{'cold/plain':>11}")
        print(head)
        for key, pattern, text in CASES:
            ids = enc.encode_ordinary(text)
            c_plain = best(lambda: enc.regex_automaton(pattern), args.compile_repeat)
            try:
                enc.regex_automaton(pattern, canonical=True)
                canonical_modes: "tuple[bool, ...]" = (False, True)
                c_canon = best(lambda: enc.regex_automaton(pattern, canonical=True), args.compile_repeat)
            except ValueError:  # no pair tables (a regex pretokenizer): plain automata only
                canonical_modes, c_canon = (False,), None
            c_oc = best(lambda: oc.Index(pattern, voc), args.compile_repeat) if voc is not None else None
            c_llg = None
            if lt is not None:
                grammar = llguidance.grammar_from("regex", pattern)
                c_llg = best(lambda: llguidance.LLMatcher(lt, grammar), args.compile_repeat)
            c_xg = (best(lambda: xcomp.compile_regex(pattern), args.compile_repeat)
                    if xcomp is not None else None)
            masks: "dict[object, float | None]" = {}
            memory: "dict[bool, int]" = {}
            for canonical in canonical_modes:
                a = enc.regex_automaton(pattern, canonical=canonical)
                buf = bytearray((a.n_vocab + 7) // 8)
                states, s = [], a.start
                for t in ids:
                    states.append(s)
                    s = a.next(s, t)
                assert s >= 0 and a.is_accepting(s), (key, canonical)
                # cold: each state the first time (a fresh automaton; the median of
                # COLD_RUNS); warm: asked again
                colds = []
                for _ in range(COLD_RUNS):
                    a = enc.regex_automaton(pattern, canonical=canonical)
                    colds.append(per_step(states, lambda st: a.allowed_into(st, buf), 1))
                masks[canonical, "cold"] = sorted(colds)[COLD_RUNS // 2]
                masks[canonical] = per_step(states, lambda st: a.allowed_into(st, buf), args.repeat)
                if canonical:  # made again by the C core, what it learned kept (no bitset cache)
                    native = a._native
                    for _ in range(2):  # (a key's second mask notes its verdicts, the third
                        for st in states:  # makes them bitsets: then the steady cost)
                            native.allowed_into(st, buf)
                    masks[canonical, "made"] = per_step(
                        states, lambda st: native.allowed_into(st, buf), args.repeat)
                    llg = None
                    if lt is not None:
                        llg = (llguidance.LLMatcher(lt, llguidance.grammar_from("regex", pattern)),
                               allocate_token_bitmask(1, lt.vocab_size), fill_next_token_bitmask)
                    masks[canonical, "new"], masks["llg", "new"] = new_states(
                        enc, pattern, buf, llg)
                memory[canonical] = a.memory
            m_llg = None
            if lt is not None:
                m = llguidance.LLMatcher(lt, llguidance.grammar_from("regex", pattern))
                bm = allocate_token_bitmask(1, lt.vocab_size)
                total, n = 0.0, 0
                for _ in range(args.repeat):
                    m.reset()
                    for t in ids:
                        t0 = time.perf_counter()
                        fill_next_token_bitmask(m, bm, 0)
                        total += time.perf_counter() - t0
                        n += 1
                        assert m.consume_token(t), (key, t)
                m_llg = total / n
            m_xg = None
            if xcomp is not None:
                m_xg = xgrammar_masks(xgr, np, xcomp.compile_regex(pattern),
                                      enc.regex_automaton(pattern), ids, args.repeat, ref.eot_token)

            def ms(x: "float | None") -> str:
                return "-" if x is None else f"{x * 1e3:.1f}"

            def us(x: "float | None") -> str:
                return "-" if x is None else f"{x * 1e6:.1f}"

            def kb(x: "int | None") -> str:
                return "-" if x is None else f"{x / 1024:.0f}"
            ratio = f"{masks[True, 'cold'] / masks[False]:.0f}x" if True in masks else "-"
            made = f"{masks[True, 'made'] / masks[False]:.1f}x" if True in masks else "-"
            new = (f"{masks[True, 'new'] / masks[False]:.1f}x"
                   if True in masks and masks[True, "new"] is not None else "-")
            print(f"  {key:12} {ms(c_plain):>8} {ms(c_canon):>8} {ms(c_oc):>9} {ms(c_llg):>7} "
                  f"{ms(c_xg):>7} | {us(masks[False]):>8} {us(masks.get(True)):>8} "
                  f"{us(masks.get((True, 'made'))):>8} "
                  f"{us(masks.get((True, 'cold'))):>8} {us(masks.get((True, 'new'))):>8} "
                  f"{us(m_llg):>8} {us(masks.get(('llg', 'new'))):>8} {us(m_xg):>8} | "
                  f"{memory[False] / 1024:8.0f} "
                  f"{kb(memory.get(True)):>8} "
                  f"{made:>11} {new:>10} {ratio:>11}")


if __name__ == "__main__":
    main()
