"""Token counts of chat messages: OpenAI's published per-message overheads (the OpenAI
cookbook's num_tokens_from_messages), or a model's own chat template (a GGUF's
tokenizer.chat_template, a Hugging Face folder's tokenizer_config.json) rendered with jinja2
as transformers' apply_chat_template renders it. Special tokens come from the template only:
their text inside a message is counted as text. jinja2 is imported only here."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .encoding import Encoding

# every reply is primed with <|start|>assistant<|message|> (the cookbook's "+3")
REPLY_PRIMING = 3
# plane 15's private use area: stand-ins for special-token text inside messages while the
# template renders (so that only the template's own special tokens become special ids)
_PLACEHOLDER = 0xF0000


def openai_overheads(model: str) -> tuple[int, int]:
    """(tokens_per_message, tokens_per_name) for an OpenAI chat model, as the cookbook's
    num_tokens_from_messages gives them: gpt-3.5-turbo-0301 4 and -1 (a name replaces the
    role); the other gpt-3.5-turbo and gpt-4 family models (gpt-4o, gpt-4o-mini, gpt-4.1,
    ...) 3 and 1. ValueError for a model it gives no numbers for."""
    if model == "gpt-3.5-turbo-0301":
        return 4, -1
    if "gpt-3.5-turbo" in model or "gpt-4" in model:
        return 3, 1
    raise ValueError(f"no published per-message token overheads for {model!r} (the OpenAI "
                     "cookbook gives them for the gpt-3.5-turbo and gpt-4 families, gpt-4o "
                     "included)")


def count_openai(enc: "Encoding", messages: list[dict[str, Any]], model: str) -> int:
    """The cookbook's num_tokens_from_messages: tokens_per_message for each message, each
    value's tokens (special-token text counted as text), tokens_per_name for a name, and 3 for
    the reply's priming. Values must be strings: the cookbook publishes no exact rule for
    tool calls and other structured values, so they are refused rather than estimated."""
    per_message, per_name = openai_overheads(model)
    n = 0
    for k, message in enumerate(_messages(messages)):
        n += per_message
        for key, value in message.items():
            if not isinstance(value, str):
                raise ValueError(f"message {k}: {key!r} is {type(value).__name__}, not a string "
                                 "(tool calls and other structured values have no published "
                                 "exact count)")
            n += enc.count(value, disallowed_special=())
            if key == "name":
                n += per_name
    return n + REPLY_PRIMING


# the cookbook's num_tokens_for_tools constants: (func_init, prop_init, prop_key, enum_init,
# enum_item, func_end), for the models it gives them for
TOOL_OVERHEADS = {"gpt-4o": (7, 3, 3, -3, 3, 12), "gpt-4o-mini": (7, 3, 3, -3, 3, 12),
                  "gpt-3.5-turbo": (10, 3, 3, -3, 3, 12), "gpt-4": (10, 3, 3, -3, 3, 12)}


def count_openai_tools(enc: "Encoding", tools: Any, model: str) -> int:
    """The tool definitions' share of the cookbook's num_tokens_for_tools (its messages part is
    count_openai): func_init per function and the tokens of "name:description" (one final "."
    dropped); for functions with properties, prop_init, then per property prop_key and the
    tokens of "name:type:description", and for an enum enum_init plus enum_item and the tokens
    of each item; func_end once when there are functions. The cookbook gives the constants
    for gpt-4o, gpt-4o-mini, gpt-3.5-turbo and gpt-4 only: ValueError for other models."""
    if model not in TOOL_OVERHEADS:
        raise ValueError(f"no published token count of tool definitions for {model!r} (the "
                         f"OpenAI cookbook gives one for {', '.join(TOOL_OVERHEADS)})")
    func_init, prop_init, prop_key, enum_init, enum_item, func_end = TOOL_OVERHEADS[model]

    def tokens(text: Any, what: str) -> int:
        if not isinstance(text, str):
            raise ValueError(f"{what} is {type(text).__name__}, not a string")
        return enc.count(text, disallowed_special=())

    def field(d: Any, key: str, what: str) -> Any:
        if not isinstance(d, dict) or key not in d:
            raise ValueError(f"{what} has no {key!r}")
        return d[key]

    if not isinstance(tools, (list, tuple)):
        raise TypeError("tools must be a list of {'type': 'function', 'function': {...}}")
    n = 0
    for k, tool in enumerate(tools):
        n += func_init
        fn = field(tool, "function", f"tool {k}")
        desc = field(fn, "description", f"tool {k}")
        name = field(fn, "name", f"tool {k}")
        if not isinstance(name, str) or not isinstance(desc, str):
            raise ValueError(f"tool {k}'s name and description must be strings")
        n += tokens(f"{name}:{desc[:-1] if desc.endswith('.') else desc}",
                    f"tool {k}'s name and description")
        props = field(field(fn, "parameters", f"tool {k}"), "properties", f"tool {k}'s parameters")
        if not isinstance(props, dict):
            raise ValueError(f"tool {k}'s properties are not an object")
        if props:
            n += prop_init
            for key, schema in props.items():
                n += prop_key
                what = f"tool {k}'s property {key!r}"
                ptype, pdesc = field(schema, "type", what), field(schema, "description", what)
                if "enum" in schema:
                    n += enum_init
                    for item in schema["enum"]:
                        n += enum_item + tokens(item, f"{what}'s enum item")
                if isinstance(pdesc, str) and pdesc.endswith("."):
                    pdesc = pdesc[:-1]
                n += tokens(f"{key}:{ptype}:{pdesc}", what)
    return n + (func_end if tools else 0)


def _messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, (list, tuple)) or not all(isinstance(m, dict) for m in messages):
        raise TypeError("messages must be a list of dicts ({'role': ..., 'content': ...})")
    return list(messages)


# -- chat templates ---------------------------------------------------------------------------
def _token_text(x: Any) -> str | None:
    """tokenizer_config.json's spelling of a special token: a string or {"content": ...}."""
    if isinstance(x, dict):
        x = x.get("content")
    return x if isinstance(x, str) else None


# what was read this process from GGUF files, by (what, file, its size and mtime, name)
_found: dict[tuple[str, str, int, int, str | None], Any] = {}


def _gguf_key(source: str) -> tuple[str, int, int] | None:
    """(file, size, mtime) of a GGUF file, None for anything else."""
    try:
        st = os.stat(source)
        with open(source, "rb") as f:
            if f.read(4) != b"GGUF":
                return None
    except OSError:
        return None
    return source, st.st_size, st.st_mtime_ns


def find_template(enc: "Encoding", name: str | None = None, required: bool = True
                  ) -> tuple[str | None, dict[str, str]]:
    """(the chat template, the special tokens it is rendered with: bos_token, eos_token, ...)
    of the file enc was loaded from: a GGUF's tokenizer.chat_template (or
    tokenizer.chat_template.NAME); for a tokenizer.json, its folder's chat_template.jinja or
    tokenizer_config.json's chat_template. ValueError when there is none and it is required
    (else None). A GGUF's are read once per file and name in a process (its header is long)."""
    source = enc.model.source
    key = _gguf_key(source)
    if key is None:  # a folder's small JSON files: read each time (they may change)
        template, tokens = _find_template(enc, name)
    else:
        if ("template", *key, name) not in _found:
            _found["template", *key, name] = _find_template(enc, name)
        template, tokens = _found["template", *key, name]
    if template is None and required:
        if not os.path.isfile(source):
            raise ValueError(f"{enc.name}: no model file to read a chat template from; pass "
                             "chat_template=")
        raise ValueError(f"{source}: no chat template{f' named {name!r}' if name else ''} (pass "
                         "chat_template=, or an OpenAI model= for OpenAI's overheads)")
    return template, dict(tokens)


def _find_template(enc: "Encoding", name: str | None = None) -> tuple[str | None, dict[str, str]]:
    """find_template, read each time."""
    from .compiler import source_kind

    source = enc.model.source
    if not os.path.isfile(source):
        return None, {}
    kind = source_kind(source)
    tokens: dict[str, str] = {}
    template: Any = None
    if kind == "gguf":
        from .gguf import read_metadata

        md = read_metadata(source, prefix=("tokenizer.chat_template", *(
            f"tokenizer.ggml.{key}" for key in _GGUF_NAMED.values())))
        raw = md.get("tokenizer.chat_template" + (f".{name}" if name else ""))
        template = raw.decode("utf-8") if isinstance(raw, bytes) else None
        # the special tokens transformers' GGUF loader names (get_gguf_tokenizer)
        for what, key in _GGUF_NAMED.items():
            i = md.get(f"tokenizer.ggml.{key}")
            if isinstance(i, int) and 0 <= i < enc.n_vocab:
                tokens[f"{what}_token"] = enc.decode_single_token_bytes(i).decode("utf-8", "replace")
    elif kind == "tokenizer.json":
        folder = Path(source).parent
        try:
            config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = {}
        config = config if isinstance(config, dict) else {}
        jinja_file = folder / "chat_template.jinja"
        template = config.get("chat_template")
        if isinstance(template, list):  # [{"name": ..., "template": ...}]
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get(name or "default")
        elif name is not None:
            template = None
        if template is None and name is None and jinja_file.is_file():
            template = jinja_file.read_text(encoding="utf-8")
        for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                    "mask_token"):
            t = _token_text(config.get(key))
            if t is not None:
                tokens[key] = t
    return template if isinstance(template, str) else None, tokens


# the special tokens a GGUF names, as transformers' GGUF loader reads them
_GGUF_NAMED = {"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id",
               "pad": "padding_token_id"}


def sp_conventions(enc: "Encoding") -> tuple[dict[str, int], bool]:
    """How transformers (5.23) tokenizes a rendered chat for a SentencePiece BPE GGUF, as its
    GGUF loader builds the tokenizer (integrations/gguf/gguf_tokenizer_mapping.py):
    (added, each). added: the tokens cut out of the text whole, text -> id: the file's control
    and user-defined pieces (add_gguf_special_tokens) and the BOS / EOS / UNK / PAD it names.
    each: whether every stretch of text between them gets the dummy U+2581 (Phi-3: a Prepend
    normalizer, as sentencepiece would put it on each stretch on its own), else only a stretch
    at the very start of the text that does not start with a space (LlamaTokenizer's
    Metaspace, prepend_scheme "first": none after a special token such as <s> or [INST]).
    ValueError where transformers would not build the tokenizer edgetok's model encodes as."""
    source = enc.model.source
    key = _gguf_key(source)
    if enc.model.kind != "sp-bpe" or key is None:
        what = ("SentencePiece .model file" if enc.model.kind == "sp-bpe"
                else f"{enc.model.kind} model")
        raise ValueError(f"{enc.name}: chat templates are counted for byte-level BPE models "
                         "(GGUF, tokenizer.json) and SentencePiece BPE GGUFs, whose tokenizer "
                         f"transformers builds from the file; not for this {what}")
    if ("sp", *key, None) not in _found:
        _found["sp", *key, None] = _sp_conventions(source)
    added, each = _found["sp", *key, None]
    return dict(added), each


def _sp_conventions(source: str) -> tuple[dict[str, int], bool]:
    from .gguf import read_metadata

    md = read_metadata(source)
    arch = md.get("general.architecture", b"").decode("utf-8", "replace")
    if md.get("tokenizer.ggml.model") != b"llama" or arch.startswith("gemma"):
        raise ValueError(f"{source}: a {arch or 'SentencePiece'} GGUF's chat is tokenized by "
                         "transformers' GemmaTokenizer or T5Tokenizer, whose rules edgetok does "
                         "not reproduce yet (SentencePiece BPE GGUFs of other models are counted)")
    # what transformers ignores in the file, but edgetok's model (as llama.cpp) applies
    if (not md.get("tokenizer.ggml.add_space_prefix", True)
            or md.get("tokenizer.ggml.remove_extra_whitespaces", False)
            or md.get("tokenizer.ggml.precompiled_charsmap")):
        raise ValueError(f"{source}: the file sets add_space_prefix, remove_extra_whitespaces "
                         "or a precompiled_charsmap, which transformers' GGUF tokenizer ignores: "
                         "its chat ids differ from what this model encodes")
    tokens = md["tokenizer.ggml.tokens"]
    types = md.get("tokenizer.ggml.token_type") or []
    ids = [i for i, t in enumerate(types) if t in (3, 4)]  # control, user-defined
    ids += [i for key in _GGUF_NAMED.values()
            if isinstance(i := md.get(f"tokenizer.ggml.{key}"), int) and 0 <= i < len(tokens)]
    added: dict[str, int] = {}
    for i in ids:
        text = tokens[i].decode("utf-8", "replace")
        if text and text not in added:
            added[text] = i
    return added, arch == "phi3"


def render(template: str, messages: list[dict[str, Any]], *, tools: Any = None,
           documents: Any = None, add_generation_prompt: bool = False, **context: Any) -> str:
    """The template rendered as transformers' apply_chat_template renders it: a sandboxed
    jinja2 environment with trim_blocks, lstrip_blocks and loop controls, its tojson,
    raise_exception and strftime_now."""
    try:
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise ImportError("counting with a chat template needs jinja2 (pip install jinja2)") from None
    from datetime import datetime

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template).render(messages=messages, tools=tools, documents=documents,
                                            add_generation_prompt=add_generation_prompt, **context)


def template_ids(enc: "Encoding", messages: list[dict[str, Any]], *,
                 chat_template: str | None = None, template_name: str | None = None,
                 tools: Any = None, documents: Any = None, add_generation_prompt: bool = False,
                 **context: Any) -> list[int]:
    """The ids of the rendered chat (apply_chat_template(tokenize=True)'s): the template's own
    special-token text becomes their ids; the same text inside a message, a tool or a document
    stays text (a stand-in replaces it while the template renders). SentencePiece BPE GGUFs:
    the text between special tokens as transformers tokenizes it (sp_conventions)."""
    sp = sp_conventions(enc) if enc.model.kind != "bpe" else None
    # the file's special tokens (bos_token, ...) render a given template too, as in transformers
    in_file, tokens = find_template(enc, template_name, required=chat_template is None)
    chat_template = chat_template if chat_template is not None else in_file
    assert chat_template is not None
    specials = sorted(sp[0] if sp else enc._special_tokens)
    stand_in = {t: chr(_PLACEHOLDER + k) for k, t in enumerate(specials)}
    back = {v: k for k, v in stand_in.items()}
    if len(specials) > 0xFFFD:
        raise ValueError(f"{enc.name}: too many special tokens to keep apart from message text")
    from .encoding import _special_regex

    found = _special_regex(frozenset(specials)) if specials else None

    def defuse(x: Any) -> Any:
        if isinstance(x, str):
            if any(c in back for c in x):
                raise ValueError("message text holds characters of plane 15's private use area "
                                 "(U+F0000..), which chat counting reserves")
            return found.sub(lambda m: stand_in[m.group()], x) if found is not None else x
        if isinstance(x, dict):
            return {k: defuse(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [defuse(v) for v in x]
        return x

    text = render(chat_template, defuse(_messages(messages)), tools=defuse(tools),
                  documents=defuse(documents), add_generation_prompt=add_generation_prompt,
                  **{**tokens, **context})
    if sp is not None:
        return _sp_ids(enc, text, *sp, found, back)
    ids: list[int] = []
    for seg in enc._segments(text, "all", ()):
        if isinstance(seg, int):
            ids.append(seg)
        elif seg:
            if any(c in back for c in seg):
                seg = "".join(back.get(c, c) for c in seg)
            ids += enc.encode(seg, disallowed_special=(), add_special_tokens=False)
    return ids


def _sp_ids(enc: "Encoding", text: str, added: dict[str, int], each: bool, found: Any,
            back: dict[str, str]) -> list[int]:
    """The ids of a rendered chat for a SentencePiece BPE GGUF (see sp_conventions): added
    tokens cut out whole (found: their regex), each stretch between them encoded with or
    without the dummy prefix; stand-ins (back) turned back into their text first."""
    ids: list[int] = []
    start = 0
    for m in [*(found.finditer(text) if found is not None else ()), None]:
        seg = text[start:m.start() if m else len(text)]
        if any(c in back for c in seg):
            seg = "".join(back.get(c, c) for c in seg)
        if seg:
            dummy = each or (start == 0 and not seg.startswith((" ", "\u2581")))
            ids += enc.model.encode(enc._bytes(seg), dummy=dummy)[0]
        if m is not None:
            ids.append(added[m.group()])
            start = m.end()
    return ids
