"""Arrow → columns: list columns flat (ListColumn) as the dialects' fetch gives them, and the
DuckDB fetch through Arrow equal to ``fetchnumpy`` (query.extract.arrow_columns)."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from otelbench.query.extract import ListColumn, _duckdb_fetch, _flatten_lists, arrow_columns


def test_flat_lists_of_several_sliced_chunks() -> None:
    ints = pa.chunked_array(
        [
            pa.array([[1, 2], [], [3]], type=pa.list_(pa.int64())).slice(1),
            pa.array([[4, 5, 6]], type=pa.large_list(pa.int64())).cast(pa.list_(pa.int64())),
        ]
    )
    table = pa.table({"l": ints, "s": pa.chunked_array([["x"], ["y", "z"]])})
    flat = arrow_columns(table, flat_lists=True)
    rows = arrow_columns(table)
    assert isinstance(flat["l"], ListColumn)
    assert flat["l"].values.tolist() == [3, 4, 5, 6]
    assert flat["l"].offsets.tolist() == [0, 0, 1, 4]
    expected = [[], [3], [4, 5, 6]]
    assert [r.tolist() for r in flat["l"]] == [r.tolist() for r in rows["l"]] == expected
    assert len(flat["l"]) == 3
    assert flat["s"].tolist() == rows["s"].tolist() == ["x", "y", "z"]
    values, lengths = _flatten_lists(flat["l"])
    assert values.dtype == np.int64
    assert values.tolist() == [3, 4, 5, 6]
    assert lengths.tolist() == [0, 1, 3]


def test_a_sliced_numeric_column_is_read_from_its_buffer() -> None:
    table = pa.table({"i": pa.array([7, 8, 9], type=pa.int32()).slice(1), "f": [0.5, 1.5]})
    cols = arrow_columns(table)
    assert cols["i"].dtype == np.int32
    assert cols["i"].tolist() == [8, 9]
    assert cols["f"].tolist() == [0.5, 1.5]


def test_no_rows() -> None:
    empty = pa.chunked_array([], type=pa.list_(pa.int64()))
    cols = arrow_columns(pa.table({"l": empty}), flat_lists=True)
    assert isinstance(cols["l"], ListColumn)
    assert len(cols["l"]) == 0
    assert cols["l"].offsets.tolist() == [0]


def test_duckdb_fetch_is_fetchnumpy_with_flat_lists() -> None:
    con = duckdb.connect()
    sql = (
        "SELECT * FROM (VALUES (1, 'a', [10, 20], ['x'], NULL::DOUBLE), "
        "(2, NULL, []::BIGINT[], []::VARCHAR[], 2.5)) AS t(i, s, l, v, d) WHERE i > $low"
    )
    ours = _duckdb_fetch(con, sql, {"low": 0}, "memory")
    theirs = con.execute(sql, {"low": 0}).fetchnumpy()
    assert list(ours) == ["i", "s", "l", "v", "d"]
    for name in ("i", "s", "d"):
        assert np.ma.asarray(ours[name]).tolist() == np.ma.asarray(theirs[name]).tolist()
        assert np.ma.is_masked(ours[name]) == np.ma.is_masked(theirs[name])
    assert [r.tolist() for r in ours["l"]] == [r.tolist() for r in theirs["l"]] == [[10, 20], []]
    assert [r.tolist() for r in ours["v"]] == [["x"], []]


def test_nulls_and_lists_are_read_from_the_buffers_as_pyarrow_reads_them() -> None:
    """NULL masks come from the validity bitmap and list items from the child array (not
    ``is_null()``/``fill_null()``/``flatten()``, which import pyarrow's compute functions):
    sliced arrays, NULLs at bit boundaries, lists whose offsets do not start at 0, NULL lists."""
    ints = pa.array([1, None, *range(2, 9), None, 10], type=pa.int64()).slice(1)  # offset 1
    floats = pa.array([None, 0.5, None], type=pa.float64())
    strings = pa.array(["a", None, "c", None], type=pa.string()).slice(1, 3)
    lists = pa.array([[1], None, [2, 3], [], None, [4]], type=pa.list_(pa.int64())).slice(1)
    many = pa.chunked_array([ints.slice(0, 4), ints.slice(4)])  # concatenated, not combined
    cols = {
        **arrow_columns(pa.table({"i": many})),
        **arrow_columns(pa.table({"f": pa.chunked_array([floats.slice(0, 2), floats.slice(2)])})),
    }
    for name, arrow in (("i", ints), ("f", floats)):
        want = arrow.to_pylist()
        got = cols[name]
        assert np.ma.getmaskarray(got).tolist() == [v is None for v in want]
        assert [None if m else v for v, m in zip(got.data.tolist(), got.mask, strict=True)] == want
    assert np.isnan(cols["f"].data[[0, 2]]).all()  # NULL reads as NaN once filled
    assert cols["i"].data[0] == 0
    s = arrow_columns(pa.table({"s": strings}))["s"]
    assert np.ma.getmaskarray(s).tolist() == [True, False, True]
    assert s.data.tolist() == ["", "c", ""]
    rows = arrow_columns(pa.table({"l": lists}))["l"]
    assert [r.tolist() for r in rows] == [[], [2, 3], [], [], [4]]
    flat = arrow_columns(pa.table({"l": lists.slice(1, 2)}), flat_lists=True)["l"]
    assert flat.values.tolist() == [2, 3]
    assert flat.offsets.tolist() == [0, 2, 2]
    nothing = arrow_columns(pa.table({"i": pa.chunked_array([], type=pa.int64())}))
    assert nothing["i"].tolist() == []
