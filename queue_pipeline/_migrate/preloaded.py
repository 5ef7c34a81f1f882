"""Preloaded arrays in migrated code for TF1 mode: variables loaded once, not graph constants.

NOTE [ Preloaded arrays in a migrated TF1-mode program ]
``slice_input_producer([tf.constant(images), tf.constant(labels)])`` over
large NumPy arrays becomes ``Dataset.from_tensor_slices`` of the same
arrays. Iterated eagerly (TF 2.x defaults) that is tf.data's fast path. Read
in a Session (TF1 mode, where the program then runs), the arrays are graph
constants, and initializing an iterator over them runs Grappler over a graph
that holds them: for 60,000 x 784 float32 (188 MB) that is about 10 s before
the first batch, so an epoch of W4 read slower than TF's queue API (0.71x in
benchmarks/results/2026-12-02-migrated-real-tf1). With the same arrays fed
through placeholders the initialization takes 0.06 s.

So, when the migration itself runs in TF1 mode and the sliced arrays are
graph constants of at least :data:`VARIABLES_FROM_BYTES` in all, the
migrated function holds them in non-trainable variables outside every
collection, each initialized once from a placeholder fed with the array (TF's
own guide to preloaded data, and the preloaded-variable program of
legacy_examples/preloaded_data.py), and returns ``(dataset, load)``: its
caller runs ``load(sess)`` after the variables initializers and then the
initializer of an initializable iterator (a one-shot iterator cannot capture
a variable). ``migrate(callers=True)`` writes exactly that where the caller
called ``start_queue_runners``; the proof runs ``load`` in each session it
reads the Dataset in. Migrated under TF 2.x defaults, the function keeps the
plain form.

The variables are made by a helper written once into the migrated module
(:func:`helper_source`): plain TensorFlow and NumPy, nothing of this package.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m
import numpy as np
import tensorflow as tf

from queue_pipeline._migrate.syntax import callee

__all__ = [
    "VARIABLES_FROM_BYTES",
    "arrays_and_dtypes",
    "constants_named",
    "drop_constant_lines",
    "helper_source",
    "in_tf1_mode",
]

# From this size on (all sliced arrays together), TF1-mode migrated code holds
# them in variables: about 53 ms of iterator initialization per MiB of graph
# constants was measured (10 s for 188 MB), so 4 MiB costs ~0.2 s a run.
VARIABLES_FROM_BYTES = 4 * 2**20

_WRAPPERS = ("constant", "convert_to_tensor")  # tf.constant(x) holds x itself


def in_tf1_mode() -> bool:
    """Whether this process runs with TF 2.x behaviour disabled (where migrated code will run)."""
    return not tf.__internal__.tf2.enabled()


def returns_loader(load: str) -> str:
    """The end of the report's note: what the function's callers do with `load`."""
    return (
        f"in TF1 mode the migrated function returns (dataset, {load}): run {load}(sess) "
        "after the variables initializers, then the initializer of "
        "tf.compat.v1.data.make_initializable_iterator(dataset)"
    )


INLINE_LOADER = (
    "the session code runs load(sess), then the initializer of an initializable "
    "iterator, where start_queue_runners was"
)


def constant_bytes(inputs) -> int:
    """The bytes of the fully known graph constants among `inputs` (the sliced tensors)."""
    return sum(
        int(np.prod(t.shape.as_list())) * t.dtype.size
        for t in inputs
        if isinstance(t, tf.Tensor) and t.op.type == "Const" and t.shape.is_fully_defined()
    )


def _wrapped_array(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of ``tf.constant(x)`` / ``tf.convert_to_tensor(x[, dtype=...])``, else None."""
    if (
        isinstance(value, cst.Call)
        and callee(value) in _WRAPPERS
        and len(value.args) >= 1
        and value.args[0].keyword is None
        and all(a.keyword is not None and a.keyword.value == "dtype" for a in value.args[1:])
    ):
        return value.args[0].value
    return None


def constants_named(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """The names `function` binds once, to ``tf.constant(x)``, and reads once: name -> `x`.

    TF's fully_connected_preloaded.py writes ``input_images =
    tf.constant(data_sets.train.images)`` and slices ``[input_images,
    input_labels]``: the variables are fed `x` itself, and the constant's
    line goes (:func:`drop_constant_lines`), so the graph never holds it.
    """
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for assign in m.findall(function, m.Assign(targets=[m.AssignTarget(target=m.Name())])):
        assert isinstance(assign, cst.Assign)
        name = cst.ensure_type(assign.targets[0].target, cst.Name).value
        assigned.setdefault(name, []).append(assign.value)
    counts: dict[str, int] = {}
    for node in m.findall(function, m.Name()):
        name = cst.ensure_type(node, cst.Name).value
        counts[name] = counts.get(name, 0) + 1
    out = {}
    for name, values in assigned.items():
        array = _wrapped_array(values[0]) if len(values) == 1 else None
        if array is not None and counts.get(name) == 2:  # bound once, read once
            out[name] = array
    return out


def drop_constant_lines(lines: list[str], names: list[str]) -> list[str]:
    """`lines` without ``name = tf.constant(...)`` of each of `names` that nothing later reads.

    Each item of `lines` may hold several lines (a comment above a statement);
    the result holds one line per item.
    """
    out = "".join(lines).splitlines(keepends=True)
    for name in names:
        binding = re.compile(rf"^\s*{re.escape(name)}\s*=\s*[\w.]*({'|'.join(_WRAPPERS)})\(.*\)$")
        for i, line in enumerate(out):
            later = "".join(out[i + 1 :])
            if binding.match(line) and not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", later):
                indent = line[: len(line) - len(line.lstrip())]
                opened = i > 0 and out[i - 1].rstrip().endswith(":")
                following = next((x for x in out[i + 1 :] if x.strip()), "")
                if opened and not following.startswith(indent):  # the block's only line
                    out[i] = f"{indent}pass\n"  # (``with tf.device("/cpu:0"):`` stays)
                else:
                    del out[i]
                break
    return out


def arrays_and_dtypes(
    tensor_list: cst.BaseExpression, inputs, code, constants: dict | None = None
) -> tuple[str, str] | None:
    """The helper call's two arguments: the arrays' source list and their dtypes.

    Args:
      tensor_list: the legacy call's ``tensor_list`` argument.
      inputs: the tensors the traced call sliced, in order (all graph constants).
      code: renders a node as source.
      constants: :func:`constants_named` of the function: a name among the
        items that holds ``tf.constant(x)`` is replaced by `x`.

    Returns:
      ``("[images, labels]", "[tf.float32, tf.int64]")``: a list display's
      ``tf.constant(x)`` items unwrapped to ``x`` (the helper feeds `x`
      itself, with the dtype TF gave the constant), other items as written (a
      constant tensor is read back by the helper); None when the argument is
      not a list or tuple display of as many items as the call sliced.
    """
    if not isinstance(tensor_list, (cst.List, cst.Tuple)) or len(tensor_list.elements) != len(
        inputs
    ):
        return None
    items = []
    for element in tensor_list.elements:
        value = element.value
        if isinstance(value, cst.Name) and value.value in (constants or {}):
            value = (constants or {})[value.value]
        items.append(code(_wrapped_array(value) or value))
    dtypes = [f"tf.{t.dtype.base_dtype.name}" for t in inputs]
    return f"[{', '.join(items)}]", f"[{', '.join(dtypes)}]"


def helper_source(name: str, np_alias: str) -> str:
    """The module-level helper ``name(arrays, dtypes) -> (variables, load)`` as source text.

    Args:
      name: the helper's name, free in the migrated module.
      np_alias: the module's name for NumPy, or "" (the helper then imports it).
    """
    numpy = np_alias or "np"
    imports = "" if np_alias else "    import numpy as np  # noqa: PLC0415\n\n"
    return (
        f"def {name}(arrays, dtypes):\n"
        '    """Each array in a variable a Session loads once: preloaded data in TF1 mode.\n'
        "\n"
        "    Read in a Session, a Dataset over large graph constants waits for\n"
        "    Grappler to rewrite them each time its iterator starts; a variable\n"
        "    initialized once from a placeholder fed with the array does not.\n"
        "\n"
        "    Args:\n"
        "      arrays: NumPy arrays (or lists, or constant tensors), one per component.\n"
        "      dtypes: the dtype of each.\n"
        "\n"
        "    Returns:\n"
        "      ``(variables, load)``: the variables, in the order of `arrays`, and\n"
        "      ``load(sess)``, which runs their initializers with the arrays fed. The\n"
        "      variables are in no collection (the variables initializers leave them\n"
        "      alone): run ``load(sess)``, then initialize the Dataset's iterator (an\n"
        "      initializable one: a one-shot iterator cannot capture a variable).\n"
        '    """\n'
        f"{imports}"
        "    values = [\n"
        f"        {numpy}.asarray(tf.get_static_value(a) if tf.is_tensor(a) else a, "
        "d.as_numpy_dtype)\n"
        "        for a, d in zip(arrays, dtypes)\n"
        "    ]\n"
        "    feeds = [tf.compat.v1.placeholder(d, v.shape) for v, d in zip(values, dtypes)]\n"
        "    variables = [\n"
        "        tf.compat.v1.Variable(f, trainable=False, collections=[]) for f in feeds\n"
        "    ]\n"
        "\n"
        "    def load(sess):\n"
        "        sess.run([v.initializer for v in variables], feed_dict=dict(zip(feeds, values)))\n"
        "\n"
        "    return variables, load\n"
    )
