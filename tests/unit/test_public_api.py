"""The public API is frozen in tests/data/public_api.txt: a change to it is a visible change."""

from __future__ import annotations

import re

from kafkacompat import _api_listing


def test_the_committed_listing_is_the_public_api(capsys: object) -> None:
    assert _api_listing.main(["--check"]) == 0, "run python -m kafkacompat._api_listing, commit the listing"


def test_the_listing_holds_every_public_name_with_its_signature() -> None:
    text = _api_listing.listing()
    assert "class kafkacompat.connection.config.ConnectionConfig" in text
    assert "    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT" in text
    assert "@asynccontextmanager async def kafkacompat.aio.connection.open_connection(" in text
    listed_modules = set()
    for line in text.splitlines():
        if line.startswith(("#", " ")):
            continue
        dotted = re.split(r"[(: ]", line.removeprefix("@asynccontextmanager ").split("def ")[-1]
                          .removeprefix("class "))[0]
        listed_modules.add(dotted.rpartition(".")[0])
    assert "kafkacompat.connection" in listed_modules
    assert [m for m in listed_modules if any(p.startswith("_") for p in m.split("."))] == []
