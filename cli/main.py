"""The `edgetok` command: files and stdin in, ids / text / counts out. Calls only edgetok's
Python API; every failure becomes one line on stderr and a non-zero exit status.

Start-up matters here (a count of one file on a small board is mostly start-up), so this
module imports only os and sys when it loads; each command imports what it uses
(tests/test_cli_imports.py keeps `count` and `encode` that way)."""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from typing import IO, BinaryIO, Callable, Iterable, Iterator, NoReturn

    import edgetok

DEFAULT_ENCODING = "cl100k_base"


class Failure(Exception):
    """An expected failure: printed as 'edgetok: error: ...', exit status 1."""

    def show(self) -> None:
        to_stderr(f"edgetok: error: {self}")


class UsageError(Exception):
    """Options that do not go together: the command's usage and this message, exit status 2."""


def to_stderr(line: str) -> None:
    """One line on stderr (none when stderr is closed)."""
    if sys.stderr is not None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def load_encoding(encoding: str | None, model: str | None) -> "edgetok.Encoding":
    """The --model file, else the --encoding (cl100k_base when neither is given)."""
    import edgetok

    try:
        if model:
            return edgetok.load(model)
        return edgetok.get_encoding(DEFAULT_ENCODING if encoding is None else encoding)
    except FileNotFoundError:
        raise Failure(f"{model}: no such file") from None
    except (ValueError, OSError) as e:
        raise Failure(str(e) + source_tree_hint()) from None


def source_tree_hint() -> str:
    """Advice when edgetok was imported from a source checkout that was never built (python -m
    run from the project's folder imports the folder's edgetok, not the installed one)."""
    from pathlib import Path

    import edgetok

    here = Path(edgetok.__file__).parent
    if edgetok.list_encodings() or not (here.parent / "setup.py").exists():
        return ""
    return (f"; edgetok was imported from the source folder {here.parent}, which has no built "
            "models: run from another folder, or build it there with "
            "`python setup.py build_ext --inplace`")


def model_options(p: Parser) -> None:
    """-e/--encoding and -m/--model: which model a command uses (load_encoding)."""
    p.add_argument("-e", "--encoding", metavar="NAME",
                   help="Built-in encoding (see `edgetok info --list`; default: "
                   f"{DEFAULT_ENCODING}).")
    p.add_argument("-m", "--model", metavar="PATH",
                   help="An .etok model, or a GGUF, tokenizer.json, SentencePiece .model or "
                   "tiktoken file, compiled on first use and cached (instead of --encoding); a "
                   "folder holding tokenizer.json, or a hub id (Org/Name) in the local Hugging "
                   "Face cache (never downloaded).")


class Output:
    """Standard output for a command's results: a write that fails (a full disk, a closed
    descriptor) becomes one error line and exit status 1."""

    def __init__(self) -> None:
        if sys.stdout is None:  # started with its descriptor closed (`>&-`)
            raise Failure("standard output is closed")
        self.f = sys.stdout

    def _failed(self, e: OSError) -> Failure:
        return Failure(f"cannot write the output: {e.strerror or e}")

    def write(self, s: str) -> None:
        try:
            self.f.write(s)
        except OSError as e:
            raise self._failed(e) from None

    def write_bytes(self, b: bytes) -> None:
        try:
            self.f.buffer.write(b)
        except OSError as e:
            raise self._failed(e) from None

    def flush(self) -> None:
        try:
            self.f.flush()
        except OSError as e:
            raise self._failed(e) from None


def open_input(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise Failure(f"{path}: no such file") from None
    except IsADirectoryError:
        raise Failure(f"{path}: is a directory") from None
    except OSError as e:
        raise Failure(f"{path}: {e.strerror}") from None


class Progress:
    """Bytes done and MB/s on stderr, when stderr is a terminal and the work takes a while."""

    def __init__(self, name: str, total: int | None):
        import time

        self.clock = time.monotonic
        self.name, self.total, self.done = name, total, 0
        self.start = self.shown = self.clock()
        self.on = sys.stderr.isatty()
        self.dirty = False

    def add(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if self.on and now - self.start > 1.0 and now - self.shown > 0.2:
            self.shown = now
            rate = self.done / (now - self.start) / 1e6
            pct = f" {100 * self.done / self.total:5.1f}%" if self.total else ""
            sys.stderr.write(f"\r{self.name}: {self.done / 1e6:,.1f} MB{pct}  {rate:,.1f} MB/s ")
            sys.stderr.flush()
            self.dirty = True

    def close(self) -> None:
        if self.dirty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def text_chunks(path: str, errors: str, jobs: int = 1, out: Output | None = None) -> Iterator[str]:
    """The text of FILE in chunks; out (if given) is flushed whenever the input pauses, so
    what is final comes out while the input waits."""
    from edgetok.stream import InvalidUTF8, read_text

    f = open_input(path)
    name = "<stdin>" if path == "-" else path
    chunk = int(os.environ.get("EDGETOK_CHUNK", (1 << 20) * max(jobs, 1)))
    try:
        size = os.fstat(f.fileno()).st_size if path != "-" else None
    except (OSError, ValueError):
        size = None
    progress = Progress(name, size or None)
    try:
        for text in read_text(f, errors, chunk, on_wait=out.flush if out else None):
            progress.add(len(text))
            yield text
    except InvalidUTF8 as e:
        raise Failure(f"{name}: {e} (use --errors replace to substitute U+FFFD)") from None
    except OSError as e:
        raise Failure(f"{name}: {e.strerror or e}") from None
    finally:
        progress.close()
        if f is not sys.stdin.buffer:
            f.close()


def special_policy(allow: bool, as_text: bool) -> tuple[object, object]:
    """(allowed_special, disallowed_special) for the --allow-special / --special-as-text flags."""
    if allow and as_text:
        raise UsageError("--allow-special and --special-as-text exclude each other")
    return ("all" if allow else frozenset()), (() if as_text else "all")


def token_text(b: bytes) -> str:
    """A token's bytes, printable: JSON string escapes, invalid UTF-8 as \\xNN."""
    import json

    s = b.decode("utf-8", "backslashreplace")
    return json.dumps(s, ensure_ascii=False)[1:-1].replace("\\\\x", "\\x")


ABOUT = "Exact, fast tokenizer for language models (the ids tiktoken gives, much faster)."
EXAMPLES = """Examples:
  echo "Hello world" | edgetok encode          ids, cl100k_base by default
  edgetok encode notes.txt --format json
  edgetok decode ids.txt                       ids back to text
  edgetok count docs/*.md                      tokens per file, like wc
  edgetok chunk book.txt -n 512                exact 512-token chunks, as JSONL
  edgetok bench                                measure this machine

`edgetok COMMAND -h` shows a command's options and examples."""

SPECIAL_HELP = ("Encode special tokens such as <|endoftext|> as their ids (by default such text "
                "is an error, as in tiktoken).")
TEXT_HELP = "Treat text like <|endoftext|> as ordinary text (tiktoken's disallowed_special=())."
ERRORS_HELP = "On invalid UTF-8: stop with an error (strict), or substitute U+FFFD (replace)."


def special_options(p: Parser) -> None:
    """--allow-special and --special-as-text (special_policy)."""
    p.add_argument("--allow-special", action="store_true", help=SPECIAL_HELP)
    p.add_argument("--special-as-text", action="store_true", help=TEXT_HELP)


def errors_option(p: Parser, default: str, help: str) -> None:
    p.add_argument("--errors", choices=["strict", "replace"], default=default,
                   help=help.rstrip(".") + " (default: %(default)s).")


def jobs_option(p: Parser) -> None:
    p.add_argument("-j", "--jobs", type=at_least(1), metavar="N",
                   help="Threads to use (default: all cores). The ids do not depend on it.")


def add_special_option(p: Parser) -> None:
    p.add_argument(
        "--add-special-tokens", dest="add_special", action="switch",
        help="Add what the model's file says goes around a text: a tokenizer.json's "
        "post-processor tokens (on by default, as Hugging Face's tokenizer(text)); a GGUF's "
        "BOS / EOS where llama.cpp's add_special adds them (off by default). `edgetok info` "
        "says what is added.")


def resolve_jobs(jobs: int | None) -> int:
    from edgetok.parallel import cores

    return jobs or cores()


def encode_options(p: Parser) -> None:
    file_argument(p)
    model_options(p)
    p.add_argument("-f", "--format", dest="fmt", choices=["ids", "json", "tokens"], default="ids",
                   help="ids: space-separated; json: a JSON list; tokens: one line per token "
                   "with its id and bytes (default: %(default)s).")
    special_options(p)
    errors_option(p, "strict", ERRORS_HELP)
    p.add_argument("--bos", action="store_true", help="Start with the model's BOS id "
                   "(SentencePiece models, GGUF files: the one they declare).")
    p.add_argument("--eos", action="store_true", help="End with the model's EOS id "
                   "(SentencePiece models, GGUF files).")
    add_special_option(p)
    jobs_option(p)
    p.add_argument("--pair", metavar="FILE2", help="Encode FILE and FILE2 as a sentence pair, "
                   "as Hugging Face's tokenizer(text, pair): the post-processor's pair template "
                   "([CLS] A [SEP] B [SEP] for BERT models); -f json also gives type_ids and "
                   "attention_mask.")
    p.add_argument("--max-length", type=at_least(0), metavar="N",
                   help="Truncate to N ids, the added tokens included (as Hugging Face's "
                   "truncation; with --pair or alone).")
    p.add_argument("--truncation", choices=["longest_first", "only_first", "only_second"],
                   default="longest_first",
                   help="Which text --max-length cuts (default: %(default)s).")


def encode(file: str, encoding: str | None, model: str | None, fmt: str, allow_special: bool,
           special_as_text: bool, errors: str, bos: bool, eos: bool, add_special: bool | None,
           jobs: int | None, pair: str | None, max_length: int | None, truncation: str) -> None:
    """Print the token ids of FILE (default: stdin).

    Large inputs stream with bounded memory and give the same ids as encoding the whole text.
    A tokenizer.json's post-processor tokens (BOS, EOS) are added, as Hugging Face's
    tokenizer(text) adds them. --format tokens shows each token's character and byte offsets
    in the input (start:end, Hugging Face's offsets; added tokens 0:0).

    Examples:
      echo "Hello world" | edgetok encode
      edgetok encode book.txt --format json > ids.json
      edgetok encode prompt.txt --allow-special --format tokens
      edgetok encode --model xlm-roberta.model --bos --eos query.txt
      edgetok encode --model Qwen/Qwen2.5-7B-Instruct --no-add-special-tokens q.txt
      edgetok encode --model bge.etok query.txt --pair passage.txt --max-length 512
    """
    from edgetok.stream import encode_stream_parts

    enc = load_encoding(encoding, model)
    if pair is not None or max_length is not None:
        encode_pair(enc, file, pair, fmt, errors, add_special, max_length, truncation)
        return
    allowed, disallowed = special_policy(allow_special, special_as_text)
    out = Output()
    jobs = resolve_jobs(jobs)
    try:  # (what is added around the text, and its errors, come from edgetok.stream)
        stream = encode_stream_parts(enc, text_chunks(file, errors, jobs, out),
                                     allowed_special=allowed, disallowed_special=disallowed,
                                     add_special_tokens=add_special, add_bos=bos, add_eos=eos,
                                     jobs=jobs)
    except ValueError as e:
        raise Failure(f"{e} (--bos and --eos are for SentencePiece models and GGUF files)") from None
    m = enc.model
    if fmt == "tokens" and (m.kind == "wordpiece" or m.kind == "bpe" and (
            m.nfc or m.drops_bytes or (enc._post is not None and enc._post["trim"]))):
        tokens_whole(enc, file, errors, (allowed, disallowed), add_special, bos, eos)
        return
    offsets = TokenOffsets() if m.kind == "bpe" else None
    first = True
    sep = ", " if fmt == "json" else " "
    if fmt == "json":
        out.write("[")
    try:
        for added, ids in stream:
            assert isinstance(ids, list)
            for k in range(0, len(ids), WRITE_IDS):  # text for a bounded number of ids at a time
                part = ids[k:k + WRITE_IDS]
                if fmt == "tokens":
                    out.write("".join(f"{i}\t{token_text(b)}"
                                      f"{offsets.next(b, added) if offsets else ''}\n"
                                      for i in part for b in (enc.decode_single_token_bytes(i),)))
                else:
                    out.write(("" if first else sep) + sep.join(map(str, part)))
                    first = False
    except ValueError as e:  # a disallowed special token
        out.write("\n")
        msg = str(e).split("\n")[0]
        raise Failure(f"{msg} Use --allow-special to encode it as a special token, or --special-as-text.") from None
    if fmt == "json":
        out.write("]\n")
    elif fmt == "ids" and not first:
        out.write("\n")
    out.flush()


def encode_pair(enc: "edgetok.Encoding", file: str, pair: str | None, fmt: str, errors: str,
                add_special: bool | None, max_length: int | None, truncation: str) -> None:
    """encode --pair / --max-length: the whole texts through Encoding.encode_pair."""
    import json

    if fmt == "tokens":
        raise Failure("--pair and --max-length print ids (-f ids) or JSON (-f json)")
    if pair == file == "-":
        raise Failure("--pair: FILE and FILE2 cannot both be stdin")
    text = "".join(text_chunks(file, errors))
    second = None if pair is None else "".join(text_chunks(pair, errors))
    try:
        got = enc.encode_pair(text, second, add_special_tokens=add_special is not False,
                              max_length=max_length, truncation=truncation)
    except ValueError as e:
        raise Failure(str(e).split("\n")[0]) from None
    out = Output()
    out.write(json.dumps(got) + "\n" if fmt == "json" else " ".join(map(str, got["ids"])) + "\n")
    out.flush()


WRITE_IDS = 1 << 16  # ids turned into text at a time


class TokenOffsets:
    """Offsets of streamed tokens, from their bytes: "\tchars\tbytes" as start:end, the
    characters Hugging Face's offsets give (a token holding part of a character spans all of
    it) and the UTF-8 bytes; added tokens (BOS, EOS) 0:0. For models whose tokens tile the
    text (no normaliser, no dropped bytes, no trimmed offsets)."""

    def __init__(self) -> None:
        self.pos, self.chars = 0, 0

    def next(self, b: bytes, added: bool) -> str:
        if added:
            return "\t0:0\t0:0"
        if not b:  # (no token is empty)
            return f"\t{self.chars}:{self.chars}\t{self.pos}:{self.pos}"
        start = self.chars - (0x80 <= b[0] < 0xC0)
        self.chars += len(b.translate(None, bytes(range(0x80, 0xC0))))
        bs, self.pos = self.pos, self.pos + len(b)
        return f"\t{max(start, 0)}:{self.chars}\t{bs}:{self.pos}"


def tokens_whole(enc: "edgetok.Encoding", file: str, errors: str, policy: tuple[object, object],
                 add_special: bool | None, bos: bool, eos: bool) -> None:
    """encode -f tokens for models whose offsets need the whole text (a normaliser, dropped
    bytes, trimmed offsets): encode_with_offsets on all of it, with --bos / --eos around."""
    text = "".join(text_chunks(file, errors))
    try:
        ids, offsets, byte_offsets = enc.encode_with_offsets(
            text, allowed_special=policy[0], disallowed_special=policy[1],  # type: ignore[arg-type]
            add_special_tokens=add_special)
    except ValueError as e:
        msg = str(e).split("\n")[0]
        raise Failure(msg) from None
    head, tail = enc._ends(False, bos, eos)
    rows = [(i, "0:0", "0:0") for i in head]
    rows += [(i, f"{a}:{b}", f"{c}:{d}") for i, (a, b), (c, d) in zip(ids, offsets, byte_offsets)]
    rows += [(i, "0:0", "0:0") for i in tail]
    out = Output()
    for k in range(0, len(rows), WRITE_IDS):
        out.write("".join(f"{i}\t{token_text(enc.decode_single_token_bytes(i))}\t{c}\t{b}\n"
                          for i, c, b in rows[k:k + WRITE_IDS]))
    out.flush()


def read_ids(path: str) -> Iterator[list[int]]:
    """Ids from a file or stdin: integers separated by whitespace and/or commas, optionally
    inside JSON brackets; yielded in batches as they are read."""
    f = open_input(path)
    name = "<stdin>" if path == "-" else path
    rest = b""
    while True:
        data = f.read1(1 << 16) if hasattr(f, "read1") else f.read(1 << 16)
        buf = rest + data
        if data:
            cut = max(buf.rfind(c) for c in (b" ", b"\n", b",", b"\t", b"]"))
            buf, rest = (buf[: cut + 1], buf[cut + 1:]) if cut >= 0 else (b"", buf)
        words = buf.replace(b",", b" ").replace(b"[", b" ").replace(b"]", b" ").split()
        try:
            ids = [int(w) for w in words]
        except ValueError:
            bad = next(w for w in words if not w.lstrip(b"-").isdigit())
            raise Failure(f"{name}: not a token id: {bad.decode(errors='replace')!r}") from None
        if ids:
            yield ids
        if not data:
            return


def decode_options(p: Parser) -> None:
    file_argument(p)
    model_options(p)
    errors_option(p, "replace", "Bytes that are not UTF-8 (ids cut inside a character): U+FFFD "
                  "(replace) or an error (strict).")


def decode(file: str, encoding: str | None, model: str | None, errors: str) -> None:
    """Print the text of the token ids in FILE (default: stdin).

    Ids are separated by spaces, newlines or commas (a JSON list works too). Text is printed
    as soon as it forms whole characters, so a model's output can be piped through live.

    Examples:
      echo "9906 1917" | edgetok decode
      edgetok encode notes.txt | edgetok decode
    """
    import itertools

    from edgetok.stream import Decoder

    enc = load_encoding(encoding, model)
    dec = Decoder(enc, errors)
    out = Output()
    for ids in itertools.chain(read_ids(file), [None]):
        try:
            text = dec.flush() if ids is None else dec.feed(ids)
        except (KeyError, OverflowError):
            assert ids is not None
            bad = next(i for i in ids if not 0 <= i < 1 << 32 or enc.model.token_bytes(i) is None)
            raise Failure(f"token id {bad} is not in {enc.name} (ids run from 0 to "
                          f"{enc.n_vocab - 1}, with gaps)") from None
        except UnicodeDecodeError as e:
            raise Failure(f"the ids do not decode to UTF-8: {e.reason}") from None
        out.write_bytes(text.encode())
        out.flush()


def count_options(p: Parser) -> None:
    files_argument(p)
    model_options(p)
    special_options(p)
    errors_option(p, "strict", ERRORS_HELP)
    p.add_argument("--limit", type=at_least(0), metavar="N",
                   help="Exit with status 1, saying by how much, if a file has more than N tokens.")
    add_special_option(p)
    p.add_argument("--messages", action="store_true",
                   help="Each FILE is a chat as JSON (a list of {role, content} messages, or an "
                   "object with messages and tools): count it as the model sees it. With "
                   "--chat-model, OpenAI's per-message overheads (and tool definitions as the "
                   "OpenAI cookbook counts them); else the --model file's chat template (jinja2).")
    p.add_argument("--chat-model", metavar="NAME",
                   help="With --messages: the OpenAI chat model (gpt-4o, gpt-4, "
                   "gpt-3.5-turbo-0301, ...); its encoding unless -e or --model is given.")
    p.add_argument("--generation-prompt", action="store_true",
                   help="With --messages and a chat template: add the assistant's generation "
                   "prompt.")
    jobs_option(p)


def count(files: list[str], encoding: str | None, model: str | None, allow_special: bool,
          special_as_text: bool, errors: str, limit: int | None, add_special: bool | None,
          messages: bool, chat_model: str | None, generation_prompt: bool,
          jobs: int | None) -> None:
    """Count the tokens of each FILE (default: stdin), like wc, with a total for several.

    Examples:
      edgetok count notes.txt
      edgetok count docs/*.md
      cat book.txt | edgetok count
      edgetok count prompt.txt --limit 8192    exit 1 if over 8192 tokens
      edgetok count --messages chat.json --chat-model gpt-4o
      edgetok count --messages chat.json --model Qwen/Qwen2.5-7B-Instruct
    """
    from edgetok.stream import encode_stream

    if chat_model and not messages:
        raise UsageError("--chat-model goes with --messages")
    paths = tuple(files) or ("-",)
    if messages:
        if chat_model and not model and encoding is None:
            import edgetok

            try:
                enc = edgetok.encoding_for_model(chat_model)
            except KeyError:
                raise Failure(f"--chat-model {chat_model!r}: not an OpenAI model tiktoken "
                              "knows") from None
        else:
            enc = load_encoding(encoding, model)
        count_messages(enc, paths, chat_model, generation_prompt, limit)
        return
    enc = load_encoding(encoding, model)
    allowed, disallowed = special_policy(allow_special, special_as_text)
    jobs = resolve_jobs(jobs)
    inner = 1 if len(paths) > 1 else jobs  # many files: one per thread; one file: shards

    def count_one(path: str) -> int | Failure:
        try:
            n = 0
            for c in encode_stream(enc, text_chunks(path, errors, inner), allowed_special=allowed,
                                   disallowed_special=disallowed, add_special_tokens=add_special,
                                   count_only=True, jobs=inner):
                assert isinstance(c, int)
                n += c
            return n
        except Failure as e:
            return e
        except ValueError as e:
            msg = str(e).split("\n")[0]
            return Failure(f"{path}: {msg} Use --allow-special to count it as a special token, "
                           "or --special-as-text.")

    if len(paths) > 1 and jobs > 1:
        from edgetok.parallel import pool

        results = pool().map(count_one, paths)  # in order, as they finish
    else:
        results = map(count_one, paths)
    report_counts(paths, results, limit)


def report_counts(paths: tuple[str, ...], results: Iterable[int | Failure],
                  limit: int | None) -> None:
    """count's output, like wc: a line a file as its count comes (a Failure is shown), a total
    for more than one file; exit 1 when one failed or is over the limit."""
    total, failed = 0, False
    out = Output()
    for path, n in zip(paths, results):
        if isinstance(n, Failure):
            n.show()
            failed = True
            continue
        total += n
        out.write(f"{n:>8} {'' if path == '-' else path}".rstrip() + "\n")
        if limit is not None and n > limit:
            name = "<stdin>" if path == "-" else path
            Failure(f"{name}: {n} tokens, {n - limit} over the limit of {limit}").show()
            failed = True
    if len(paths) > 1:
        out.write(f"{total:>8} total\n")
    out.flush()
    if failed:
        sys.exit(1)


def count_messages(enc: "edgetok.Encoding", paths: tuple[str, ...], chat_model: str | None,
                   generation_prompt: bool, limit: int | None) -> None:
    """count --messages: each file a JSON chat, counted by Encoding.count_messages."""
    report_counts(paths, (count_chat(enc, p, chat_model, generation_prompt) for p in paths), limit)


def count_chat(enc: "edgetok.Encoding", path: str, chat_model: str | None,
               generation_prompt: bool) -> int:
    """The token count of one JSON chat file."""
    import json

    name = "<stdin>" if path == "-" else path
    f = open_input(path)
    try:
        chat = json.loads(f.read().decode("utf-8"))
    except (ValueError, OSError) as e:
        raise Failure(f"{name}: not a JSON chat ({e})") from None
    finally:
        if f is not sys.stdin.buffer:
            f.close()
    tools = None
    if isinstance(chat, dict):
        tools, chat = chat.get("tools"), chat.get("messages")
    try:
        if chat_model:
            return enc.count_messages(chat, chat_model, tools=tools)
        return enc.count_messages(chat, tools=tools, add_generation_prompt=generation_prompt)
    except (ValueError, TypeError, ImportError) as e:
        raise Failure(f"{name}: {e}") from None
    except Exception as e:  # a template's own error (jinja2's TemplateError, ...)
        raise Failure(f"{name}: the chat template failed: {e}") from None


def chunk_options(p: Parser) -> None:
    file_argument(p)
    p.add_argument("-n", "--max-tokens", type=at_least(1), required=True, metavar="N",
                   help="Tokens per chunk at most (counted on the chunk's own text, with the "
                   "special tokens encode adds around it: BERT's [CLS] / [SEP], a "
                   "tokenizer.json's post-processor).")
    p.add_argument("--overlap", type=at_least(0), default=0, metavar="N",
                   help="Start each chunk up to this many tokens before the previous one ends "
                   "(default: %(default)s).")
    p.add_argument("--boundary", choices=["paragraph", "line", "sentence", "char"],
                   default="char", help="End chunks after the last break of this kind that fits "
                   "(then finer kinds); char: fill every chunk exactly (default: %(default)s).")
    p.add_argument("-f", "--format", dest="fmt", choices=["jsonl", "text"], default="jsonl",
                   help="jsonl: one JSON object per chunk (text, tokens, byte offsets); text: the "
                   "chunks separated by form feeds (\\f) (default: %(default)s).")
    model_options(p)
    errors_option(p, "strict", ERRORS_HELP)
    add_special_option(p)


def chunk(file: str, max_tokens: int, overlap: int, boundary: str, fmt: str,
          encoding: str | None, model: str | None, errors: str, add_special: bool | None) -> None:
    """Cut FILE (default: stdin) into chunks of at most N tokens, exactly.

    Chunks end between characters, and without --overlap they concatenate back to the input
    byte for byte. Special-token text such as <|endoftext|> is counted as ordinary text.
    WordPiece models (BERT, embedding models) end chunks after whole words, and count the
    [CLS] / [SEP] that encode adds (so -n 512 fits a 512-token window).

    Examples:
      edgetok chunk book.txt --max-tokens 512 > chunks.jsonl
      edgetok chunk notes.md -n 256 --boundary paragraph --overlap 32
      cat log.txt | edgetok chunk -n 1000 --format text
      edgetok chunk docs.txt -n 512 --model all-MiniLM-L6-v2/tokenizer.json
    """
    import json

    from edgetok.stream import chunk_stream

    if overlap >= max_tokens:
        raise UsageError("--overlap must be less than --max-tokens")
    enc = load_encoding(encoding, model)
    out = Output()
    blocks = (t.encode("utf-8", "surrogatepass") for t in text_chunks(file, errors, out=out))
    try:
        for i, (a, b, n, raw) in enumerate(chunk_stream(enc, blocks, max_tokens, overlap=overlap,
                                                        boundary=boundary,
                                                        add_special_tokens=add_special)):
            text = raw.decode("utf-8")
            if fmt == "jsonl":
                out.write(json.dumps({"index": i, "tokens": n, "start": a, "end": b,
                                      "text": text}, ensure_ascii=False) + "\n")
            else:
                out.write(("\f" if i else "") + text)
    except ValueError as e:
        raise Failure(str(e)) from None
    out.flush()


def compile_options(p: Parser) -> None:
    p.add_argument("vocab", metavar="VOCAB")
    p.add_argument("-o", "--output", required=True, metavar="X.etok",
                   help="The model file to write.")
    p.add_argument("--special", dest="specials", action="append", default=[], metavar="TOKEN=ID",
                   help="A special token and its id (repeatable), e.g. '<|endoftext|>=100257'.")
    p.add_argument("--pretokenizer", choices=["cl100k", "o200k", "gpt2", "gpt2-digits", "llama3",
                                              "qwen2"], default="cl100k",
                   help="How tiktoken vocabularies split text, regex-free: the pattern of "
                   "cl100k_base, o200k_base, GPT-2 (r50k/p50k), GPT-2 after each digit is split "
                   "off (StarCoder), Llama-3 (the older cl100k one) or Qwen2 (Llama-3's with one "
                   "digit a piece). GGUF and tokenizer.json files name their own (default: "
                   "%(default)s).")
    p.add_argument("--pattern", metavar="REGEX",
                   help="Instead of --pretokenizer: the vocabulary's own pattern. One a "
                   "regex-free pretokenizer reproduces gets it; any other runs through the "
                   "`regex` module.")
    p.add_argument("--fairseq-ids", action="store_true",
                   help="SentencePiece .model: the ids Hugging Face's XLM-RoBERTa tokenizers "
                   "give (fairseq's dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3, every other "
                   "piece one up, <mask> last).")
    p.add_argument("--lowercase", action="switch",
                   help="A WordPiece vocab.txt: whether BertNormalizer lowercases (and strips "
                   "accents); default: do_lower_case of a tokenizer_config.json beside it, else "
                   "yes.")


def compile_(vocab: str, output: str, specials: list[str], pretokenizer: str,
             pattern: str | None, fairseq_ids: bool, lowercase: bool | None) -> None:
    """Compile a vocabulary into an .etok model, for --model and edgetok.load().

    Vocabularies: a tiktoken file (base64 token and rank per line; gzip is fine), a GGUF
    model file or a Hugging Face tokenizer.json with byte-level BPE (GPT-2, Llama-3, Qwen2
    and the like; other pre-tokenizer patterns run through the `regex` module), or a
    SentencePiece Unigram .model (XLM-R, T5, ALBERT and their fine-tunes), or a BERT WordPiece
    model (a tokenizer.json, a vocab.txt, a "bert" GGUF: MiniLM, bge, e5). --model also takes
    these files directly, compiling them on first use into ~/.cache/edgetok/models
    (keyed on path, size and modification time; EDGETOK_NO_CACHE=1 compiles every time).

    Examples:
      edgetok compile my.tiktoken -o my.etok --special '<|endoftext|>=100257'
      edgetok compile Meta-Llama-3-8B.Q4_K_M.gguf -o llama3.etok
      edgetok compile Qwen2.5-7B/tokenizer.json -o qwen.etok
      edgetok compile spiece.model -o spiece.etok
      edgetok compile xlm-roberta/sentencepiece.bpe.model --fairseq-ids -o xlmr.etok
      edgetok compile all-MiniLM-L6-v2/tokenizer.json -o minilm.etok
      edgetok compile bert-base-cased/vocab.txt --no-lowercase -o cased.etok
      edgetok encode --model llama3.etok notes.txt
    """
    from edgetok.compiler import compile_source

    spec = {}
    for s in specials:
        name, sep, num = s.rpartition("=")
        if not sep or not name or not num.isdigit():
            raise Failure(f"--special {s!r}: expected TOKEN=ID")
        spec[name] = int(num)
    try:
        image = compile_source(vocab, specials=spec, pretokenizer=pretokenizer, pattern=pattern,
                               fairseq_ids=fairseq_ids, lowercase=lowercase)
    except FileNotFoundError:
        raise Failure(f"{vocab}: no such file") from None
    except (ValueError, OSError) as e:
        raise Failure(str(e)) from None
    write_replacing(output, image)
    to_stderr(f"wrote {output} ({len(image)} bytes)")


def write_replacing(path: str, data: bytes) -> None:
    """Write data to path through a temporary file in the same folder renamed over it: a
    process that has the old file mapped keeps its contents (rewriting a mapped file in place
    kills such a process with SIGBUS), and no one ever sees half a file."""
    import tempfile

    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise Failure(f"{path}: is a directory")
    if not os.path.isdir(folder):
        raise Failure(f"{path}: no such folder: {folder}")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            mask = os.umask(0)
            os.umask(mask)
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), 0o666 & ~mask)  # as open() would make it
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise Failure(f"{path}: cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def info_options(p: Parser) -> None:
    model_options(p)
    p.add_argument("--list", dest="list_", action="store_true", help="List the built-in encodings.")
    p.add_argument("--verify", action="store_true", help="Also verify the model file's checksum.")
    p.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def info(encoding: str | None, model: str | None, list_: bool, verify: bool, as_json: bool) -> None:
    """Describe an encoding and its model file.

    Examples:
      edgetok info
      edgetok info --model my.etok --verify
      edgetok info --list
    """
    import json

    import edgetok

    out = Output()
    if list_:
        out.write("".join(f"{name}\n" for name in edgetok.list_encodings()))
        out.flush()
        return
    enc = load_encoding(encoding, model)
    m = enc.model
    d: dict[str, object] = {
        "name": enc.name, "model": m.source, "n_vocab": enc.n_vocab,
        "special_tokens": dict(sorted(enc._special_tokens.items(), key=lambda kv: kv[1])),
    }
    if m.kind == "sp-bpe":
        d["algorithm"] = ("SentencePiece BPE: SentencePiece's normaliser (the model's precompiled "
                          "charsmap where it has one), merges by piece score, byte fallback as "
                          "the model says")
    elif m.kind == "unigram":
        d["algorithm"] = ("SentencePiece Unigram: SentencePiece's normaliser (the model's "
                          "precompiled charsmap where it has one), Viterbi over piece scores, byte "
                          "fallback as the model says")
    elif m.kind == "wordpiece":
        from edgetok.wordpiece import describe

        d["algorithm"] = describe(m)
    else:
        d["pretokenizer"] = {
            1: f"Peek2 cl100k (regex-free, digit groups of {m.pretok_param})",
            2: "o200k (regex-free)",
            3: "GPT-2 / r50k (regex-free" + (", each digit split off first)" if m.pretok_param else ")"),
            4: f"Llama-3 / older cl100k (regex-free, digit groups of {m.pretok_param})",
            5: "the `regex` module in Python, the patterns applied in turn (no regex-free "
               "pretokenizer covers them; token budgets are not available)",
        }.get(m.pretok, f"kind {m.pretok}")
        if m.nfc:
            d["normalizer"] = "NFC (applied in Python before encoding)"
        if m.drops_bytes:
            d["missing_bytes"] = "some bytes have no token: dropped before merging, as tokenizers does"
        if enc._added:
            d["added_tokens"] = f"{len(enc._added)} matched in any text (Hugging Face's non-special)"
        d["pattern"] = m.pattern
        d["bpe"] = "exact merges; long pieces: " + ("linear backtracking" if m.backtracks else
                                                   "heap (tokens not all reachable by merges)")
        c_pairs = m.pair_tables and not m.regex_split
        one_pass = c_pairs and not (m.nfc or m.drops_bytes or enc._added)
        d["canonical"] = (("is_canonical in one pass" if one_pass else "is_canonical by re-encoding")
                          + ("; canonical automata" if c_pairs else "; no canonical automata"))
    d["adds"] = enc.special_tokens_added()
    if enc._gguf is not None:
        g = enc._gguf
        d["gguf_bos_eos"] = (f"BOS {g['bos']}, EOS {g['eos']}; llama.cpp's add_special adds "
                             f"{' and '.join(w for w in ('BOS', 'EOS') if g['add_' + w.lower()]) or 'neither'}"
                             " (--add-special-tokens, add_special_tokens=True; --bos / --eos, "
                             "add_bos / add_eos: either)")
    d |= {
        "model_bytes": m.size, "max_token_bytes": m.max_token_len,
        "memory": m.backing,
    }
    if verify:
        d["checksum"] = "ok" if m.verify() else "MISMATCH"
    if as_json:
        out.write(json.dumps(d, indent=2, ensure_ascii=False) + "\n")
    else:
        adds = d["adds"]
        assert isinstance(adds, dict)
        d["adds"] = (f"{adds['before']} before and {adds['after']} after the text's ids, by "
                     f"{adds['by']} (--no-add-special-tokens: neither)"
                     if adds["before"] or adds["after"] else "nothing by default")
        sp = d["special_tokens"]
        assert isinstance(sp, dict)
        if len(sp) > 12:  # Qwen2's and Llama-3's hundreds of reserved tokens: a sample
            items = list(sp.items())
            d["special_tokens"] = (", ".join(f"{k!r}: {v}" for k, v in items[:6]) +
                                   f", ... ({len(sp)} in all; --json lists them)")
        out.write("".join(f"{k + ':':<16} {v}\n" for k, v in d.items()))
    out.flush()
    if verify and d["checksum"] != "ok":
        sys.exit(1)


def bench_options(p: Parser) -> None:
    files_argument(p)
    p.add_argument("-e", "--encoding", default=DEFAULT_ENCODING, metavar="NAME",
                   help="Built-in encoding (default: %(default)s).")
    p.add_argument("--seconds", type=at_least(0.05), default=1.0, metavar="S",
                   help="Time spent on each measurement (more is steadier; default: %(default)s).")
    p.add_argument("--no-compare", action="store_true",
                   help="Do not measure tiktoken and regex alongside.")
    p.add_argument("--json", dest="as_json", action="store_true",
                   help="Print JSON (for collecting results).")


def bench(files: list[str], encoding: str, seconds: float, no_compare: bool,
          as_json: bool) -> None:
    """Measure this machine: encode, count and pretokenizer throughput, cold start, memory.

    Throughput is measured side by side with tiktoken and the regex module when they are
    installed. Without FILES it uses the sample texts shipped in the package (English prose,
    code, non-Latin scripts), so results from different boards compare.

    Examples:
      edgetok bench
      edgetok bench --json > pi4.json
      edgetok bench my_corpus.txt --seconds 3
    """
    import json

    from . import bench as b

    for f in files:
        open_input(f).close()
    load_encoding(encoding, None)  # a clear error where the models are missing
    out = Output()
    try:
        r = b.run(encoding, tuple(files), seconds, not no_compare,
                  lambda msg: to_stderr(msg) if not as_json else None)
    except b.BenchError as e:
        raise Failure(str(e)) from None
    out.write((json.dumps(r, indent=2) if as_json else b.render(r)) + "\n")
    out.flush()


def regex_options(p: Parser) -> None:
    p.add_argument("pattern", metavar="PATTERN")
    model_options(p)
    p.add_argument("--canonical", action="store_true",
                   help="Allow only tokens that can continue a canonical tokenization (what "
                   "encode would give); BPE models with a regex-free pretokenizer.")
    p.add_argument("--sample", type=at_least(0), default=0, metavar="N",
                   help="Also print N random strings of the pattern, each with its ids (encode's).")
    p.add_argument("--seed", type=integer, metavar="N", help="Seed for --sample (default: random).")
    p.add_argument("--json", dest="as_json", action="store_true", help="Print JSON.")


def regex_cmd(pattern: str, encoding: str | None, model: str | None, canonical: bool,
              sample: int, seed: int | None, as_json: bool) -> None:
    """Compile PATTERN into a token-level automaton for constrained decoding.

    PATTERN is a regular expression the whole text must match. Prints the automaton's size,
    compile time and memory, and with --sample N random strings of the pattern with their
    ids. A pattern that starts with '-' goes after `--`.

    Examples:
      edgetok regex '[0-9]{4}-[0-9]{2}-[0-9]{2}'
      edgetok regex '(yes|no|maybe)' --canonical --sample 5
      edgetok regex -- '-?[0-9]+'
    """
    import json
    import random

    enc = load_encoding(encoding, model)
    try:
        a = enc.regex_automaton(pattern, canonical=canonical)
    except ValueError as e:
        raise Failure(str(e)) from None
    rng = random.Random(seed)
    samples = []
    for _ in range(50 * sample):
        if len(samples) == sample:
            break
        walk = a.sample(rng, 256)
        if walk is not None:
            text = enc.decode(walk)
            samples.append({"text": text, "ids": enc.encode_ordinary(text), "walk": walk})
    d = {"pattern": pattern, "encoding": enc.name, "canonical": canonical,
         "dfa_states": a.dfa_states, "token_states": a.rows, "memory_bytes": a.memory,
         "compile_ms": {k: round(v * 1e3, 3) for k, v in a.compile_seconds.items()},
         "start_allowed": len(a.allowed_ids(a.start))}
    out = Output()
    if as_json:
        out.write(json.dumps({**d, "samples": samples}, ensure_ascii=False) + "\n")
    else:
        out.write(f"pattern:        {pattern}\n"
                  f"encoding:       {enc.name}{' (canonical)' if canonical else ''}\n"
                  f"states:         {a.dfa_states} byte DFA, {a.rows} at token boundaries\n"
                  f"memory:         {a.memory} bytes\n"
                  f"compile:        {d['compile_ms']['regex']:.2f} ms regex, "
                  f"{d['compile_ms']['tokens']:.2f} ms tokens\n"
                  f"start allows:   {d['start_allowed']} tokens\n")
        for smp in samples:
            out.write(f"{json.dumps(smp['text'], ensure_ascii=False)}\t"
                      f"{' '.join(map(str, smp['ids']))}\n")
    if sample and len(samples) < sample:
        to_stderr(f"edgetok: warning: {len(samples)} of {sample} samples found")
    out.flush()


# -- the command line: a small parser, built for the command that runs ---------------------
# (argparse cost about 25M instructions at every start in a bare venv: its import, gettext
# looking for translations and importing locale for each parser, regex compiles; this one
# imports nothing to parse, and textwrap only to show help)

COMMANDS: dict[str, tuple[str, Callable[[Parser], None], Callable[..., None]]] = {
    # name: (its arguments in the usage line, a function adding its options, the command)
    "encode": ("[FILE]", encode_options, encode),
    "decode": ("[FILE]", decode_options, decode),
    "count": ("[FILE ...]", count_options, count),
    "chunk": ("-n N [FILE]", chunk_options, chunk),
    "compile": ("VOCAB -o X.etok", compile_options, compile_),
    "info": ("", info_options, info),
    "bench": ("[FILE ...]", bench_options, bench),
    "regex": ("PATTERN", regex_options, regex_cmd),
}


def run(argv: list[str]) -> None:
    """Run the command that argv (the arguments after `edgetok`) names. A usage error ends
    with the command's usage and one error line, status 2; a Failure with one error line,
    status 1."""
    if not argv or argv[0] not in COMMANDS:
        top_level(argv)
    name, rest = argv[0], argv[1:]
    usage, add_options, command = COMMANDS[name]
    parser = Parser(f"edgetok {name}", f"edgetok {name} [options] {usage}".rstrip(),
                    cleandoc(command.__doc__ or ""))
    add_options(parser)
    args = parser.parse(rest)
    try:
        command(**args)
    except UsageError as e:
        parser.error(str(e))
    except Failure as e:
        e.show()
        sys.exit(1)


def top_level(argv: list[str]) -> NoReturn:
    """`edgetok` without a command: -h/--help, --version, or a usage error (no command, an
    unknown one, an option the command line does not have)."""
    names = "\n".join(f"  {name:<9}{summary(fn.__doc__)}" for name, (_, _, fn) in COMMANDS.items())
    parser = Parser("edgetok", "edgetok [-h] [--version] COMMAND [ARGS]...",
                    f"{ABOUT}\n\nCommands:\n{names}", EXAMPLES)
    parser.add_argument("--version", action="store_true", help="Show the version and exit.")
    first = argv[0] if argv else None
    if first is None:
        parser.print_help(sys.stderr)
        sys.exit(2)
    if first in ("-h", "--help"):
        parser.print_help(sys.stdout)
        sys.exit(0)
    if first == "--version":
        import edgetok

        print(f"edgetok, version {edgetok.__version__}")
        sys.exit(0)
    if first == "--":
        parser.error("the command comes first")
    if first.startswith("-"):
        parser.error(f"unrecognized arguments: {first}")
    parser.error(f"argument COMMAND: invalid choice: {first!r} (choose from "
                 f"{', '.join(map(repr, COMMANDS))})")


def cleandoc(doc: str) -> str:
    """A docstring without the indentation it has in the source (inspect.cleandoc's result;
    inspect itself costs milliseconds to import)."""
    first, _, rest = doc.expandtabs().partition("\n")
    lines = rest.split("\n")
    margin = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join([first.strip(), *(line[margin:].rstrip() for line in lines)]).strip()


def summary(doc: str | None) -> str:
    """A command's one-line summary: the first line of its docstring."""
    return (doc or "").strip().partition("\n")[0]


class Option:
    """One option or positional argument of a command (Parser.add_argument)."""

    def __init__(self, names: tuple[str, ...], dest: str, action: str,
                 type: Callable[[str], object] | None, choices: list[str] | None, default: object,
                 required: bool, metavar: str | None, help: str | None, nargs: str | None) -> None:
        self.names, self.dest, self.action, self.type = names, dest, action, type
        self.choices, self.default, self.required = choices, default, required
        self.metavar = metavar or (f"{{{','.join(choices)}}}" if choices else dest.upper())
        self.help, self.nargs = help, nargs

    def label(self) -> str:
        """How the help names it: "-f, --format {ids,json,tokens}", "--bos", "FILE"."""
        if not self.names:
            return self.metavar
        if self.action == "switch":
            return ", ".join(self.names)
        return ", ".join(self.names) + ("" if self.action == "store_true" else f" {self.metavar}")

    def value(self, text: str) -> object:
        """text as this option's value: a ValueError names what is wrong with it."""
        if self.choices is not None and text not in self.choices:
            raise ValueError(f"invalid choice: {text!r} (choose from "
                             f"{', '.join(map(repr, self.choices))})")
        return self.type(text) if self.type else text


class Parser:
    """The options of one command: argparse's add_argument for what the commands use (flags,
    values, repeatable values, --x/--no-x switches, choices, types, required options, one
    positional FILE / FILE ... / VOCAB / PATTERN), its help layout and its errors (usage and
    one line, status 2). Options may come before, between and after positionals; `--` ends
    them; --opt=value and -oVALUE work; names are never abbreviated."""

    def __init__(self, prog: str, usage: str, description: str, epilog: str | None = None):
        self.prog, self.usage, self.description, self.epilog = prog, usage, description, epilog
        self.options: list[Option] = []
        self.by_name: dict[str, Option] = {}
        self.positional: Option | None = None

    def add_argument(self, *names: str, dest: str | None = None, action: str = "store",
                     type: Callable[[str], object] | None = None, choices: list[str] | None = None,
                     default: object = None, required: bool = False, metavar: str | None = None,
                     help: str | None = None, nargs: str | None = None) -> None:
        if not names[0].startswith("-"):  # the positional
            self.positional = Option((), names[0], action, type, choices, default, required,
                                     metavar, help, nargs)
            return
        dest = dest or names[-1].lstrip("-").replace("-", "_")
        if action == "append" and default is None:
            default = []
        opt = Option(names, dest, action, type, choices, default, required, metavar, help, nargs)
        self.options.append(opt)
        for name in names:
            self.by_name[name] = opt
        if action == "switch":
            self.by_name["--no-" + names[0][2:]] = opt
            opt.names = (names[0], "--no-" + names[0][2:])

    def parse(self, args: list[str]) -> dict[str, object]:
        """The options' values by dest, and the positional's (-h prints the help and exits)."""
        got: dict[str, object] = {o.dest: list(o.default) if isinstance(o.default, list)
                                  else o.default for o in self.options}
        given: set[str] = set()
        words: list[str] = []
        it = iter(args)
        for arg in it:
            if arg == "--":
                words.extend(it)
            elif arg in ("-h", "--help"):
                self.print_help(sys.stdout)
                sys.exit(0)
            elif len(arg) < 2 or arg[0] != "-":
                words.append(arg)
            else:
                name, text = split_option(arg)
                opt = self.by_name.get(name)
                if opt is None:
                    self.error(f"unrecognized arguments: {arg}")
                assert opt is not None
                if opt.action in ("store_true", "switch"):
                    if text is not None:
                        self.error(f"argument {'/'.join(opt.names)}: takes no value "
                                   f"({text!r} given)")
                    got[opt.dest] = name == opt.names[0]  # (--no-x: False)
                else:
                    text = next(it, None) if text is None else text  # (whatever it looks like)
                    if text is None:
                        self.error(f"argument {'/'.join(opt.names)}: expected one argument")
                    got[opt.dest] = self.value(opt, text, got[opt.dest])
                given.add(opt.dest)
        missing = [o for o in self.options if o.required and o.dest not in given]
        if missing:
            self.error("the following arguments are required: " +
                       ", ".join("/".join(o.names) for o in missing))
        return {**got, **self.positionals(words)}

    def value(self, opt: Option, text: str, old: object) -> object:
        try:
            value = opt.value(text)
        except ValueError as e:
            self.error(f"argument {'/'.join(opt.names)}: {e}")
        return [*old, value] if isinstance(old, list) else value  # type: ignore[misc]

    def positionals(self, words: list[str]) -> dict[str, object]:
        p = self.positional
        if p is None:
            if words:
                self.error(f"unrecognized arguments: {' '.join(words)}")
            return {}
        if p.nargs == "*":
            return {p.dest: words}
        if len(words) > 1:
            self.error(f"unrecognized arguments: {' '.join(words[1:])}")
        if not words and p.nargs != "?":
            self.error(f"the following arguments are required: {p.metavar}")
        return {p.dest: words[0] if words else p.default}

    def error(self, message: str) -> NoReturn:
        if sys.stderr is not None:
            sys.stderr.write(f"usage: {self.usage}\n{self.prog}: error: {message}\n")
        sys.exit(2)

    def print_help(self, file: IO[str] | None) -> None:
        if file is not None:
            file.write(self.format_help())

    def format_help(self) -> str:
        """usage, the description, the positional, the options, the epilog: paragraphs wrapped
        to the terminal (100 columns at most), indented lines (examples) as written."""
        import textwrap

        width = help_width()
        rows = ([("positional arguments:", [self.positional])] if self.positional else []) + \
            [("options:", [Option(("-h", "--help"), "help", "store_true", None, None, None, False,
                                  None, "Show this help and exit.", None), *self.options])]
        col = min(32, 2 + max(len(o.label()) for _, opts in rows for o in opts) + 2)
        parts = [f"usage: {self.usage}", fill(self.description, width)]
        for title, opts in rows:
            lines = [title]
            for o in opts:
                text = (o.help or "") % {"default": o.default}
                wrapped = textwrap.wrap(text, width - col) or [""]
                label = f"  {o.label()}"
                if len(label) + 2 > col:
                    lines.append(label)
                    lines += [" " * col + w for w in wrapped]
                else:
                    lines.append(label.ljust(col) + wrapped[0])
                    lines += [" " * col + w for w in wrapped[1:]]
            parts.append("\n".join(line.rstrip() for line in lines))
        if self.epilog:
            parts.append(fill(self.epilog, width))
        return "\n\n".join(p for p in parts if p) + "\n"


def split_option(arg: str) -> tuple[str, str | None]:
    """An option word as its name and the value written in it, if any: --name=VALUE, -xVALUE,
    -x=VALUE."""
    if arg.startswith("--"):
        name, eq, text = arg.partition("=")
        return name, text if eq else None
    text = arg[3:] if arg[2:3] == "=" else arg[2:]
    return arg[:2], text or None


def fill(text: str, width: int) -> str:
    """Paragraphs wrapped to width; a paragraph with indented lines (examples) as written."""
    import textwrap

    return "\n\n".join(
        block if any(line.startswith(" ") for line in block.splitlines())
        else textwrap.fill(" ".join(block.split()), width)
        for block in text.split("\n\n"))


def help_width() -> int:
    """Columns for help text: $COLUMNS or the terminal's width, 80 without one, at most 100,
    less 2 (as argparse and shutil.get_terminal_size find it, without importing shutil)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore
        except (AttributeError, ValueError, OSError):
            columns = 80
    return min(columns or 80, 100) - 2


def at_least(least: int | float) -> Callable[[str], int | float]:
    """An option's type: a number of the type of `least`, not below it (a usage error names
    the option and the value)."""
    kind = type(least)

    def convert(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise ValueError(f"{text!r} is not {what}") from None
        if not value >= least:  # (NaN too)
            raise ValueError(f"{text} is less than {least}")
        return value
    return convert


def integer(text: str) -> int:
    """An option's type: any integer."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer") from None


def file_argument(p: Parser) -> None:
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="The input (default: stdin, also as -).")


def files_argument(p: Parser) -> None:
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="The inputs (default: stdin, also as -).")


class Interrupted(BaseException):
    """Ctrl-C (SIGINT): unwinds like KeyboardInterrupt (files are closed, temporary ones
    removed) up to main(), which then ends the process by SIGINT itself, quietly."""


def on_sigint(signum: int, frame: object) -> None:
    raise Interrupted


def main() -> None:
    """The `edgetok` command. Ends as Unix tools do: Ctrl-C ends it quietly by SIGINT (status
    130 in a shell), a closed pipe quietly by SIGPIPE (`edgetok encode big | head`), and an
    output that cannot be written with one error line and status 1."""
    try:  # signal's C module: the signal module wraps it in enums (enum, functools, collections)
        import _signal as signal
    except ImportError:
        import signal  # type: ignore[no-redef]

    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not when ignored)
        signal.signal(signal.SIGINT, on_sigint)
    code: int | str | None
    try:
        run(sys.argv[1:])
        code = 0
    except SystemExit as e:
        code = e.code
    except Interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        os._exit(130)  # (where the signal did not end the process)
    except OSError as e:  # an error no command expected: still one line
        to_stderr(f"edgetok: error: {e.strerror or e}")
        code = 1
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as e:
        if not code:
            to_stderr(f"edgetok: error: cannot write the output: {e.strerror or e}")
            code = 1
        if sys.stderr is not None:
            sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)  # what stdout holds cannot be written
    sys.exit(code)


if __name__ == "__main__":
    main()
