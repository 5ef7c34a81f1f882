"""``csv-table:`` sources: a feature per column, types inferred or given, values read back."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from convert_helpers import IN_MEMORY
from helpers import dataset_values

import queue_pipeline as qp

ROWS_A = "id,zip,height,name\n1,00123,1.5,ann\n2,00456,2.25,bob\n3,x,oops,cy\n"
ROWS_B = "id,zip,height,name\n4,00789,-0.125,\n5,01000,3\n6,01001,,dee\n"


def _tables(tmp_path):
    (tmp_path / "a.csv").write_text(ROWS_A)
    (tmp_path / "b.csv").write_text(ROWS_B)
    return f"csv-table:{tmp_path / 'a.csv'},{tmp_path / 'b.csv'}"


def _read_all(result, tmp_path):
    path = tmp_path / "reader.py"
    path.write_text(result.reader_source())
    spec = importlib.util.spec_from_file_location("table_reader", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = []
    for batch in dataset_values(module.input_fn("train", 2, shuffle=False)):
        keys = sorted(batch)
        rows += [dict(zip(keys, values)) for values in zip(*(batch[k] for k in keys))]
    return sorted(rows, key=lambda r: r["id"])


def test_types_inferred_and_values_read_back_equal(tmp_path):
    result = qp.convert(_tables(tmp_path), str(tmp_path / "out"), shards=2, beam_options=IN_MEMORY)
    assert result.manifest["features"] == {
        "id": {"dtype": "int64", "shape": []},
        "zip": {"dtype": "string", "shape": []},  # "x" makes it text
        "height": {"dtype": "string", "shape": []},  # "oops"
        "name": {"dtype": "string", "shape": []},
    }
    assert result.written == 5  # b.csv:3 has 3 fields
    assert [(e["record"].rsplit("/", 1)[-1], e["reason"]) for e in result.errors] == [
        ("b.csv:3", "3 fields; the header has 4")
    ]
    rows = _read_all(result, tmp_path)
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 6]
    assert rows[0]["zip"] == b"00123" and rows[3]["name"] == b""


def test_schema_types_and_bad_cells(tmp_path):
    result = qp.convert(
        _tables(tmp_path),
        str(tmp_path / "out"),
        schema="zip:string,height:float32",
        beam_options=IN_MEMORY,
    )
    types = {n: f["dtype"] for n, f in result.manifest["features"].items()}
    assert types == {"id": "int64", "zip": "string", "height": "float32", "name": "string"}
    reasons = {e["record"].rsplit("/", 1)[-1]: e["reason"] for e in result.errors}
    assert reasons == {
        "a.csv:4": "column 'height': 'oops' is not float32",
        "b.csv:3": "3 fields; the header has 4",
        "b.csv:4": "empty float32 cell in column 'height'",
    }
    rows = _read_all(result, tmp_path)
    assert [(r["id"], r["zip"], r["height"]) for r in rows] == [
        (1, b"00123", np.float32(1.5)),
        (2, b"00456", np.float32(2.25)),
        (4, b"00789", np.float32(-0.125)),
    ]
    assert rows[0]["height"].dtype == np.float32 and rows[0]["id"].dtype == np.int64


@pytest.mark.parametrize(
    "schema, match", [("zip:complex", "schema"), ("zipstring", "schema"), ("nope:int64", "unknown")]
)
def test_bad_schema(tmp_path, schema, match):
    with pytest.raises(ValueError, match=match):
        qp.convert(_tables(tmp_path), str(tmp_path / "out"), schema=schema, beam_options=IN_MEMORY)


def test_tables_of_different_layouts_are_refused(tmp_path):
    (tmp_path / "a.csv").write_text(ROWS_A)
    (tmp_path / "c.csv").write_text("id,other\n1,2\n")
    with pytest.raises(ValueError, match="header"):
        qp.convert(
            f"csv-table:{tmp_path / 'a.csv'},{tmp_path / 'c.csv'}",
            str(tmp_path / "out"),
            beam_options=IN_MEMORY,
        )
