"""The dataset engine: each legacy batching call served by a tf.data iterator in the user's graph.

Under ``queue_pipeline.engine("dataset")`` (or ``QUEUE_PIPELINE_ENGINE=dataset``)
every batching function (``batch``, ``shuffle_batch``, the joins, ``maybe_*``)
first builds its faithful queue graph, which records its plan node, then
:func:`serve` rebuilds the pipeline behind the call with the rebuilder of
:mod:`queue_pipeline.rebuild`, inside the same graph, and returns the
``get_next()`` of a one-shot iterator over it, in the caller's structure and
with TF 1.x's static shapes. A pipeline that cannot be rebuilt keeps its
faithful queue graph (the *fallback*), and the reason is logged once.

NOTE [ The dataset engine ]
What a legacy program sees, and why:

* **The returned tensors** are the components of ``IteratorGetNext`` of a
  one-shot iterator (``tf.compat.v1.data.make_one_shot_iterator``), packed
  like the faithful call's result (list, dict or bare tensor; SparseTensors
  stay SparseTensors), with the faithful result's static shapes merged in,
  under TF's names (NOTE [ TF's names for served batches ]).
  A one-shot iterator needs no initializer, so plain ``Session`` loops,
  ``MonitoredTrainingSession`` and ``Supervisor`` work unchanged, and each
  new Session starts the input from the beginning, as a queue pipeline
  whose local variables are re-initialized does. It cannot capture stateful
  resources, and a rebuilt pipeline never does (the rebuilder refuses lookup
  tables and turns the variables it reads into constants); should it fail
  anyway, the call falls back to the queue engine.
* **End of input** is ``OutOfRangeError`` from ``get_next`` (``num_epochs``
  is handled by the Dataset; the faithful ``epochs`` local variables still
  exist, so ``local_variables_initializer()`` works and changes nothing).
* **Queue runners.** The faithful runners of the stages the Dataset replaces
  are removed from the ``"queue_runners"`` collection, so no thread fills a
  queue nobody reads; a runner stays when a consumer outside the rebuilt
  pipeline also takes from its queue, or when anything outside it is
  computed from what that consumer delivers (im2txt's image summary of one
  preprocessing thread's dequeue, which Supervisor's summary thread runs),
  and so does every runner upstream of a runner that stays (its reader's
  filename queue): no queue the program can still read is left unfilled.
  Instead, one :class:`runners.ServedRunner`
  per call stands in the collection: its ``create_threads`` returns ``[]``,
  so ``start_queue_runners``, ``MonitoredTrainingSession`` and
  ``Supervisor`` start nothing and do not warn about an empty collection. It
  exports to a meta graph as a runner with no enqueue op (no thread). A
  later call that falls back and needs a removed runner (a producer queue
  shared with it) puts that runner back.
* **Fill summaries** of the replaced stages (the batching queue's, the
  producers') keep TF's tags (``batch/fraction_of_32_full``, ...) in the
  ``SUMMARIES`` collection; their value is the constant 1.0: there is no
  queue to fill, tf.data's buffers are autotuned, and the unused faithful
  queue's 0.0 would read as a starved input.
* **Determinism.** When the pipeline is seeded (a graph-level seed, or a
  ``seed`` on a producer or batcher upstream) the Dataset runs with
  ``tf.data.Options().deterministic = True`` and the per-record random ops
  become stateless, keyed by the record's position, in a parallel ``map``
  (NOTE [ Stateless randomness keyed by the record ] in
  ``_engine/stateless.py``); a region with another stateful op runs in a
  sequential ``map``. Either way the order and the random values are the
  same on every run. Without a seed,
  ``num_threads > 1`` leaves the order free, as TF 1.x's threads did.
* **Checkpoints.** The iterator's state is a saveable object in the
  ``SAVEABLE_OBJECTS`` collection
  (``tf.compat.v1.data.experimental.make_saveable_from_iterator``), so a
  default ``tf.compat.v1.train.Saver()`` (and ``MonitoredTrainingSession``'s)
  saves and restores the input position, shuffle buffers included, in the
  same or a rebuilt graph; a checkpoint without it (trained natively or on
  queues) still restores, from the start of the input (NOTE [ Checkpoints
  without an input position ] in ``_engine/input_position.py``). The state of
  per-record random ops is not saved (external state is ignored): after a
  restore the same records come, in the same order; in a seeded pipeline
  their distortions are keyed by the position and come back as they were,
  otherwise they start a fresh stream.
* **Vectorized decoding.** When :mod:`queue_pipeline._engine.vectorize` is present
  and the per-record region feeding a batching call has a batch form, the
  raw records are shuffled and batched first and the region runs once per
  batch (see :class:`engine_rebuilder.EngineRebuilder`; in an unseeded
  pipeline per-record random ops draw once per batch, NOTE [ Vectorizing a
  region ]); otherwise each record is decoded by
  a parallel ``map`` before batching. Which path each call took is logged
  once (INFO). The batch form runs as the batching twin's ``decode``
  (``batch -> map(decode) -> prefetch``, the hand-written shape); a
  one-thread ``batch`` keeps its order (the map is ordered). Where oneDNN is
  on, a decoder's cast of bytes to float32 after a transpose runs before it
  (bitwise the same; NOTE [ Widening casts before transposes ] in
  ``vectorize/reorder.py``).
* **Cached steps.** Plain ``sess.run`` steps of a served graph run through
  callables made once per fetch signature (NOTE [ Cached step callables ] in
  ``_core/step_cache.py``): same results and errors, less per-step Python.
* **Large preloaded arrays** (``slice_input_producer`` over constants of
  16 MiB or more): fed to the iterator when the input starts, and kept out
  of the session's graph; see NOTE [ Large preloaded arrays ].
* **Known difference:** in a Session, Grappler's constant folding turns a
  float division by a constant (after a cast: ``tf.cast(image, tf.float32)
  / 255.0``) into a multiplication by its reciprocal, so TF's own queues
  deliver ``x * (1 / 255)``; in tf.data's map functions it stays a true
  division, and some values differ in the last bit (strict xfail in
  ``tests/test_engine_programs.py``). ``* (1.0 / 255)`` is the same on both.
* **The program's own queues** (no batching call of ours) are filled from
  tf.data when the runners start: NOTE [ Queues filled from tf.data ] in
  ``_engine/bridge.py``.
* **Per-record counters** (``variable.count_up_to(n)`` before a batching
  call) need the variable's value when the input starts: the call keeps its
  queue, which is filled from tf.data when the runners start (NOTE
  [ Per-record counters ] in ``_engine/bridge.py``).
* **A reader's value fetched directly** (no queue but its producer's) is
  read from tf.data step by step: NOTE [ Reader values fetched directly ]
  in ``_engine/direct_reads.py``.
* **Not covered:** the components of a batch holding a
  SparseTensor keep the faithful graph's names (``"batch:0"`` reads the
  unused queue); variables the per-record ops read need a Session at build
  time and fall back.

NOTE [ TF's names for served batches ]
Programs fetch batches by name (``graph.get_tensor_by_name("my_batch:1")``,
signature maps, tests of names), and TF names a dense batch's tensors after
the call: its dequeue op is the scope's name, ``my_batch:K``. Under the
dataset engine the faithful build names its dequeue ``my_batch/faithful_dequeue``
and leaves that name free; :func:`serve` then builds the iterator's
``IteratorGetNext`` under it, with the faithful outputs' static shapes as its
``output_shapes`` (TF checks each element against them at run time), so the
served batch is ``my_batch:K`` and no other tensor has that name. A call that
falls back returns the faithful outputs through one ``IdentityN`` of that
name, so it too is fetched as ``my_batch:K``. A batch holding a SparseTensor
keeps the faithful names (its components come from the sparse restore, not
from one op).

NOTE [ Variables read when the input starts ]
A legacy pipeline reads its variables when it runs: the classic
``fully_connected_preloaded_var`` builds ``slice_input_producer`` over
variables created with ``collections=[]`` whose initializers are run with a
``feed_dict`` after the graph is built and before ``start_queue_runners``.
The engine builds its Dataset when the batching call is made, so it cannot
read them then. Its rebuilder lifts variable reads as reads in the legacy
graph (``_lift.lift(capture=True)``): the Dataset captures the read tensors
(``from_tensor_slices`` of a variable, or a per-record op reading one), and
such a Dataset gets an initializable iterator, which the call's stand-in
runner initializes when ``start_queue_runners`` (or MonitoredTrainingSession,
or Supervisor) starts it, once per session: the variables are read then, as
the faithful runners would read them. Variables that change while the input
runs are refused as in ``to_dataset`` (the call falls back). A pipeline
reading no variable (and no large preloaded array) keeps its one-shot
iterator, which needs no start.

NOTE [ Large preloaded arrays ]
A Session optimizes (grappler) and copies every subgraph it runs for the
first time, constants included: a 188 MB ``tf.constant`` behind a Dataset
costs 5 to 18 seconds before the first batch on 2 cores (TF's own queue
pipelines pay it too, in their runner's first run). So ``slice_input_producer``
over constants of ``LARGE_ROWS_BYTES`` or more is rebuilt without a second
copy in the graph: the Dataset produces the row *indices* (the
``range_input_producer`` twin, with the same ``num_epochs``, ``shuffle`` and
``seed``, hence the same order as the slice twin) and gathers the rows
(``tf.gather``, in TF's threads) from placeholders of the arrays, which the
call's stand-in runner feeds to the iterator's initializer when the queue
runners start, once per session (NOTE [ Variables read when the input
starts ]; a checkpoint's input position is restored after that start). When
the batching call takes exactly those rows (``batch`` or ``shuffle_batch``,
one list, no per-example option), the batching twin runs on the indices
instead (the same shuffle buffer, seed and batches: neither looks at what it
moves) and each batch of rows is gathered once, in parallel, as the call's
``decode``: no row is split out and batched again. The iterator's saved
state is its position and buffers, not the arrays. The arrays are aligned
for TF's allocator when the pipeline is built, so each feed uses them in
place (an unaligned 188 MB array is copied at every start: 100-230 ms), and
tf.data's default graph rewrites are off for such a Dataset (they cost
60-120 ms per start with 188 MB captured; the pipeline is already the
rewritten shape: batch, parallel map, prefetch). The legacy graph's own
constant is then kept out of the session's graph (NOTE [ Constants kept out
of the session's graph ] in ``_core/held_constants.py``): a Session would
copy and optimize it for every new fetch signature (1.2-1.6 s for the first
run of W4's 188 MB, 0.3-0.4 s for each new signature after, on 2 cores),
which an eager ``from_tensor_slices`` does not pay. Such a pipeline is not
read through tf.data service (its arrays are fed in the trainer's process),
and a meta graph exported from it holds neither the arrays nor what feeds
them.
"""

from __future__ import annotations

import importlib
import logging
import threading
import weakref

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._diagnostics import session_hook
from queue_pipeline._engine import graph_edits, runners, service
from queue_pipeline._engine import input_position as _input_position
from queue_pipeline._engine import rebuilder as engine_rebuilder
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core import held_constants
from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import QUEUE_RUNNERS, logger
from queue_pipeline.errors import NotRebuildableError

__all__ = ["is_seeded", "log_once", "serve"]

_LOCK = threading.Lock()
# graph -> keys of the messages already logged for it ("once" per pipeline).
_LOGGED: "weakref.WeakKeyDictionary[tf.Graph, set]" = weakref.WeakKeyDictionary()


def serve(node: plan.PlanNode, result, *, queue, scope: str, tf_name: str | None = None):
    """Serves a batching call from a tf.data iterator; see NOTE [ The dataset engine ].

    Args:
      node: the plan node the faithful build just recorded.
      result: the faithful result (the caller's structure).
      queue: the faithful batching queue.
      scope: the call's name scope (e.g. ``"shuffle_batch/"``).
      tf_name: the name (a scope, ``"my_batch/"``) TF gives the call's dense
        outputs, left free by the faithful build for the outputs returned;
        None when the faithful outputs hold it (a sparse batch).

    Returns:
      The iterator's ``get_next()`` in `result`'s structure, or `result`
      itself when the pipeline cannot be rebuilt (logged once, as a warning).
    """
    graph = tf.compat.v1.get_default_graph()
    api = node.kind
    where = f"{api} '{scope.rstrip('/')}'"
    leaves = tf.nest.flatten(result)
    ops_before = len(graph.get_operations())
    functions_before = set(graph._functions)  # noqa: SLF001 - to tell the rebuild's functions
    try:
        served, paths = _build(graph, node, leaves, scope, where, tf_name)
    except service.ServiceUnreachableError:
        raise  # the user asked for the service: no silent local run
    except Exception as e:  # noqa: BLE001 - any failure keeps the faithful graph
        _fall_back(graph, where, leaves, e)
        if tf_name is None:
            return result
        return tf.nest.pack_sequence_as(result, tf.identity_n(leaves, name=tf_name))
    iterator, values, initializer, watch, feeds, constants = served
    built = graph.get_operations()[ops_before:]
    faithful = runners.runner_of(graph, queue)
    retired = runners.retire_runners(graph, leaves, engine_ops={op.name for op in built})
    tf.compat.v1.add_to_collection(
        QUEUE_RUNNERS, runners.ServedRunner(queue, faithful, initializer, watch, feeds)
    )
    # NOTE [ Constants kept out of the session's graph ] in _core/held_constants.py
    if constants and held_constants.hold(graph, constants):
        session_hook.guard_held_constants(graph)
    graph_edits.replace_fill_summaries(
        graph, {graph_facts.queue_op_name(qr.queue) for qr in retired}, scope
    )
    if watch is None:
        functions = [
            graph._functions[name]  # noqa: SLF001
            for name in graph._functions  # noqa: SLF001
            if name not in functions_before
        ]
        graph_edits.add_saveable(iterator, _input_position.fingerprint(built, functions))
    else:  # a served iterator has no state to save; a lost dispatcher is raised in steps
        session_hook.time_steps(graph)
    # NOTE [ Cached step callables ] in _core/step_cache.py
    session_hook.cache_steps(graph, {v.op for v in values if isinstance(v, tf.Tensor)})
    out = tf.nest.pack_sequence_as(result, values)
    plan.record(
        api, dict(node.args, engine="dataset"), node.inputs, tf.nest.flatten(out), graph=graph
    )
    log_once(
        graph,
        ("path", where),
        logging.INFO,
        "queue_pipeline dataset engine: %s runs on tf.data (%s).",
        where,
        "; ".join(paths) or "no per-record ops",
    )
    return out


# --------------------------------------------------------------------- building


def _build(graph: tf.Graph, node: plan.PlanNode, leaves: list, scope: str, where: str, tf_name):
    """The rebuild's ((iterator, flat values, initializer, watchdog, feeds, constants), paths).

    The initializer is None for a one-shot iterator; the watchdog factory is
    set when the pipeline is read through tf.data service (NOTE [ Legacy
    pipelines on tf.data service ]); feeds are the initializer's (placeholder
    -> array) and constants the legacy ``Const`` ops whose values the Dataset
    is fed instead (NOTE [ Large preloaded arrays ]).

    Raises whatever stops the rebuild (the caller falls back), and
    ``ServiceUnreachableError`` when the service does not answer.
    """
    settings = _settings.current()
    if settings.service is not None:
        service.check_reachable(settings.service, f"{where} (dataset engine, --service)")
    ops_before = len(graph.get_operations())
    functions_before = set(graph._functions)  # noqa: SLF001 - to tell the rebuild's map bodies
    deterministic = is_seeded(graph, leaves)
    rebuilder = engine_rebuilder.EngineRebuilder(
        graph,
        api=f"{node.kind} (dataset engine)",
        deterministic=deterministic,
        vectorizer=_vectorizer(),
    )
    rebuilder.restrict_to(leaves)
    with graph_edits.quiet_tf_data(), tf.compat.v1.name_scope(f"{scope.rstrip('/')}_dataset/"):
        stream = rebuilder.rebuild(leaves, exact=True)
        dataset = stream.dataset
        captures = any(region.captured for _, region in rebuilder.regions)
        feeds = dict(rebuilder.feeds)
        if deterministic or feeds:
            options = tf.data.Options()
            if deterministic:
                options.deterministic = True
            if feeds:  # see NOTE [ Large preloaded arrays ]: a rewrite copies the arrays
                options.experimental_optimization.apply_default_optimizations = False
            dataset = dataset.with_options(options)
        watch = None
        if settings.service is not None:
            reason = service.unservable_reason(
                graph,
                graph.get_operations()[ops_before:],
                [f for f in graph._functions if f not in functions_before],  # noqa: SLF001
                leaves,
                captures,
                bool(feeds),
            )
            if reason is None:
                dataset, mode, job, arrivals = service.distribute(
                    dataset, leaves, scope, settings.service, settings.service_job
                )
                watch = service.watchdog(settings.service, where, arrivals)
                rebuilder.paths.append(
                    f"read through tf.data service at {settings.service} ({mode}"
                    + (f", job {job!r})" if job else ")")
                )
            else:
                log_once(
                    graph,
                    ("local", where),
                    logging.WARNING,
                    "queue_pipeline dataset engine: %s is not read through tf.data service at "
                    "%s but runs locally: %s.",
                    where,
                    settings.service,
                    reason,
                )
        if captures or feeds:
            iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
            initializer = iterator.initializer
        else:
            iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
            initializer = None
        if tf_name is not None:
            values = _get_next_named(iterator, dataset, leaves, tf_name)
        else:
            element = iterator.get_next()
            values = [element] if len(leaves) == 1 else list(element)
            if len(values) != len(leaves):
                raise AssertionError(f"{len(values)} components for {len(leaves)} outputs")
            values = [_merge_static_shape(value, leaf) for value, leaf in zip(values, leaves)]
    constants = dict(rebuilder.constants) if feeds else {}
    return (iterator, values, initializer, watch, feeds, constants), rebuilder.paths


def _get_next_named(iterator, dataset: tf.data.Dataset, leaves: list, tf_name: str) -> list:
    """The iterator's next element as one op named `tf_name`, with the `leaves`' static shapes.

    See NOTE [ TF's names for served batches ]. Raises (the call falls back)
    when the Dataset's components are not dense tensors of the leaves'
    dtypes and compatible shapes.
    """
    specs = tf.nest.flatten(dataset.element_spec)
    if len(specs) != len(leaves):
        raise AssertionError(f"{len(specs)} components for {len(leaves)} outputs")
    for spec, leaf in zip(specs, leaves):
        if (
            not isinstance(spec, tf.TensorSpec)
            or spec.dtype != leaf.dtype
            or not spec.shape.is_compatible_with(leaf.shape)
        ):
            raise TypeError(f"the rebuilt component {spec} does not fit the faithful {leaf}")
    return list(
        tf.raw_ops.IteratorGetNext(
            iterator=iterator._iterator_resource,  # noqa: SLF001 - the resource make_saveable uses
            output_types=[leaf.dtype for leaf in leaves],
            output_shapes=[leaf.shape for leaf in leaves],
            name=tf_name,
        )
    )


def _merge_static_shape(value, leaf):
    """`value` with exactly the faithful `leaf`'s static shape (raises if incompatible).

    Where the Dataset knows more than TF 1.x's queue (a batched SparseTensor's
    dense shape is unknown after a queue, ``[None, None]``; tf.data often
    knows it), the shape is relaxed to TF's through a
    ``placeholder_with_default``, which passes the value through at run time.
    """
    if isinstance(value, tf.SparseTensor) != isinstance(leaf, tf.SparseTensor):
        raise TypeError(f"the rebuilt component {value} is not of the faithful kind {leaf}")
    if isinstance(value, tf.SparseTensor):
        dense_shape = value.dense_shape
        if value.shape.merge_with(leaf.shape) != leaf.shape:
            dense_shape = tf.compat.v1.placeholder_with_default(
                dense_shape, dense_shape.shape, name="sparse_shape"
            )
        value = tf.SparseTensor(value.indices, value.values, dense_shape)
        if value.shape.merge_with(leaf.shape) != value.shape:
            value.set_shape(leaf.shape)
        return value
    if value.dtype != leaf.dtype:
        raise TypeError(
            f"the rebuilt component has dtype {value.dtype}, the faithful one {leaf.dtype}"
        )
    if value.shape.merge_with(leaf.shape) != leaf.shape:
        return tf.compat.v1.placeholder_with_default(value, leaf.shape, name="static_shape")
    value.set_shape(leaf.shape)
    return value


def is_seeded(graph: tf.Graph, leaves: list) -> bool:
    """Whether the pipeline of `leaves` repeats itself: a graph seed, or a seeded stage."""
    if graph.seed is not None:
        return True
    return any(n.args.get("seed") is not None for n in plan.plan_for(leaves))


def _vectorizer():
    """The batch-vectorizer module, or None while it does not exist."""
    try:
        return importlib.import_module("queue_pipeline._engine.vectorize")
    except ImportError:
        return None


def _fall_back(graph: tf.Graph, where: str, leaves: list, error: Exception) -> None:
    """Keeps the faithful graph: logs why once and restores runners it needs."""
    runners.restore_retired(graph, leaves)
    held_constants.needed_by_runners(graph)  # the faithful runners may read a held constant
    if isinstance(error, NotRebuildableError) and error.op_type in graph_facts.COUNT_UP_TO_OPS:
        # NOTE [ Per-record counters ] in _engine/bridge.py: served when the runners start.
        log_once(
            graph,
            ("counter", where, error.op_name),
            logging.INFO,
            "queue_pipeline dataset engine: %s counts records with '%s' (%s): its queue "
            "is filled from tf.data when the runners start, from the counter's value then.",
            where,
            error.op_name,
            error.op_type,
        )
        return
    if isinstance(error, NotRebuildableError):
        reason, key = str(error), (error.op_name, error.reason)
        if error.reason in ("needs a session", "uninitialized variable"):
            reason += (
                " (Under the dataset engine the Dataset is built with the pipeline: "
                "build it inside `with sess.as_default():` once the variables are "
                "initialized, or use constants.)"
            )
    else:
        reason, key = f"{type(error).__name__}: {error}", (type(error).__name__, str(error))
    log_once(
        graph,
        ("fallback", where) + key,
        logging.WARNING,
        "queue_pipeline dataset engine: %s stays on the queue engine: %s",
        where,
        reason,
    )


def log_once(graph: tf.Graph, key: tuple, level: int, message: str, *args) -> None:
    """Logs `message` on logger ``queue_pipeline`` once per `graph` and `key`."""
    with _LOCK:
        logged = _LOGGED.setdefault(graph, set())
        if key in logged:
            return
        logged.add(key)
    logger.log(level, message, *args)
