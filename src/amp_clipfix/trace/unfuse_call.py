"""`fused=False` in the call that built an optimizer, found by the line the run saw it on: the
observed-site route of `trace --apply` for an optimizer the static analysis does not follow
(a registry, `getattr(torch.optim, name)`, a config's keyword arguments).

- `X(..., fused=<anything>)`: the value becomes `False`;
- `X(..., **kwargs)`: the last spread becomes `**{**kwargs, "fused": False}` (a key the spread
  may hold is overridden, never passed twice);
- otherwise `fused=False` is added as the last argument.
"""

from __future__ import annotations

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
        args.append(cst.Arg(cst.Name("False"), keyword=cst.Name("fused")))
    return call.with_changes(args=args)


class _Replace(cst.CSTTransformer):
    def __init__(self, target: cst.Call) -> None:
        self.target = target

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        return _unfused(updated_node) if original_node is self.target else updated_node


def unfuse_call(path: Path, line: int) -> tuple[SourceFile, bytes] | str:
    """The file with the optimizer call at `line` unfused, or why not (one line)."""
    try:
        source = read_source(path)
        module = cst.parse_module(source.text)
    except (SourceError, cst.ParserSyntaxError) as error:
        return f"cannot fix where the optimizer was built: {error}"
    wrapper = MetadataWrapper(module)
    calls = _Calls(line)
    wrapper.visit(calls)
    if not calls.found:
        return f"no call starts on line {line}, where the run built the optimizer"
    target = min(calls.found, key=_rank)  # stable: the outermost call of a rank comes first
    text = wrapper.module.visit(_Replace(target)).code
    try:
        compile(text, str(path), "exec")
    except SyntaxError as error:  # pragma: no cover - libcst wrote what it parsed
        return f"the fix would not parse: {error}"
    return source, encode_text(source, text)
