"""The project's pin files, each read once through the inside-the-project check and parsed once
per reader; whatever a file holds, a reader gives pins or one PinError line (project/pins.py
asks them in order)."""

from __future__ import annotations

from pathlib import Path

from amp_clipfix import observed
from amp_clipfix.paths import os_error_reason
from amp_clipfix.project.pin_readers import Packages, Pin, PinError, Reader, value_error


class ProjectFiles:
    """The project's pin files, each read once (through the inside-the-project check) and
    parsed once per reader."""

    def __init__(self, root: Path, packages: Packages) -> None:
        self.root = root
        self.packages = tuple(packages)
        self.parsed: dict[tuple[Path, Reader], list[Pin] | PinError] = {}

    def data(self, path: Path) -> bytes:
        """The file's bytes; PinError when it cannot be read or leads out of the project."""
        try:
            return observed.read_inside(path, self.root)
        except observed.LeavesFolder as error:
            raise PinError(str(error.strerror)) from None
        except OSError as error:
            raise PinError(f"cannot read: {os_error_reason(error)}") from None

    def pins(self, path: Path, read: Reader) -> list[Pin]:
        key = (path, read)
        if key not in self.parsed:
            try:
                self.parsed[key] = parse_pins(read, self.data(path), self.packages)
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
