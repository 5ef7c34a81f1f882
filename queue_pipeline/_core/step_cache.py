"""Steps of a served pipeline run through TF's cached callables instead of ``Session.run``.

NOTE [ Cached step callables ]
A legacy training loop fetches the same batch tensors every step:
``sess.run(batch)`` or ``sess.run([images, labels])``. Each ``Session.run``
rebuilds TF's fetch handler in Python (resolving every fetch to a graph
element, de-duplicating, mapping the results back) and has the C++ session
look the step's executors up by the fetch names; measured on 2 cores that is
about as much CPU as the tf.data iterator's own work for a batch of 128
decoded CSV lines, and it is the main gap between a batch read with
``sess.run`` and the same batch read eagerly. TF's ``make_callable`` saves
the Python half only (it still calls ``TF_SessionRun``, which looks the
executors up by name every step); the C++ session's own callable
(``MakeCallable``, the ``CallableOptions`` API) resolves the step once. So
for a graph whose steps are marked cached (the dataset engine marks the
graphs it serves), the session hook (NOTE [ The session hook ] in
``_diagnostics/session_hook.py``) runs a step with no ``feed_dict``,
``options`` or ``run_metadata`` through such a callable, made once per
session and fetch signature, its results put back into the fetches'
structure by TF's own fetch handler. Measured on 2 cores against TF's
``make_callable`` (5 fresh processes each, whole epochs): W2's engine 0.91x
-> 1.02x and W3's 0.97x -> 1.04x hand-written tf.data iterated eagerly.

What it returns and raises is what ``Session.run`` would: a step builds its
results with the same fetch handler (lists stay lists, dicts dicts, an
Operation gives None), runs under the session's own options
(``operation_timeout_in_ms`` included), and its op errors pass through the
session's own error handling (the failing ``op`` set, node names interpolated). The
signature is the fetches' structure and the identity of each fetched
Tensor or Operation; only flat structures are cached (one Tensor or
Operation, or a list, tuple or ``str``-keyed dict of them), and the entry
holds the fetched objects, so an identity is never reused by another object
while its entry lives. Anything else (names as strings, nested structures,
feeds, a closed session, a signature TF refuses) runs through ``Session.run``
unchanged. At most :data:`MAX_ENTRIES` signatures are cached per session;
further ones run uncached.

NOTE [ Served batches fetched in the caller's thread ]
A step that fetches nothing but served batches (outputs of the engine's own
``IteratorGetNext`` ops, `inline` below) runs one asynchronous op: the
iterator hands over a batch its own threads already made. ``Session.run``
still dispatches that op to the session's inter-op thread pool and waits for
it, a thread hand-off per step whose pool threads then spin idle on the
cores the pipeline decodes on. TF's ``RunOptions.inter_op_thread_pool = -1``
runs such a step in the calling thread, which TF recommends for exactly
these small graphs; results, errors and ``operation_timeout_in_ms`` are the
same (measured on 2 cores: W2's steady epoch 201 -> 144 ms median). Steps
that fetch anything else (a training op, a summary, a batch with the loss)
keep the pool: their graph has parallel work.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.client import session as tf_session

__all__ = ["MAX_ENTRIES", "cached_callable", "entries", "signature"]

MAX_ENTRIES = 64
_LOCK = threading.Lock()
# the session's attribute holding {signature: (the fetched objects, the step)}:
# a step refers to its session (TF's callable does), so a table keyed by weak
# references to sessions would keep every session alive; on the session the
# two are one cycle, collected with it
_ENTRIES = "_queue_pipeline_steps"
_GRAPH_ELEMENTS = (tf.Tensor, tf.Operation)
# `RunOptions.inter_op_thread_pool` of a step run in the calling thread: NOTE
# [ Served batches fetched in the caller's thread ]
_CALLER_THREAD = -1


def signature(fetches) -> tuple | None:
    """The cache key of `fetches` and the objects it names, or None if not cacheable."""
    if isinstance(fetches, _GRAPH_ELEMENTS):
        return (None, id(fetches)), (fetches,)
    if isinstance(fetches, (list, tuple)):
        leaves = tuple(fetches)
        kind: Any = type(fetches)
    elif type(fetches) is dict and all(type(k) is str for k in fetches):  # noqa: E721 - exact
        leaves = tuple(fetches.values())
        kind = (dict, tuple(fetches))
    else:
        return None
    for leaf in leaves:
        if not isinstance(leaf, _GRAPH_ELEMENTS):
            return None
    return (kind, tuple(map(id, leaves))), leaves


def cached_callable(
    sess, fetches, inline: frozenset | set = frozenset()
) -> Callable[[], Any] | None:
    """The callable that runs `fetches` in `sess` (made once), or None to run them uncached.

    Args:
      sess: the session (a ``tf.compat.v1.Session`` or another ``BaseSession``).
      fetches: what the step fetches, as given to ``Session.run``.
      inline: names of ops whose outputs, fetched alone, run in the calling
        thread (NOTE [ Served batches fetched in the caller's thread ]).
    """
    if getattr(sess, "_closed", True):
        return None
    found = signature(fetches)
    if found is None:
        return None
    key, leaves = found
    entry = entries(sess).get(key)
    if entry is not None:
        return entry[1]
    graph = getattr(sess, "graph", None)
    if any(leaf.graph is not graph for leaf in leaves):
        return None  # Session.run raises its own error for another graph's tensor
    with _LOCK:
        try:
            table = vars(sess).setdefault(_ENTRIES, {})
        except TypeError:  # a session type without attributes of its own
            return None
        entry = table.get(key)
        if entry is not None:
            return entry[1]
        if len(table) >= MAX_ENTRIES:
            return None
        in_caller = bool(inline) and all(
            isinstance(leaf, tf.Tensor) and leaf.op.name in inline for leaf in leaves
        )
        try:
            call = _with_session_errors(sess, _native(sess, fetches, in_caller))
        except Exception:  # noqa: BLE001 - Session.run raises TF's own error for these fetches
            return None
        table[key] = (leaves, call)
        return call


def entries(sess) -> dict:
    """`sess`'s cached steps, ``{signature: (the fetched objects, the step)}`` (empty if none)."""
    return getattr(sess, "__dict__", {}).get(_ENTRIES, {})


def _native(sess, fetches, in_caller: bool) -> Callable[[], Any]:
    """A step run by one of the C++ session's own callables, its results built as ``run``'s.

    TF's ``make_callable`` still runs each call through ``TF_SessionRun``
    (the step's executors looked up by its fetch names, and with
    ``accept_options`` its ``RunOptions`` serialized, every call); the C++
    session's ``MakeCallable`` resolves the step once. Its results are the
    fetch order's values, put back into the fetches' structure by TF's own
    fetch handler (the one ``Session.run`` uses).

    Raises:
      Whatever TF raises for a signature it refuses, or AttributeError for a
      session without the ``CallableOptions`` API: the caller then runs the
      step uncached.
    """
    handler = tf_session._FetchHandler(sess.graph, fetches, {})  # noqa: SLF001
    options = config_pb2.CallableOptions(
        fetch=[t.name for t in handler.fetches()], target=[op.name for op in handler.targets()]
    )
    if in_caller:
        options.run_options.inter_op_thread_pool = _CALLER_THREAD
    run = sess._make_callable_from_options(options)  # noqa: SLF001
    build = handler.build_results
    return lambda: build(sess, run())


def _with_session_errors(sess, call: Callable[[], Any]) -> Callable[[], Any]:
    """`call`, raising op errors as ``Session.run`` does.

    A callable raises TF's error as the C++ session made it: no ``op`` and
    the message's ``{{node X}}`` not interpolated. ``Session.run`` passes its
    call through the session's ``_do_call``, which sets both; so does this.
    """
    do_call = getattr(sess, "_do_call", None)
    if do_call is None:
        return call
    return lambda: do_call(call)
