"""The README's Python stays true: every import in its code blocks works, every `vidload.x.y`
it names exists. (The blocks read data that is not here, e.g. train.txt, so they are not run;
examples/ holds the runnable versions, run by test_train_example.py and test_examples.py.)"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
IMPORT_LINE = re.compile(r"^(?:from \S+ import .+|import \S+.*)$", re.M)


def _vidload_imports(block: str) -> list[ast.stmt]:
    """The block's imports from vidload (a block that is a signature, not code, gives its
    import lines one by one; third-party imports such as dask_jobqueue are the reader's)."""
    try:
        nodes = list(ast.walk(ast.parse(block)))
    except SyntaxError:
        nodes = [ast.parse(line).body[0] for line in IMPORT_LINE.findall(block)]
    out: list[ast.stmt] = []
    for n in nodes:
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "vidload":
            out.append(n)
        elif isinstance(n, ast.Import) and any(a.name.split(".")[0] == "vidload" for a in n.names):
            out.append(n)
    return out


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 8
    assert sum(len(_vidload_imports(b)) for b in BLOCKS) >= 5


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_every_import_in_a_readme_block_works(number):
    for node in _vidload_imports(BLOCKS[number]):
        code = compile(ast.Module(body=[node], type_ignores=[]), f"README block {number}", "exec")
        exec(code, {})  # raises ImportError naming what the README imports and does not exist


def test_every_dotted_vidload_name_in_the_readme_exists():
    names = set(re.findall(r"\bvidload(?:\.[A-Za-z_]\w*)+", TEXT))
    assert "vidload.sampling.SamplingFn" in TEXT
    missing = []
    for dotted in sorted(names):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(dotted)
            break
    assert not missing, f"README names what does not exist: {missing}"


def test_readme_layout_names_every_module():
    """The Development section's Layout block names every module of vidload/ (a module added,
    moved or removed shows up here), and every path it gives exists."""
    block = re.search(r"\*\*Layout\.\*\*.*?```text\n(.*?)```", TEXT, flags=re.S)
    assert block is not None
    text = block.group(1)
    package = README.parent / "vidload"
    words = set(re.findall(r"[\w.]+", text))
    missing = [
        p.name for p in sorted(package.glob("*.py")) if p.name not in words and p.stem not in words
    ]
    missing += [
        f"{p.name}/"
        for p in sorted(package.iterdir())
        if (p / "__init__.py").is_file() and f"{p.name}/" not in text
    ]
    assert missing == []
    for path in re.findall(r"vidload/[\w/]*\w(?:\.py)?/?", text):
        assert (README.parent / path).exists(), path


def _readme_signatures() -> list[tuple[str, ast.arguments]]:
    """Every `Name(param, ..., *, param=default, ...)` written at the start of a line in a
    README python block, for a name of `vidload.__all__`, parsed as a `def` (a call with
    real arguments, e.g. `ClipDataset("train.txt", ...)`, is not a signature and is skipped)."""
    import vidload

    found = []
    for block in BLOCKS:
        for m in re.finditer(r"^(\w+)\(", block, flags=re.M):
            if m.group(1) not in vidload.__all__:
                continue
            depth, end = 0, m.end() - 1
            for end in range(m.end() - 1, len(block)):
                depth += {"(": 1, ")": -1}.get(block[end], 0)
                if depth == 0:
                    break
            try:
                tree = ast.parse(f"def {block[m.start() : end + 1]}: pass")
            except SyntaxError:
                continue
            func = tree.body[0]
            assert isinstance(func, ast.FunctionDef)
            found.append((m.group(1), func.args))
    return found


def test_readme_signatures_match_the_code():
    """A signature the README writes out names every parameter, in the right kind (positional
    or keyword-only) and with the right default (a parameter added to the code and not to the
    README, as `fps=` once was, fails here)."""
    import inspect

    import vidload

    signatures = _readme_signatures()
    assert {name for name, _ in signatures} >= {"ClipDataset", "VideoSource", "NpySource"}
    for name, args in signatures:
        params = [
            p
            for p in inspect.signature(getattr(vidload, name)).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        positional = zip(args.posonlyargs + args.args, _defaults(args), strict=True)
        keyword_only = zip(args.kwonlyargs, args.kw_defaults, strict=True)
        written = [(a.arg, False, d) for a, d in positional]
        written += [(a.arg, True, d) for a, d in keyword_only]
        names = [p.name for p in params]
        missing = [n for n in names if n not in {w[0] for w in written}]
        assert [w[0] for w in written] == names, f"{name}: README lacks {missing} or the order"
        for (arg, keyword_only, default), p in zip(written, params, strict=True):
            assert keyword_only == (p.kind is p.KEYWORD_ONLY), f"{name}({arg})"
            if default is None:
                assert p.default is p.empty, f"{name}({arg}): the code has a default"
            else:
                got = ast.literal_eval(default)
                assert got == p.default, f"{name}({arg}={got!r}): the code's is {p.default!r}"


def _defaults(args: ast.arguments) -> list[ast.expr | None]:
    """One default (or None) per positional parameter."""
    positional = args.posonlyargs + args.args
    return [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
