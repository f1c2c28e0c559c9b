"""The one list of generated paths: folders whose every file ``python -m kafkacompat._codegen`` writes.

Read by the tests and tools that set generated code aside.  pyproject.toml's
ruff per-file-ignores and .gitattributes (``linguist-generated``) cannot read
a Python module, so tests/unit/test_generated_paths.py holds both to this list,
and holds the list to the files that carry the generator's header.
"""

from __future__ import annotations

__all__ = ["GENERATED_PATHS", "is_generated"]

#: Folders relative to the repository root, without a trailing slash.
GENERATED_PATHS: tuple[str, ...] = ("kafkacompat/protocol/messages", "kafkacompat/reference")


def is_generated(relative: str) -> bool:
    """Whether a path relative to the repository root (``/``-separated) is generated."""
    return any(relative == path or relative.startswith(path + "/") for path in GENERATED_PATHS)
