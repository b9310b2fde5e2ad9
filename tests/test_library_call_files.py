"""The migration rules (ACF010 - ACF013) parse only the files that may call their library
callables (analysis/calls.py `library_call_files`): `library_calls` passes a call by name only
when the module writes a callee's last name (`Trainer`), imports a name under one of their
modules (`lightning...`), or relatively imports from a package path holding one. A file that
holds a rule's word (`"16"`) and none of those is not parsed; every way of writing the call is
still found, and the output equals the ungated search's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_incremental import write

from amp_clipfix.analysis import calls
from amp_clipfix.cli import main
from amp_clipfix.rules import acf011

BYSTANDER = 'SIZES = ["16", "32"]  # precision=16 is not set here\n'


def check(root: Path, monkeypatch: pytest.MonkeyPatch, gate: bool) -> tuple[int, str, list[str]]:
    """`check` over the project: its exit code, what it prints, and the files whose calls
    ACF011 looked at (parsed for it); without `gate`, every file holding a word, each call
    of it walked."""
    looked: list[str] = []
    library_calls = calls.library_calls if gate else every_call

    def counted(facts, file, qualified, keywords=None):  # type: ignore[no-untyped-def]
        looked.append(file.path.name)
        return library_calls(facts, file, qualified, keywords)

    with monkeypatch.context() as patched:
        patched.setattr(acf011, "library_calls", counted)
        if not gate:
            patched.setattr(acf011, "CallTest", lambda *_: None)  # no text test: every word file
        patched.chdir(root)
        arguments = ["check", "--no-cache", "--lightning-version", "2.6.6", "--jobs", "1", "."]
        result = CliRunner().invoke(main, arguments)
    return result.exit_code, result.output, sorted(looked)


WAYS = {
    "attribute": "import lightning as L\n\nL.Trainer(precision=16)\n",
    "renamed": "from lightning import Trainer as T\n\nT(precision=16)\n",
    "old-package": "import pytorch_lightning as pl\n\npl.Trainer(precision=16)\n",
    "module-attribute": "from lightning.pytorch import trainer\n\ntrainer.Trainer(precision=16)\n",
    "fabric": "from lightning.fabric import Fabric\n\nFabric(precision='bf16')\n",
    # NFKC: Python reads `Trainer`; the text holds neither `Trainer` nor `lightning`
    "re-exported-nfkc": "from pkg import \uff34rainer\n\n\uff34rainer(precision=16)\n",
    # the callee on other lines than the argument: the call spans the line of its name
    "multi-line": "import lightning as L\n\nL.\\\n    Trainer(\n        precision=16,\n    )\n",
    "in-function": "import lightning as L\n\ndef main():\n    return L.Trainer(precision=16)\n",
}


def every_call(facts, file, qualified, keywords=None):  # type: ignore[no-untyped-def]
    """library_calls as it was: every call of the file walked, the test by name on each
    (the keywords the caller reads not asked)."""
    shorts = {name.rsplit(".", 1)[-1] for name in qualified}
    imports = file.summary.imports
    for node in file.summary.walked_calls():
        last, root = calls.callee_words(node)
        by_name = last in shorts or imports.get(last) in qualified
        if not by_name and not any(
            imports.get(root, "").startswith(q.rsplit(".", 1)[0]) for q in qualified
        ):
            continue
        found = facts.qualified_names(file, node.func) & frozenset(qualified)
        if found:
            yield node, found


@pytest.mark.parametrize("source", list(WAYS.values()), ids=list(WAYS))
def test_every_way_of_calling_is_read_and_bystanders_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    write(tmp_path, "pkg/__init__.py", "from lightning import Trainer\n")
    write(tmp_path, "train.py", source)
    for index in range(4):
        write(tmp_path, f"sizes_{index}.py", BYSTANDER)

    code, output, looked = check(tmp_path, monkeypatch, gate=True)
    ungated = check(tmp_path, monkeypatch, gate=False)

    assert "train.py:" in output and ": ACF011 " in output
    assert looked == ["train.py"]
    assert ungated[2] == ["sizes_0.py", "sizes_1.py", "sizes_2.py", "sizes_3.py", "train.py"]
    assert (code, output) == ungated[:2]


def test_a_relative_import_inside_a_package_of_their_modules_is_read(tmp_path: Path) -> None:
    """`from . import trainer` in `lightning/pytorch/x.py` imports `lightning.pytorch.trainer`
    without writing `lightning` or `Trainer`: the path decides."""
    from amp_clipfix.analysis.facts import ProjectFacts

    text = b"from . import trainer as t\n\nt.make(precision=16)\n"
    asked: list[bool] = []

    class Facts:
        root = tmp_path

        def with_words(self, *words: bytes, where):  # type: ignore[no-untyped-def]
            for name in ("lightning/pytorch/x.py", "other/pytorch/x.py"):
                asked.append(where(tmp_path / name, text))
            return iter(())

    facts: ProjectFacts = Facts()  # type: ignore[assignment]
    list(calls.library_call_files(facts, (b"precision=16",), {"lightning.pytorch.Trainer"}))
    assert asked == [True, False]
