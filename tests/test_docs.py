"""The docs stay true: every ```python block of README.md and docs/**/*.md runs.

Each page's blocks run in order, in one namespace, in a fresh temporary working directory that
holds `videos/` (tiny generated videos in class folders, `videos/<class>/<name>.mp4`) and
`train.txt` (an mmaction2 `path label` list of them, relative to `videos/`); anything else a
snippet needs, it makes itself. A block whose fence is directly preceded by the line
`<!-- not run: REASON -->` is not run (a cluster, a GPU, a bucket, a signature): its vidload
imports must still work. Besides running them: every dotted `vidload.x.y` name the pages write
exists, every signature they write out (`ClipDataset(videos, source, ...)` at the start of a line)
matches `inspect.signature`, and the Layout block of docs/development.md names every module.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from media import make_video, paint
from servers import S3Bucket

from vidload.sources.jpeg import write_jpeg_folder
from vidload.sources.jpeg_decode import encode_jpeg

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PYTHON = {"python", "py", "python3"}
NOT_RUN = re.compile(r"^\s*<!-- not run: (\S.*?) -->\s*$")
OPEN_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)")

#: the fixture the snippets see: class folder -> video names (each FRAMES frames, W x H)
CLASSES = {"abseiling": ["x1", "x2"], "juggling": ["y1", "y2"]}
FRAMES, W, H = 32, 160, 120


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the first code line
    lang: str
    code: str
    not_run: str | None  # the reason, when the block is marked not run

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of `page` (any language; fences inside fences are code, not fences),
    its code dedented by the fence's indentation (a block in a list item or an admonition)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = OPEN_FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence = len(m.group("indent")), m.group("fence")
        marker = NOT_RUN.match(lines[i - 1]) if i > 0 else None
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            raise AssertionError(f"{page.relative_to(ROOT)}:{i + 1}: unclosed {fence} fence")
        reason = marker.group(1) if marker else None
        out.append(Block(page, i + 2, m.group("lang").lower(), "\n".join(body) + "\n", reason))
        i = j + 1
    return out


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in PYTHON]


ALL_PYTHON = [b for page in PAGES for b in python_blocks(page)]


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.fixture(scope="session")
def snippet_data(tmp_path_factory) -> Path:
    """`videos/<class>/<name>.mp4` (painted frames, see `media.paint`) and `train.txt`."""
    root = tmp_path_factory.mktemp("docs_data")
    lines = []
    for label, (cls, names) in enumerate(sorted(CLASSES.items())):
        for name in names:
            make_video(root / "videos" / cls / f"{name}.mp4", FRAMES, width=W, height=H)
            lines.append(f"{cls}/{name}.mp4 {label}")
    (root / "train.txt").write_text("\n".join(lines) + "\n")
    official_layouts(root)
    return root


#: what `official_layouts` adds beside videos/ and train.txt (the Datasets guide, the README)
OFFICIAL = ("UCF-101", "ucfTrainTestlist", "hmdb51", "testTrainMulti_7030_splits", "kinetics400",
            "ssv2", "EPIC-KITCHENS", "EPIC_100_train.csv", "Charades_v1_480",
            "Charades_v1_train.csv", "Charades_v1_classes.txt")  # fmt: skip


def official_layouts(root: Path) -> None:
    """Miniature copies of the official datasets as downloaded, for the snippets that read
    them (two classes, a few short videos each, the split files as the archives hold them)."""
    ucf = ["ApplyEyeMakeup", "Basketball"]
    for cls in ucf:
        for g in (1, 8):
            make_video(root / f"UCF-101/{cls}/v_{cls}_g{g:02d}_c01.avi", 16, width=W, height=H,
                       codec="mpeg4")  # fmt: skip
    ann = root / "ucfTrainTestlist"
    ann.mkdir()
    (ann / "classInd.txt").write_bytes(b"1 ApplyEyeMakeup\r\n2 Basketball\r\n")
    (ann / "trainlist01.txt").write_bytes(
        "".join(f"{c}/v_{c}_g08_c01.avi {k + 1}\r\n" for k, c in enumerate(ucf)).encode()
    )
    (ann / "testlist01.txt").write_bytes(
        "".join(f"{c}/v_{c}_g01_c01.avi\r\n" for c in ucf).encode()
    )
    splits = root / "testTrainMulti_7030_splits"
    splits.mkdir()
    for cls in ("brush_hair", "pour"):
        for n in (0, 1):  # the videos tagged 1 (train) and 2 (test); tag 0 is not there
            make_video(root / f"hmdb51/{cls}/{cls}_u_nm_np1_fr_goo_{n}.avi", 16, width=W,
                       height=H, codec="mpeg4")  # fmt: skip
        text = "".join(f"{cls}_u_nm_np1_fr_goo_{n}.avi {t} \n" for n, t in ((0, 1), (1, 2), (2, 0)))
        (splits / f"{cls}_test_split1.txt").write_text(text)
    kin = root / "kinetics400"
    csv = ["label,youtube_id,time_start,time_end,split"]
    for k, (cls, names) in enumerate(sorted(CLASSES.items())):
        for j, name in enumerate(names):
            yid = f"{name}yid{k}{j}abc"
            csv.append(f"{cls},{yid},{10 * j},{10 * j + 10},train")
            dest = kin / "train" / cls / f"{yid}_{10 * j:06d}_{10 * j + 10:06d}.mp4"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / "videos" / cls / f"{name}.mp4", dest)
    csv.append("juggling,gone_video1,0,10,train")  # taken down from YouTube: not downloaded
    (kin / "train.csv").write_text("\n".join(csv) + "\n")
    sth = root / "ssv2"
    labels = {
        "Holding something next to something": "0",
        "Pushing something from left to right": "1",
    }
    (sth / "labels").mkdir(parents=True)
    (sth / "labels" / "something-something-v2-labels.json").write_text(json.dumps(labels))
    items = [
        {"id": "78687", "label": "holding potato next to vicks vaporub bottle",
         "template": "Holding [something] next to [something]", "placeholders": ["potato"]},
        {"id": "42326", "label": "pushing pen from left to right",
         "template": "Pushing [something] from left to right", "placeholders": ["pen"]},
    ]  # fmt: skip
    for name in ("train", "validation"):
        (sth / "labels" / f"something-something-v2-{name}.json").write_text(json.dumps(items))
    for item in items:
        make_video(sth / "20bn-something-something-v2" / f"{item['id']}.webm", 16, width=W,
                   height=H, codec="libvpx-vp9")  # fmt: skip
    make_video(root / "EPIC-KITCHENS/P01/videos/P01_01.MP4", 100, width=W, height=H)  # 4 s
    (root / "EPIC_100_train.csv").write_text(
        "narration_id,participant_id,video_id,narration_timestamp,start_timestamp,"
        "stop_timestamp,start_frame,stop_frame,narration,verb,verb_class,noun,noun_class\n"
        "P01_01_0,P01,P01_01,00:00:00.50,00:00:00.20,00:00:01.60,11,80,open door,open,3,door,8\n"
        "P01_01_1,P01,P01_01,00:00:02.00,00:00:01.90,00:00:03.80,95,190,take cup,take,0,cup,13\n"
    )
    write_jpeg_folder(root / "EPIC-KITCHENS/P01/rgb_frames/P01_01",
                      [encode_jpeg(paint(i, W, H), quality=90) for i in range(100)],
                      template="frame_{:010d}.jpg")  # fmt: skip
    make_video(root / "Charades_v1_480/46GP8.mp4", 100, width=W, height=H)  # 4 s
    make_video(root / "Charades_v1_480/0IH69.mp4", 25, width=W, height=H)
    (root / "Charades_v1_train.csv").write_text(
        "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"
        '46GP8,HR43,Kitchen,6,7,Yes,"A person opens a door.",door,"Opens.",'
        "c092 1.00 2.50;c147 0.00 1.20;c001 0.00 1.20,4.00\n"
        '0IH69,HR44,Bedroom,5,7,Yes,"A person sits.",chair,"Sits.",,1.00\n'
    )
    (root / "Charades_v1_classes.txt").write_text(
        "".join(f"c{k:03d} Class {k}\n" for k in range(157))
    )


def test_the_docs_have_pages_and_python():
    names = {_id(p) for p in PAGES}
    assert len(ALL_PYTHON) >= 10
    assert {"README.md", "docs/index.md", "docs/getting-started.md", "docs/development.md"} <= names
    assert {"docs/reference/cli.md", "docs/reference/api.md"} <= names


def test_markers_sit_on_python_fences():
    """A `not run` marker must be the line directly above a python fence (anywhere else it
    would silently mark nothing), and the reason must be a real one."""
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        marked = {b.line - 3 for b in python_blocks(page) if b.not_run}  # 0-based marker line
        for k, line in enumerate(lines):
            m = NOT_RUN.match(line)
            if m:
                where = f"{_id(page)}:{k + 1}"
                assert k in marked, f"{where}: a `not run` marker not directly above ```python"
                assert len(m.group(1)) >= 8, f"{where}: give the reason"


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=_id)
def test_every_python_block_of_a_page_runs(page, snippet_data, tmp_path, monkeypatch, request):
    """The page's blocks, in order, in one namespace, in a fresh copy of the snippet data.

    A page whose blocks name an `s3://` URL runs against the tests' local S3 server (moto on
    127.0.0.1, `tests/servers.py`): the standard AWS variables point at it (so code written for
    a real bucket runs as it is) and an empty bucket `s3://bucket` exists for the page, deleted
    after it. Without moto/s3fs installed such a page is skipped."""
    for item in ("videos", "train.txt", *OFFICIAL):
        src = snippet_data / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / item)
    monkeypatch.chdir(tmp_path)
    if any("s3://" in b.code for b in python_blocks(page) if not b.not_run):
        server = request.getfixturevalue("s3_server")
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        request.addfinalizer(S3Bucket(server, "bucket").delete)
    namespace: dict = {"__name__": "__docs__"}
    for block in python_blocks(page):
        if block.not_run:
            _check_imports(block)
            continue
        # padded so that a traceback gives the page's line numbers
        code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
        exec(code, namespace)


def _check_imports(block: Block) -> None:
    """A block that is not run still imports only what vidload has."""
    for node in _vidload_imports(block.code):
        code = compile(ast.Module(body=[node], type_ignores=[]), block.where, "exec")
        exec(code, {})  # raises ImportError naming what the page imports and does not exist


IMPORT_LINE = re.compile(r"^(?:from \S+ import .+|import \S+.*)$", re.M)


def _vidload_imports(code: str) -> list[ast.stmt]:
    """The block's imports from vidload (a block that is a signature, not code, gives its
    import lines one by one; third-party imports such as dask_jobqueue are the reader's)."""
    try:
        nodes = list(ast.walk(ast.parse(code)))
    except SyntaxError:
        nodes = [ast.parse(line).body[0] for line in IMPORT_LINE.findall(code)]
    out: list[ast.stmt] = []
    for n in nodes:
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "vidload":
            out.append(n)
        elif isinstance(n, ast.Import) and any(a.name.split(".")[0] == "vidload" for a in n.names):
            out.append(n)
    return out


def test_every_dotted_vidload_name_exists():
    missing = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for dotted in sorted(set(re.findall(r"\bvidload(?:\.[A-Za-z_]\w*)+", text))):
            if not _resolves(dotted):
                missing.append(f"{_id(page)}: {dotted}")
    assert not missing, f"the docs name what does not exist: {missing}"


def _resolves(dotted: str) -> bool:
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
            return False
        return True
    return False


def test_development_layout_names_every_module():
    """The Layout block of docs/development.md names every module of vidload/ (a module added,
    moved or removed shows up here), and every path it gives exists."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    block = re.search(r"## Layout\n.*?```text\n(.*?)```", text, flags=re.S)
    assert block is not None, "docs/development.md has a `## Layout` section with a text block"
    layout = block.group(1)
    package = ROOT / "vidload"
    words = set(re.findall(r"[\w.]+", layout))
    missing = [
        p.name for p in sorted(package.glob("*.py")) if p.name not in words and p.stem not in words
    ]
    missing += [
        f"{p.name}/"
        for p in sorted(package.iterdir())
        if (p / "__init__.py").is_file() and f"{p.name}/" not in layout
    ]
    assert missing == []
    for path in re.findall(r"vidload/[\w/]*\w(?:\.py)?/?", layout):
        assert (ROOT / path).exists(), path


def _signatures() -> list[tuple[str, str, ast.arguments]]:
    """Every `Name(param, ..., *, param=default, ...)` written at the start of a line in a
    python block, for a name of `vidload.__all__`, parsed as a `def` (a call with real
    arguments, e.g. `ClipDataset("train.txt", ...)`, is not a signature and is skipped)."""
    import vidload

    found = []
    for block in ALL_PYTHON:
        code = block.code
        for m in re.finditer(r"^(\w+)\(", code, flags=re.M):
            if m.group(1) not in vidload.__all__:
                continue
            depth, end = 0, m.end() - 1
            for end in range(m.end() - 1, len(code)):
                depth += {"(": 1, ")": -1}.get(code[end], 0)
                if depth == 0:
                    break
            try:
                tree = ast.parse(f"def {code[m.start() : end + 1]}: pass")
            except SyntaxError:
                continue
            func = tree.body[0]
            assert isinstance(func, ast.FunctionDef)
            found.append((block.where, m.group(1), func.args))
    return found


def test_written_signatures_match_the_code():
    """A signature the docs write out names every parameter, in the right kind (positional or
    keyword-only) and with the right default (a parameter added to the code and not to the
    docs, as `fps=` once was, fails here)."""
    import vidload

    signatures = _signatures()
    assert {name for _, name, _ in signatures} >= {"ClipDataset", "VideoSource", "NpySource"}
    for where, name, args in signatures:
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
        assert [w[0] for w in written] == names, f"{where} {name}: lacks {missing} or the order"
        for (arg, kw_only, default), p in zip(written, params, strict=True):
            assert kw_only == (p.kind is p.KEYWORD_ONLY), f"{where} {name}({arg})"
            if default is None:
                assert p.default is p.empty, f"{where} {name}({arg}): the code has a default"
            else:
                got = ast.literal_eval(default)
                assert got == p.default, f"{where} {name}({arg}={got!r}): code: {p.default!r}"


def _defaults(args: ast.arguments) -> list[ast.expr | None]:
    """One default (or None) per positional parameter."""
    positional = args.posonlyargs + args.args
    return [None] * (len(positional) - len(args.defaults)) + list(args.defaults)


def test_the_parser_finds_markers_and_indented_blocks(tmp_path):
    """The block reader itself: a marker directly above marks its block only, an indented
    fence (a list item) is dedented, a fence inside a longer fence is code."""
    page = tmp_path / "p.md"
    page.write_text(
        "text\n<!-- not run: needs a cluster -->\n```python\nx = 1\n```\n\n"
        "- item\n\n    ```python\n    y = 2\n    ```\n\n"
        "````markdown\n```python\nnot a block\n```\n````\n"
    )
    got = blocks(page)
    assert [(b.lang, b.code, b.not_run, b.line) for b in got] == [
        ("python", "x = 1\n", "needs a cluster", 4),
        ("python", "y = 2\n", None, 10),
        ("markdown", "```python\nnot a block\n```\n", None, 14),
    ]


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict`, as .ci/run runs it: a broken link or anchor, a page left out of
    the nav, or a docstring mkdocstrings cannot parse (`a, b:` in an Args section) fails here
    too, so the test suite alone keeps the site building."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the docs extra)")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (the docs extra)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    problems = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0, "\n".join(problems) or done.stderr[-3000:]
    assert (tmp_path / "reference" / "cli" / "index.html").is_file()
