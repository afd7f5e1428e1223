"""Hypothesis text that stresses every category of the cl100k pretokenizer and every cell of
its branch table."""
from __future__ import annotations

from hypothesis import strategies as st

# One or two representatives of each class the pattern distinguishes, ASCII and not.
ALPHABET = (
    "aZsStTdDmMlLvVeErR"            # letters, including every contraction letter
    "\u017f\u212a"                  # LONG S and KELVIN SIGN: case-fold to s / k
    "\u00e9\u00df\u03a9\u0436\u05d0\u0627\u4e2d\u3042\uac00"  # letters of other scripts
    "0179\u0663\u0966\u00bd\u2167\u00b2\U0001d7ce"  # digits and other numbers
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000"  # \s
    "'\u2019\"`.,;:!?-_/\\()[]{}<>|@#$%^&*+=~"  # quotes and punctuation
    "\u0301\u0308\u093f\u200d\ufe0f"  # combining marks, ZWJ, variation selector
    "\U0001f600\U0001f44d\U0001f3fd\u20ac\u00a9"  # emoji, currency, symbols
    "\x00\x7f\ufeff\U0010fffd"      # controls, BOM, private use
)

pieces = st.one_of(
    st.text(alphabet=ALPHABET, max_size=12),
    st.sampled_from(["'s", "'LL", "'Ve", "'re", "'\u017f", "'d", "'m", "'T", "'x", "''s"]),
    st.builds(lambda c, n: c * n, st.sampled_from([" ", "\n", "\r\n", "\t", "0", "a", "'", "\u3000", "-"]),
              st.integers(1, 40)),
)

# Concatenations of the pieces above: short, dense in category changes.
texts = st.lists(pieces, max_size=20).map("".join)

# Arbitrary Unicode (no surrogates: they never reach the core), with weight on ASCII.
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)
