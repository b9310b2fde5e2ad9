"""What the evaluator's per-function walks list in one `check --no-cache --format json` of a
folder, counted in process (load-independent): the nodes of whole function bodies
(`shapes.function_body_nodes`), the statements read instead (`shapes.own_statements`, branch
`core`), and the `nodes.child_nodes` calls both make.

    python bench/function_walks.py /work/corpora/Lightning-AI+pytorch-lightning
    PYTHONPATH=/work/wt/base18/src python bench/function_walks.py DIR   # a base tree's code
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
from typing import Any

from in_process import check_quietly

from amp_clipfix.analysis import nodes, shapes

COUNT = {"whole-body nodes": 0, "own statements": 0, "child_nodes calls": 0}


def counting(key: str, function: Any) -> Any:
    def inner(node: Any) -> Any:
        found = function(node)
        COUNT[key] += len(found)
        return found

    return inner


def patch() -> None:
    body = counting("whole-body nodes", shapes.function_body_nodes)
    shapes.function_body_nodes = body
    for name in ("evaluate", "own_names"):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(f"amp_clipfix.analysis.{name}")
            if hasattr(module, "function_body_nodes"):
                module.function_body_nodes = body  # type: ignore[attr-defined]
    if hasattr(shapes, "own_statements"):
        own_names = importlib.import_module("amp_clipfix.analysis.own_names")
        own_names.own_statements = counting("own statements", shapes.own_statements)
    child_nodes = nodes.child_nodes

    def counted_children(node: Any) -> Any:
        COUNT["child_nodes calls"] += 1
        return child_nodes(node)

    shapes.child_nodes = counted_children  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    arguments = parser.parse_args()
    patch()
    check_quietly(arguments.folder)
    for key, value in COUNT.items():
        print(f"{key:18} {value:9,d}")


if __name__ == "__main__":
    main()
