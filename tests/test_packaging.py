"""What the package index would get: an sdist that runs its own tests, metadata that says what
the project is, a short description with links that work there, and test dependencies that are
a dependency group (PEP 735), not a public extra."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tarfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
# What a checkout holds beside its own files, never part of the project.
NOT_OURS = {".git", ".venv", ".nox", "dist", "build", "site", "__pycache__"}


def project_files() -> list[str]:
    """The files of the project: what git tracks, or, in an unpacked sdist (no git), every file
    but what building and running leave behind."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if listed.returncode == 0 and listed.stdout:
        return [name for name in listed.stdout.decode().split("\0") if name]
    return sorted(
        path.relative_to(REPO).as_posix()
        for path in REPO.rglob("*")
        if path.is_file()
        and not NOT_OURS & set(path.relative_to(REPO).parts)
        and not any(part.endswith((".egg-info", "_cache")) for part in path.parts)
        and path.suffix != ".pyc"
    )


def copy_of_the_project(folder: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """The project's files in a new folder, as a fresh clone has them."""
    for name in project_files():
        if not name.startswith(leave_out) and (REPO / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> tarfile.TarFile:
    """The sdist setuptools builds from a fresh clone (what `python -m build --sdist` does,
    without isolation: setuptools>=77 is in the test group)."""
    base = tmp_path_factory.mktemp("sdist")
    clone = copy_of_the_project(base / "amp-clipfix")
    built = subprocess.run(
        [sys.executable, "-c", "import setuptools.build_meta as b; print(b.build_sdist('dist'))"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return tarfile.open(clone / "dist" / built.stdout.split()[-1])


def test_the_sdist_holds_every_file_its_tests_need(sdist: tarfile.TarFile) -> None:
    """Every project file (tests, fixtures, noxfile, scripts, docs, examples) is in it, so its
    tests run in the unpacked folder; nothing a run leaves behind is."""
    names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    missing = sorted(set(project_files()) - names)
    assert missing == [], missing[:20]
    assert {"noxfile.py", "tests/conftest.py", "scripts/rule_pages.py", "mkdocs.yml"} <= names
    assert any(name.startswith("fixtures/runtime/") for name in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "_cache/" in n]


def test_the_description_is_short_and_its_links_work_on_the_index(
    sdist: tarfile.TarFile,
) -> None:
    (pkg_info,) = [n for n in sdist.getnames() if n.count("/") == 1 and n.endswith("/PKG-INFO")]
    extracted = sdist.extractfile(pkg_info)
    assert extracted is not None
    metadata = Parser().parsestr(extracted.read().decode("utf-8"))
    description = metadata.get_payload()
    assert isinstance(description, str)
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert description.strip() == (REPO / "docs" / "pypi.md").read_text(encoding="utf-8").strip()
    assert len(description.splitlines()) < 40
    links = re.findall(r"\]\(([^)]+)\)|<(https?://[^>]+)>", description)
    assert links and all(url.startswith("https://") for pair in links for url in pair if url)
    assert metadata["Author"] or metadata["Author-email"]
    assert "Provides-Extra" not in metadata  # the test tools are a dependency group
    assert not [r for r in metadata.get_all("Requires-Dist") or [] if "torch" in r]
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Source", "Issues", "Documentation"} <= set(urls)


def test_the_classifiers_say_what_the_project_is() -> None:
    classifiers = PYPROJECT["project"]["classifiers"]
    assert len(classifiers) >= 10
    for expected in (
        "Environment :: Console",
        "Intended Audience :: Developers",
        "Topic :: Software Development :: Quality Assurance",
        "Programming Language :: Python :: 3.10",
    ):
        assert expected in classifiers
    # every Python the classifiers name is one requires-python admits
    from packaging.specifiers import SpecifierSet

    admitted = SpecifierSet(PYPROJECT["project"]["requires-python"])
    for classifier in classifiers:
        version = re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", classifier)
        if version:
            assert f"{version.group(1)}.0" in admitted, classifier
    assert not any("License ::" in c for c in classifiers)  # `license` is an SPDX expression


def test_the_test_tools_are_a_dependency_group_with_torch_pinned() -> None:
    group = {
        Requirement(line).name: Requirement(line) for line in PYPROJECT["dependency-groups"]["test"]
    }
    assert str(group["torch"].specifier) == "==2.13.0"  # never a multi-GB CUDA build
    assert str(group["lightning"].specifier) == "==2.6.6"
    assert "optional-dependencies" not in PYPROJECT["project"]
    # The wheel and sdist tests build without isolation: SPDX `license` needs setuptools 77.
    assert group["setuptools"].specifier.contains("77.0") and not group[
        "setuptools"
    ].specifier.contains("76.9")
    build = PYPROJECT["build-system"]["requires"]
    assert any(
        Requirement(r).name == "setuptools" and Requirement(r).specifier.contains("77.0")
        for r in build
    )
    for tool in ("mkdocs", "mkdocs-material", "nox", "uv", "pytest-xdist"):
        assert tool in group, tool


LIBRARIES = {"torch", "lightning", "pytorch_lightning", "lightning_fabric"}


def imported_libraries(function: ast.AST) -> set[str]:
    """torch / Lightning modules a test's own code imports (text in strings does not count)."""
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found & LIBRARIES


def needs_marks(node: ast.FunctionDef | ast.Module) -> set[str]:
    marks = set()
    body = node.body if isinstance(node, ast.Module) else node.decorator_list
    for item in body:
        for call in ast.walk(item):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "needs"
            ):
                marks |= {a.value for a in call.args if isinstance(a, ast.Constant)}
    return marks


def test_every_static_test_that_imports_torch_or_lightning_says_it_needs_them() -> None:
    """Outside tests/runtime (which needs them as a whole and fails, never skips, without them),
    a test that imports torch or Lightning carries `@pytest.mark.needs(...)`, so that a quick
    run where they are not installed skips it, naming them."""
    unmarked = []
    for path in sorted((REPO / "tests").glob("*.py")):
        module = ast.parse(path.read_text(encoding="utf-8"))
        module_needs = needs_marks(module)
        assert (
            not imported_libraries(
                ast.Module(
                    body=[n for n in module.body if not isinstance(n, ast.FunctionDef)],
                    type_ignores=[],
                )
            )
            - module_needs
        ), f"{path.name}: a module-level import of torch or Lightning"
        for node in module.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                wanted = imported_libraries(node) - module_needs - needs_marks(node)
                if wanted:
                    unmarked.append(f"{path.name}::{node.name} imports {sorted(wanted)}")
    assert unmarked == []
