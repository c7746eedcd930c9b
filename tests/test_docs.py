"""README.md stays a ten-minute read, and every relative link of README.md and docs/*.md (and
every anchor it names) leads somewhere that exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_WORDS = 3200
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def prose(text: str) -> str:
    """The text without its fenced code blocks, where brackets and hashes are not Markdown."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(page.read_text()).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    """Every link target of the page that is not a web address or a mail address."""
    text = CODE.sub("", prose(page.read_text()))
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_readme_reads_in_about_ten_minutes():
    words = len(README.read_text().split())
    assert words <= MAX_README_WORDS, f"README.md has {words} words (at most {MAX_README_WORDS})"


def test_the_slug_follows_github():
    assert slug("Faults: what happens to trials") == "faults-what-happens-to-trials"
    assert slug("The dashboard (/ui)") == "the-dashboard-ui"
    assert slug("`bayes`: Bayesian optimization") == "bayes-bayesian-optimization"


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target}: no {destination.relative_to(ROOT)}")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in relative_links(README)}
    pages = {page.resolve() for page in PAGES[1:]}
    assert pages <= linked, sorted(str(page) for page in pages - linked)


def layout_directories() -> list[str]:
    """The directories the README's layout block lists, as paths (nesting by two spaces)."""
    text = README.read_text()
    section = re.search(r"^### Layout\n.*?^```\n(.*?)^```", text, re.M | re.S)
    assert section, "README.md has no layout block under '### Layout'"
    listed: list[str] = []
    parents: list[str] = []
    for line in section.group(1).splitlines():
        match = re.match(r"( *)(\S+/)(?:\s|$)", line)
        if not match:
            continue
        depth = len(match.group(1)) // 2
        parents[depth:] = [match.group(2)]
        listed.append("".join(parents))
    return listed


def tracked_files() -> list[str]:
    """Every file git tracks (a directory left behind by a move holds none)."""
    listing = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return listing.stdout.splitlines()


def packages() -> set[str]:
    """The directories right under app, worker, experiments and client that hold tracked
    files: the packages the layout must name."""
    return {
        "/".join(path.split("/")[:2]) + "/"
        for path in tracked_files()
        if path.startswith(("app/", "worker/", "experiments/", "client/")) and path.count("/") >= 2
    }


def test_the_layout_lists_the_real_tree():
    listed = layout_directories()
    tracked = tracked_files()
    missing = [path for path in listed if not any(file.startswith(path) for file in tracked)]
    assert not missing, f"the README's layout lists directories that do not exist: {missing}"
    unlisted = sorted(
        package for package in packages() if not any(path.startswith(package) for path in listed)
    )
    assert not unlisted, f"the README's layout leaves out {unlisted}"


def test_every_make_target_the_readme_names_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w-]*):", makefile, re.M))
    named = set(re.findall(r"`make ([a-z][\w-]*)`|^make ([a-z][\w-]*)", README.read_text(), re.M))
    missing = sorted({first or second for first, second in named} - targets)
    assert not missing, f"README.md names make targets the Makefile lacks: {missing}"


REPO_PATH = re.compile(
    r"`((?:app|worker|experiments|client|tests|benchmarks|deploy|notebooks|data|migrations"
    r"|scripts|docs)/[\w./-]*)`"
)


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_file_the_docs_name_is_tracked(page: Path):
    tracked = tracked_files()
    named = set(REPO_PATH.findall(page.read_text()))
    missing = sorted(path for path in named if not any(f.startswith(path) for f in tracked))
    assert not missing, f"{page.relative_to(ROOT)} names files git does not track: {missing}"
