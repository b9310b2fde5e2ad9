"""What each rule needs of a project before its search runs, by code, in code order
(a run reads these and imports only the rule modules it runs; rules/__init__.py). Generated
by scripts/rule_gates.py from the rule modules: do not edit (tests/test_rule_gates.py)."""

from __future__ import annotations

from amp_clipfix.rules.gate import Gate

GATES: dict[str, Gate] = {
    "ACF001": Gate(
        "ACF001",
        checks=True,
    ),
    "ACF002": Gate(
        "ACF002",
        checks=True,
    ),
    "ACF003": Gate(
        "ACF003",
        checks=False,
        alias=True,
    ),
    "ACF004": Gate(
        "ACF004",
        checks=True,
        words=(
            b"clip_grad_norm_",
            b"clip_grad_value_",
        ),
        requires=(b"GradScaler",),
    ),
    "ACF005": Gate(
        "ACF005",
        checks=True,
        words=(
            b"manual_backward",
            b".fit(",
        ),
        needs=(b"manual_backward",),
    ),
    "ACF006": Gate(
        "ACF006",
        checks=True,
        words=(
            b"clip_grad_norm_",
            b"clip_grad_value_",
        ),
        requires=(b"Fabric",),
        imports=(
            "lightning",
            "lightning_fabric",
        ),
    ),
    "ACF007": Gate(
        "ACF007",
        checks=True,
        words=(b"clip_gradients",),
        requires=(b"Fabric",),
        imports=(
            "lightning",
            "lightning_fabric",
        ),
    ),
    "ACF008": Gate(
        "ACF008",
        checks=True,
        words=(
            b".backward(",
            b".fit(",
        ),
        needs=(b"automatic_optimization",),
    ),
    "ACF009": Gate(
        "ACF009",
        checks=True,
        words=(
            b"gradient_clip_val",
            b".fit(",
            b"LightningCLI",
        ),
        needs=(b"automatic_optimization",),
    ),
    "ACF010": Gate(
        "ACF010",
        checks=True,
        words=(
            b"amp_backend",
            b"amp_level",
        ),
    ),
    "ACF011": Gate(
        "ACF011",
        checks=True,
        words=(
            b"precision=16",
            b"precision = 16",
            b"precision: 16",
            b"precision: bf16",
            b'"16"',
            b"'16'",
            b'"bf16"',
            b"'bf16'",
            b'"precision": 16',
            b"'precision': 16",
            b'"precision"] = 16',
            b"'precision'] = 16",
        ),
        needs=(b"precision",),
    ),
    "ACF012": Gate(
        "ACF012",
        checks=True,
        words=(
            b"cuda.amp",
            b"cpu.amp",
            b"cuda import amp",
            b"cpu import amp",
        ),
    ),
    "ACF013": Gate(
        "ACF013",
        checks=True,
        words=(b"gradient_clip_val",),
        needs=(
            b"fsdp",
            b"FSDP",
        ),
    ),
}
