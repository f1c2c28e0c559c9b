"""Colour is optional: only with rich installed, on a terminal (or --color always), without NO_COLOR."""

from __future__ import annotations

import io
import re

import pytest

from kafkacompat.cli.render_rich import colour_wanted, print_coloured, rich_available


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_never_and_not_a_terminal_mean_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert colour_wanted("never", Terminal()) is False
    assert colour_wanted("auto", io.StringIO()) is False
    assert colour_wanted("auto", Terminal()) is rich_available()
    assert colour_wanted("always", io.StringIO()) is rich_available()
    monkeypatch.setenv("NO_COLOR", "1")
    assert colour_wanted("auto", Terminal()) is False


def test_coloured_text_is_the_plain_text_plus_styles() -> None:
    lines = [
        "h:1 (id: 1 rack: null) -> (",
        "\tProduce(0): 0 to 11 [usable: 11] {4.x refuses 0-2: "
        "still advertised by 4.x but refused (KAFKA-18659)},",
        "\tVote(52): UNSUPPORTED",
        ")",
    ]
    if not rich_available():  # without rich nothing asks for colour, as checked above
        assert colour_wanted("always", Terminal()) is False
        return
    stream = io.StringIO()
    print_coloured(lines, stream)
    coloured = stream.getvalue()
    assert "\x1b[" in coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert plain.splitlines() == lines  # Kafka's tabs kept, as without colour
