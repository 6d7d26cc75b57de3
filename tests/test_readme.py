"""The Python examples of the README and of docs/ run, and print what the pages say they print.

Conventions in README.md and docs/*.md (Markdown comments, invisible when rendered):

- Every ```python block is a complete program: it runs alone, in a fresh
  subprocess of the current interpreter, in an empty temporary directory, and
  must exit 0. Examples use no syntax newer than Python 3.9.
- ``<!-- not-run: why -->`` on the line before a ```python block leaves it out
  (a signature summary, a fragment).
- ``<!-- requires: module[, module...] -->`` on the line before a block skips it
  when one of the modules is not importable here (paddle is installed in only
  two of the matrix's venvs).
- ``<!-- output -->`` on the line before a ```text block that follows a Python
  block (blank lines apart) makes that text the block's exact standard output.
- Blocks in other languages (```sh, ```console, ```c, ```rust, ```text) are
  for reading only; ```console shows commands with their output.

The same module checks that the relative links of README.md, CHANGELOG.md and
docs/*.md point at files that exist, and at headings that exist in them.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Optional
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
# The pages whose examples run: the README and every page of docs/.
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
# Pages that hold runnable examples: if one of them is not found, or parsed to none, the
# examples silently stop running.
PAGES_WITH_EXAMPLES = {"README.md", "docs/api.md", "docs/sot.md", "docs/paddle.md"}
MARKER = re.compile(r"^<!--\s*([\w-]+)\s*:?\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\S*)\s*$")


class Block(NamedTuple):
    page: str  # relative to the repository, e.g. docs/api.md
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    markers: dict
    heading: str


class Example(NamedTuple):
    block: Block
    expected_output: Optional[str]


def parse_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a page, with the markers on the lines just before it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    heading = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        fence = FENCE.match(line)
        if fence is None:
            index += 1
            continue
        markers = {}
        back = index - 1
        while back >= 0 and MARKER.match(lines[back].strip()):
            name, value = MARKER.match(lines[back].strip()).groups()
            markers[name] = value
            back -= 1
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        assert end < len(lines), f"{page} line {index + 1}: unclosed code block"
        blocks.append(Block(page, index + 1, fence.group(1), "\n".join(lines[index + 1:end]) + "\n", markers, heading))
        index = end + 1
    return blocks


def page_examples(page: Path) -> list[Example]:
    name = page.relative_to(REPO).as_posix()
    blocks = parse_blocks(page.read_text(encoding="utf-8"), name)
    examples = []
    for position, block in enumerate(blocks):
        if block.language != "python":
            assert "output" not in block.markers or block.language == "text", (
                f"{name} line {block.line}: <!-- output --> marks a ```text block"
            )
            continue
        expected = None
        following = blocks[position + 1] if position + 1 < len(blocks) else None
        if following is not None and "output" in following.markers:
            assert following.language == "text", f"{name} line {following.line}: output blocks are ```text"
            expected = following.code
        examples.append(Example(block, expected))
    return examples


def example_id(example: Example) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", example.block.heading.lower()).strip("-")
    return f"{example.block.page}-line{example.block.line}-{slug}"


EXAMPLES = [example for page in PAGES for example in page_examples(page)]


def test_the_pages_have_runnable_examples():
    runnable = [example for example in EXAMPLES if "not-run" not in example.block.markers]
    assert len(runnable) >= 10
    assert PAGES_WITH_EXAMPLES <= {example.block.page for example in runnable}
    # Each marked output belongs to a runnable block.
    assert all(example.expected_output is None or "not-run" not in example.block.markers for example in EXAMPLES)


def test_the_examples_are_python_3_9():
    """Every runnable example parses with 3.9's grammar (3.9 also runs them, in the matrix)."""
    for example in EXAMPLES:
        if "not-run" not in example.block.markers:
            ast.parse(example.block.code, f"{example.block.page} line {example.block.line}", feature_version=(3, 9))


RUNNABLE = [example for example in EXAMPLES if "not-run" not in example.block.markers]


@pytest.mark.parametrize("example", RUNNABLE, ids=[example_id(example) for example in RUNNABLE])
def test_example_runs(example: Example, tmp_path: Path):
    block = example.block
    where = f"{block.page} line {block.line}"
    for module in filter(None, re.split(r"[,\s]+", block.markers.get("requires", ""))):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{where} needs {module}, which is not installed here")
    script = tmp_path / f"{Path(block.page).stem.lower()}_line_{block.line}.py"
    script.write_text(block.code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"{where} exited {result.returncode}\n"
        f"--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    )
    if example.expected_output is not None:
        assert result.stdout.rstrip().splitlines() == example.expected_output.rstrip().splitlines(), (
            f"{where} printed something else than the page shows\n"
            f"--- stderr\n{result.stderr}"
        )


# ------------------------------------------------------------------ links

DOCUMENTS = [*PAGES, REPO / "CHANGELOG.md"]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors_of(document: Path) -> set:
    anchors = set()
    counts: dict = {}
    in_fence = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line) or line.rstrip() == "```":
            in_fence = not in_fence
            continue
        if in_fence or not line.startswith("#"):
            continue
        anchor = github_anchor(line.lstrip("#"))
        seen = counts.get(anchor, 0)
        counts[anchor] = seen + 1
        anchors.add(anchor if seen == 0 else f"{anchor}-{seen}")
    return anchors


def relative_links(document: Path) -> list[tuple[int, str]]:
    links = []
    in_fence = False
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line) or line.rstrip() == "```":
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in LINK.finditer(line):
            target = match.group(1) or match.group(2)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):
                links.append((number, target))
    return links


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if d.exists()], ids=lambda d: d.relative_to(REPO).as_posix())
def test_relative_links_resolve(document: Path):
    broken = []
    for number, target in relative_links(document):
        path, _, anchor = target.partition("#")
        resolved = (document.parent / unquote(path)).resolve() if path else document
        if not resolved.exists():
            broken.append(f"line {number}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
            broken.append(f"line {number}: {target} (no such heading)")
    assert not broken, f"{document.relative_to(REPO)}: broken links:\n" + "\n".join(broken)
