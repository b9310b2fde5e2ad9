"""`[tool.amp-clipfix]` in the nearest pyproject.toml: each key, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from piped import amp_clipfix

from amp_clipfix import observed
from amp_clipfix.project.config import Config, ConfigError, load_config


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Errors name the file relative to the current folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_key(root: Path) -> None:
    path = write(
        root,
        "[tool.amp-clipfix]\n"
        'strategy = "unfuse"\n'
        'lightning-version = "2.5"\n'
        'exclude = ["legacy/*"]\n'
        'extend-exclude = ["gen/**", "*_pb2.py"]\n',
    )
    assert load_config(root) == Config(
        strategy="unfuse",
        lightning_version="2.5",
        exclude=("legacy/*",),
        extend_exclude=("gen/**", "*_pb2.py"),
        path=path.resolve(),
    )


@pytest.mark.parametrize("strategy", ["auto", "unscale", "bf16", "unfuse", "guard"])
def test_each_strategy(root: Path, strategy: str) -> None:
    write(root, f'[tool.amp-clipfix]\nstrategy = "{strategy}"\n')
    assert load_config(root).strategy == strategy


def test_unset_keys_keep_defaults(root: Path) -> None:
    path = write(root, '[tool.amp-clipfix]\nlightning-version = "2.6.6"\n')
    config = load_config(root)
    assert config == Config(lightning_version="2.6.6", path=path.resolve())
    assert config.exclude is None and config.extend_exclude == ()


def test_empty_exclude_replaces_the_defaults_with_nothing(root: Path) -> None:
    write(root, "[tool.amp-clipfix]\nexclude = []\n")
    assert load_config(root).exclude == ()


def test_unknown_key(root: Path) -> None:
    write(root, '[tool.amp-clipfix]\nstratgy = "bf16"\n')
    with pytest.raises(ConfigError) as error:
        load_config(root)
    assert str(error.value).startswith("pyproject.toml: [tool.amp-clipfix] unknown key 'stratgy'")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            'strategy = "fast"',
            "'strategy' must be one of auto, unscale, bf16, unfuse, guard, migrate, native, "
            "not 'fast'",
        ),
        (
            "strategy = 1",
            "'strategy' must be one of auto, unscale, bf16, unfuse, guard, migrate, native, "
            "not 1 (int)",
        ),
        ('lightning-version = "two"', "'lightning-version' must be X.Y or X.Y.Z, not 'two'"),
        ("lightning-version = 2.6", "'lightning-version' must be a quoted string"),
        ('exclude = "build"', "'exclude' must be a list of glob strings, not 'build'"),
        ("extend-exclude = [1]", "'extend-exclude' must be a list of glob strings, not [1]"),
    ],
)
def test_bad_values_name_file_and_key(root: Path, line: str, message: str) -> None:
    write(root, f"[tool.amp-clipfix]\n{line}\n")
    with pytest.raises(ConfigError) as error:
        load_config(root)
    assert str(error.value).startswith(f"pyproject.toml: [tool.amp-clipfix] {message}")
    assert "\n" not in str(error.value)


def test_table_that_is_not_a_table(root: Path) -> None:
    write(root, '[tool]\namp-clipfix = "bf16"\n')
    with pytest.raises(ConfigError, match=r"\[tool.amp-clipfix\] must be a table"):
        load_config(root)


def test_invalid_toml_names_the_file(root: Path) -> None:
    write(root / "sub", "[tool.amp-clipfix\nstrategy = \n")
    with pytest.raises(ConfigError) as error:
        load_config(root / "sub")
    assert str(error.value).startswith("sub/pyproject.toml: invalid TOML:")


def test_nearest_pyproject_wins_even_without_the_table(root: Path) -> None:
    write(root, '[tool.amp-clipfix]\nstrategy = "guard"\n')
    inner = write(root / "inner", '[project]\nname = "inner"\n')
    (root / "inner" / "pkg").mkdir()
    assert load_config(root / "inner" / "pkg") == Config()
    assert inner.exists()
    assert load_config(root).strategy == "guard"


def test_search_goes_upward_from_a_folder_or_a_file(root: Path) -> None:
    path = write(root, '[tool.amp-clipfix]\nstrategy = "bf16"\n')
    deep = root / "src" / "pkg"
    deep.mkdir(parents=True)
    (deep / "train.py").write_text("", encoding="utf-8")
    assert load_config(deep) == Config(strategy="bf16", path=path.resolve())
    assert load_config(deep / "train.py").path == path.resolve()


def test_no_pyproject_gives_an_empty_config(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever lies above the temporary folder on this machine, the search sees this test's
    folders only (and must look above `plain`, at `root`, to find nothing there either)."""
    folder = root / "plain"
    folder.mkdir()
    looked_at: list[Path] = []
    real_is_file = observed.is_file

    def is_file(path: Path) -> bool:
        looked_at.append(Path(path))
        return real_is_file(path) if root.resolve() in Path(path).parents else False

    monkeypatch.setattr(observed, "is_file", is_file)
    assert load_config(folder) == Config()
    assert root.resolve() / "pyproject.toml" in looked_at


def test_a_run_parses_its_pyproject_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Options, the project's configuration and its pins all come from one pyproject.toml: it
    is parsed once per run."""
    parsed: list[str] = []
    loads = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or loads(text))
    write(
        tmp_path,  # a comment of its own: no earlier test in this process parsed these bytes
        f"# {tmp_path}\n"
        '[project]\nname = "p"\ndependencies = ["lightning==2.4.0"]\n\n'
        '[tool.amp-clipfix]\nstrategy = "unfuse"\n',
    )
    (tmp_path / "train.py").write_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    result = amp_clipfix(tmp_path, "check", "--no-cache", "--format", "json", ".")
    assert result.code == 1 and b'"lightning_version": "2.4.0"' in result.stdout
    assert len(parsed) == 1
