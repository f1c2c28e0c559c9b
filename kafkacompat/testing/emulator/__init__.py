"""A broker-release emulator: every Kafka release from 0.8.0 to 4.2 on loopback.

``EmulatedCluster`` runs brokers of any release and kind of the reference
table (or of a table of your own) on 127.0.0.1, answering ApiVersions the way
each release did, enough of Metadata, FindCoordinator, DescribeCluster,
UpdateFeatures and SASL for a client to find its way, and failing on request
in the ways brokers and look-alikes fail (``Fault``).  See docs/emulator.md.

Modules: ``profile`` (what a release answers), ``faults`` (fault knobs),
``state`` (what a cluster shares), ``controller`` (UpdateFeatures),
``handlers`` (per-API answers), ``sasl`` (PLAIN and SCRAM), ``connection``
(the sans-I/O connection), ``broker`` (the trio server), ``cluster``.
"""

from kafkacompat.testing.emulator.broker import EmulatedBroker, check_bind_host
from kafkacompat.testing.emulator.cluster import EmulatedCluster, ThreadedCluster
from kafkacompat.testing.emulator.connection import Connection, RequestRecord
from kafkacompat.testing.emulator.faults import Fault, FaultKind, FaultPlan
from kafkacompat.testing.emulator.handlers import Handler, Request
from kafkacompat.testing.emulator.profile import (
    ApiVersionsEra,
    BrokerProfile,
    custom_profile,
    default_features,
    parse_profile_spec,
    profile_for,
    release_profiles,
)
from kafkacompat.testing.emulator.sasl import SaslConfig
from kafkacompat.testing.emulator.state import ClusterState, FeatureSnapshot, Node

__all__ = [
    "ApiVersionsEra",
    "BrokerProfile",
    "ClusterState",
    "Connection",
    "EmulatedBroker",
    "EmulatedCluster",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "FeatureSnapshot",
    "Handler",
    "Node",
    "Request",
    "RequestRecord",
    "SaslConfig",
    "ThreadedCluster",
    "check_bind_host",
    "custom_profile",
    "default_features",
    "parse_profile_spec",
    "profile_for",
    "release_profiles",
]
