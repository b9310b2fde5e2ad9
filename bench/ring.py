"""Issue 39's ring of mutually recursive factories: its cost in evaluations and CPU.

    python bench/ring.py 50 200 400 1000                        # this checkout
    PYTHONPATH=DIR/src python bench/ring.py 50 200 400          # another checkout

Each size is `tests/test_recursion_ring.py` `ring(N)` (`make0` ... `make{N-1}`, each building a
fused AdamW from its `fused` parameter or passing it on to the next, the last to `make0`;
`main` enters the ring with a run-time value under 16-mixed and clips) written to a temporary
folder and run through `pipeline.run` with the default options, in this process. Printed per
size: the evaluations of every evaluator the run made (as `tests/test_bounded.py` `Counted`
counts them), the CPU time of the run, the findings, and the evaluator module measured.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_recursion_ring import ring  # noqa: E402

from amp_clipfix.analysis import evaluate, frame  # noqa: E402
from amp_clipfix.models import Strategy  # noqa: E402
from amp_clipfix.pipeline import Options, run  # noqa: E402
from amp_clipfix.project.version import DEFAULT_TARGET  # noqa: E402


def main(sizes: list[int]) -> None:
    made = evaluate.Evaluator.__init__
    evaluators: list[evaluate.Evaluator] = []

    def counted(self: evaluate.Evaluator, *args: object, **kwargs: object) -> None:
        made(self, *args, **kwargs)  # type: ignore[arg-type]
        evaluators.append(self)

    evaluate.Evaluator.__init__ = counted  # type: ignore[method-assign]
    print(f"evaluator: {frame.__file__}")
    print("| ring of | evaluations | CPU s | findings |")
    print("|---:|---:|---:|---|")
    for size in sizes:
        evaluators.clear()
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "train.py").write_text(ring(size))
            start = time.process_time()
            result = run([Path(folder)], Options(Strategy.AUTO, DEFAULT_TARGET))
            cpu = time.process_time() - start
        spent = sum(frame.BUDGET - evaluator.budget for evaluator in evaluators)
        found = ", ".join(f"{f.code} {f.confidence.value}" for f in result.findings)
        print(f"| {size:,} | {spent:,} | {cpu:.2f} | {found} |")


if __name__ == "__main__":
    main([int(size) for size in sys.argv[1:]] or [50, 200, 400])
