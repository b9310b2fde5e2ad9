"""ACF012's import edits walk the whole module (every name that may still read an import) but
keep no node past their spans, so they walk it with `bodies.peeked_walk`: the same nodes in
the same order as `nodes.walk`, the bodies nothing else read looked at with `peek` and left
unread, to be let go (the hundred `train.py` of icefall held every body to the end of the
run: 35 MB of its peak). The edits are those of a walk that reads every body. Its search's
alias names (`calls.alias_names`: `make = GradScaler`) keep names only, and look at the
bodies on their lines the same way (7 MB more); so do the reach index's names a module's calls
give (`bound_names.call_values`: keywords and string arguments)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_held_memory import noted

from amp_clipfix.analysis import bodies, bound_names, calls, nodes
from amp_clipfix.analysis.facts import FileFacts
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.models import SiteKind
from amp_clipfix.rules import acf012
from amp_clipfix.sources import adapter_for

MODULE = """\
import torch
from torch.cuda.amp import GradScaler


def unrelated(values):
    total = [v * 2 for v in values if v]
    return {"total": total, "scale": GradScaler}


async def fetch(client):
    async with client.session() as session:
        return await session.get("x")


class Loop:
    def __init__(self, model):
        self.model = model

    def step(self, loss):
        def inner():
            return loss.item()
        return inner()


def train(model, loss):
    scaler = GradScaler()
    with torch.cuda.amp.autocast(enabled=True):
        scaler.scale(loss).backward()
"""


def shape(walked: Sequence[ast.AST]) -> list[tuple[str, int | None, int | None]]:
    """Each node's `ast` class name and position: what tells two walks' nodes apart."""
    return [
        (
            type(node).__mro__[[c.__module__ for c in type(node).__mro__].index("ast")].__name__,
            getattr(node, "lineno", None),
            getattr(node, "col_offset", None),
        )
        for node in walked
    ]


def summary_of(store: bodies.Bodies, text: str = MODULE) -> Summary:
    summary = summarise(Path("/p"), Path("/p/m.py"), text, bodies=store)
    assert summary is not None
    return summary


@pytest.mark.parametrize("let_go", [False, True], ids=["held", "let-go"])
def test_the_walk_gives_nodes_walk_s_nodes_and_reads_no_body(let_go: bool) -> None:
    store = bodies.Bodies()
    summary = summary_of(store)
    functions = noted(summary)
    assert [f.name for f in functions] == ["unrelated", "fetch", "train", "__init__", "step"]
    if let_go:
        assert store.let_go() == 5
    walked = list(bodies.peeked_walk(summary.tree))
    assert all(type(f) in bodies.UNREAD_KINDS for f in functions)  # none read for good
    assert shape(walked) == shape(list(nodes.walk(ast.parse(MODULE))))
    assert len(walked) == len(list(nodes.walk(ast.parse(MODULE))))
    # what a let-go body gave is held again, and let go at the next let-go
    assert store.let_go() == 5


def test_a_body_read_before_is_walked_as_it_is() -> None:
    store = bodies.Bodies()
    summary = summary_of(store)
    train = noted(summary)[2]
    body = train.body  # read for good
    walked = list(bodies.peeked_walk(summary.tree))
    assert all(any(node is statement for node in walked) for statement in body)
    assert shape(walked) == shape(list(nodes.walk(ast.parse(MODULE))))


def facts_of(text: str, let_go: bool = False) -> tuple[FileFacts, list[bodies.Function]]:
    """The module as ACF012 reads a file the evaluator loaded: its bodies noted unread (and
    let go)."""
    path = Path("/p/m.py")
    store = bodies.Bodies()
    summary = summary_of(store, text)
    if let_go:
        store.let_go()
    document = adapter_for(path).load(path, text.encode())
    return FileFacts(document, summary), noted(summary)


def scaler_rewrite(file: FileFacts, train: bodies.Function) -> acf012.Rewrite:
    """ACF012's rewrite of `GradScaler()` in `train` (its binding: the imported name)."""
    call = train.body[0].value  # type: ignore[attr-defined]
    site = file.site(SiteKind.TORCH_AMP, call, "`GradScaler(...)`")
    rewrite = acf012.rewrite_call(None, file, call, "GradScaler", "cuda", "torch", site)  # type: ignore[arg-type]
    assert rewrite is not None and rewrite.binding == "GradScaler"
    return rewrite


# `GradScaler` read in another function's body: the import stays; read nowhere else: it goes;
# also imported first thing in another function: that import goes too (its block's first).
STILL_READ = MODULE
NOT_READ = MODULE.replace('"scale": GradScaler', '"scale": 1')
IN_A_BODY = NOT_READ.replace(
    "def unrelated(values):\n",
    "def unrelated(values):\n    from torch.cuda.amp import GradScaler\n",
)


@pytest.mark.parametrize("let_go", [False, True], ids=["held", "let-go"])
@pytest.mark.parametrize(
    ("text", "removed"),
    [(STILL_READ, 0), (NOT_READ, 1), (IN_A_BODY, 2)],
    ids=["still-read", "not-read", "in-a-body"],
)
def test_the_import_edits_read_no_other_body_and_are_a_whole_walk_s(
    text: str, removed: int, let_go: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    file, functions = facts_of(text, let_go)
    train = functions.pop(2)
    rewrite = scaler_rewrite(file, train)  # `train` read for good, as the rule's search does
    peeked = acf012.import_edits(file, [rewrite], "torch")
    assert all(type(f) in bodies.UNREAD_KINDS for f in functions)  # none else read
    assert peeked is not None
    assert [edit.replacement for edit in peeked] == [""] * removed  # each import's line
    whole_file, whole_functions = facts_of(text, let_go)
    monkeypatch.setattr(acf012, "peeked_walk", nodes.walk)
    whole_rewrite = scaler_rewrite(whole_file, whole_functions[2])
    whole = acf012.import_edits(whole_file, [whole_rewrite], "torch")
    assert peeked == whole


ALIASES = """\
from torch.cuda.amp import GradScaler


def build(kind=GradScaler):
    make = GradScaler
    return make()


class Holder:
    def __init__(self):
        self.scaler_cls = GradScaler

    def other(self):
        return 1


def unrelated():
    return GradScaler()
"""


@pytest.mark.parametrize("let_go", [False, True], ids=["held", "let-go"])
def test_a_module_s_alias_names_read_no_body_and_are_a_whole_read_s(let_go: bool) -> None:
    store = bodies.Bodies()
    summary = summary_of(store, ALIASES)
    functions = noted(summary)
    assert [f.name for f in functions] == ["build", "unrelated", "__init__", "other"]
    if let_go:
        store.let_go()
    found = calls.alias_names(summary, {"GradScaler"})
    assert all(type(f) in bodies.UNREAD_KINDS for f in functions)  # none read for good
    whole = summarise(Path("/p"), Path("/p/m.py"), ALIASES)
    assert whole is not None
    assert found == calls.alias_names(whole, {"GradScaler"}) == {"make", "scaler_cls"}


VALUES = """\
import argparse


def options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--use-fp16", dest="fp16_on", type=bool)
    return parser


class Model:
    def configure(self, make):
        setattr(self, "scaler_kind", make(fused=True, name="adam w"))

    def other(self):
        return dict(clip=1.0)
"""


@pytest.mark.parametrize("let_go", [False, True], ids=["held", "let-go"])
def test_the_names_a_module_s_calls_give_read_no_body_and_are_a_whole_read_s(
    let_go: bool,
) -> None:
    store = bodies.Bodies()
    summary = summary_of(store, VALUES)
    functions = noted(summary)
    assert [f.name for f in functions] == ["options", "configure", "other"]
    if let_go:
        store.let_go()
    found = bound_names.call_values(summary, bound_names.file_names(summary, VALUES.encode()))
    assert all(type(f) in bodies.UNREAD_KINDS for f in functions)  # none read for good
    whole = summarise(Path("/p"), Path("/p/m.py"), VALUES)
    assert whole is not None
    assert found == bound_names.call_values(whole, bound_names.file_names(whole, VALUES.encode()))
    # keywords given a value that is not a constant, the words of string arguments
    assert sorted(found) == [
        "adam",
        "adam w",
        "fp16",
        "fp16_on",
        "scaler_kind",
        "type",
        "use",
        "use_fp16",
        "w",
    ]
