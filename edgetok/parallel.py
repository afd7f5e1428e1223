"""Work across cores: one shared pool of cores - 1 threads (the calling thread always takes a
part: pmap), dropped in a forked child (its threads do not survive fork) and made again on
demand; contiguous slices for the batch paths that go document by document (map_batch,
map_slices). Batch jobs and single large texts cut where no context can move a piece boundary
(et_shard_cut) are run by Model.batch / Model.parallel (_ffi.py) with cores - 1 helper threads
of their own, which wait for jobs without the GIL (helpers, _ids.job_serve)."""
from __future__ import annotations

import _thread  # (threading imports functools and collections: start-up)
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings
    from typing import Callable, Sequence, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

# less work than this runs on the calling thread: in map_batch / map_slices, a pool thread costs
# ~75 us to start and stop; a batch job's helpers (waiting in C) ~25 us (4 KB documents, 2
# threads, count_batch of 32K / 70K / 130K characters: 0.97x / 1.25x / 1.51x one thread's
# speed; helpers in the pool: 0.70x / 0.95x / 1.18x)
PARALLEL_MIN_BYTES = 1 << 17
JOB_MIN_CHARS = 1 << 16
SHARD_MIN_BYTES = 1 << 18     # a single text shorter than twice this is not cut (Model.parallel)

_pool = None
_pool_lock = _thread.allocate_lock()
helpers_started = False


def _forget_pool() -> None:
    global _pool, helpers_started
    _pool = None
    helpers_started = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def pool():  # type: ignore[no-untyped-def]
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            # cores - 1: the calling thread always takes a part (pmap, Model.batch). And so the
            # same threads help every batch, their workspaces' caches warm: with a thread more,
            # 2 threads ran count_batch of 4 KB man pages in 20 languages at 1.74x one thread's
            # speed, 1.95x with one helper thread
            _pool = ThreadPoolExecutor(max(cores() - 1, 1), thread_name_prefix="edgetok")
        return _pool


def helpers() -> None:
    """Starts the batch jobs' helper threads, once: cores() - 1 of them, one at least (the
    calling thread always takes a part), the same ones for every job, their workspaces'
    caches warm."""
    global helpers_started
    with _pool_lock:
        if not helpers_started:
            helpers_started = True
            for _ in range(max(cores() - 1, 1)):
                try:
                    _thread.start_new_thread(_serve, ())
                except Exception:  # (no more threads: callers do their jobs' work alone)
                    break


def _serve() -> None:
    """A helper's loop: the jobs of the model it served last run in C (job_serve); a job of
    another model, or one that stops for a larger workspace, goes on here."""
    from ._ids import job_cancel, job_serve

    key, ws, slots, mem = 0, 0, 0, None  # noqa: F841 (mem: holds the workspace at ws)
    while True:
        try:
            job, model, errors, total, k, at, need = job_serve(key, ws, slots)
        except BaseException:  # (no memory: job_serve gave its chunk up)
            continue
        try:
            model._run_job(job, False, (k, at, need, total) if k >= 0 else None, errors)
        except BaseException:  # (in errors, for the job's caller to raise; or no memory)
            job_cancel(job, k, at)  # (again: where it came before _run_job's own)
        try:
            s = model._scratch
            key, ws, slots, mem = model._key, s.ws_addr, s.ws_slots, s.ws_mem
        except BaseException:
            key, ws, slots, mem = 0, 0, 0, None
        del job, model, errors


def pmap(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """[fn(x) for x in items]: items[1:] on the pool's threads while the calling thread does
    items[0]."""
    futures = [pool().submit(fn, x) for x in items[1:]]
    try:
        out = [fn(items[0])] if items else []
    except BaseException:
        for f in futures:  # (none left running)
            f.cancel() or f.exception()
        raise
    return out + [f.result() for f in futures]


def _slices(sizes: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """Contiguous index ranges with about equal total size."""
    total = sum(sizes)
    out, start, acc = [], 0, 0
    for i, s in enumerate(sizes):
        acc += s
        if acc * parts >= total * (len(out) + 1) and len(out) < parts - 1:
            out.append((start, i + 1))
            start = i + 1
    out.append((start, len(sizes)))
    return [r for r in out if r[0] < r[1]]


def map_batch(fn: Callable[[T], R], items: Sequence[T], sizes: Sequence[int],
              num_threads: int) -> list[R]:
    """[fn(x) for x in items], spread over up to num_threads threads when there is enough work."""
    threads = min(num_threads, cores(), len(items))
    if threads <= 1 or sum(sizes) < PARALLEL_MIN_BYTES:
        return [fn(x) for x in items]
    out: list[R] = []
    for part in pmap(lambda ab: [fn(x) for x in items[ab[0]:ab[1]]], _slices(sizes, threads)):
        out += part
    return out


def map_slices(fn: Callable[[Sequence[T]], list[R]], items: Sequence[T], sizes: Sequence[int],
               num_threads: int) -> list[R]:
    """fn(slice) over contiguous slices of items, one per thread, joined in order (fn maps a
    slice to one result per item)."""
    threads = min(num_threads, cores(), len(items))
    if threads <= 1 or sum(sizes) < PARALLEL_MIN_BYTES:
        return fn(items)
    out: list[R] = []
    for part in pmap(lambda ab: fn(items[ab[0]:ab[1]]), _slices(sizes, threads)):
        out += part
    return out


CHUNK_CHARS = 1 << 16  # a batch's unit of work (Model.batch): documents of about this many
# characters, or less: at least 8 chunks a thread, so that all end together
