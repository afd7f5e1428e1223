"""Sentence pairs, truncation and padding, as Hugging Face tokenizers does them for
tokenizer.json files with a TemplateProcessing or BertProcessing post-processor (BERT and its
embedding models: a query and a passage, [CLS] A [SEP] B [SEP], type ids 0 then 1).

The templates are items ("special", ids, type_id) and ("A" or "B", type_id): the file's own
(meta["post"]["single_items"] / ["pair_items"], from template_items) or, for WordPiece models
without one, BERT's. Truncation follows tokenizers 0.23's truncate_encodings (max_length less
the template's added tokens; longest_first, only_first, only_second; direction right or
left), then the template, then padding (to max_length or a multiple), as its encode does.
"""
from __future__ import annotations

from typing import Any

Item = tuple  # ("special", [ids], type_id) | ("A", type_id) | ("B", type_id)
STRATEGIES = ("longest_first", "only_first", "only_second")


def template_items(post: Any, which: str, specials: dict[str, list[int]]) -> list[Item] | None:
    """The items of a tokenizer.json post_processor's template for one text ("single") or two
    ("pair"); None for a processor this module does not know."""
    if not isinstance(post, dict):
        return None
    kind = post.get("type")
    if kind == "BertProcessing":
        cls, sep = [post["cls"][1]], [post["sep"][1]]
        if which == "single":
            return [("special", cls, 0), ("A", 0), ("special", sep, 0)]
        return [("special", cls, 0), ("A", 0), ("special", sep, 0), ("B", 1), ("special", sep, 1)]
    if kind != "TemplateProcessing" or not isinstance(post.get(which), list):
        return None
    items: list[Item] = []
    for item in post[which]:
        if "SpecialToken" in item:
            sp = item["SpecialToken"]
            items.append(("special", list(specials[sp["id"]]), int(sp.get("type_id", 0))))
        else:
            seq = item["Sequence"]
            items.append((seq.get("id", "A"), int(seq.get("type_id", 0))))
    return items


def bert_items(cls: int, sep: int, pair: bool) -> list[Item]:
    single: list[Item] = [("special", [cls], 0), ("A", 0), ("special", [sep], 0)]
    return single + [("B", 1), ("special", [sep], 1)] if pair else single


def _truncate(a: list[int], b: list[int] | None, limit: int, strategy: str,
              direction: str) -> tuple[list[int], list[int] | None]:
    """tokenizers' truncate_encodings: a (and b) cut so that together they hold at most
    limit ids."""
    def cut(ids: list[int], n: int) -> list[int]:
        return ids[:n] if direction == "right" else ids[len(ids) - n:] if n else []

    if limit == 0:
        return [], None if b is None else []
    total = len(a) + (len(b) if b is not None else 0)
    if total <= limit:
        return a, b
    remove = total - limit
    if strategy == "longest_first":
        if b is None:
            return cut(a, total - remove), None
        n1, n2, swap = len(a), len(b), False
        if n1 > n2:
            n1, n2, swap = n2, n1, True
        n2 = n1 if n1 > limit else max(n1, limit - n1)
        if n1 + n2 > limit:
            n1 = limit // 2
            n2 = n1 + limit % 2
        if swap:
            n1, n2 = n2, n1
        return cut(a, n1), cut(b, n2)
    target = a if strategy == "only_first" else b
    if target is None:
        raise ValueError("truncation='only_second' needs a pair")
    if len(target) <= remove:
        raise ValueError(f"truncation={strategy!r}: that sequence is too short to lose "
                         f"{remove} ids")
    if strategy == "only_first":
        return cut(a, len(a) - remove), b
    assert b is not None
    return a, cut(b, len(b) - remove)


def encode_pair(enc: Any, text: str, pair: str | None = None, *,
                add_special_tokens: bool = True, max_length: int | None = None,
                truncation: str | None = "longest_first", direction: str = "right",
                padding: bool = False, pad_to_multiple_of: int | None = None,
                pad_id: int = 0, pad_type_id: int = 0, padding_side: str = "right",
                **encode_kw: Any) -> dict[str, list[int]]:
    """{"ids", "type_ids", "attention_mask"} of text (and pair), as tokenizers' encode(text,
    pair) with truncation to max_length (when given; strategy truncation, None: none) and
    padding (padding=True: to max_length, or the ids' own length, rounded up to a multiple of
    pad_to_multiple_of; ids that are that long already are left as they are)."""
    if truncation is not None and truncation not in STRATEGIES:
        raise ValueError(f"truncation must be one of {', '.join(STRATEGIES)} or None")
    if direction not in ("right", "left") or padding_side not in ("right", "left"):
        raise ValueError("direction and padding_side are 'right' or 'left'")
    a = enc.encode(text, add_special_tokens=False, **encode_kw)
    b = None if pair is None else enc.encode(pair, add_special_tokens=False, **encode_kw)
    items = enc._template(pair is not None)
    if add_special_tokens and items is None:
        raise ValueError(f"{enc.name} has no template for {'pairs' if pair else 'one text'}")
    added = sum(len(it[1]) for it in items or [] if it[0] == "special")
    if max_length is not None and truncation is not None:
        limit = max_length - added if add_special_tokens and added else max_length
        if limit >= 0:  # (tokenizers: below that the subtraction wraps, and nothing is cut)
            a, b = _truncate(a, b, limit, truncation, direction)
    ids: list[int] = []
    types: list[int] = []
    seqs = {"A": a, "B": b if b is not None else []}
    for it in items or [("A", 0), ("B", 1)]:
        if it[0] == "special":
            if add_special_tokens:
                ids += it[1]
                types += [it[2]] * len(it[1])
        elif it[0] in seqs and (it[0] == "A" or b is not None):
            ids += seqs[it[0]]
            types += [it[1]] * len(seqs[it[0]])
    mask = [1] * len(ids)
    want = 0  # tokenizers' pad(): to max_length (else the text's own length), rounded up to
    if padding:  # pad_to_multiple_of, when the ids are shorter than that
        want = len(ids) if max_length is None else max_length
        if pad_to_multiple_of and want % pad_to_multiple_of:
            want += pad_to_multiple_of - want % pad_to_multiple_of
    if want > len(ids):
        n = want - len(ids)
        if padding_side == "right":
            ids, types, mask = ids + [pad_id] * n, types + [pad_type_id] * n, mask + [0] * n
        else:
            ids, types, mask = [pad_id] * n + ids, [pad_type_id] * n + types, [0] * n + mask
    return {"ids": ids, "type_ids": types, "attention_mask": mask}
