"""What one ApiVersions reply means for the handshake: a pure judgement.

``judge_reply`` reads the bytes of a reply to a request sent at some version
and returns a ``Verdict``: the outcome token of the transition table, what was
seen, and either the next version to try, the accepted response, or the error
to fail with.  It keeps no state; the handshake records and applies verdicts.
Rules 2, 3, 6, 7 and 8 of ``table`` are carried out here.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from kafkacompat.errors import (
    BrokerRejectedError,
    DecodeError,
    IdentityRefusedError,
    InvalidRequestError,
    KafkaCompatError,
    ProtocolError,
    ProtocolViolationError,
    RebootstrapRequiredError,
    UnsupportedVersionError,
    WrongProtocolError,
)
from kafkacompat.negotiation.capabilities import sealed
from kafkacompat.negotiation.handshake.config import (
    CODEC_MAX_VERSION,
    FIRST_SOFTWARE_FIELDS_VERSION,
    IDENTITY_VERSION,
    HandshakeConfig,
)
from kafkacompat.negotiation.handshake.transcript import HandshakeTranscript
from kafkacompat.negotiation.handshake.types import HandshakeResult, quick
from kafkacompat.protocol.error_codes import (
    INVALID_REQUEST,
    NONE,
    REBOOTSTRAP_REQUIRED,
    UNSUPPORTED_VERSION,
    error_for,
)
from kafkacompat.protocol.framing import DEFAULT_HEADERS, FOREIGN_BYTES_KEPT, RequestHeaders, foreign_kind
from kafkacompat.protocol.messages import ApiVersionsResponse
from kafkacompat.protocol.messages.api_key_numbers import API_VERSIONS
from kafkacompat.protocol.versions import VersionRange

if TYPE_CHECKING:  # an identity is the cluster layer's (KIP-1242): a plain connection never loads it
    from kafkacompat.negotiation.handshake.identity import BrokerIdentity

__all__ = [
    "API_VERSIONS_KEY",
    "Verdict",
    "accepted_result",
    "api_ranges_of",
    "failure_verdict",
    "first_ranges",
    "foreign_verdict",
    "judge_reply",
    "mismatch_verdict",
    "stand_in_result",
]

API_VERSIONS_KEY: Final = API_VERSIONS  # the key of ApiVersions itself in its own answer
K = TypeVar("K", int, str)
_API_KEY = operator.attrgetter("api_key")
_MIN_VERSION = operator.attrgetter("min_version")
_MAX_VERSION = operator.attrgetter("max_version")


class Verdict(NamedTuple):
    """One reply judged: ``outcome`` names the transition to take.

    ``understood``: the bytes were an ApiVersions reply (whatever its error).
    ``next_version`` is set to retry; ``response``/``layout`` to accept; and
    ``error_type``/``message``/``error_fields`` to fail.
    """

    outcome: str
    detail: str
    understood: bool = False
    flags: tuple[str, ...] = ()
    next_version: int | None = None
    response: ApiVersionsResponse | None = None
    layout: int | None = None
    api_ranges: Mapping[int, VersionRange] | None = None  # the response's, read once
    supported_features: Mapping[str, VersionRange] | None = None  # the same, for an accepted reply
    finalized_features: Mapping[str, VersionRange] | None = None
    reply: bytes | None = None  # the accepted reply's bytes, which ``response`` was read from
    error_type: type[KafkaCompatError] | None = None
    message: str = ""
    error_fields: Mapping[str, Any] = MappingProxyType({})


# Accepted replies already judged, by their bytes and the version asked: a broker answers
# every connection with the same bytes (so do the brokers of one release), and judging them
# again would give the same verdict.  Only ``_accepted`` verdicts go in (they depend on
# nothing else), and only replies of a real broker's size (Kafka 4.x: under 1 KiB), so that
# a peer cannot make it hold much: at most 16 entries, cleared whole when full (one atomic
# step, as threads may share it).
_JUDGED: dict[tuple[bytes, int], Verdict] = {}
_JUDGED_MAX: Final = 16
_JUDGED_MAX_BYTES: Final = 4096


def judge_reply(
    body: bytes,
    sent: int,
    config: HandshakeConfig,
    identity: BrokerIdentity | None = None,
    headers: RequestHeaders = DEFAULT_HEADERS,
) -> Verdict:
    """What the reply ``body`` (after the correlation id) to ApiVersions v``sent`` means.

    An accepted verdict's ``response`` may be shared with other connections (the memo
    above): read it, never change it; ``reply`` holds its bytes.
    """
    key = (bytes(body), sent)
    known = _JUDGED.get(key)
    if known is not None:
        return known
    verdict = _judge_afresh(key[0], sent, config, identity if sent >= IDENTITY_VERSION else None, headers)
    if verdict.outcome == "ok" and verdict.error_type is None and len(body) <= _JUDGED_MAX_BYTES:
        if len(_JUDGED) >= _JUDGED_MAX:
            _JUDGED.clear()
        _JUDGED[key] = verdict
    return verdict


def _judge_afresh(
    body: bytes, sent: int, config: HandshakeConfig, identity: BrokerIdentity | None, headers: RequestHeaders
) -> Verdict:
    response, layout, problems = _read(body, sent)
    if response is None:
        if foreign_kind(body) is not None:
            return foreign_verdict(body)
        quirk = _zero_count_refusal(body)
        if quirk is not None:
            return _unsupported(quirk, sent, ("zero-count-unsupported-version-reply",))
        if body[:2] == UNSUPPORTED_VERSION.to_bytes(2, "big"):
            # The error code leads every layout; the rest is a broken ApiKeys.
            return _unsupported(None, sent, ("unreadable-unsupported-version-reply",))
        return Verdict(
            "unreadable",
            "; ".join(str(p) for p in problems),
            error_type=DecodeError,
            message=f"the reply to ApiVersions v{sent} cannot be read at v{sent} or as v0: "
            f"{problems[0].reason}",
            error_fields={"what": "ApiVersionsResponse", "version": sent, "offset": problems[0].offset},
        )
    reread = ("reread-as-v0",) if layout != sent else ()
    code = response.error_code
    if code == NONE:
        return _accepted(response, body, sent, layout, reread)
    if code == UNSUPPORTED_VERSION:
        return _unsupported(response, sent, ())
    name, says = error_for(code).name, error_for(code).message
    if code == REBOOTSTRAP_REQUIRED or (code == INVALID_REQUEST and identity is not None):
        return _identity_verdict(code, name, sent, identity, reread)
    if code == INVALID_REQUEST:
        cause = (
            f"the client software name {config.client_software_name!r} or version "
            f"{config.client_software_version!r} sent at v{sent} (KIP-511)"
            if sent >= FIRST_SOFTWARE_FIELDS_VERSION
            else f"the request header (client id {headers.client_id!r})"
        )
        return Verdict(
            "invalid-request",
            f"{name} ({code})",
            understood=True,
            flags=reread,
            error_type=InvalidRequestError,
            message=f"the broker answered {name} to ApiVersions v{sent}; the likely cause is "
            f"{cause}; the connection must be closed",
            error_fields={"error_code": code, "error_name": name},
        )
    return Verdict(
        "broker-error",
        f"{name} ({code})",
        understood=True,
        flags=reread,
        error_type=BrokerRejectedError,
        message=f"the broker answered ApiVersions v{sent} with error {name} ({code}): {says}",
        error_fields={"error_code": code, "error_name": name},
    )


def _identity_verdict(
    code: int, name: str, sent: int, identity: BrokerIdentity | None, reread: tuple[str, ...]
) -> Verdict:
    """Rule 11 (KIP-1242): the broker is not the one meant, or refused the identity sent."""
    fields = {
        "error_code": code,
        "error_name": name,
        "expected_cluster_id": identity.cluster_id if identity is not None else None,
        "expected_node_id": identity.node_id if identity is not None else None,
    }
    if code == REBOOTSTRAP_REQUIRED:
        meant = f"expected {identity}" if identity is not None else "no identity was sent"
        return Verdict(
            "rebootstrap-required",
            f"{name} ({code}); {meant}",
            understood=True,
            flags=reread,
            error_type=RebootstrapRequiredError,
            message=f"the broker at this address is someone else: {meant}, and it answered {name} "
            f"to ApiVersions v{sent} (KIP-1242); resolve the bootstrap addresses and read Metadata again",
            error_fields=fields,
        )
    return Verdict(
        "identity-refused",
        f"{name} ({code}); sent {identity}",
        understood=True,
        flags=reread,
        error_type=IdentityRefusedError,
        message=f"the broker refused the identity sent with ApiVersions v{sent} ({identity}): it answered "
        f"{name} (KIP-1242 wants both a cluster id and a node id, or neither)",
        error_fields=fields,
    )


def mismatch_verdict(got: int | None, expected: int | None, request: str) -> Verdict:
    message = f"the reply carries correlation id {got} but {request} had {expected}: out of step"
    detail = f"correlation id {got}, expected {expected}"
    return failure_verdict("correlation-mismatch", detail, ProtocolError, message)


def failure_verdict(
    outcome: str, detail: str, error_type: type[KafkaCompatError], message: str, **fields: object
) -> Verdict:
    return Verdict(outcome, detail, error_type=error_type, message=message, error_fields=fields)


def foreign_verdict(data: bytes) -> Verdict:
    """Bytes of another protocol where a Kafka reply was expected, named by ``peer_kind``."""
    from kafkacompat.negotiation.peer_kind import name_peer  # only a peer that is not Kafka needs it

    named = name_peer(data)
    if named is None:
        message, kind = (
            "the peer answered with bytes that are not a Kafka frame: the port or the "
            "security protocol (PLAINTEXT, SSL, SASL_*) is wrong"
        ), "other"
    else:
        message, kind = named.sentence, named.kind
    return Verdict(
        "foreign-protocol",
        f"first bytes {data[:8].hex(' ')}",
        error_type=WrongProtocolError,
        message=message,
        error_fields={"kind": kind, "first_bytes": bytes(data[:FOREIGN_BYTES_KEPT])},
    )


def _read(body: bytes, sent: int) -> tuple[ApiVersionsResponse | None, int, list[DecodeError]]:
    """The reply read at the version sent, else as v0 (the UNSUPPORTED_VERSION layout)."""
    problems: list[DecodeError] = []
    for layout in dict.fromkeys((sent, 0)):
        try:
            return ApiVersionsResponse.decode(body, layout), layout, problems
        except DecodeError as exc:
            problems.append(exc)
    return None, sent, problems


# librdkafka's mock broker (seen in 2.0.2 and 2.16) refuses ApiVersions v3+ with exactly these
# 13 bytes: UNSUPPORTED_VERSION, a compact array count saying 0 entries (0x01), one entry anyway
# (ApiVersions: int16 key, min, max) and 4 more bytes.  Its one entry is the range it accepts.
_ZERO_COUNT_REFUSAL = struct.Struct(">hBhhhi")


def _zero_count_refusal(body: bytes) -> ApiVersionsResponse | None:
    """The refusal above, read for its ApiVersions range; None for any other bytes."""
    if len(body) != _ZERO_COUNT_REFUSAL.size:
        return None
    code, count, key, low, high, _ = _ZERO_COUNT_REFUSAL.unpack(body)
    if (code, count, key) != (UNSUPPORTED_VERSION, 1, API_VERSIONS_KEY) or not 0 <= low <= high:
        return None
    entry = ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
    return ApiVersionsResponse(error_code=code, api_keys=[entry])


def _unsupported(response: ApiVersionsResponse | None, sent: int, flags: tuple[str, ...]) -> Verdict:
    entry = None if response is None else _find_api(response, API_VERSIONS_KEY)
    advertised = None if entry is None else VersionRange(entry.min_version, entry.max_version)
    refused = f"the broker answered UNSUPPORTED_VERSION to ApiVersions v{sent}"
    if entry is not None and entry.min_version > entry.max_version:
        # An impossible range is no downgrade hint: refused, never retried at its "max".
        return Verdict(
            "no-lower-version",
            f"UNSUPPORTED_VERSION, ApiVersions advertised: {entry.min_version} above {entry.max_version}",
            understood=True,
            flags=(*flags, "impossible-range"),
            error_type=ProtocolViolationError,
            message=f"{refused} and advertises the impossible ApiVersions range "
            f"{entry.min_version}-{entry.max_version} (minimum above maximum): not retried",
            error_fields={"what": "ApiVersionsResponse", "version": 0},
        )
    if sent == 0:
        problem = f"{refused}: there is no lower version"
    elif advertised is None:
        detail = "UNSUPPORTED_VERSION without an ApiVersions range (as brokers 0.10 to 2.3 answer)"
        return Verdict("unsupported-version", detail, understood=True, flags=flags, next_version=0)
    elif 0 <= advertised.highest < sent:
        detail = f"UNSUPPORTED_VERSION; the broker accepts ApiVersions {advertised}"
        return Verdict(
            "unsupported-version", detail, understood=True, flags=flags, next_version=advertised.highest
        )
    elif advertised.lowest > CODEC_MAX_VERSION:
        problem = (
            f"{refused}; it accepts ApiVersions {advertised} only and this client "
            f"writes up to v{CODEC_MAX_VERSION}"
        )
    else:
        problem = (
            f"{refused} yet advertises ApiVersions {advertised}: it refuses a version it "
            "claims, so retrying could loop"
        )
        flags = (*flags, "refused-advertised-version")
    return Verdict(
        "no-lower-version",
        f"UNSUPPORTED_VERSION, ApiVersions advertised: {advertised or 'none'}",
        understood=True,
        flags=flags,
        error_type=UnsupportedVersionError,
        message=problem,
    )


def _accepted(
    response: ApiVersionsResponse, body: bytes, sent: int, layout: int, flags: tuple[str, ...]
) -> Verdict:
    epoch = response.finalized_features_epoch
    if epoch < -1:  # -1 means "unknown"; Kafka never sends less, and callers would act on it
        return Verdict(
            "broker-error",
            f"finalized features epoch {epoch}",
            understood=True,
            flags=(*flags, "negative-epoch"),
            error_type=ProtocolViolationError,
            message=f"the reply to ApiVersions v{sent} gives the finalized features epoch {epoch}: "
            "an epoch is -1 (unknown) or more",
            error_fields={"what": "ApiVersionsResponse", "version": layout},
        )
    rows = response.api_keys
    ranges = api_ranges_of(rows)
    entry = ranges.get(API_VERSIONS_KEY)  # the first ApiVersions row's range, as Kafka reads it
    if entry is None or sent not in entry:
        flags = (*flags, "answered-unadvertised-version")
    if len(ranges) != len(rows):
        flags = (*flags, "duplicate-api-keys")
    advertised = "none" if entry is None else f"{entry.lowest}-{entry.highest}"
    detail = f"{len(ranges)} APIs; ApiVersions {advertised}; read as v{layout}"
    # A range no Kafka broker sends (minimum above maximum) promises no version: the API
    # reads as not listed, and the transcript says why.  Any row counts, a repeated key's too.
    impossible: list[int] = []
    if any(map(operator.gt, map(_MIN_VERSION, rows), map(_MAX_VERSION, rows))):
        impossible = sorted({i.api_key for i in rows if i.min_version > i.max_version})
    if impossible:
        flags = (*flags, "impossible-ranges")
        listed = ", ".join(str(key) for key in impossible)
        detail += f"; minimum above maximum for API keys {listed}: read as not listed"
    supported = first_ranges((f.name, f.min_version, f.max_version) for f in response.supported_features)
    finalized = first_ranges(
        (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
    )
    return Verdict(
        "ok", detail, understood=True, flags=flags, response=response, layout=layout, api_ranges=ranges,
        reply=body, supported_features=supported, finalized_features=finalized,
    )


def _find_api(response: ApiVersionsResponse, api_key: int) -> ApiVersionsResponse.ApiVersion | None:
    return next((item for item in response.api_keys if item.api_key == api_key), None)


_NO_RANGES: Final[Mapping[Any, VersionRange]] = MappingProxyType({})


def first_ranges(rows: Iterable[tuple[K, int, int]]) -> Mapping[K, VersionRange]:
    """Read-only key -> range; the first row of a repeated key wins, as in Kafka's keyed lists."""
    ranges: dict[K, VersionRange] = {}
    shared = VersionRange.of
    for key, low, high in rows:
        if key not in ranges:
            ranges[key] = shared(low, high)
    return sealed(ranges) if ranges else _NO_RANGES


def api_ranges_of(rows: Sequence[ApiVersionsResponse.ApiVersion]) -> Mapping[int, VersionRange]:
    """``first_ranges`` of an ApiVersions answer's rows.  Once per connection, the
    handshake's hottest loop: built by passes that run in C when no key repeats."""
    keys = list(map(_API_KEY, rows))
    ranges = map(VersionRange.of, map(_MIN_VERSION, rows), map(_MAX_VERSION, rows))
    table = dict(zip(keys, ranges, strict=True))
    if len(table) != len(keys):  # a repeated key: its first row wins, as in Kafka's keyed lists
        return first_ranges((row.api_key, row.min_version, row.max_version) for row in rows)
    return sealed(table) if table else _NO_RANGES


# -- the two kinds of handshake result: a broker's own answer, or a release's table in its place --

_Result: Final = quick(HandshakeResult)  # once per connect: its quick twin builds it


def accepted_result(
    response: ApiVersionsResponse,
    layout: int | None,
    transcript: HandshakeTranscript,
    node: str | None,
    api_ranges: Mapping[int, VersionRange] | None,
    reply: bytes,
    *,
    supported_features: Mapping[str, VersionRange] | None = None,
    finalized_features: Mapping[str, VersionRange] | None = None,
) -> HandshakeResult:
    """What the broker answered, read at ``layout``; duplicate keys keep their first entry.

    ``api_ranges`` and the features: the response's, when the caller already read them
    (judging the reply did).
    ``reply``: the bytes ``response`` was read from; the result decodes its own copy from
    them when asked (``response`` may be shared: the memo of judged replies holds it).
    """
    return _Result(
        reply=reply,
        api_versions_version=layout,
        api_ranges=api_ranges if api_ranges is not None else api_ranges_of(response.api_keys),
        supported_features=supported_features
        if supported_features is not None
        else first_ranges((f.name, f.min_version, f.max_version) for f in response.supported_features),
        finalized_features=finalized_features
        if finalized_features is not None
        else first_ranges(
            (f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features
        ),
        finalized_features_epoch=response.finalized_features_epoch,
        throttle_time_ms=response.throttle_time_ms,
        transcript=transcript,
        node=node,
    )


def stand_in_result(
    release: str,
    ranges: Mapping[int, VersionRange],
    transcript: HandshakeTranscript,
    node: str | None,
    detected_release: str | None,
) -> HandshakeResult:
    """No ApiVersions answer: ``release``'s table stands in (pre-0.10 brokers list no features)."""
    return HandshakeResult(
        reply=None,
        api_versions_version=None,
        api_ranges=ranges,
        supported_features=first_ranges(()),
        finalized_features=first_ranges(()),
        finalized_features_epoch=-1,
        throttle_time_ms=0,
        transcript=transcript,
        fallback_release=release,
        node=node,
        detected_release=detected_release,
    )
