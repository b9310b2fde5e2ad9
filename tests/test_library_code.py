"""A library's own code in a tree (torch's or Lightning's sources) is never searched; which
files are that code is decided by the module's qualified name, as Python imports it from the
project's packages, never by a folder's name somewhere in the path (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spied import check_counting_parses

from amp_clipfix.paths import library_files

# torch.cuda.amp's GradScaler: ACF012 wherever the project's own code calls it.
OLD_AMP = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_top_level_torch_package_is_not_searched_a_nested_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`torch/testing/old_amp.py` is torch's module `torch.testing.old_amp`: read, never
    parsed, no finding (nor a parse error for its broken neighbour); `mylib/torch/old_amp.py`
    is the project's `mylib.torch.old_amp` and gets its finding."""
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'p'\n",
            "torch/__init__.py": "",
            "torch/testing/__init__.py": "",
            "torch/testing/old_amp.py": OLD_AMP,
            "torch/testing/broken.py": "scaler = torch.cuda.amp.GradScaler(\n",
            "mylib/__init__.py": "",
            "mylib/torch/__init__.py": "",
            "mylib/torch/old_amp.py": OLD_AMP,
        },
    )
    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)
    assert code == 1, output
    lines = output.splitlines()
    assert [line.split(" ")[:2] for line in lines if " ACF" in line and line[0] != " "] == [
        ["mylib/torch/old_amp.py:3:10:", "ACF012"]
    ]
    assert "torch/testing" not in output
    assert "1 finding (1 fixable with --strategy auto) in 1 file (7 files checked)" in output
    assert parsed == ["old_amp.py"]  # mylib's: the one under torch/ was never parsed


def test_the_same_tree_without_its_init_files_is_all_the_project_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `torch/__init__.py` the folder is no package (`old_amp` is a top-level module
    of its own folder): the project's code, searched and found."""
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'p'\n", "torch/old_amp.py": OLD_AMP})
    code, output, _ = check_counting_parses(tmp_path, monkeypatch)
    assert code == 1, output
    assert output.startswith("torch/old_amp.py:3:10: ACF012 "), output


TORCH = ["torch/__init__.py", "torch/amp/__init__.py", "torch/amp/grad_scaler.py"]
SRC_LIGHTNING = ["src/lightning/__init__.py", "src/lightning/data/__init__.py"]
PL = ["pytorch_lightning/__init__.py", "pytorch_lightning/core.py"]
BY_PATH = ["vendor/lightning/pytorch/trainer.py", "v/site-packages/pkg/x.py"]


@pytest.mark.parametrize(
    ("files", "library"),
    [
        # torch's and Lightning's sources in a tree (a `src/` layout too)
        (TORCH, TORCH),
        (SRC_LIGHTNING, SRC_LIGHTNING),
        ([*PL, "tests/__init__.py", "tests/test_core.py"], PL),
        # a package of the project that holds a `torch` or `lightning` package
        (["ray/__init__.py", "ray/train/__init__.py", "ray/train/torch/__init__.py"], []),
        (["mylib/__init__.py", "mylib/torch/__init__.py", "mylib/torch/utils.py"], []),
        (["mylib/__init__.py", "mylib/lightning/__init__.py", "mylib/lightning/x.py"], []),
        # below a namespace folder (no `__init__.py`): `mylib.torch`, `third_party.torch`, and
        # anomalib's `anomalib.data.validators.torch`
        (["mylib/torch/__init__.py", "mylib/torch/utils.py"], []),
        (["third_party/torch/__init__.py", "third_party/torch/nn/x.py"], []),
        (["src/pkg/__init__.py", "src/pkg/validators/torch/__init__.py", "src/pkg/v/t.py"], []),
        # no package at all: a folder of scripts or a lone module named like the library
        (["torch/utils.py", "scripts/torch.py", "lightning.py"], []),
        # `src` a package itself: `src.torch`
        (["src/__init__.py", "src/torch/__init__.py", "src/torch/x.py"], []),
        # Lightning's own package by its path, as before, and site-packages
        (BY_PATH, BY_PATH),
    ],
)
def test_library_files_by_qualified_name(files: list[str], library: list[str]) -> None:
    root = Path("/project")
    found = library_files(root, [root / name for name in files])
    assert found == {root / name for name in library}


def test_the_project_root_s_own_name_makes_no_library() -> None:
    """A project whose root is a package named `torch` (`check torch/` with no project marker
    above it) is searched: its modules' names below the root are all the project shows."""
    root = Path("/work/torch")
    files = [root / "__init__.py", root / "amp" / "__init__.py", root / "amp" / "scaler.py"]
    assert library_files(root, files) == set()
