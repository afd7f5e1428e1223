"""Token-level automata for constrained decoding: Encoding.regex_automaton(pattern).

A regular expression (regex_dfa.py: its syntax) becomes a DFA over UTF-8 bytes in Python;
the product with the model's vocabulary trie is built in C (csrc/automata/): for every DFA
state a token boundary reaches, the tokens whose bytes the DFA can read and where each leads.
Stepping and masks then cost a binary search and a memset, with no allocation.

canonical=False: a token is allowed iff, after it, the text is still a prefix of a string of
the language (outlines-core's Index computes the same masks, but for a rule of its own:
README). Special tokens are never
allowed; the caller adds its end-of-sequence token where is_accepting says the text is
complete (RegexLogitsProcessor does).

canonical=True (BPE models with pair tables and a C pretokenizer): the state also
holds the last two tokens, and a token t after the token l is allowed only if BPE could put
them side by side: inside one piece as a valid pair (BPE of l's bytes followed by t's is
[l, t]), or across a cut the pretokenizer may make between them. The pretokenizer looks back
through its piece and ahead of it, which the pair alone does not show, so the cut (or its
absence) is looked for in probes: the known text (the token before l, or the start of the
text) with one character of each class the pretokenizers branch on before it, and one after t
(or the end of the text, for is_accepting). Where the pretokenizer cuts runs of digits into
groups (cl100k, o200k, Llama-3: three; Qwen2 and digit-splitting files: one), the state also
carries the length of the run the text ends in (mod the group), and the digits decide those
cuts exactly. Guaranteed (sound): the canonical encoding of
every string of the language walks the automaton to an accepting state with every token
allowed. Not guaranteed (precision): a walk to acceptance need not be canonical (a probe may
allow a cut this text does not have; with Llama-3's vocabulary, a piece that is itself a
token merging does not make may be spelled in the parts merging gives); README gives the
measured fractions (1.0 on integers, floats, dates: runs of digits are exact). A token is also
refused where it leads to a state from which no canonical text can go on within three tokens
(after "y" of yes|no, "es" and "e" would merge with it; after "{", '"' would): the look-ahead
that keeps walks from getting stuck. Canonical masks test each of the state's tokens against
the last one and look ahead, so they cost far more than plain ones the first time a state is
seen; the automaton keeps the masks (bitsets) of the states it has answered, up to
mask_cache bytes (least recently used out first; the newest is kept whatever its size), so a
decoding loop that comes back to a state pays a copy.
"""
from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .encoding import Encoding


class TokenAutomaton:
    """The surface other code calls: start, next, allowed_ids, allowed, allowed_numpy,
    is_accepting. States are ints; -1 is no state."""

    def __init__(self, enc: "Encoding", pattern: str, canonical: bool = False,
                 mask_cache: int = 32 << 20) -> None:
        from ._ffi import NativeAutomaton
        from .regex_dfa import compile_regex

        t0 = time.perf_counter()
        dfa = compile_regex(pattern)
        t1 = time.perf_counter()
        self._native = NativeAutomaton(enc.model, dfa.trans, dfa.accept, canonical)
        t2 = time.perf_counter()
        self.pattern = pattern
        self.canonical = canonical
        self.start = 0
        self.n_vocab: int = enc.n_vocab  # mask length: every id of the encoding
        self.dfa_states: int = dfa.n
        self.rows: int = self._native.rows
        self.memory: int = self._native.bytes
        self.compile_seconds = {"regex": t1 - t0, "tokens": t2 - t1}
        self._enc = enc
        # canonical masks by state (bitset, count), least recently used first (see the
        # module's text)
        self._masks: dict[int, tuple[bytes, int]] = {}
        self._cache_bytes = max(mask_cache, 1) if canonical else 0
        self._held = 0

    def __repr__(self) -> str:
        return (f"<TokenAutomaton {self.pattern!r} canonical={self.canonical} "
                f"dfa_states={self.dfa_states} rows={self.rows} memory={self.memory}>")

    def next(self, state: int, token: int) -> int:
        """The state after token, or -1 when token is not allowed in state."""
        return self._native.next(state, token) if state >= 0 else -1

    def is_accepting(self, state: int) -> bool:
        """Whether the text read so far is a whole string of the language."""
        return state >= 0 and self._native.accepting(state)

    def allowed_ids(self, state: int) -> list[int]:
        """The allowed ids, ascending."""
        if self._cache_bytes:
            from ._ffi import bitset_ids

            return bitset_ids(*self._cached(state))
        return self._native.allowed_ids(state)

    def allowed(self, state: int) -> bytes:
        """The allowed ids as a bitset: bit i of byte i // 8, least significant bit first."""
        buf = bytearray((self.n_vocab + 7) // 8)
        self.allowed_into(state, buf)
        return bytes(buf)

    def allowed_into(self, state: int, buf: "Any") -> int:
        """The bitset written into a caller's writable buffer of at least (n_vocab + 7) // 8
        bytes (reused from step to step: no allocation); returns the number of allowed ids."""
        if not self._cache_bytes:
            return self._native.allowed_into(state, buf)
        out = memoryview(buf).cast("B")
        nb = (self.n_vocab + 7) // 8
        if len(out) < nb:
            raise ValueError(f"the buffer holds {len(out)} bytes; the bitset needs {nb}")
        bits, n = self._cached(state, buf)
        out[:nb] = bits  # (a miss wrote it already: a copy of what is there)
        return n

    def _cached(self, state: int, buf: "Any" = None) -> "tuple[bytes, int]":
        """A canonical state's bitset and count, from the cache; on a miss made by the C core
        into buf (a new buffer where None) and kept."""
        hit = self._masks.pop(state, None)
        if hit is None:
            nb = (self.n_vocab + 7) // 8
            out = bytearray(nb) if buf is None else buf
            n = self._native.allowed_into(state, out)
            hit = bytes(memoryview(out).cast("B")[:nb]), n
            self._held += nb
            while self._masks and self._held > self._cache_bytes:
                old = self._masks.pop(next(iter(self._masks), -1), None)
                if old is not None:
                    self._held -= len(old[0])
        self._masks[state] = hit  # (the most recently used)
        return hit

    def allowed_numpy(self, state: int) -> "Any":
        """The allowed ids as a numpy bool array of n_vocab entries (needs numpy)."""
        import numpy as np

        bits = np.zeros((self.n_vocab + 7) // 8, dtype=np.uint8)
        self.allowed_into(state, bits)
        return np.unpackbits(bits, bitorder="little")[:self.n_vocab].astype(bool)

    def walk(self, ids: "list[int]", state: int | None = None) -> int:
        """The state after ids from state (the start by default), or -1."""
        s = self.start if state is None else state
        for t in ids:
            s = self.next(s, t)
            if s < 0:
                return -1
        return s

    def sample(self, rng: "Any", max_tokens: int = 64, stop: float = 0.3) -> "list[int] | None":
        """A random walk to an accepting state (stopping there with probability stop, or
        when nothing more is allowed), or None if max_tokens pass first or the walk is stuck."""
        s, ids = self.start, []
        for _ in range(max_tokens):
            allowed = self.allowed_ids(s)
            if self.is_accepting(s) and (not allowed or rng.random() < stop):
                return ids
            if not allowed:
                return None
            t = rng.choice(allowed)
            ids.append(t)
            s = self.next(s, t)
        return ids if self.is_accepting(s) else None


class RegexLogitsProcessor:
    """A LogitsProcessor for transformers (processor(input_ids, scores) with 2-D batches) or
    llama-cpp-python (1-D ids and scores): logits of tokens the automaton does not allow
    become -inf; eos_token_id is allowed where the text so far is complete. The first call
    takes the ids it is given as the prompt; later calls advance each row's state by the
    tokens generated since."""

    def __init__(self, automaton: TokenAutomaton, eos_token_id: int | None = None) -> None:
        self.automaton = automaton
        self.eos_token_id = eos_token_id
        self._prompt: list[int] | None = None
        self._states: list[int] = []
        self._seen: list[int] = []

    def _mask(self, state: int, width: int) -> "Any":
        import numpy as np

        a = self.automaton
        m = np.zeros(width, dtype=bool)
        if state >= 0:
            ok = a.allowed_numpy(state)
            m[:min(width, len(ok))] = ok[:width]
            if self.eos_token_id is not None and a.is_accepting(state) and self.eos_token_id < width:
                m[self.eos_token_id] = True
        return m

    def __call__(self, input_ids: "Any", scores: "Any") -> "Any":
        import numpy as np

        one = getattr(scores, "ndim", 2) == 1
        rows = [list(map(int, input_ids))] if one else [list(map(int, r)) for r in input_ids]
        if self._prompt is None:
            self._prompt = [len(r) for r in rows]
            self._states = [self.automaton.start] * len(rows)
            self._seen = list(self._prompt)
        masks = []
        for k, r in enumerate(rows):
            s = self._states[k]
            for t in r[self._seen[k]:]:
                if s >= 0 and t != self.eos_token_id:
                    s = self.automaton.next(s, t)
            self._states[k], self._seen[k] = s, len(r)
            masks.append(self._mask(s, scores.shape[-1]))
        mask = masks[0] if one else np.stack(masks)
        if hasattr(scores, "masked_fill"):  # a torch tensor
            import torch

            return scores.masked_fill(~torch.from_numpy(mask).to(scores.device), float("-inf"))
        scores[~mask] = -np.inf
        return scores
