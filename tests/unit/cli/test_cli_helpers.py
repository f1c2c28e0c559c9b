"""Redaction, failure sentences, progress and output plumbing of the command line."""

from __future__ import annotations

import io
import os
import traceback
from pathlib import Path

import pytest

from kafkacompat.cli.failures import CommandFailed, explain_failure
from kafkacompat.cli.output import Output, Progress, progress_mode
from kafkacompat.cli.redaction import Redactor
from kafkacompat.connection.config import ConnectionConfig
from kafkacompat.connection.security import SaslConfig, Secret, TlsConfig
from kafkacompat.errors import (
    AuthenticationError,
    BrokerTooOldError,
    ConfigError,
    KafkaTimeoutError,
    NoBrokerReachableError,
    PeerClosedError,
    SilentPeerError,
    TransportError,
    UnsupportedVersionError,
    WrongProtocolError,
)

SECRET = "hunter2-0xC0FFEE"
PLAIN = ConnectionConfig()
TLS = ConnectionConfig(tls=TlsConfig())
SASL = ConnectionConfig(sasl=SaslConfig("PLAIN", "u", Secret("x")))


# -- redaction ------------------------------------------------------------------------------


def test_redactor_masks_text_longest_first() -> None:
    redactor = Redactor([Secret("abc"), Secret("abcdef"), Secret("")])
    assert redactor.text("xx abcdef yy abc") == "xx *** yy ***"
    assert bool(Redactor()) is False and bool(redactor) is True


def test_scrub_reaches_message_args_notes_causes_and_groups() -> None:
    redactor = Redactor([Secret(SECRET)])
    inner = AuthenticationError(f"broker said {SECRET}", node="h:1")
    inner.add_note(f"note with {SECRET}")
    outer = TransportError(f"wrapped {SECRET}")
    outer.__cause__ = inner
    group = ExceptionGroup("g", [outer, ValueError(SECRET)])
    try:
        with redactor.scrubbing():
            raise group
    except ExceptionGroup as caught:
        rendered = "".join(traceback.format_exception(caught))
    assert SECRET not in rendered
    assert "broker said ***" in rendered and "note with ***" in rendered
    assert inner.message == "broker said ***"


# -- failures -------------------------------------------------------------------------------


def unreachable(*reasons: Exception) -> NoBrokerReachableError:
    return NoBrokerReachableError({f"h:{n}": r for n, r in enumerate(reasons)})  # type: ignore[misc]


@pytest.mark.parametrize(
    ("error", "config", "starts", "hint"),
    [
        (unreachable(TransportError("connection refused")), PLAIN, "unreachable: h:0: connection", None),
        # A TLS listener answers plaintext or closes on it (and is asked): no TLS hint for silence.
        (unreachable(KafkaTimeoutError("no answer")), PLAIN, "no answer: ", None),
        (unreachable(KafkaTimeoutError("no answer")), TLS, "no answer: ", None),
        (SilentPeerError("the peer accepted the connection but said nothing"), PLAIN, "no answer: ", None),
        (unreachable(PeerClosedError("closed")), PLAIN, "connection closed: ", "it may require SASL"),
        (unreachable(PeerClosedError("closed")), SASL, "connection closed: ", None),
        (WrongProtocolError("the peer answered with HTTP", kind="http"), PLAIN, "not a Kafka broker: ", None),
        (
            WrongProtocolError("the peer answered with a TLS alert", kind="tls"),
            PLAIN,
            "TLS listener: the peer answered with a TLS record",
            "add --tls",
        ),
        (
            BrokerTooOldError("closed on v0", node="h:1"),
            PLAIN,
            "not a Kafka broker: the peer closed on ApiVersions, Metadata v0 (every Kafka answers it) "
            "and a TLS ClientHello",
            "0.8.2",
        ),
        (BrokerTooOldError("closed on v0"), TLS, "not a Kafka broker: ", "--fallback-release 0.8.2"),
        (
            AuthenticationError("SCRAM-SHA-256 authentication as 'u' failed"),
            SASL,
            "authentication failed: ",
            None,
        ),
        (AuthenticationError("TLS failed: UNEXPECTED_EOF", node="h:1"), TLS, "TLS failed: ", "drop --tls"),
        (AuthenticationError("TLS certificate verification failed", node="h:1"), TLS, "TLS failed: ", None),
        (
            AuthenticationError("TLS failed: EOF", node="elsewhere:9"),
            TLS,
            "TLS failed: ",
            "advertised.listeners",
        ),
        (UnsupportedVersionError("no Metadata version"), PLAIN, "no usable version: ", None),
        (KafkaTimeoutError("slow"), PLAIN, "timed out: ", None),
        (TransportError("reset"), PLAIN, "connection failed: ", None),
    ],
)
def test_failures_get_a_kind_and_a_hint(
    error: Exception, config: ConnectionConfig, starts: str, hint: str | None
) -> None:
    sentence = explain_failure(error, config, "h:1")  # type: ignore[arg-type]
    assert sentence.startswith(starts)
    assert "\n" not in sentence
    hints = (
        "add --tls",
        "drop --tls",
        "it may require SASL",
        "advertised.listeners",
        "--fallback-release 0.8.2",
    )
    expected = [] if hint is None else [hint]
    if isinstance(error, BrokerTooOldError):
        expected = [h for h in hints if h in ("--fallback-release 0.8.2", hint)]
    assert [h for h in hints if h in sentence] == expected


def test_config_errors_and_command_failures_pass_through() -> None:
    assert explain_failure(ConfigError("bad"), PLAIN) == "bad"
    assert explain_failure(CommandFailed("done"), PLAIN) == "done"


# -- output ---------------------------------------------------------------------------------


def test_output_masks_secrets_everywhere() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = Output(Redactor([Secret(SECRET)]), stdout=out, stderr=err)
    output.line(f"a {SECRET}")
    output.lines([SECRET])
    output.json({"k": SECRET})
    output.note(SECRET)
    assert SECRET not in out.getvalue() + err.getvalue()
    assert out.getvalue().count("***") == 3


class BrokenStream(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError


def test_a_closed_reader_ends_the_output_quietly() -> None:
    output = Output(stdout=BrokenStream())
    output.line("first")
    output.line("second")
    assert output.closed


def test_progress_modes_follow_stderr(tmp_path: Path) -> None:
    assert progress_mode(io.StringIO(), quiet=True) == "off"
    assert progress_mode(io.StringIO()) == "plain"
    read, write = os.pipe()
    try:
        with os.fdopen(write, "w") as pipe:
            assert progress_mode(pipe) == "off"
    finally:
        os.close(read)
    with (tmp_path / "log").open("w") as file:
        assert progress_mode(file) == "plain"


def test_plain_and_live_progress() -> None:
    plain = io.StringIO()
    progress = Progress(2, "negotiating", stream=plain, mode="plain")
    progress.start()
    progress.step("node 1 at h:1")
    progress.step("node 2 at h:2", "refused")
    progress.finish()
    assert plain.getvalue().splitlines() == [
        "negotiating: 2 broker(s)",
        "  [1/2] node 1 at h:1: ok",
        "  [2/2] node 2 at h:2: failed: refused",
    ]
    live = io.StringIO()
    progress = Progress(2, "negotiating", stream=live, mode="live")
    progress.start()
    progress.step("node 1")
    progress.step("node 2", "refused")
    progress.finish()
    text = live.getvalue()
    assert "\rnegotiating: 2/2 done, 1 failed" in text and text.endswith("\r")
    quiet = io.StringIO()
    progress = Progress(1, "x", stream=quiet, mode="off")
    progress.start()
    progress.step("n")
    progress.finish()
    assert quiet.getvalue() == ""


def test_a_first_contact_failure_keeps_its_details_for_debug_out_of_the_line() -> None:
    from kafkacompat.cli.failures import as_failure
    from kafkacompat.negotiation.handshake import ApiVersionsHandshake

    handshake = ApiVersionsHandshake(node="h:1")
    handshake.connected()
    handshake.request_sent()
    handshake.foreign_bytes(b"HTTP/1.0 400 Bad request\r\n")
    error = handshake.next_action().error  # type: ignore[union-attr]
    failure = as_failure(error, PLAIN, "h:1")
    line = failure.line("kafkacompat inspect")
    said = "not a Kafka broker: the peer answered in HTTP (HTTP/1.0 400 Bad request)"
    assert line == f"kafkacompat inspect: {said}"
    notes = failure.__notes__
    assert notes[0] == "the peer's first bytes: " + b"HTTP/1.0 400 Bad request\r\n".hex(" ")
    assert "1. ApiVersions v5 on connection 1: foreign-protocol" in notes[1]
