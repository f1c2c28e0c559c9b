"""What Kafka 4.0 and later removed, as facts the generated code carries.

Input: ``spec-4.3/removed-versions.json`` (versions the October 2024 specs
define and Kafka's 4.3 specs no longer do, per API key), checked against
Kafka 4.4.0's own files (none of them defines a removed version again) and
against the release table, 4.3 and 4.4 included, so that the kind of each
removal is a fact, not a guess:

- ``kip-896``: removed in 4.0 (KIP-896); no 4.x release advertises them.
- ``advertised-rejected``: gone from the specs, yet every 4.x broker still
  advertises them in ApiVersions and closes the connection when one is used
  (Produce v0-2, KAFKA-18659: kept in the advertised range so that old
  librdkafka keeps compressing).
- ``early-access``: the first version of an API that was still unstable in
  the October 2024 specs (early access in 4.0), dropped when 4.1 made the next
  version the first stable one (the Share APIs' v0, KAFKA-19057).
- ``retired``: a ZooKeeper-era inter-broker API gone with ZooKeeper in 4.0.

The specs' ``deprecatedVersions`` marks are a different, older fact: Kafka
4.0 kept many deprecated versions (Metadata 0-3, JoinGroup 0-1, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkacompat._codegen.release_inputs import load_releases
from kafkacompat._codegen.spec import SpecError, load_spec
from kafkacompat.protocol.versions import VersionRange

__all__ = ["KINDS", "Removal", "load_removals"]

KINDS: dict[str, str] = {
    "kip-896": "removed in 4.0 (KIP-896)",
    "advertised-rejected": "still advertised by 4.x but refused (KAFKA-18659)",
    "early-access": "early access in 4.0, dropped in 4.1 (KAFKA-19057)",
    "retired": "inter-broker API retired with ZooKeeper in 4.0",
}
_SINCE = {"kip-896": "4.0", "advertised-rejected": "4.0", "early-access": "4.1", "retired": "4.0"}


@dataclass(frozen=True)
class Removal:
    api_key: int
    api: str
    versions: VersionRange
    kind: str
    since: str
    advertised_by: tuple[str, ...]  # "release kind" of the 4.x profiles advertising a removed version


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def load_removals(root: Path) -> dict[int, Removal]:
    try:
        entries: list[dict[str, Any]] = json.loads((root / "spec-4.3" / "removed-versions.json").read_text())
        releases = load_releases(root)["releases"]
    except (OSError, ValueError, KeyError) as exc:
        raise SpecError(f"cannot read the removal facts: {exc}") from exc
    four = [r for r in releases if _release_key(r["release"]) >= (4, 0)]
    out: dict[int, Removal] = {}
    for entry in entries:
        removed = sorted(int(v) for v in entry.get("removed", []))
        if not removed:
            continue
        key = int(entry["apiKey"])
        if removed != list(range(removed[0], removed[-1] + 1)):
            raise SpecError(f"API {key}: removed versions {removed} are not one range")
        versions = VersionRange(removed[0], removed[-1])
        advertised = tuple(
            f"{r['release']} {r['kind']}"
            for r in four
            if str(key) in r["apis"]
            and not versions.intersect(
                VersionRange(r["apis"][str(key)]["min"], r["apis"][str(key)]["max"])
            ).empty
        )
        newest = root / "spec-4.4" / "message" / str(entry.get("spec44_file", ""))
        if entry.get("spec44_file") and newest.is_file():
            still = load_spec(newest).valid.intersect(versions)
            if not still.empty:
                raise SpecError(f"API {key} v{versions} is listed as removed; Kafka 4.4.0 defines v{still}")
        old_request = root / "spec" / "message" / f"{entry['api']}Request.json"
        unstable = old_request.exists() and load_spec(old_request).latest_unstable
        if entry.get("spec43") == "none":
            kind = "retired"
        elif unstable and removed == [0]:
            kind = "early-access"
            # 4.0 had it as early access; no release from 4.1 on may advertise it.
            advertised = tuple(a for a in advertised if not a.startswith("4.0 "))
        elif advertised:
            kind = "advertised-rejected"
        else:
            kind = "kip-896"
        if kind != "advertised-rejected" and advertised:
            raise SpecError(
                f"API {key} v{versions} is removed ({kind}) but advertised by {', '.join(advertised)}"
            )
        if kind == "advertised-rejected" and len(advertised) != len(
            [r for r in four if str(key) in r["apis"]]
        ):
            raise SpecError(f"API {key} v{versions}: advertised by some 4.x releases only ({advertised})")
        out[key] = Removal(key, str(entry["api"]), versions, kind, _SINCE[kind], advertised)
    return out
