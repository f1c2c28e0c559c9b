"""The fleet compatibility pipeline: many clusters, many clients, one report (PySpark).

Theory.  Before a rolling upgrade, a downgrade, a feature finalization or a
client release, a platform team needs, for every cluster and every client:
what will be negotiated, what will break, which feature levels are safe and
which brokers are out of line.  Brokers are captured as capability snapshots
(``kafkacompat snapshot``, schema in ``snapshot_format``), clients as profiles
(``client_format``), and this package answers with Spark tables whose every
value is the negotiation core's answer (``kafkacompat.negotiation``), computed
with Spark built-in functions only.  See ``docs/pipeline.md``.

Modules, in data order: ``snapshot_format``/``client_format`` (the input
lines, no Spark), ``snapshot_schema`` (their Spark schemas and checks),
``readers`` (reading, bad records with file and line), ``latest`` (latest
observation per broker, stale epochs), ``negotiate`` (versions, compatibility),
``feature_table`` (finalized, safe and blocked levels, fenced brokers),
``what_if_core``/``what_if`` (the verdict of upgrading every cluster to a
target release, in Python and in Spark), ``report`` (building and writing all
tables), ``html_report``/``heatmap``/``what_if_page`` (the page), ``session``
(the Spark session), ``generate`` (synthetic fleets).

The plain-Python names below import without Spark; the Spark ones are loaded
on first use, so ``import kafkacompat.pipeline`` works without the
``kafkacompat[spark]`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacompat._lazy import lazy_exports as _lazy_exports
from kafkacompat.pipeline.client_format import (
    KAFKACOMPAT_REQUIRED_APIS,
    client_profile,
    kafkacompat_client_profile,
    validate_client_profile,
)
from kafkacompat.pipeline.generate import FleetSpec, generate_clients, generate_fleet, write_fleet
from kafkacompat.pipeline.snapshot_format import (
    SCHEMA_VERSION,
    capabilities_from_snapshot,
    snapshot_json,
    snapshot_line,
    validate_snapshot,
)
from kafkacompat.pipeline.what_if_core import UpgradeTarget, parse_targets, upgrade_first, what_if_rows

if TYPE_CHECKING:
    from kafkacompat.pipeline.feature_table import feature_levels, feature_rows, fenced_brokers
    from kafkacompat.pipeline.latest import latest_observations, stale_epochs
    from kafkacompat.pipeline.negotiate import compatibility, negotiated
    from kafkacompat.pipeline.readers import read_clients, scan_snapshots
    from kafkacompat.pipeline.report import TABLES, FleetTables, build_fleet_report, write_fleet_report
    from kafkacompat.pipeline.session import DEFAULT_MASTER, fleet_session, resolve_master
    from kafkacompat.pipeline.snapshot_schema import CLIENT_SCHEMA, SNAPSHOT_SCHEMA
    from kafkacompat.pipeline.what_if import what_if

__all__ = [
    "CLIENT_SCHEMA",
    "DEFAULT_MASTER",
    "KAFKACOMPAT_REQUIRED_APIS",
    "SCHEMA_VERSION",
    "SNAPSHOT_SCHEMA",
    "TABLES",
    "FleetSpec",
    "FleetTables",
    "UpgradeTarget",
    "build_fleet_report",
    "capabilities_from_snapshot",
    "client_profile",
    "compatibility",
    "feature_levels",
    "feature_rows",
    "fenced_brokers",
    "fleet_session",
    "generate_clients",
    "generate_fleet",
    "kafkacompat_client_profile",
    "latest_observations",
    "negotiated",
    "parse_targets",
    "read_clients",
    "resolve_master",
    "scan_snapshots",
    "snapshot_json",
    "snapshot_line",
    "stale_epochs",
    "upgrade_first",
    "validate_client_profile",
    "validate_snapshot",
    "what_if",
    "what_if_rows",
    "write_fleet",
    "write_fleet_report",
]

# Spark-backed names -> their module (imported on first access).
_LAZY = {
    "feature_levels": "feature_table",
    "feature_rows": "feature_table",
    "fenced_brokers": "feature_table",
    "latest_observations": "latest",
    "stale_epochs": "latest",
    "compatibility": "negotiate",
    "negotiated": "negotiate",
    "read_clients": "readers",
    "scan_snapshots": "readers",
    "TABLES": "report",
    "FleetTables": "report",
    "build_fleet_report": "report",
    "write_fleet_report": "report",
    "DEFAULT_MASTER": "session",
    "fleet_session": "session",
    "resolve_master": "session",
    "CLIENT_SCHEMA": "snapshot_schema",
    "SNAPSHOT_SCHEMA": "snapshot_schema",
    "what_if": "what_if",
}


__getattr__ = _lazy_exports(__name__, _LAZY)
