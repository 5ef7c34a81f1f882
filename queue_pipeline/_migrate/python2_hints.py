"""What a Python 2 idiom's error in the user's file says: the file is Python 2, and how to port.

NOTE [ A Python 2 file's errors ]
Many a TF 1.x program is Python 2: ``zip(*COLUMNS)[0]`` at module level
(census), ``d.keys()[0]``, ``d.iteritems()``, ``xrange``. Run on Python 3,
it raises an error that names no Python version ("'zip' object is not
subscriptable"), and the usual fix ("run migrate where the file's imports
and data are found") misleads. An error of one of these idioms gets the
fix that says the file is written for Python 2 and the Python 3 spelling of
the idiom at fault, and how to port the rest (by hand or with ``2to3 -w``).
"""

from __future__ import annotations

import re

__all__ = ["python2_fix"]

# the Python 3 spelling of each idiom, by what its error names
_SUBSCRIPTED = {
    "zip": "`list(zip(...))[i]` (zip returns an iterator in Python 3)",
    "map": "`list(map(...))[i]` (map returns an iterator in Python 3)",
    "filter": "`list(filter(...))[i]` (filter returns an iterator in Python 3)",
    "dict_keys": "`list(d.keys())[i]` (keys() returns a view in Python 3)",
    "dict_values": "`list(d.values())[i]` (values() returns a view in Python 3)",
    "dict_items": "`list(d.items())[i]` (items() returns a view in Python 3)",
    "range": "`list(range(...))` where a list is changed (range is immutable in Python 3)",
}
_ATTRIBUTES = {
    "iteritems": "`d.items()`",
    "itervalues": "`d.values()`",
    "iterkeys": "`d.keys()`",
    "has_key": "`key in d`",
    "next": "`next(iterator)`",
}
_NAMES = {
    "xrange": "`range`",
    "unicode": "`str`",
    "basestring": "`str`",
    "long": "`int`",
    "raw_input": "`input`",
    "unichr": "`chr`",
    "reduce": "`functools.reduce` (import it)",
    "cPickle": "`pickle`",
    "file": "`open`",
    "execfile": "`exec(open(path).read())`",
}


def python2_fix(error: BaseException) -> str:
    """The fix for `error` when it is a Python 2 idiom failing on Python 3; "" otherwise."""
    text = str(error)
    spelled = ""
    if isinstance(error, TypeError):
        found = re.search(r"'(\w+)' object is not (subscriptable|callable)", text)
        if found and found.group(2) == "subscriptable" and found.group(1) in _SUBSCRIPTED:
            spelled = _SUBSCRIPTED[found.group(1)]
        elif "'dict_keys' object" in text or "'dict_values' object" in text:
            spelled = "`list(d.keys())` where a list is wanted (keys() is a view in Python 3)"
    elif isinstance(error, AttributeError):
        found = re.search(r"has no attribute '(\w+)'", text)
        if found and found.group(1) in _ATTRIBUTES:
            if found.group(1) != "next" or "iterator" in text or "generator" in text:
                spelled = f"{_ATTRIBUTES[found.group(1)]} for `.{found.group(1)}`"
    elif isinstance(error, NameError):
        found = re.search(r"name '(\w+)' is not defined", text)
        if found and found.group(1) in _NAMES:
            spelled = f"{_NAMES[found.group(1)]} for `{found.group(1)}`"
    elif isinstance(error, ImportError) and re.search(
        r"No module named '(cPickle|urllib2|"
        r"Queue|StringIO|ConfigParser)'",
        text,
    ):
        spelled = "the Python 3 module (`pickle`, `urllib.request`, `queue`, `io`, `configparser`)"
    if not spelled:
        return ""
    return (
        f"the file is written for Python 2 (this is a Python 2 idiom failing on Python 3): "
        f"write {spelled}, and port the rest of the file to Python 3 (by hand, or with "
        "`2to3 -w FILE`; print statements, integer `/`, dict views, iterators), then migrate"
    )
