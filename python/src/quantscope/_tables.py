"""The native functions' tables as pandas DataFrames, when pandas is installed.

``formats`` and ``observers`` return a :class:`Table` (a ``list`` of rows); ``model``, ``diff``
and ``inspect`` a :class:`TableDocument` (the CLI's ``--json`` document as a ``dict``) whose
table is its ``tensors`` or ``pairs``. Both compare equal to plain lists and dicts, and
``.to_pandas()`` flattens nested fields into dotted columns (``metrics.sqnr_db``) with
``pandas.json_normalize``. pandas is optional: imported only by ``to_pandas``.
"""

from __future__ import annotations

from typing import Any, Dict, List


def _pandas():
    try:
        import pandas  # noqa: PLC0415 (optional dependency)
    except ImportError as e:
        raise ImportError("to_pandas needs pandas: pip install pandas") from e
    return pandas


class Table(list):
    """Rows (dicts) of a result; ``to_pandas()`` gives one DataFrame row per element."""

    def to_pandas(self):
        return _pandas().json_normalize(list(self))


class TableDocument(dict):
    """A JSON document of the CLI whose rows are under one key (``table``)."""

    def __init__(self, document: Dict[str, Any], table: str):
        super().__init__(document)
        self.table = table

    def rows(self) -> List[Dict[str, Any]]:
        """The document's rows (``self[self.table]``)."""
        return list(self.get(self.table, []))

    def to_pandas(self):
        return _pandas().json_normalize(self.rows())
