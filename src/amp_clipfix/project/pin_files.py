"""The project's pin files, each read once through the inside-the-project check and parsed once
per reader and package list; whatever a file holds, a reader gives pins or one PinError line
(project/pins.py asks them in order). One `ProjectFiles` serves both of a run's searches (the
Lightning release's and torch's: pipeline.project_target), which ask the same files in the
same order: the second reads, lists and resolves links of none of them again. With a `memo`
(pin_answers.py, the analysis cache), a file whose bytes a reader parsed in an earlier run is not
parsed again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from amp_clipfix import observed
from amp_clipfix.paths import os_error_reason
from amp_clipfix.project.pin_readers import Packages, Pin, PinError, Reader, value_error

TYPE_CHECKING = False
if TYPE_CHECKING:
    from amp_clipfix.project.pin_answers import PinMemo

# A file to ask, with its reader and which of its pins count (pins.sources).
Source = tuple[Path, Reader, Callable[[Pin], bool]]
Listed = list[Source]


class Listing:
    """The files to ask, in order, listed only as far as a search reads them (pins.sources
    lists a Dockerfile's or a CI workflow's included requirement files by reading it: a search
    that an earlier file decides need not). Each entry is listed once however many searches
    (or passes of one) iterate, and each iteration yields all of them in the same order."""

    def __init__(self, stream: Iterator[Source]) -> None:
        self._stream: Iterator[Source] | None = stream
        self._listed: Listed = []

    def __iter__(self) -> Iterator[Source]:
        index = 0
        while True:
            if index < len(self._listed):
                yield self._listed[index]
                index += 1
            elif self._stream is None:
                return
            else:
                try:
                    self._listed.append(next(self._stream))
                except StopIteration:
                    self._stream = None


class ProjectFiles:
    """The project's pin files: each read once (through the inside-the-project check), listed
    once (`listed`, pins.sources' answer) and parsed once per reader and package list."""

    def __init__(self, root: Path, memo: PinMemo | None = None) -> None:
        self.root = root
        self.memo = memo
        self.read: dict[Path, bytes | PinError] = {}
        self.parsed: dict[tuple[Path, Reader, tuple[str, ...]], list[Pin] | PinError] = {}
        self.listed: Listing | None = None

    def data(self, path: Path) -> bytes:
        """The file's bytes; PinError when it cannot be read or leads out of the project."""
        found = self.read.get(path)
        if found is None:
            try:
                found = observed.read_inside(path, self.root)
            except observed.LeavesFolder as error:
                found = PinError(str(error.strerror))
            except OSError as error:
                found = PinError(f"cannot read: {os_error_reason(error)}")
            self.read[path] = found
        if isinstance(found, PinError):
            raise found
        return found

    def includes(self, includes: Callable[[bytes], list[str]]) -> Callable[[bytes], list[str]]:
        """`includes` (install_readers.Includes), its answer for a file's bytes kept by the
        memo when there is one (pin_answers.py)."""
        if self.memo is None:
            return includes
        from functools import partial

        return partial(self.memo.includes, includes)

    def pins(self, path: Path, read: Reader, packages: Packages) -> list[Pin]:
        """The pins of `packages` the reader finds in the file."""
        key = (path, read, tuple(packages))
        if key not in self.parsed:
            try:
                data = self.data(path)
                if self.memo is None:
                    self.parsed[key] = parse_pins(read, data, key[2])
                else:
                    self.parsed[key] = self.memo.pins(read, data, key[2], parse_pins)
            except PinError as error:
                self.parsed[key] = error
        found = self.parsed[key]
        if isinstance(found, PinError):
            raise found
        return found


def parse_pins(read: Reader, data: bytes, packages: Packages) -> list[Pin]:
    """`read(data)`, whatever the bytes: any content gives pins or a one-line PinError (text
    that is not UTF-8, nesting deeper than the parsers recurse, self-reference...)."""
    try:
        return read(data, packages)
    except PinError:
        raise
    except UnicodeDecodeError as error:
        raise PinError(f"not UTF-8 text (byte {error.start})") from None
    except (RecursionError, MemoryError):
        raise PinError("nested too deeply to read") from None
    except ValueError as error:  # a number too long to read (a version, a table's value)
        raise value_error("", error) from None
