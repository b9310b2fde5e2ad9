"""The observed-site route of `trace --apply`: a call rewritten where the run saw it, by its
line, for code the static analysis does not follow.

`fused=False` in the call that built an optimizer (a registry, `getattr(torch.optim, name)`, a
config's keyword arguments):
- `X(..., fused=<anything>)`: the value becomes `False`;
- `X(..., **kwargs)`: the last spread becomes `**{**kwargs, "fused": False}` (a key the spread
  may hold is overridden, never passed twice);
- otherwise `fused=False` is added as the last argument.

`loss.backward()` in manual optimization (a decorated training step, a helper):
`MODULE.manual_backward(loss)`, MODULE being the name the run saw the LightningModule under in
that frame.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from amp_clipfix.sources.text import SourceError, SourceFile, encode_text, read_source


class _Calls(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int) -> None:
        self.line = line
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if self.get_metadata(PositionProvider, node).start.line == self.line:
            self.found.append(node)


def _rank(call: cst.Call) -> int:
    if any(arg.keyword is not None and arg.keyword.value == "fused" for arg in call.args):
        return 0
    if any(arg.star == "**" for arg in call.args):
        return 1
    return 2


def _unfused(call: cst.Call) -> cst.Call:
    args = list(call.args)
    rank = _rank(call)
    if rank == 0:
        for index, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == "fused":
                args[index] = arg.with_changes(value=cst.Name("False"))
    elif rank == 1:
        index = max(i for i, arg in enumerate(args) if arg.star == "**")
        spread = args[index]
        merged = cst.Dict(
            [
                cst.StarredDictElement(spread.value),
                cst.DictElement(cst.SimpleString('"fused"'), cst.Name("False")),
            ]
        )
        args[index] = spread.with_changes(value=merged)
    else:
        if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        args.append(cst.Arg(cst.Name("False"), keyword=cst.Name("fused"), equal=tight))
    return call.with_changes(args=args)


def _backward(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "backward" and not call.args


def _manual_backward(receiver: str) -> Callable[[cst.Call], cst.Call]:
    def rewrite(call: cst.Call) -> cst.Call:
        assert isinstance(call.func, cst.Attribute)
        method = cst.Attribute(cst.Name(receiver), cst.Name("manual_backward"))
        return call.with_changes(func=method, args=[cst.Arg(call.func.value)])

    return rewrite


class _Replace(cst.CSTTransformer):
    def __init__(self, target: cst.Call, rewrite: Callable[[cst.Call], cst.Call]) -> None:
        self.target, self.rewrite = target, rewrite

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        return self.rewrite(updated_node) if original_node is self.target else updated_node


def unfuse_call(path: Path, line: int) -> tuple[SourceFile, bytes] | str:
    """The file with the optimizer call at `line` unfused, or why not (one line)."""
    return _rewritten(path, line, "where the run built the optimizer", None, _unfused)


def manual_backward_call(path: Path, line: int, receiver: str) -> tuple[SourceFile, bytes] | str:
    """The file with `X.backward()` at `line` as `RECEIVER.manual_backward(X)`, or why not."""
    return _rewritten(
        path, line, "where the run called backward", _backward, _manual_backward(receiver)
    )


def _rewritten(
    path: Path,
    line: int,
    where: str,
    accept: Callable[[cst.Call], bool] | None,
    rewrite: Callable[[cst.Call], cst.Call],
) -> tuple[SourceFile, bytes] | str:
    try:
        source = read_source(path)
        module = cst.parse_module(source.text)
    except (SourceError, cst.ParserSyntaxError) as error:
        return f"cannot fix {where}: {error}"
    wrapper = MetadataWrapper(module)
    calls = _Calls(line)
    wrapper.visit(calls)
    found = [call for call in calls.found if accept is None or accept(call)]
    if not found:
        return f"no call to rewrite starts on line {line}, {where}"
    target = min(found, key=_rank)  # stable: the outermost call of a rank comes first
    text = wrapper.module.visit(_Replace(target, rewrite)).code
    try:
        compile(text, str(path), "exec")
    except SyntaxError as error:  # pragma: no cover - libcst wrote what it parsed
        return f"the fix would not parse: {error}"
    try:
        return source, encode_text(source, text)
    except SourceError as error:
        return f"cannot fix {where}: {error}"
