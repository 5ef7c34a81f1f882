"""The documentation stays true: its Python examples run, its commands name real flags.

Every ``.. code-block:: python`` of ``docs/**/*.rst`` runs, under TF 2.x
defaults as a reader runs them: a page's examples in order, in an empty
directory of their own, sharing one namespace, so an example may use the data
an earlier one on its page made (all pages in one fresh Python process, which
imports TensorFlow once). An rst comment right before a block changes what is
checked:

* ``.. docs-test: skip (reason)``: not run;
* ``.. docs-test: excerpt of PATH``: the block is an excerpt of the file PATH
  (e.g. the code ``migrate`` writes, from ``tests/migrate_expected/``);
* ``.. docs-test: pytest``: the block is a test module, run by pytest (with
  queue_pipeline's plugin).

Shell commands (``console`` blocks and ``::`` literal blocks) are not run;
each ``queue-pipeline ...`` / ``python -m queue_pipeline ...`` line in them is
checked to name a real subcommand and real options of it. And every relative
link in README.rst names a file of the repository.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.rst"))
TIMEOUT = 240  # seconds for every page's examples (about 30 s on 2 cores)

pytestmark = pytest.mark.one_suite("the examples run in fresh processes under TF 2.x defaults")

_DIRECTIVE = re.compile(r"^(?P<indent> *)\.\. code-block:: *(?P<lang>\S+)\s*$")
_LITERAL = re.compile(r"^(?P<indent> *)(?!\.\. )(?:\S.*)?::\s*$")
_MARK = re.compile(r"^\.\. docs-test: (?P<mark>skip|pytest|excerpt of (?P<path>\S+))")


@dataclasses.dataclass
class Block:
    page: pathlib.Path
    line: int  # 1-based line of the block's first code line in the page
    lang: str  # "python", "console", ..., or "::" for a literal block
    code: str
    mark: str | None
    path: str | None  # an excerpt's source file

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _indented_block(lines: list[str], start: int, indent: int) -> tuple[int, str]:
    """(first code line index, dedented text) of the block after lines[start]."""
    i = start + 1
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith(":")):
        if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent:
            break  # an option line belongs only to a directive, indented
        i += 1
    first = i
    while i < len(lines) and (
        not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
    ):
        i += 1
    return first, textwrap.dedent("\n".join(lines[first:i])).strip("\n") + "\n"


def blocks(page: pathlib.Path) -> list[Block]:
    lines = page.read_text().splitlines()
    found = []
    for n, text in enumerate(lines):
        match = _DIRECTIVE.match(text) or _LITERAL.match(text)
        if match is None or (_LITERAL.match(text) and text.lstrip().startswith("..")):
            continue
        indent = len(match.group("indent"))
        lang = match.groupdict().get("lang") or "::"
        first, code = _indented_block(lines, n, indent)
        if first >= len(lines) or not code.strip():
            continue
        back = n - 1
        while back >= 0 and not lines[back].strip():
            back -= 1
        mark = _MARK.match(lines[back].strip()) if back >= 0 else None
        found.append(
            Block(
                page,
                first + 1,
                lang,
                code,
                mark.group("mark").split()[0] if mark else None,
                mark.group("path") if mark else None,
            )
        )
    return found


ALL = [b for page in PAGES for b in blocks(page)]
RUN_PAGES = {b.page for b in ALL if b.lang == "python" and b.mark is None}
PYTEST_BLOCKS = [b for b in ALL if b.lang == "python" and b.mark == "pytest"]
EXCERPTS = [b for b in ALL if b.mark == "excerpt"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name in ("CI", "QUEUE_PIPELINE_TEST_TF1", "QUEUE_PIPELINE_TF1", "QUEUE_PIPELINE_ENGINE"):
        env.pop(name, None)  # as a reader runs them (a snapshot is written, not required)
    return env


# All pages' examples in one process (TensorFlow is imported once: the test
# stays well under a minute), each page in a directory and a namespace of its
# own. The process ends with os._exit so that no teardown (a tf.data service
# server's stop can take seconds) is timed.
_DRIVER = """
import json, os, pathlib, sys, traceback

def fail(where, line):
    traceback.print_exc()
    print(f"the example at {where}:{line} failed", file=sys.stderr)
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(1)

root = pathlib.Path.cwd()
for n, (page, examples) in enumerate(json.load(open(sys.argv[1]))):
    work = root / f"page{n}"
    work.mkdir()
    os.chdir(work)
    print(f"== {page}", flush=True)
    namespace = {"__name__": "__main__"}
    for where, line, code, mark in examples:
        try:
            if mark == "pytest":
                import pytest
                (work / "test_example.py").write_text(code)
                status = pytest.main(["-q", "-p", "no:cacheprovider", "test_example.py"])
                assert status == 0, f"pytest exit status {status}"
                assert list(work.glob("__snapshots__/*/*.json")), "no snapshot written"
            else:
                exec(compile("\\n" * (line - 1) + code, where, "exec"), namespace)
        except BaseException:
            fail(where, line)
sys.stdout.flush(); sys.stderr.flush()
os._exit(0)
"""


def test_the_examples_are_found():
    assert len(RUN_PAGES) >= 8, [str(p) for p in RUN_PAGES]
    assert PYTEST_BLOCKS and EXCERPTS
    langs = {b.lang for b in ALL}
    assert {"python", "console", "::"} <= langs, langs


@pytest.mark.slow
def test_python_examples_run(tmp_path):
    pages = [
        (
            str(page.relative_to(ROOT)),
            [
                (str(b.page), b.line, b.code, b.mark)  # the page's own lines in tracebacks
                for b in blocks(page)
                if b.lang == "python" and b.mark in (None, "pytest")
            ],
        )
        for page in sorted(RUN_PAGES | {b.page for b in PYTEST_BLOCKS})
    ]
    (tmp_path / "examples.json").write_text(json.dumps(pages))
    (tmp_path / "driver.py").write_text(_DRIVER)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "examples.json")],
        cwd=work,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]


def _squeezed(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


@pytest.mark.parametrize("block", EXCERPTS, ids=[b.where for b in EXCERPTS])
def test_excerpts_are_from_their_file(block):
    source = (ROOT / block.path).read_text()
    assert _squeezed(block.code) in _squeezed(source), (
        f"{block.where} is no longer an excerpt of {block.path}: copy it again"
    )


def test_python_examples_compile():
    for b in ALL:
        if b.lang == "python" and b.mark != "excerpt":
            compile(b.code, b.where, "exec")


# --- shell commands name real subcommands and options -------------------------


def _subcommands(parser) -> dict:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands(code: str) -> list[list[str]]:
    """The ``queue-pipeline`` / ``python -m queue_pipeline`` command lines of a block."""
    logical, out = "", []
    for raw in code.splitlines():
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        logical += line
        if logical.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        text, logical = logical, ""
        if ": error:" in text:
            continue  # a message the command prints, not a command
        for part in re.split(r"&&|(?<!&)&(?!&)", text):
            part = part.strip().replace("[", " ").replace("]", " ")
            if part.startswith("queue-pipeline "):
                out.append(shlex.split(part, comments=True)[1:])
            elif part.startswith("python -m queue_pipeline "):
                out.append(shlex.split(part, comments=True)[3:])
    return out


def _check_command(args: list[str], where: str) -> int:
    from queue_pipeline import cli

    parser = cli.build_parser()
    options = dict(parser._option_string_actions)
    checked = 0
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":  # Beam's own options follow (convert)
            break
        if token.startswith("-"):
            name = token.split("=", 1)[0]
            assert name in options, f"{where}: `{name}` is not an option of {parser.prog}"
            checked += 1
            if "=" not in token and options[name].nargs != 0:
                i += 1  # its value
        else:
            sub = _subcommands(parser)
            if token in sub:
                parser = sub[token]
                options = dict(parser._option_string_actions)
            elif parser.prog.endswith(" run"):
                # the script: only run's own flags may follow it directly
                rest = args[i + 1 :]
                for flag in rest:
                    if flag.split("=", 1)[0] not in ("--engine", "--tf1"):
                        break
                    checked += 1
                break
            elif not sub:
                pass  # a positional argument or an option's value
            else:
                raise AssertionError(f"{where}: `{token}` is not a subcommand of {parser.prog}")
        i += 1
    return checked


def test_shell_commands_name_real_options():
    commands = 0
    for b in ALL:
        if b.lang in ("console", "::", "bash", "shell"):
            for args in _commands(b.code):
                _check_command(args, b.where)
                commands += 1
    assert commands >= 15, commands


def test_the_option_check_catches_a_wrong_flag():
    with pytest.raises(AssertionError, match="--no-such-flag"):
        _check_command(["migrate", "a.py:f", "--no-such-flag"], "here")
    with pytest.raises(AssertionError, match="not a subcommand"):
        _check_command(["no-such-command"], "here")


# --- README -----------------------------------------------------------------

_LINK = re.compile(r"`[^`<]*<(?P<target>[^>]+)>`_")


def test_readme_relative_links_name_files():
    readme = (ROOT / "README.rst").read_text()
    targets = [m.group("target") for m in _LINK.finditer(readme)]
    relative = [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]
    assert len(relative) >= 10, relative
    missing = [t for t in relative if not (ROOT / t.split("#")[0]).is_file()]
    assert not missing, f"README.rst links to files that do not exist: {missing}"


def test_readme_is_short():
    assert len((ROOT / "README.rst").read_text().splitlines()) <= 250


def test_readme_examples_run_in_the_docs():
    """README's Python examples are run as part of a docs page (whose data they use)."""
    readme = [b for b in blocks(ROOT / "README.rst") if b.lang == "python"]
    assert readme
    run = [_squeezed(b.code) for b in ALL if b.lang == "python" and b.mark is None]
    for b in readme:
        assert any(_squeezed(b.code) in code for code in run), (
            f"{b.where} is not an example of docs/: make it one, so that it runs"
        )
