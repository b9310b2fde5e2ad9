"""The YAML key scan (analysis/config_sites.may_hold_sites): a config whose text can give no
site or fit is not composed, only checked to parse; one that can is read and reported as
before, and a broken config is reported whatever it holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis import config_sites
from amp_clipfix.analysis.config_sites import ConfigReader, collect_config_sites, may_hold_sites
from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line
from amp_clipfix.sources import yaml as yaml_source
from amp_clipfix.sources.base import VerifyError
from amp_clipfix.sources.text import SourceError
from tests import test_configs

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
cli_project = test_configs.cli_project  # the fixture: a copy of the LightningCLI example

# Texts the scan rules out: each gives no site and no fit when composed.
NO_SITES = [
    "trainer:\n  precision: 32\n  gradient_clip_val: 0.0\n",
    "trainer:\n  precision: '32-true'  # full\n  max_epochs: 3\n",
    "optimizer:\n  _target_: torch.optim.AdamW\n  fused: false\n",
    "# half precision would be fused\nmodel:\n  output_precision: 3\n  name: fused_adam\n",
    "model:\n  encoder:\n    _target_: pkg.Encoder\ntrainer:\n  precision: 64\n",
    "a: &p 1\ntrainer:\n  precision: 32\n  devices: *p\n",
    "- precision: 32\n  other: 1\n- gradient_clip_val: null\n",
]
# Texts the scan lets through: the reader finds a site or a fit in each.
SITES = [
    "trainer:\n  precision: 16-mixed\n",
    "trainer:\n  precision: 32\n    ${oops}\n",  # the value goes on: "32 ${oops}"
    "trainer:\n  precision: ${train.precision}\n",
    "trainer:\n  gradient_clip_val: 0.5\n",
    "optimizer:\n  _target_: torch.optim.AdamW\n  fused: true\n",
    "optimizer: {\n  fused: false\n  x}\n",  # a flow mapping: "false x"
    "model:\n  _target_: pkg.Model\ntrainer:\n  precision: 32\n",
    "model:\n  - class_path: pkg.Model\n",
    "base: &m\n  _target_: pkg.Model\nmodel:\n  <<: *m\n",
    "p: &k precision\ntrainer:\n  *k : 16\n",
    'trainer:\n  "preci\\u0073ion": 16\n',
    "trainer: {precision: 16}\n",
]


def reads(text: str) -> tuple[int, int]:
    reader = ConfigReader(Path("c.yaml"), text)
    for root in yaml_source.compose_documents(text):
        reader.read(root)
    return len(reader.sites), len(reader.models)


@pytest.mark.parametrize("text", NO_SITES)
def test_the_scan_rules_out_a_config_with_no_site(text: str) -> None:
    assert not may_hold_sites(text)
    assert reads(text) == (0, 0)


@pytest.mark.parametrize("text", SITES)
def test_the_scan_lets_through_a_config_with_a_site(text: str) -> None:
    assert may_hold_sites(text)
    assert reads(text) != (0, 0)


def test_a_ruled_out_config_is_not_composed(monkeypatch: pytest.MonkeyPatch) -> None:
    composed: list[str] = []
    real = config_sites.compose_documents
    monkeypatch.setattr(config_sites, "compose_documents", lambda t: composed.append(t) or real(t))
    assert collect_config_sites(Path("c.yaml"), NO_SITES[0]).sites == ()
    assert composed == []
    assert len(collect_config_sites(Path("c.yaml"), SITES[0]).sites) == 1
    assert composed == [SITES[0]]


@pytest.mark.parametrize(
    "text",
    [
        "trainer:\n  precision: 32\n  devices: [1\n",  # libyaml's error: ruamel says why
        "trainer:\n  precision: 32\n" + "[" * 300 + "]" * 300 + "\n",  # deeper than ruamel goes
    ],
)
def test_a_ruled_out_config_that_does_not_parse_still_fails(text: str) -> None:
    assert not may_hold_sites(text)
    with pytest.raises(SourceError) as raised:
        yaml_source.compose_documents(text)
    with pytest.raises(SourceError) as scanned:
        collect_config_sites(Path("c.yaml"), text)
    assert str(scanned.value) == str(raised.value)


def check(*args: str):  # noqa: ANN201
    return CliRunner().invoke(main, ["check", *args, "--lightning-version", "2.6.6", "."])


def test_a_broken_config_that_cannot_matter_is_still_reported(cli_project: Path) -> None:
    (cli_project / "full.yaml").write_text("trainer:\n  precision: 32\n")
    result = check()  # read, no site: nothing more to say
    assert result.exit_code == 1 and "full.yaml" not in result.output
    (cli_project / "full.yaml").write_text("trainer:\n  precision: 32\n  devices: [1\n")
    result = check()
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if is_error_line(line)]
    assert len(errors) == 1 and "full.yaml: error: 4:1: cannot parse YAML" in errors[0]
    assert "config.yaml" in result.output  # the config that matters is still reported


def test_a_config_that_matters_is_read_and_reported(cli_project: Path) -> None:
    text = (cli_project / "config.yaml").read_text()
    assert may_hold_sites(text)
    result = check()
    assert result.exit_code == 1 and "config.yaml:14:" in result.output  # `fused: true`


def test_a_fixed_config_is_checked_to_parse_without_composing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = yaml_source.YamlSource()
    document = source.load(Path("c.yaml"), b"optimizer:\n  fused: true\n")
    composed: list[str] = []
    real = yaml_source.compose_documents
    monkeypatch.setattr(yaml_source, "compose_documents", lambda t: composed.append(t) or real(t))
    fixed = "optimizer:\n  fused: false\n"
    assert source.render(document, fixed).data == fixed.encode()
    assert composed == []
    with pytest.raises(VerifyError) as raised:
        source.render(document, "optimizer:\n  fused: [false\n")
    assert str(raised.value) == (
        "the fixed config does not parse: 3:1: cannot parse YAML: "
        "expected ',' or ']', but got '<stream end>'"
    )


# libyaml composes what ruamel would (sources/yaml.libyaml_documents), node for node; where it
# may not, ruamel composes.
LIBYAML_TEXTS = [
    "a: &x 1\nb: *x\nbase: &m {c: 2}\nd:\n  <<: *m\n  e: 1.5\n",
    "f: yes\ng: 1_000\nh: '2'\ni: !!str 3\nj: |\n  literal\nk: \"q\\u00e9\"\nl: ~\n",
    "- precision: 16-mixed\n- [1, 2, {x: null}]\n---\nsecond: doc\n",
    "trainer:\r\n  precision: bf16  # crlf\r\n",
    "a:\nb: 1\n",  # a block mapping's empty value: marked as ruamel marks it (plain_empty_values)
]
RUAMEL_TEXTS = [
    "a: >-\n  folded\n",  # ruamel marks each fold
    "a:  # c\nb: 1\n",  # an empty value after a comment: ruamel marks it at its `:`
    "%YAML 1.1\n---\na: yes\n",  # the tags of YAML 1.1
    "a: [1\n",  # libyaml's error: ruamel says why
]


@pytest.mark.parametrize(
    "text", LIBYAML_TEXTS + [p.read_text() for p in sorted(FIXTURES.rglob("*.yaml"))[:20]]
)
def test_libyaml_composes_what_ruamel_does(text: str) -> None:
    from bench.yaml_scan import shape

    graph = yaml_source.libyaml_documents(text)
    assert graph is not None
    assert shape(graph) == shape(yaml_source.ruamel_documents(text))
    assert type(yaml_source.compose_documents(text)[0]).__module__.startswith("yaml")


@pytest.mark.parametrize("text", RUAMEL_TEXTS)
def test_ruamel_composes_what_libyaml_may_not(text: str) -> None:
    assert yaml_source.libyaml_documents(text) is None
