# The interface of the C extension kafkacompat/protocol/_native.c (see kafkacompat/protocol/codec_path.py).
from collections.abc import Callable
from typing import Any

OPS: dict[str, int]
DEFAULT_MODES: dict[str, int]
SOURCE_CRC32: str

class Reader:
    """Reads one wire layout into the generated classes; hands bytes that break a rule to ``fallback``."""

    fallback: Callable[[Any, int], tuple[Any, int]]
    table: tuple[Any, ...]
    fallbacks: int
    def __init__(self, table: tuple[Any, ...], fallback: Callable[[Any, int], tuple[Any, int]]) -> None: ...
    def __call__(self, buf: Any, pos: int) -> tuple[Any, int]: ...
    def strict(self, buf: Any, pos: int) -> tuple[Any, int] | None: ...
    def compile(self) -> None: ...
