"""A regular expression over characters, compiled to a DFA over UTF-8 bytes (for automata.py).

The syntax is what structured-output users write, with the Rust `regex` crate's meaning (the
one outlines-core uses): literals and escapes (\\n \\t \\xHH \\x{H..} \\u{H..} \\uHHHH), `.` (any
character but \\n), classes `[...]` with ranges and negation, \\d \\w \\s and their negations
(Unicode: \\p{Nd}; letters, marks, digits, connectors; White_Space), \\p{..} / \\P{..} with a
general category (L, Lu, N, Nd, P, ...), groups `(...)`, `(?:...)`, `(?P<name>...)`,
alternation, `* + ? {n} {n,} {n,m}` (lazy forms mean the same language), and `^` / `$` at the
ends (the whole text always matches: anchors are implied). Anything else (look-around,
backreferences, \\b, flags) raises ValueError.

Construction: a Thompson NFA over code-point ranges, each range edge expanded into UTF-8 byte
range sequences (as regex-syntax's Utf8Sequences), then the subset construction over bytes,
then only the states from which acceptance is reachable are kept.
"""
from __future__ import annotations

import functools

MAX_CP = 0x10FFFF
Ranges = list  # sorted, disjoint, non-adjacent [(lo, hi), ...] of code points

_WHITE_SPACE = [(0x9, 0xD), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
                (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
                (0x3000, 0x3000)]


def _norm(rs: "list[tuple[int, int]]") -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(rs):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _negate(rs: Ranges) -> Ranges:
    out, at = [], 0
    for lo, hi in rs:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= MAX_CP:
        out.append((at, MAX_CP))
    return out


@functools.lru_cache(maxsize=None)
def _all_chars() -> str:
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, MAX_CP + 1)))


@functools.lru_cache(maxsize=None)
def _ranges_of(escape: str) -> Ranges:
    """The code points a class escape (\\p{L}, \\d, \\w) matches, as the `regex` module's
    Unicode tables say (newer than unicodedata's; what the Rust regex crate follows)."""
    import regex

    text = _all_chars()
    out: list[tuple[int, int]] = []
    for mt in regex.finditer(f"(?:{escape})+", text):
        lo, hi = ord(text[mt.start()]), ord(text[mt.end() - 1])
        if hi - lo == mt.end() - mt.start() - 1:
            out.append((lo, hi))
        else:  # a run across the surrogate gap
            out += [(lo, 0xD7FF), (0xE000, hi)]
    return _norm(out)


def category(name: str) -> Ranges:
    """\\p{name}: a general category (Lu) or its group (L), a script (Greek), or Any."""
    import regex

    if name == "Any":
        return [(0, MAX_CP)]
    if not name.replace("_", "").replace("=", "").isalnum():
        raise ValueError(f"unknown Unicode class \\p{{{name}}}")
    try:
        return _ranges_of(f"\\p{{{name}}}")
    except regex.error:
        raise ValueError(f"unknown Unicode class \\p{{{name}}}") from None


def _perl(c: str) -> Ranges:
    if c in "dD":
        r = category("Nd")
    elif c in "sS":
        r = list(_WHITE_SPACE)
    else:  # \w: Alphabetic, marks, decimal digits, connector punctuation, join controls
        r = _ranges_of(r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]")
    return _negate(r) if c.isupper() else r


class _Parser:
    """Recursive descent over the pattern; builds the NFA as it goes (fragments of nodes)."""

    def __init__(self, pattern: str) -> None:
        self.p, self.i = pattern, 0
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int, int]]] = []  # code-point edges (lo, hi, target)

    def node(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def fail(self, what: str) -> ValueError:
        return ValueError(f"regex {self.p!r} at {self.i}: {what}")

    # fragments are (entry, exit) node pairs
    def alternation(self) -> "tuple[int, int]":
        frags = [self.concat()]
        while self.peek() == "|":
            self.i += 1
            frags.append(self.concat())
        if len(frags) == 1:
            return frags[0]
        s, e = self.node(), self.node()
        for a, b in frags:
            self.eps[s].append(a)
            self.eps[b].append(e)
        return s, e

    def concat(self) -> "tuple[int, int]":
        s = e = self.node()
        while self.peek() not in ("", "|", ")"):
            a, b = self.repeat()
            self.eps[e].append(a)
            e = b
        return s, e

    def repeat(self) -> "tuple[int, int]":
        start = self.i
        frag = self.atom()
        while True:
            text = self.p[start:self.i]  # what a copy of the fragment re-parses
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{" and (counted := self._counted()) is not None:
                lo, hi = counted
            else:
                return frag
            if self.peek() == "?":
                self.i += 1  # lazy: the same language
            elif self.peek() == "+":
                raise self.fail("possessive quantifiers are not supported")
            frag = self._repeat(frag, text, lo, hi)

    def _counted(self) -> "tuple[int, int | None] | None":
        j = self.p.find("}", self.i)
        if j < 0:
            return None
        body = self.p[self.i + 1:j]
        parts = body.split(",")
        if len(parts) > 2 or not parts[0].strip().isdigit() or (
                len(parts) == 2 and parts[1].strip() and not parts[1].strip().isdigit()):
            return None
        self.i = j + 1
        lo = int(parts[0])
        hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1].strip() else None)
        if hi is not None and hi < lo:
            raise self.fail("a counted repetition whose maximum is below its minimum")
        if max(lo, hi or 0) > 1000:
            raise self.fail("repetition counts above 1000 are not supported")
        return lo, hi

    def _copy(self, text: str) -> "tuple[int, int]":
        """Another copy of a fragment, parsed again from its text (fragments own their nodes)."""
        saved = self.p, self.i
        self.p, self.i = text, 0
        got = self.concat()
        self.p, self.i = saved
        return got

    def _repeat(self, frag: "tuple[int, int]", text: str, lo: int, hi: "int | None"
                ) -> "tuple[int, int]":
        copies = [frag] + [self._copy(text) for _ in range(max(lo, hi or 1, 1) - 1)]
        s = e = self.node()
        for k in range(lo):
            a, b = copies[k]
            self.eps[e].append(a)
            e = b
        if hi is None:
            a, b = copies[lo] if lo < len(copies) else self._copy(text)
            loop = self.node()
            self.eps[e].append(loop)
            self.eps[loop].append(a)
            self.eps[b].append(loop)
            return s, loop
        end = self.node()
        self.eps[e].append(end)
        for k in range(lo, hi):
            a, b = copies[k]
            self.eps[e].append(a)
            self.eps[b].append(end)
            e = b
        return s, end

    def atom(self) -> "tuple[int, int]":
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?P<", self.i) or (self.p.startswith("?<", self.i) and
                                                      self.p[self.i + 2:self.i + 3] not in "=!"):
                self.i = self.p.index(">", self.i) + 1
            elif c and self.peek() == "?":
                raise self.fail("look-around and inline flags are not supported")
            frag = self.alternation()
            if self.peek() != ")":
                raise self.fail("missing )")
            self.i += 1
            return frag
        if c in ("", ")", "|"):
            raise self.fail("nothing to repeat or an empty atom")
        if c in "*+?":
            raise self.fail("nothing to repeat")
        if c == "[":
            return self._set(self._class())
        self.i += 1
        if c == ".":
            return self._set(_negate([(10, 10)]))
        if c == "\\":
            return self._set(self._escape(in_class=False))
        if c in "^$":
            if (c == "^" and self.i == 1) or (c == "$" and self.i == len(self.p)):
                s = self.node()
                return s, s
            raise self.fail("anchors are implied at the ends and not supported inside")
        return self._set([(ord(c), ord(c))])

    def _set(self, rs: Ranges) -> "tuple[int, int]":
        s, e = self.node(), self.node()
        for lo, hi in rs:
            self.edges[s].append((lo, hi, e))
        return s, e

    def _hex(self, n: "int | None") -> int:
        if n is None:  # {H..}
            j = self.p.index("}", self.i)
            v = int(self.p[self.i + 1:j], 16)
            self.i = j + 1
        else:
            v = int(self.p[self.i:self.i + n], 16)
            self.i += n
        if v > MAX_CP:
            raise self.fail("code point out of range")
        return v

    def _escape(self, in_class: bool) -> Ranges:
        c = self.peek()
        if not c:
            raise self.fail("trailing backslash")
        self.i += 1
        simple = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "a": 7, "0": 0, "e": 27}
        if c in simple:
            return [(simple[c], simple[c])]
        if c in "dDwWsS":
            return _perl(c)
        if c in "pP":
            if self.peek() == "{":
                j = self.p.index("}", self.i)
                name = self.p[self.i + 1:j]
                self.i = j + 1
            else:
                name = self.peek()
                self.i += 1
            r = category(name.replace(" ", ""))
            return _negate(r) if c == "P" else r
        if c in "xuU":
            if self.peek() == "{":
                v = self._hex(None)
            else:
                v = self._hex({"x": 2, "u": 4, "U": 8}[c])
            return [(v, v)]
        if c.isalnum():
            raise self.fail(f"\\{c} is not supported")
        return [(ord(c), ord(c))]

    def _class(self) -> Ranges:
        self.i += 1  # [
        neg = self.peek() == "^"
        if neg:
            self.i += 1
        rs: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.peek()
            if not c:
                raise self.fail("missing ]")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                if self.p.startswith("[:", self.i):
                    raise self.fail("POSIX classes are not supported")
                rs += self._class()
                continue
            if self.p.startswith("&&", self.i) or self.p.startswith("--", self.i) or \
                    self.p.startswith("~~", self.i):
                raise self.fail("class set operations are not supported")
            self.i += 1
            if c == "\\":
                got = self._escape(in_class=True)
                if len(got) != 1 or got[0][0] != got[0][1]:
                    rs += got
                    continue
                lo = got[0][0]
            else:
                lo = ord(c)
            if self.peek() == "-" and self.p[self.i + 1:self.i + 2] not in ("]", ""):
                self.i += 1
                d = self.peek()
                self.i += 1
                if d == "\\":
                    got = self._escape(in_class=True)
                    if len(got) != 1 or got[0][0] != got[0][1]:
                        raise self.fail("a range ending in a class")
                    hi = got[0][0]
                else:
                    hi = ord(d)
                if hi < lo:
                    raise self.fail("a range out of order")
                rs.append((lo, hi))
            else:
                rs.append((lo, lo))
        rs = _norm(rs)
        return _negate(rs) if neg else rs


def _utf8(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> "list[list[tuple[int, int]]]":
    """The code points lo..hi (no surrogates) as sequences of byte ranges, one per position."""
    out, stack = [], [(lo, hi)]
    while stack:
        lo, hi = stack.pop()
        for b in (0x7F, 0x7FF, 0xFFFF):
            if lo <= b < hi:
                stack += [(b + 1, hi), (lo, b)]
                break
        else:
            if hi < 0x80:
                out.append([(lo, hi)])
                continue
            for i in (1, 2, 3):
                m = (1 << (6 * i)) - 1
                if lo & ~m != hi & ~m:
                    if lo & m:
                        stack += [((lo | m) + 1, hi), (lo, lo | m)]
                        break
                    if hi & m != m:
                        stack += [(hi & ~m, hi), (lo, (hi & ~m) - 1)]
                        break
            else:
                a, b = _utf8(lo), _utf8(hi)
                out.append(list(zip(a, b)))
    return out


class ByteDFA:
    """States 0..n-1 (0 the start), trans[256 * q + b] (-1: dead), accept[q]. Every state but
    possibly the start can reach acceptance."""

    def __init__(self, trans: "list[int]", accept: "list[bool]") -> None:
        self.trans, self.accept = trans, accept
        self.n = len(accept)

    def to_bytes(self) -> bytes:
        """n (uint32), the transitions (int32), the accept bytes: csrc/tools/aut_check's input."""
        from array import array

        t = array("i", self.trans)
        if t.itemsize != 4:
            raise RuntimeError("int is not 32 bits here")
        return (self.n.to_bytes(4, "little") + t.tobytes() +
                bytes(1 if a else 0 for a in self.accept))

    def match(self, data: bytes) -> bool:
        q = 0
        for b in data:
            q = self.trans[256 * q + b]
            if q < 0:
                return False
        return self.accept[q]


def compile_regex(pattern: str) -> ByteDFA:
    """pattern (whole-text match) as a ByteDFA; ValueError for syntax outside the subset."""
    p = _Parser(pattern)
    start, accept_node = p.alternation()
    if p.i != len(pattern):
        raise p.fail("unbalanced )")
    # byte NFA: each code-point edge becomes chains of byte-range edges; chain nodes are shared
    # by (target, remaining ranges)
    bedges: list[list[tuple[int, int, int]]] = [[] for _ in p.eps]
    eps = p.eps
    chain: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}

    def via(target: int, rest: "tuple[tuple[int, int], ...]") -> int:
        if not rest:
            return target
        key = (target, rest)
        got = chain.get(key)
        if got is None:
            got = len(bedges)
            bedges.append([])
            eps.append([])
            chain[key] = got
            bedges[got].append((rest[0][0], rest[0][1], via(target, rest[1:])))
        return got

    surrogates_out = _negate([(0xD800, 0xDFFF)])
    for n, es in enumerate(p.edges):
        for lo, hi, t in es:
            for slo, shi in surrogates_out:
                a, b = max(lo, slo), min(hi, shi)
                if a > b:
                    continue
                for seq in utf8_sequences(a, b):
                    bedges[n].append((seq[0][0], seq[0][1], via(t, tuple(seq[1:]))))

    def closure(nodes: "frozenset[int] | set[int]") -> "frozenset[int]":
        seen, stack = set(nodes), list(nodes)
        while stack:
            for m in eps[stack.pop()]:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        return frozenset(n for n in seen if bedges[n] or n == accept_node)

    first = closure({start})
    ids = {first: 0}
    order = [first]
    trans: list[int] = []
    for q in order:
        row = [-1] * 256
        cuts = {0, 256}
        es = [e for n in q for e in bedges[n]]
        for lo, hi, _ in es:
            cuts.add(lo)
            cuts.add(hi + 1)
        bounds = sorted(cuts)
        for a, b in zip(bounds, bounds[1:]):
            targets = {t for lo, hi, t in es if lo <= a <= hi}
            if not targets:
                continue
            nxt = closure(targets)
            k = ids.get(nxt)
            if k is None:
                k = ids[nxt] = len(order)
                order.append(nxt)
            for x in range(a, b):
                row[x] = k
        trans += row
    accept = [accept_node in q for q in order]
    # keep the states from which acceptance is reachable (and the start)
    rev: list[list[int]] = [[] for _ in order]
    for q in range(len(order)):
        for t in set(trans[256 * q:256 * q + 256]):
            if t >= 0:
                rev[t].append(q)
    live = [False] * len(order)
    stack = [q for q, a in enumerate(accept) if a]
    for q in stack:
        live[q] = True
    while stack:
        for r in rev[stack.pop()]:
            if not live[r]:
                live[r] = True
                stack.append(r)
    keep = [0] + [q for q in range(1, len(order)) if live[q]]
    new = {q: i for i, q in enumerate(keep)}
    out: list[int] = []
    for q in keep:
        out += [new.get(t, -1) if t >= 0 and live[t] else -1 for t in trans[256 * q:256 * q + 256]]
    return _minimize(out, [accept[q] for q in keep])


def _minimize(trans: "list[int]", accept: "list[bool]") -> ByteDFA:
    """Moore's partition refinement over byte classes (bytes no state tells apart)."""
    n = len(accept)
    cols: dict[tuple[int, ...], int] = {}
    reps = []
    for b in range(256):
        sig = tuple(trans[256 * q + b] for q in range(n))
        if sig not in cols:
            cols[sig] = b
            reps.append(b)
    block = [int(a) for a in accept]
    count = len(set(block))
    while True:
        sigs: dict[tuple[int, ...], int] = {}
        nb = []
        for q in range(n):
            sig = (block[q],) + tuple(block[t] if t >= 0 else -1
                                      for t in (trans[256 * q + b] for b in reps))
            nb.append(sigs.setdefault(sig, len(sigs)))
        block = nb
        if len(sigs) == count:
            break
        count = len(sigs)
    # renumber so that the start's block is 0, in order of first appearance
    order = {block[0]: 0}
    for q in range(n):
        order.setdefault(block[q], len(order))
    first = {}
    for q in range(n):
        first.setdefault(order[block[q]], q)
    out: list[int] = []
    for k in range(len(order)):
        q = first[k]
        out += [order[block[t]] if t >= 0 else -1 for t in trans[256 * q:256 * q + 256]]
    return ByteDFA(out, [accept[first[k]] for k in range(len(order))])
