"""The fixed costs of a small project's run (bench/README.md, section `small`): what is imported
or parsed only where it is needed gives what the full path gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement

from amp_clipfix.project.install_readers import install_arguments
from amp_clipfix.project.pin_readers import requirement_pin, simple_requirement

NAMES = ["lightning", "Lightning_Fabric", "pytorch-lightning", "torch", "a.b", "lightning-", "x_"]
EXTRAS = ["", "[extra]", "[a,b]", "[ a , b ]", "[]", "[a b]", "[a,]", "[pytorch-extra]", " [x]"]
OPERATORS = ["==", ">=", "<=", "~=", "!=", "<", ">", "===", "=", "=>", ""]
VERSIONS = ["2.0", "2.0.*", "1!2.0", "2.0rc1", "2.0.post1", "2.0+local", "2.*.0", "abc", "v2", "*"]
SPACE = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def requirement_lines(draw: st.DrawFn) -> str:
    clauses = draw(
        st.lists(
            st.builds(
                lambda op, space, version: op + space + version,
                st.sampled_from(OPERATORS),
                SPACE,
                st.sampled_from(VERSIONS),
            ),
            max_size=3,
        )
    )
    separator = draw(st.sampled_from([",", " ,", ", ", ",,"]))
    tail = draw(st.sampled_from(["", "", ",", " ; python_version > '3'", ")"]))
    name, extras = draw(st.sampled_from(NAMES)), draw(st.sampled_from(EXTRAS))
    return (name + extras + draw(SPACE) + separator.join(clauses) + tail).strip()


@settings(max_examples=600, deadline=None)
@given(requirement_lines())
def test_a_plain_line_reads_as_packaging_requirement_reads_it(line: str) -> None:
    got = simple_requirement(line)
    if got is None:
        return  # packaging.requirements reads it
    requirement = Requirement(line)  # raises if the plain reading took a line it refuses
    assert got == (requirement.name, str(requirement.specifier))


@pytest.mark.parametrize(
    "line",
    ["lightning>=2.0,<3", "lightning[extra] >= 2.0", "pytorch_lightning==1.9.5", "torch ~= 2.4"],
)
def test_common_lines_need_no_packaging_requirements(line: str) -> None:
    requirement = Requirement(line)
    assert simple_requirement(line) == (requirement.name, str(requirement.specifier))


@pytest.mark.parametrize(
    "line",
    [
        "lightning>=2.0; python_version > '3.8'",
        "lightning @ https://example.invalid/l.whl",
        "lightning (>=2.0)",
        "lightning>=2.0.*",  # SpecifierSet refuses it: Requirement says why
        "lightning==" + "1" * 5000,  # past Python's digit limit: the reader's own error
    ],
)
def test_other_lines_are_read_by_packaging_requirements(line: str) -> None:
    assert simple_requirement(line) is None


def test_a_refused_plain_line_keeps_packagings_reason() -> None:
    with pytest.raises(InvalidRequirement) as refused:
        Requirement("lightning>=2.0.*")
    from amp_clipfix.project.pin_readers import PinError

    with pytest.raises(PinError) as error:
        requirement_pin("lightning>=2.0.*", ("lightning",))
    assert str(refused.value).splitlines()[0][:40] in str(error.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RUN pip install lightning==2.0.9", [("lightning==2.0.9", False)]),
        ('RUN "pip" install "lightning==2.0.9"', [("lightning==2.0.9", False)]),
        ("RUN p\\ip ins'tall' -r req.txt", [("req.txt", True)]),
        ("RUN pip \\\n  install torch && echo install", [("torch", False)]),
        (
            "echo install lightning\npython -m pip install -c c.txt x",
            [("c.txt", True), ("x", False)],
        ),
        ("# pip install lightning\nrun: pip3 install lightning", [("lightning", False)]),
        ("pip download lightning\npip-install lightning\ninstall pip", []),
    ],
)
def test_install_commands_are_read_where_quoting_hides_the_words(
    text: str, expected: list[tuple[str, bool]]
) -> None:
    assert list(install_arguments(text)) == expected


PROGRAM = (
    "import runpy, sys\n"
    "sys.argv = ['amp-clipfix', 'check', '--no-cache', '--format', 'json', '.']\n"
    "try:\n"
    "    runpy.run_module('amp_clipfix', run_name='__main__')\n"
    "except SystemExit as end:\n"
    "    print(end.code, 'libcst.codemod' in sys.modules, file=sys.stderr)\n"
)


def checked(tmp_path: Path, code: str) -> tuple[list[str], list[dict]]:
    """`check --format json` of a one-file project: (exit code, whether libcst.codemod was
    imported), and the findings."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "train.py").write_text(code)
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    return run.stderr.split()[-2:], json.loads(run.stdout)["findings"]


def test_a_rules_own_edit_is_reported_without_libcsts_codemods(tmp_path: Path) -> None:
    """ACF012's migration is a text edit of its own: the JSON report gives it (verified with
    libcst's parser) without importing libcst.codemod and its matchers (~0.17 s)."""
    code = "import torch\n\nscaler = torch.cuda.amp.GradScaler(enabled=True)\n"
    end, (finding,) = checked(tmp_path, code)
    assert end == ["1", "False"]
    assert finding["code"] == "ACF012"
    assert [e["replacement"] for e in finding["fix"]["edits"]] == [
        'scaler = torch.amp.GradScaler("cuda", enabled=True)\n'
    ]


FABRIC = """import torch
import lightning as L

fabric = L.Fabric(precision="16-mixed")
model = torch.nn.Linear(2, 2)
opt = torch.optim.AdamW(model.parameters(), fused=True)
model, opt = fabric.setup(model, opt)
fabric.clip_gradients(model, opt, max_norm=1.0)
"""


def test_a_codemods_fix_is_reported_without_libcsts_codemod_commands(tmp_path: Path) -> None:
    """The unscale fix runs as a plain libcst transformer in the pipeline (its codemod command
    is made only for `libcst.tool`): the report's edits are the codemod's."""
    end, findings = checked(tmp_path, FABRIC)
    assert end == ["1", "False"]
    assert [(f["code"], f["fix"]["strategy"]) for f in findings] == [
        ("ACF001", "unscale"),
        ("ACF007", "unscale"),
    ]
    replacements = "".join(e["replacement"] for e in findings[0]["fix"]["edits"])
    assert "clip_gradients_unscaled(fabric, model, opt, max_norm=1.0)" in replacements


def test_each_fix_has_its_codemod_command() -> None:
    from libcst.codemod import VisitorBasedCodemodCommand

    from amp_clipfix.fixes.codemods import commands
    from amp_clipfix.fixes.transform import PASSES

    made = {
        c.STRATEGY: c
        for c in vars(commands).values()
        if isinstance(c, type)
        and c.__module__ == commands.__name__
        and "STRATEGY" in dir(c)
        and c is not commands.SiteCodemod
    }
    assert set(made) == {strategy for strategy, _ in PASSES}
    for strategy, fix in PASSES:
        assert issubclass(made[strategy], VisitorBasedCodemodCommand)
        assert issubclass(made[strategy], fix)
        assert made[strategy].DESCRIPTION == fix.DESCRIPTION
