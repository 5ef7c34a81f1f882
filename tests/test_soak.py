"""Soak tests: nothing lost over many epochs, nothing leaked over many pipelines (issue 7, item 6).

* Many epochs over dozens of small files, one filename queue shared by
  several readers, into ``shuffle_batch_join(allow_smaller_final_batch=True)``:
  every record is delivered exactly ``num_epochs`` times, and the process's
  resident memory stays flat from the early epochs to the late ones.
* A hundred pipelines built, run and torn down (drained, stopped early with
  runners blocked on full queues, or ended by closing the session without a
  Coordinator): no thread, session or graph is left behind, and resident
  memory stays flat.

Both are marked ``slow``; together they take well under a minute.
"""

from __future__ import annotations

import collections
import gc
import os
import threading
import weakref

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import new_session

pytestmark = pytest.mark.slow

FILES = 47  # 47 * 25 * 120 records: the last batch of 32 holds 8
LINES = 25  # records per file
READERS = 4
EPOCHS = 120
BATCH = 32


def _write_csv_files(directory, files=FILES, lines=LINES) -> list[str]:
    """Files whose lines are ``<file index>,<line index>``: every record is unique."""
    paths = []
    for f in range(files):
        path = directory / f"part-{f:03d}.csv"
        path.write_text("".join(f"{f},{line}\n" for line in range(lines)))
        paths.append(str(path))
    return paths


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _shuffle_join_pipeline(
    files, *, num_epochs, readers=READERS, batch=BATCH, capacity=200, min_after_dequeue=50, seed=7
):
    """One filename queue shared by `readers` readers -> shuffle_batch_join."""
    filenames = qp.string_input_producer(files, num_epochs=num_epochs, shuffle=True, seed=seed)
    examples = []
    for _ in range(readers):
        _, line = qp.TextLineReader().read(filenames)
        examples.append(list(tf.io.decode_csv(line, [[0], [0]])))
    return qp.shuffle_batch_join(
        examples,
        batch,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        allow_smaller_final_batch=True,
    )


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_many_epochs_deliver_every_record_exactly_once_per_epoch_in_flat_memory(tmp_path):
    """120 epochs, 4 readers on one filename queue, shuffle_batch_join.

    The shuffles mix neighbouring epochs, so "once per epoch" is checked over
    the whole run: each record exactly num_epochs times, nothing else.
    """
    files = _write_csv_files(tmp_path)
    per_epoch = FILES * LINES
    g = tf.Graph()
    with g.as_default():
        file_index, line_index = _shuffle_join_pipeline(files, num_epochs=EPOCHS)
    counts: collections.Counter = collections.Counter()
    rss_at_epoch = {}
    delivered, sizes = 0, collections.Counter()
    with new_session(g) as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        fetch = sess.make_callable([file_index, line_index])
        try:
            while True:
                try:
                    f, line = fetch()
                except tf.errors.OutOfRangeError:
                    break
                counts.update(zip(f.tolist(), line.tolist()))
                sizes[len(f)] += 1
                last_size = len(f)
                delivered += len(f)
                epoch = delivered // per_epoch
                if epoch not in rss_at_epoch:
                    rss_at_epoch[epoch] = _rss_bytes()
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    # Exactly num_epochs copies of every record; nothing else.
    expected = {(f, line): EPOCHS for f in range(FILES) for line in range(LINES)}
    assert delivered == EPOCHS * per_epoch
    assert dict(counts) == expected
    # Only the final batch is smaller (allow_smaller_final_batch): nothing is
    # left behind in the queue.
    tail = delivered % BATCH
    assert sizes == ({BATCH: delivered // BATCH, tail: 1} if tail else {BATCH: delivered // BATCH})
    assert last_size == (tail or BATCH)
    # Memory: after a warm-up of a few epochs, the late epochs use no more than
    # the early ones, with a generous margin: RSS was flat to the MB here, and a
    # leak of ~150 bytes per record would add the margin over these epochs.
    early = max(rss_at_epoch[e] for e in range(3, 8))
    late = max(rss_at_epoch[e] for e in range(EPOCHS - 5, EPOCHS))
    assert late - early < 20 * 2**20, {e: v // 2**20 for e, v in rss_at_epoch.items()}


def _one_pipeline(files, how):
    """Builds, runs and tears down one pipeline; returns weak refs to its graph and session."""
    g = tf.Graph()
    with g.as_default():
        batch = _shuffle_join_pipeline(
            files, num_epochs=2, readers=2, batch=4, capacity=16, min_after_dequeue=4
        )
        sess = new_session(g)
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = qp.Coordinator() if how != "close_without_coord" else None
        threads = qp.start_queue_runners(sess, coord)
        if how == "drain":
            try:
                while True:
                    sess.run(batch)
            except tf.errors.OutOfRangeError:
                pass
        else:
            sess.run(batch)  # runners now block on full queues
        if coord is not None:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
        sess.close()
        for thread in threads:
            thread.join(10)
    return weakref.ref(g), weakref.ref(sess), [t for t in threads if t.is_alive()]


# Its tests run on one xdist worker (pytest.ini's --dist loadgroup), which builds the
# hundred pipelines once.
HUNDRED = pytest.mark.xdist_group("soak_hundred_pipelines")


@pytest.fixture(scope="module")
def hundred_pipelines(tmp_path_factory):
    """Runs 100 pipelines, a third each drained, stopped early, and closed without a
    Coordinator; returns what they left behind (and RSS every 10 pipelines)."""
    files = _write_csv_files(tmp_path_factory.mktemp("soak"), files=6, lines=5)
    gc.collect()
    threads_before = set(threading.enumerate())
    hows = ["drain", "stop_early", "close_without_coord"]
    refs, rss = [], []
    for i in range(100):
        refs.append(_one_pipeline(files, hows[i % 3]))
        if i % 10 == 9:
            gc.collect()
            rss.append(_rss_bytes())
    gc.collect()
    return {
        "alive_threads": [t.name for t in threading.enumerate() if t not in threads_before],
        "unjoined": [name for _, _, alive in refs for name in alive],
        "sessions": sum(s() is not None for _, s, _ in refs),
        "graphs": sum(g() is not None for g, _, _ in refs),
        "rss_every_10": rss,
    }


@HUNDRED
def test_hundred_pipelines_leave_no_thread_behind(hundred_pipelines):
    assert hundred_pipelines["unjoined"] == []
    assert hundred_pipelines["alive_threads"] == []


@HUNDRED
def test_hundred_pipelines_leave_no_session_behind(hundred_pipelines):
    assert hundred_pipelines["sessions"] == 0


@HUNDRED
def test_hundred_pipelines_leave_no_graph_behind(hundred_pipelines):
    assert hundred_pipelines["graphs"] == 0


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
@HUNDRED
def test_hundred_pipelines_keep_memory_flat(hundred_pipelines):
    """RSS after pipeline 20 and after pipeline 100 (flat to the MB when nothing
    leaks; a leaked graph costs about 0.5 MB, so 80 of them exceed the margin)."""
    rss = hundred_pipelines["rss_every_10"]
    assert rss[-1] - rss[1] < 16 * 2**20, [v // 2**20 for v in rss]
