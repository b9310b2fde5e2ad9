"""Generated variants of the fixture programs: the fix must parse, be stable, and stay local.

Fixtures pin a few spellings; real code varies in import aliases, argument order, spacing,
comments, surrounding statements and nesting. Hypothesis draws such variants, and for each one the
fixed code must parse, a second run must change nothing, and the changed lines must be exactly the
ones holding the literal the strategy rewrites (for `guard`: only inserted lines, plus the clip
line moving into the `if`). Example counts are small because libcst takes ~0.1-0.3 s per run.
"""

from __future__ import annotations

import ast
import difflib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, RunResult, run
from amp_clipfix.project.version import DEFAULT_TARGET

# AMP_CLIPFIX_EXAMPLES=200 for a deeper local search; the default keeps the file under a minute.
SETTINGS = settings(
    max_examples=int(os.environ.get("AMP_CLIPFIX_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# (import lines, expression that names the Fabric class)
FABRIC_IMPORTS = [
    (["import lightning as L"], "L.Fabric"),
    (["import lightning"], "lightning.Fabric"),
    (["from lightning import Fabric"], "Fabric"),
    (["from lightning.fabric import Fabric as F"], "F"),
    (["import lightning.fabric as lf"], "lf.Fabric"),
    (["import lightning_fabric"], "lightning_fabric.Fabric"),
    (["from lightning_fabric import Fabric as LF"], "LF"),
]
# (import lines, Trainer expression, LightningModule expression)
TRAINER_IMPORTS = [
    (["import lightning as L"], "L.Trainer", "L.LightningModule"),
    (["import lightning.pytorch as pl"], "pl.Trainer", "pl.LightningModule"),
    (["import pytorch_lightning as pl"], "pl.Trainer", "pl.LightningModule"),
    (["from lightning.pytorch import LightningModule, Trainer"], "Trainer", "LightningModule"),
    (
        ["from lightning import LightningModule as LM", "from lightning import Trainer as T"],
        "T",
        "LM",
    ),
]
# (import lines, prefix before the optimizer class name)
OPTIM_IMPORTS = [
    ([], "torch.optim."),
    (["from torch import optim"], "optim."),
    (["import torch.optim as topt"], "topt."),
    (["from torch.optim import {name}"], ""),
    (["from torch.optim import {name} as Opt"], "Opt"),
]
# Statements that mention the words the tool looks for but are no finding: never changed.
EXTRA_STATEMENTS = [
    ["x = 1"],
    ["# fused=True in a comment, precision='16-mixed' too"],
    ['print("fused=True")'],
    ["LABEL = 'precision=\"16-mixed\"'"],
    ["def helper(value):", "    return value * 2"],
    ["for _ in range(2):", "    pass"],
    ["plain = torch.optim.SGD([torch.zeros(1)], lr=0.1)"],
    ["unrelated = {'fused': True, 'precision': '16-mixed'}"],
    ["assert True, 'fused=True'"],
]


@dataclass
class Lines:
    """Source lines with tags on the ones a fix may touch."""

    lines: list[str] = field(default_factory=list)
    tags: dict[int, str] = field(default_factory=dict)

    def add(self, text: str, tag: str | None = None) -> None:
        if tag is not None:
            self.tags[len(self.lines)] = tag
        self.lines.append(text)

    def extend(self, other: Lines, indent: str = "") -> None:
        for index, text in enumerate(other.lines):
            self.add(indent + text if text else text, other.tags.get(index))

    def tagged(self, tag: str) -> set[int]:
        return {index for index, name in self.tags.items() if name == tag}

    @property
    def source(self) -> str:
        return "\n".join(self.lines) + "\n"


@st.composite
def call(
    draw: st.DrawFn, callee: str, positional: Sequence[str], keywords: dict[str, tuple[str, str]]
) -> Lines:
    """`callee(...)` with shuffled keywords, varied spacing, one line or several with comments.

    `keywords` maps a name to (value, tag); the tag marks the line holding that keyword."""
    names = draw(st.permutations(sorted(keywords)))
    equals = draw(st.sampled_from(["=", " = "]))
    arguments = [(text, None) for text in positional] + [
        (f"{name}{equals}{keywords[name][0]}", keywords[name][1]) for name in names
    ]
    out = Lines()
    if draw(st.booleans()):
        separator = draw(st.sampled_from([", ", ",", " , ", ",  "]))
        text = separator.join(argument for argument, _ in arguments)
        tags = {tag for _, tag in arguments if tag}
        out.add(f"{callee}({text})", ",".join(sorted(tags)) or None)
        return out
    out.add(f"{callee}(")
    for argument, tag in arguments:
        if draw(st.booleans()):
            out.add("    # a comment between arguments")
        comment = draw(st.sampled_from(["", "  # why", "  # fused here"]))
        out.add(f"    {argument},{comment}", tag)
    out.add(")")
    return out


def assign(target: str, value: Lines) -> Lines:
    out = Lines()
    out.extend(value)
    out.lines[0] = f"{target} = {out.lines[0]}"
    return out


@st.composite
def with_extras(draw: st.DrawFn, body: Lines) -> Lines:
    """The body with unrelated statements slipped in before its unindented statements."""
    out = Lines()
    for index, text in enumerate(body.lines):
        starts_statement = text and not text[0].isspace() and not text.startswith(")")
        if starts_statement and draw(st.booleans()):
            for line in draw(st.sampled_from(EXTRA_STATEMENTS)):
                out.add(line)
        out.add(text, body.tags.get(index))
    return out


@st.composite
def nested(draw: st.DrawFn, body: Lines) -> Lines:
    """The body at module level, in a function, a method, a nested function or a main guard."""
    where = draw(st.sampled_from(["module", "function", "method", "inner", "main_guard"]))
    out = Lines()
    if where == "module":
        out.extend(body)
    elif where == "function":
        out.add("def main():")
        out.extend(body, "    ")
    elif where == "method":
        out.add("class Runner:")
        out.add("    def run(self):")
        out.extend(body, "        ")
    elif where == "inner":
        out.add("def outer():")
        out.add("    def inner():")
        out.extend(body, "        ")
        out.add("    return inner")
    else:
        out.add('if __name__ == "__main__":')
        out.extend(body, "    ")
    return out


def quoted(draw: st.DrawFn, text: str) -> str:
    quote = draw(st.sampled_from(['"', "'"]))
    return f"{quote}{text}{quote}"


@st.composite
def optimizer_statements(
    draw: st.DrawFn, prefix_imports: list[str], params: str, target: str | None
) -> Lines:
    """`target = <optim>.AdamW(params, lr=..., fused=True)` (or `return ...` when target is
    None) through one of the import spellings, with `fused=True` given directly, through a
    kwargs variable, a `**{...}` / `**dict(...)` spread, or a `functools.partial`."""
    name = draw(st.sampled_from(["Adam", "AdamW", "SGD"]))
    lines, prefix = draw(st.sampled_from(OPTIM_IMPORTS))
    prefix_imports.extend(line.format(name=name) for line in lines)
    callee = prefix if prefix.endswith("Opt") else prefix + name
    keywords = {"fused": ("True", "fused"), "lr": ("1e-3", None)}
    if draw(st.booleans()):
        keywords["weight_decay"] = ("0.01", None)
    spelling = draw(st.sampled_from(["keyword", "variable", "literal", "dict", "partial"]))
    out = Lines()
    if spelling == "keyword":
        final = draw(call(callee, [params], keywords))
    elif spelling == "variable":
        out.extend(assign("opt_kwargs", draw(call("dict", [], keywords))))
        final = Lines()
        final.add(f"{callee}({params}, **opt_kwargs)")
    elif spelling == "literal":
        final = Lines()
        final.add(f'{callee}({params}, lr=1e-3, **{{"fused": True}})', "fused")
    elif spelling == "dict":
        final = Lines()
        final.add(f"{callee}({params}, lr=1e-3, **dict(fused=True))", "fused")
    else:
        prefix_imports.append("import functools")
        out.extend(assign("make_optimizer", draw(call("functools.partial", [callee], keywords))))
        final = Lines()
        final.add(f"make_optimizer({params})")
    if target is None:
        final.lines[0] = "return " + final.lines[0]
        out.extend(final)
    else:
        out.extend(assign(target, final))
    return out


@dataclass(frozen=True)
class Program:
    """A generated module, the precision literal it uses and the expected guard condition."""

    lines: Lines
    precision: str
    guard: str


def header(imports: list[str], draw: st.DrawFn) -> Lines:
    out = Lines()
    for line in draw(st.permutations(imports)):
        out.add(line)
    out.add("")
    out.add("")
    return out


@st.composite
def fabric_programs(draw: st.DrawFn) -> Program:
    """A Fabric training step with the ACF001 pattern: in one body (at any nesting), or with the
    Fabric kept on `self.fabric` by one method and used by another."""
    imports, fabric_class = draw(st.sampled_from(FABRIC_IMPORTS))
    imports = ["import torch", *imports]
    precision = draw(st.sampled_from(['"16-mixed"', "'16-mixed'", '"16"', "16"]))
    keywords = {"precision": (precision, "precision")}
    if draw(st.booleans()):
        keywords["accelerator"] = (quoted(draw, "cuda"), None)
    if draw(st.booleans()):
        keywords["devices"] = ("1", None)
    on_self = draw(st.booleans())
    fabric = "self.fabric" if on_self else "fabric"
    setup = assign(fabric, draw(call(fabric_class, [], keywords)))
    body = Lines()
    body.add("model = torch.nn.Linear(2, 2)")
    body.extend(draw(optimizer_statements(imports, "model.parameters()", "optimizer")))
    body.add(f"model, optimizer = {fabric}.setup(model, optimizer)")
    body.add("loss = model(torch.randn(4, 2)).sum()")
    body.add(f"{fabric}.backward(loss)")
    limit = draw(st.sampled_from(["max_norm=1.0", "max_norm = 0.5", "clip_val=0.1"]))
    clip = f"{fabric}.clip_gradients(model, optimizer, {limit})"
    if draw(st.booleans()):
        body.add(f"norm = {clip}", "clip")
        body.add("print(norm)")
    else:
        body.add(clip, "clip")
    body.add("optimizer.step()")
    program = header(imports, draw)
    if on_self:
        program.add("class Runner:")
        program.add("    def __init__(self):")
        program.extend(draw(with_extras(setup)), "        ")
        program.add("")
        program.add("    def train(self):")
        program.extend(draw(with_extras(body)), "        ")
    else:
        setup.extend(body)
        program.extend(draw(nested(draw(with_extras(setup)))))
    return Program(program, precision, f"if can_clip_gradients({fabric}, optimizer):")


@st.composite
def trainer_programs(draw: st.DrawFn, manual: bool = False) -> Program:
    """A LightningModule with a fused optimizer and a mixed-precision Trainer that clips, either
    through `gradient_clip_val` or (manual optimization) through `self.clip_gradients`."""
    imports, trainer_class, module_class = draw(st.sampled_from(TRAINER_IMPORTS))
    imports = ["import torch", *imports]
    module = Lines()
    module.add(f"class Model({module_class}):")
    if manual:
        module.add("    def __init__(self):")
        module.add("        super().__init__()")
        module.add("        self.automatic_optimization = False")
        module.add("")
    module.add("    def training_step(self, batch, batch_idx):")
    if manual:
        module.add("        opt = self.optimizers()")
        module.add("        loss = self.layer(batch).sum()")
        module.add("        self.manual_backward(loss)")
        limit = draw(st.sampled_from(["1.0", "0.5"]))
        algorithm = draw(st.sampled_from(["", ', gradient_clip_algorithm="norm"']))
        module.add(
            f"        self.clip_gradients(opt, gradient_clip_val={limit}{algorithm})", "clip"
        )
        module.add("        opt.step()")
    else:
        module.add("        return self.layer(batch).sum()")
    module.add("")
    module.add("    def configure_optimizers(self):")
    if draw(st.booleans()):
        module.extend(
            draw(optimizer_statements(imports, "self.parameters()", "optimizer")), "        "
        )
        module.add("        return optimizer")
    else:
        module.extend(draw(optimizer_statements(imports, "self.parameters()", None)), "        ")
    precision = draw(st.sampled_from(['"16-mixed"', "'bf16-mixed'", "16", '"16"']))
    keywords = {"precision": (precision, None)}
    if not manual:
        keywords["gradient_clip_val"] = (draw(st.sampled_from(["1.0", "0.5", "2"])), None)
    if draw(st.booleans()):
        keywords["max_epochs"] = ("1", None)
    body = Lines()
    body.extend(assign("trainer", draw(call(trainer_class, [], keywords))))
    body.add("trainer.fit(Model())")
    program = header(imports, draw)
    program.extend(draw(with_extras(module)))
    program.add("")
    program.add("")
    program.extend(draw(nested(draw(with_extras(body)))))
    guard = "if can_clip_gradients(self.trainer.precision_plugin, opt):"
    return Program(program, precision, guard)


# The properties are about the clipping rules; the migration rules (ACF010-ACF013) also rewrite
# the generated `precision="16"` spellings and are proven by their own fixtures.
CLIPPING_CODES = ("ACF001", "ACF002", "ACF004")


def run_on(path: Path, strategy: Strategy) -> RunResult:
    keep = lambda finding: finding.code in CLIPPING_CODES  # noqa: E731
    return run([path], Options(strategy=strategy, target=DEFAULT_TARGET, fix=True, keep=keep))


@dataclass(frozen=True)
class Style:
    """How the file spells a newline and one level of indentation."""

    newline: str
    unit: str

    def render(self, lines: Lines) -> str:
        out = []
        for line in lines.lines:
            stripped = line.lstrip(" ")
            levels, extra = divmod(len(line) - len(stripped), 4)
            out.append(self.unit * levels + " " * extra + stripped)
        return self.newline.join(out) + self.newline


STYLES = st.builds(Style, st.sampled_from(["\n", "\r\n"]), st.sampled_from(["    ", "  ", "\t"]))


def fixed_twice(program: Lines, strategy: Strategy, style: Style) -> tuple[list[str], list[str]]:
    """Fix the program once, check the result parses, keeps the newline style, and that a
    second run changes nothing; return the old and new lines."""
    source = style.render(program)
    note(repr(style))
    note(source)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.py"
        path.write_bytes(source.encode())
        # these properties are about what a fix changes, not how it lays out a long line
        # (tests/test_fixes_style.py): a line length no generated line reaches
        (Path(folder) / "ruff.toml").write_text("line-length = 10000\n")
        first = run_on(path, strategy)
        assert first.errors == (), first.errors
        assert len(first.changes) == 1, [f.message for f in first.findings]
        new = first.changes[0].new_data.decode()
        note(new)
        ast.parse(new)
        if style.newline == "\r\n":
            assert new.count("\n") == new.count("\r\n")
        else:
            assert "\r" not in new
        path.write_bytes(new.encode())
        second = run_on(path, strategy)
        assert second.errors == (), second.errors
        assert second.changes == (), second.changes[0].new_data.decode()
    return source.splitlines(), new.splitlines()


def changed_lines(old: list[str], new: list[str]) -> set[int]:
    """Indices of old lines replaced one-for-one; the line count must not change."""
    assert len(old) == len(new), "an in-place fix must not add or remove lines"
    return {index for index, (a, b) in enumerate(zip(old, new)) if a != b}


def lines_with(program: Lines, tag: str) -> set[int]:
    return {index for index, tags in program.tags.items() if tag in tags.split(",")}


def without_helper(lines: list[str], header: str) -> list[str]:
    """The lines without the top-level function that starts with `header` (if there is one)."""
    matches = [index for index, line in enumerate(lines) if line.startswith(header)]
    assert len(matches) <= 1, f"{header} inserted {len(matches)} times"
    if not matches:
        return lines
    start = matches[0]
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0].isspace() or lines[end] == "):"):
        end += 1
    return lines[:start] + lines[end:]


def skipped_result(clip: str) -> str:
    """What the guard binds on the else branch of `norm = X.clip_gradients(args)` ("" when the
    result is not assigned: no else branch)."""
    if not clip.strip().startswith("norm = "):
        return ""
    receiver, args = clip.strip()[len("norm = ") :].split(".clip_gradients(", 1)
    if receiver == "self" or "clip_val" in args:
        return "norm = None"
    return f"norm = unclipped_gradient_norm({receiver}, {args}"


def assert_only_guarded(program: Program, style: Style, old: list[str], new: list[str]) -> None:
    """The helpers once at top level, the clip line one indent deeper under the guard, and
    nothing else but the guard's `if`, `else:` and the else branch's `norm = ...` lines (the
    result the skipped call would give: `unclipped_gradient_norm(...)`, or None), and blanks."""
    (clip_index,) = lines_with(program.lines, "clip")
    clip = old[clip_index]
    indent = clip[: len(clip) - len(clip.lstrip())]
    # A module without any block shows no indent unit; libcst then uses four spaces (PEP 8).
    unit = style.unit if any(line.rstrip().endswith(":") for line in old) else "    "
    else_line = f"{indent}{unit}{skipped_result(clip)}"
    allowed = {indent + program.guard, f"{indent}else:", else_line, ""}
    assert new.count("def can_clip_gradients(precision, optimizer):") == 1
    rest = without_helper(new, "def can_clip_gradients(precision, optimizer):")
    rest = without_helper(rest, "def unclipped_gradient_norm(")
    norm_helper = any(line.startswith("def unclipped_gradient_norm(") for line in new)
    assert norm_helper == ("unclipped_gradient_norm(" in else_line)
    matcher = difflib.SequenceMatcher(a=old, b=rest, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed, inserted = old[i1:i2], rest[j1:j2]
        assert tag in ("insert", "replace"), (tag, removed, inserted)
        assert removed in ([], [clip]), removed
        if removed:
            assert unit + clip in inserted, inserted
            inserted = [line for line in inserted if line != unit + clip]
        assert set(inserted) <= allowed, inserted
    assert unit + clip in new and clip not in new
    assert indent + program.guard in new


@SETTINGS
@given(fabric_programs(), STYLES)
def test_fabric_unfuse_changes_only_the_fused_literal(program: Program, style: Style) -> None:
    old, new = fixed_twice(program.lines, Strategy.UNFUSE, style)
    expected = lines_with(program.lines, "fused")
    assert changed_lines(old, new) == expected
    for index in expected:
        assert new[index] == old[index].replace("True", "False", 1)


@SETTINGS
@given(fabric_programs(), STYLES, st.just(Strategy.BF16))
def test_fabric_bf16_changes_only_the_precision_literal(
    program: Program, style: Style, strategy: Strategy
) -> None:
    old, new = fixed_twice(program.lines, strategy, style)
    expected = lines_with(program.lines, "precision")
    assert changed_lines(old, new) == expected
    precision = program.precision
    quote = precision[0] if precision[0] in "'\"" else '"'
    for index in expected:
        assert new[index] == old[index].replace(precision, f"{quote}bf16-mixed{quote}", 1)


@SETTINGS
@given(fabric_programs(), STYLES)
def test_fabric_guard_only_inserts_and_wraps_the_clip(program: Program, style: Style) -> None:
    old, new = fixed_twice(program.lines, Strategy.GUARD, style)
    assert_only_guarded(program, style, old, new)


@SETTINGS
@given(trainer_programs(), STYLES, st.just(Strategy.UNFUSE))
def test_trainer_unfuse_changes_only_the_fused_literal(
    program: Program, style: Style, strategy: Strategy
) -> None:
    old, new = fixed_twice(program.lines, strategy, style)
    expected = lines_with(program.lines, "fused")
    assert changed_lines(old, new) == expected
    for index in expected:
        assert new[index] == old[index].replace("True", "False", 1)


@SETTINGS
@given(trainer_programs(manual=True), STYLES)
def test_trainer_manual_guard_only_inserts_and_wraps_the_clip(
    program: Program, style: Style
) -> None:
    old, new = fixed_twice(program.lines, Strategy.GUARD, style)
    assert_only_guarded(program, style, old, new)


@SETTINGS
@given(trainer_programs(manual=True), STYLES)
def test_trainer_manual_unfuse_changes_only_the_fused_literal(
    program: Program, style: Style
) -> None:
    old, new = fixed_twice(program.lines, Strategy.UNFUSE, style)
    assert changed_lines(old, new) == lines_with(program.lines, "fused")


def assert_only_unscaled(program: Program, old: list[str], new: list[str], helper: str) -> None:
    """The helper once at top level; otherwise only insertions (the override, blank lines) and
    the clip line itself sent through a `..._unscaled(` helper with the same arguments."""
    assert new.count(f"def {helper}(") == 1
    clips = {old[index] for index in lines_with(program.lines, "clip")}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        removed, inserted = old[i1:i2], new[j1:j2]
        if tag == "equal" or not removed:
            continue
        assert tag == "replace" and set(removed) <= clips, (tag, removed, inserted)
        for line in removed:
            start = line.lstrip()
            call = start[start.index("clip_gradients(") :]
            arguments = call[len("clip_gradients(") :]
            assert any("_unscaled(" in new_line and arguments in new_line for new_line in inserted)


@SETTINGS
@given(fabric_programs(), STYLES, st.sampled_from([Strategy.UNSCALE, Strategy.AUTO]))
def test_fabric_unscale_only_inserts_the_helper_and_reroutes_the_clip(
    program: Program, style: Style, strategy: Strategy
) -> None:
    old, new = fixed_twice(program.lines, strategy, style)
    assert_only_unscaled(program, old, new, "clip_gradients_unscaled")
    assert not any(".clip_gradients(model" in line for line in new)


@SETTINGS
@given(trainer_programs(), STYLES, st.sampled_from([Strategy.UNSCALE, Strategy.AUTO]))
def test_trainer_unscale_only_inserts_the_helper_and_the_override(
    program: Program, style: Style, strategy: Strategy
) -> None:
    old, new = fixed_twice(program.lines, strategy, style)
    assert_only_unscaled(program, old, new, "clip_module_gradients_unscaled")
    assert sum("def configure_gradient_clipping(" in line for line in new) == 1
