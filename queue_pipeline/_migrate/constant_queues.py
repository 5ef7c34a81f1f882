"""An own queue filled from arrays the graph holds: a source of records, endless.

NOTE [ A queue filled from arrays in memory ]
A common tutorial shape fills the program's own queue from NumPy arrays (or a
Python list, or ``tf.constant``) with no reader at all::

    data = 10 * np.random.randn(N, 4) + 1           # made once, in Python
    queue = tf.FIFOQueue(50, [tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue_many([data, target])
    qr = tf.train.QueueRunner(queue, [enqueue_op] * NUM_THREADS)
    x, y = queue.dequeue()                           # or dequeue_many(B)

The arrays are graph constants, and the ops between them and the enqueue are
stateless, so every run of the enqueue op puts the same values in: its
records are that value repeated forever. ``enqueue_many([a, b])`` is
``Dataset.from_tensor_slices((a, b)).repeat()`` (its first axis split),
``enqueue([a, b])`` ``Dataset.from_tensors((a, b)).repeat()``; the ops on the
arrays before the enqueue are computed on the whole arrays as before (they
stay plain statements the Dataset reads), and the dequeue is the own queue's
(NOTE [ Migrating the function's own queue ]).

What TF delivers (probed on TF 2.21, both modes, 8 runner threads, queue
capacities 5, 50 and 1000 below and above the array's length): N threads of
ONE ``enqueue_many`` op hand out the array repeated, in order, every run. A
FIFO queue serves its waiting enqueue attempts in the order they came and
finishes one (all its rows) before the next starts, so each
``enqueue_many`` is atomic in the FIFO order, and every attempt enqueues the
same rows. The FIFO stream is therefore determined, and the proof compares
it in order (``compare`` counts such a runner deterministic). Several
different enqueue ops into one queue interleave in an order the threads
decide (probed: each ``enqueue_many``'s rows stay together, but which op's
rows come next, and how many of each a prefix holds, varies from run to
run; 11 orders in 30 runs of two ops): each op's Dataset is drawn from with
``Dataset.sample_from_datasets``, and the proof compares multisets, each
op run ``--epochs`` times on the legacy side (a counter of its own), so
both sides hold the same records. A RandomShuffleQueue's shuffle is written
at the dequeue, after the records of all its enqueue ops.

The stream never ends, so the proof bounds it on both sides alike
(NOTE [ Proving a random, endless input pipeline ]): the migrated side's
``repeat()`` runs ``--epochs`` times, and the legacy runner's enqueue op is
run ``--epochs`` times in all (:func:`bounded_constant_runners`: the runner
is given the same enqueue behind a ``limit_epochs`` counter, shared by its
threads), so both end after ``epochs`` passes over the arrays; ``--batches``
may stop an ordered FIFO comparison sooner. The legacy queue holds at most
its capacity, and each enqueue attempt the constant it reads: the memory is
bounded by the arrays, not by the stream.

Refused at the user's line, with the fix: an enqueue fed from a placeholder
(NOTE [ A queue the program feeds from Python ]) and one computed from a
stateful op such as ``tf.random_normal`` (each run enqueues other values, so
the records cannot be made again as a Dataset of the same arrays).
"""

from __future__ import annotations

import ast

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._migrate.program_files import OWN_DIR
from queue_pipeline._migrate.python_filled_queues import made_at

__all__ = [
    "bounded_constant_runners",
    "constant_filled",
    "drawn_queue",
    "filled_by_hand",
    "is_constant_queue",
    "typed_values",
]

_API = "queue-pipeline migrate"
_TF_CORE = ("ops", "framework", "util")


def _runner_enqueues(graph: tf.Graph) -> dict[tf.Operation, list[tf.Operation]]:
    """Each queue a runner of `graph` fills -> its runners' distinct enqueue ops."""
    found: dict[tf.Operation, list[tf.Operation]] = {}
    for qr in graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS):
        queue_op = graph_facts.queue_op(getattr(qr, "queue", None))
        if queue_op is None:
            continue
        ops = found.setdefault(queue_op, [])
        ops += [op for op in graph_facts.enqueue_ops([qr]) if all(op is not o for o in ops)]
    return found


def filled_by_hand(node) -> bool:
    """Whether `node`, a producer read from the graph, is a queue the program fills itself.

    ``queue = tf.FIFOQueue(...)``; ``queue.enqueue_many([rows])`` run by a
    QueueRunner has the graph of an ``input_producer`` (NOTE [ Stages read
    from the graph ]). Made by the program's own lines (no producer of TF's
    or of queue_pipeline's built it) and filled from no other stage (arrays,
    a placeholder, a draw), it is the program's own queue: NOTE [ A queue
    filled from arrays in memory ].
    """
    queue_op = graph_facts.queue_op(node.fills) if node.fills is not None else None
    if queue_op is None:
        return False
    # the innermost frame outside TF's ops: the code that made the queue
    maker = next(
        (
            f.filename
            for f in reversed(list(queue_op.traceback or ()))
            if not any(f"tensorflow/python/{d}/" in f.filename for d in _TF_CORE)
        ),
        "",
    )
    if maker.endswith("training/input.py") or maker.startswith(OWN_DIR):
        return False
    enqueues = _runner_enqueues(queue_op.graph).get(queue_op, [])
    return bool(enqueues) and all(graph_facts.enqueued_from(e)[0] != "stage" for e in enqueues)


def is_constant_queue(queue_op: tf.Operation, enqueues: list[tf.Operation]) -> bool:
    """Whether every one of `enqueues` (into `queue_op`) enqueues values made of constants."""
    return bool(enqueues) and all(graph_facts.enqueued_from(e)[0] == "constant" for e in enqueues)


def constant_filled(graph: tf.Graph, built=frozenset()) -> dict[tf.Operation, list[tf.Operation]]:
    """The queues of `graph` that runners fill with values made of constants only.

    NOTE [ A queue filled from arrays in memory ]. `built`: the names of the
    queues a recorded stage builds (a producer's queue of a constant list of
    file names is that producer's, not an own queue).
    """
    return {
        q: ops
        for q, ops in _runner_enqueues(graph).items()
        if q.name not in built and is_constant_queue(q, ops)
    }


def drawn_queue(graph: tf.Graph, real: str, what: str) -> str:
    """The refusal for a queue a runner fills from a stateful op (a random draw), or "".

    Args:
      graph: the graph the traced code built.
      real: the user's file.
      what: how the traced code is named in the message (``inputs()``).
    """
    for queue_op, enqueues in _runner_enqueues(graph).items():
        for enqueue in enqueues:
            why, op = graph_facts.enqueued_from(enqueue)
            if why != "stateful" or op is None:
                continue
            return (
                f"{_API}: {made_at(op, real)}: {what} reads a queue (`{queue_op.name}`) that a "
                f"QueueRunner fills from `{op.name}`, a {op.type} op that gives other values "
                "each time the enqueue runs and reads no file: a Dataset cannot make the "
                "same records again, so no proof is possible; migrate does not rewrite it. "
                "Fix: draw the data once in NumPy (`data = 10 * np.random.randn(N, 4) + 1`) "
                "and enqueue that array, which migrates to "
                "Dataset.from_tensor_slices(data).repeat(); or write the draw in a "
                "Dataset.map over from_tensors(0).repeat() by hand."
            )
    return ""


def bounded_constant_runners(graph: tf.Graph, epochs: int) -> int:
    """Bounds the runners of `graph`'s constant-filled queues to `epochs` runs of their op.

    Each such QueueRunner in the ``queue_runners`` collection is replaced by
    one of as many threads whose enqueue op is the same enqueue behind a
    ``limit_epochs`` counter its threads share: after `epochs` runs in all the
    counter raises OutOfRange, the runner closes the queue, and the dequeues
    end once it is empty (NOTE [ A queue filled from arrays in memory ]).

    Returns:
      How many runners were bounded.
    """
    from queue_pipeline import producers  # noqa: PLC0415 - the one epoch counter
    from queue_pipeline.runner import QueueRunner  # noqa: PLC0415

    filled = constant_filled(graph)
    if not filled:
        return 0
    runners = graph.get_collection_ref(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
    bounded = 0
    with graph.as_default():
        for i, qr in enumerate(list(runners)):
            queue = getattr(qr, "queue", None)
            queue_op = graph_facts.queue_op(queue)
            if queue_op not in filled:
                continue
            made: dict[str, tf.Operation] = {}
            ops = []
            for op in qr.enqueue_ops:
                if op.name not in made:
                    made[op.name] = _bounded_enqueue(queue, op, epochs, producers)
                ops.append(made[op.name])
            runners[i] = QueueRunner(queue, ops)
            bounded += 1
    return bounded


def _bounded_enqueue(queue, op: tf.Operation, epochs: int, producers) -> tf.Operation:
    """`op` again, its values read after a counter that allows `epochs` runs."""
    with tf.name_scope("bounded_enqueue"):
        count = producers._limit_epochs(  # noqa: SLF001 - the package's own epoch counter
            tf.constant(0), epochs, "count", "enqueue"
        )
        with tf.control_dependencies([count]):
            values = [tf.identity(t) for t in op.inputs[1:]]
        if op.type.startswith("QueueEnqueueMany"):
            return queue.enqueue_many(values)
        return queue.enqueue(values)


def typed_values(element: list[str], dtypes, fn) -> list[str]:
    """The enqueued values' source text, each held as the queue's dtype.

    A queue converts what it is given to its dtypes (``np.arange(n) % 2``, an
    int64 array, into a ``tf.int32`` queue); a Dataset keeps the array's own
    dtype. A value whose own dtype differs (a name the run left holding an
    array or a Python value, or a literal) is written ``tf.constant(value,
    tf.int32)``; tensors already have the queue's dtype (the enqueue accepts
    no other).
    """
    if not dtypes or len(dtypes) != len(element):
        return list(element)
    values = dict(vars(fn.rw.trace.module))  # a script's arrays are its module's names
    values.update(fn.call.local_values if fn.call is not None else {})
    out = []
    for text, dtype in zip(element, dtypes):
        value = values.get(text) if text.isidentifier() else _literal(text)
        if value is None or isinstance(value, (tf.Tensor, tf.Variable, tf.SparseTensor)):
            out.append(text)
            continue
        try:
            with tf.Graph().as_default():  # nothing added to the user's graph
                own = tf.convert_to_tensor(value).dtype
        except (TypeError, ValueError):
            own = None
        out.append(text if own == dtype else f"tf.constant({text}, tf.{dtype.name})")
    return out


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
