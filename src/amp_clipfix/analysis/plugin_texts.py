"""The text test of a precision plugin class's call, registered as a stored text test
(recording.PREDICATES): its own module, so that a run that resolves nothing (a small project
with nothing to parse) imports neither it nor `recording`.
"""

from __future__ import annotations

from pathlib import Path

from amp_clipfix.analysis import recording
from amp_clipfix.sources.prefilter import python_holds

# The last parts of the qualified names of the precision plugin classes whose calls the collector
# makes plugin sites of (names.PRECISION_PLUGINS; `MixedPrecision` is in `MixedPrecisionPlugin`
# too): a file calling one writes one, as the call's attribute or in the import that binds the
# name it calls (scopes.py). Here, not in names.py: a later run's query check asks the test
# (queries.py) before the resolution's modules are imported.
PLUGIN_CLASS_WORDS = (b"FSDPPrecision", b"MixedPrecision")
CALLS_PLUGIN_CLASS = "may_call_plugin_class"


def may_call_plugin_class(path: Path | None, data: bytes) -> bool:
    """Whether a text may call a precision plugin class: it writes one's name as Python reads
    it (in its bytes, or, in a text that is not all ASCII, after NFKC normalisation)."""
    return python_holds(data, PLUGIN_CLASS_WORDS)


recording.PREDICATES[CALLS_PLUGIN_CLASS] = may_call_plugin_class
