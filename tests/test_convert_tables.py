"""``csv-table:`` sources: a feature per column, types inferred or given, values read back."""

from __future__ import annotations

import csv
import importlib.util
import os

import numpy as np
import pytest
from convert_helpers import IN_MEMORY, records_of
from helpers import dataset_values

import queue_pipeline as qp

ROWS_A = "id,zip,height,name\n1,00123,1.5,ann\n2,00456,2.25,bob\n3,x,oops,cy\n"
ROWS_B = "id,zip,height,name\n4,00789,-0.125,\n5,01000,3\n6,01001,,dee\n"
_ONE = {"beam_options": IN_MEMORY}


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


# NOTE [ Table rows read in the workers ]: the rows of small spans equal a parse of the
# whole file (the reference below is what the launcher did before: one csv.reader per file).
LAYOUTS = {
    "plain": "id,v,name\n" + "".join(f"{i},{i / 4},n{i}\n" for i in range(40)),
    "crlf-no-final-newline": "id,v,name\r\n" + "\r\n".join(f"{i},{i}.5,é{i}" for i in range(30)),
    "blank-and-bad-rows": "\n\nid,v,name\n1,2,a\n\n3,x,b\n4,,c\n5,6\n7,8,d,e\n"
    + "".join(f"{i},{i},z\n" for i in range(8, 40)),
    "quoted-newlines-and-commas": 'id,v,name\n1,2,"a\nb"\n2,3,"c,d"\n3,4,"say ""hi"""\n'
    + "".join(f'{i},{i},"x\n{i}"\n' for i in range(4, 40)),
    "lone-cr": "id,v,name\r" + "".join(f"{i},{i},w{i}\r" for i in range(30)),
    "huge-and-odd-numbers": "id,v,name\n"
    + f"{2**63 - 1},1e300,a\n{-(2**63)},-inf,b\n{2**63},nan,c\n1_0, 2 ,d\n5,-0.0,\n",
}


def _reference(path: str, header_types: dict[str, str]):
    """``{identity: record}`` and ``{identity: reason}`` of a whole-file parse."""
    from queue_pipeline._convert import features

    with open(path, encoding="utf-8", newline="") as f:
        rows = [(n, r) for n, r in enumerate(csv.reader(f), start=1) if r]
    header, body = rows[0][1], rows[1:]
    parse = {
        "int64": int,
        "float32": lambda c: float(np.float32(float(c))),
        "string": str,
    }
    records, errors = {}, {}
    for line, row in body:
        identity = f"{path}:{line}"
        if len(row) != len(header):
            errors[identity] = f"{len(row)} fields; the header has {len(header)}"
            continue
        values = {}
        for name, cell in zip(header, row):
            kind = header_types[name]
            try:
                if cell == "" and kind != "string":
                    raise KeyError(f"empty {kind} cell in column {name!r}")
                with np.errstate(over="ignore"):
                    values[name] = parse[kind](cell)
                if kind == "int64" and not -(2**63) <= values[name] < 2**63:
                    raise ValueError
            except ValueError:
                errors[identity] = f"column {name!r}: {cell!r} is not {kind}"
                break
            except KeyError as e:
                errors[identity] = e.args[0]
                break
        else:
            records[identity] = features.serialize_features(values)
    return records, errors


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.slow
def test_rows_of_small_spans_are_the_rows_of_the_whole_file(tmp_path, monkeypatch, layout):
    from queue_pipeline._convert import assign, tables

    path = tmp_path / "t.csv"
    path.write_bytes(LAYOUTS[layout].encode("utf-8"))
    monkeypatch.setattr(tables, "RANGE_BYTES", 16)  # many spans, cut inside the file
    listing = tables.list_tables(f"csv-table:{path}", [str(path)], None)
    assert len(listing.spans) > 3
    types = {name: spec["dtype"] for name, spec in listing.features.items()}
    records, errors = _reference(str(path), types)
    result = qp.convert(f"csv-table:{path}", str(tmp_path / "out"), shards=3, **_ONE)
    assert {e["record"]: e["reason"] for e in result.errors} == errors
    assert result.manifest["records"]["listed"] == len(records) + len(errors)
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for identity, record in records.items():  # input order
        expected[assign.assign(identity, {"train": 1.0}, {"train": 3}).shard].append(record)
    shards = records_of(tmp_path / "out")
    assert [shards[f"train-0000{i}-of-00003"] for i in range(3)] == list(expected.values())


def test_inferred_types_of_the_layouts():
    from queue_pipeline._convert.tables import infer_column

    assert infer_column(["1", " 2 ", "1_0", ""]) == "int64"
    assert infer_column(["1", str(2**63)]) == "float32"  # beyond int64
    assert infer_column(["1", "nan", "-inf"]) == "float32"
    assert infer_column(["1", "x"]) == "string" and infer_column(["", ""]) == "string"


@pytest.mark.slow
def test_table_reruns_are_byte_identical_whatever_the_spans_and_workers(tmp_path, monkeypatch):
    from queue_pipeline._convert import tables

    path = tmp_path / "t.csv"
    path.write_text(LAYOUTS["blank-and-bad-rows"] + LAYOUTS["plain"].split("\n", 1)[1])
    source = f"csv-table:{path}"
    kwargs = {"split": "train=0.6,validation=0.4", "shards": 2}
    qp.convert(source, str(tmp_path / "a"), **kwargs, **_ONE)
    qp.convert(source, str(tmp_path / "b"), **kwargs, **_ONE)
    monkeypatch.setattr(tables, "RANGE_BYTES", 20)
    threads = ["--direct_running_mode=multi_threading", "--direct_num_workers=2"]
    qp.convert(source, str(tmp_path / "c"), **kwargs, beam_options=threads)
    names = sorted(records_of(tmp_path / "a"))
    assert len(names) == 4
    for name in names:
        data = (tmp_path / "a" / name).read_bytes()
        assert data == (tmp_path / "b" / name).read_bytes() == (tmp_path / "c" / name).read_bytes()
    assert (tmp_path / "a" / "errors.jsonl").read_text() == (
        tmp_path / "c" / "errors.jsonl"
    ).read_text()


def test_a_bad_row_with_on_error_fail_stops_the_job(tmp_path):
    (tmp_path / "a.csv").write_text(ROWS_A)
    with pytest.raises(qp.ConvertError, match=r"a\.csv:4.*on_error='fail'"):
        qp.convert(
            f"csv-table:{tmp_path / 'a.csv'}",
            str(tmp_path / "out"),
            schema="height:float32",
            on_error="fail",
            **_ONE,
        )
    assert os.listdir(tmp_path / "out") == []


def test_bulk_encoding_is_serialize_features_of_the_typed_row():
    from queue_pipeline._convert import features, rows

    header, types = ("id", "name", "x", "é"), ("int64", "string", "float32", "string")
    spec = rows.TableSpec(header, types, {"train": 1.0}, {"train": 1})
    cells = [
        ["0", "", "0.0", "é"],
        ["-1", "a" * 200, "nan", "x" * 20000],
        [str(2**63 - 1), "b", "1e300", "\x00"],
        [str(-(2**63)), "c\x00", "-inf", "abc\x00"],
        ["127", "d", "1.5", "z"],
        ["128", "e", "-0.0", "q" * 127],
        ["16384", "f", "1e-50", "q" * 128],
    ]
    got = rows.encode_rows(spec, [c for row in cells for c in row])
    with np.errstate(over="ignore"):
        typed = [
            {"id": int(a), "name": b, "x": float(np.float32(float(c))), "é": d}
            for a, b, c, d in cells
        ]
    assert got == [features.serialize_features(v) for v in typed]
    with pytest.raises(ValueError):
        rows.encode_rows(spec, ["1", "a", "", "b"])
    with pytest.raises(ValueError):
        rows.encode_rows(spec, [str(2**63), "a", "1", "b"])
