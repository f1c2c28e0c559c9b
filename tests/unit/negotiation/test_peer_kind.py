"""Naming what answered a connection's first contact, and the TLS question asked of a closing peer."""

from __future__ import annotations

import ssl
import struct

import pytest

from kafkacompat.connection.first_contact import FIRST_CONTACT_CORRELATION_ID
from kafkacompat.negotiation.peer_kind import TLS_CLIENT_HELLO, name_peer, silence_sentence
from kafkacompat.protocol.broker_framing import encode_response
from kafkacompat.protocol.messages import ApiVersionsResponse, MetadataResponse


def test_the_first_contact_id_ends_a_text_line() -> None:
    assert FIRST_CONTACT_CORRELATION_ID.to_bytes(4, "big").endswith(b"\r\n")


@pytest.mark.parametrize(
    "reply",
    [
        encode_response(ApiVersionsResponse(error_code=35), 0, FIRST_CONTACT_CORRELATION_ID),
        encode_response(MetadataResponse(), 0, FIRST_CONTACT_CORRELATION_ID + 1),  # 0.9: no ApiVersions
        struct.pack(">i", 16 << 20) + bytes(12),  # a huge Kafka-framed reply: its size stands, not a name
        b"\x01\x02\x03\xff",
    ],
)
def test_kafka_and_unknown_binary_bytes_are_not_named(reply: bytes) -> None:
    assert name_peer(reply) is None


@pytest.mark.parametrize(
    ("reply", "kind", "says"),
    [
        (
            b"HTTP/1.0 400 Bad request\r\n\r\n",
            "http",
            "not a Kafka broker: the peer answered in HTTP (HTTP/1.0 400",
        ),
        (b"<!DOCTYPE HTML>\n<html>", "http", "the peer answered in HTTP (<!DOCTYPE HTML>)"),
        (b"<html><body>", "http", "the peer answered in HTTP"),
        (b"\x15\x03\x03\x00\x02\x02\x32", "tls", "TLS listener: the peer answered with a TLS record"),
        (b"\x16\x03\x03\x00\x38\x02\x00", "tls", "TLS listener: the peer answered with a TLS record"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "ssh", "the peer is an SSH server (SSH-2.0-OpenSSH_9.6)"),
        (b"220 mail ESMTP ready\r\n", "text", 'the peer answered in text ("220 mail ESMTP ready")'),
        (b"-ERR unknown command\r\n", "text", 'the peer answered in text ("-ERR unknown command")'),
    ],
)
def test_other_peers_are_named_in_one_short_sentence(reply: bytes, kind: str, says: str) -> None:
    named = name_peer(reply)
    assert named is not None and named.kind == kind and says in named.sentence, named
    assert len(named.sentence) < 200 and "\n" not in named.sentence
    assert named.first_bytes == reply[:64]


def test_what_a_peer_sent_is_escaped_and_cut() -> None:
    named = name_peer(b"+" + b"\x7f" * 30 + b"abc" * 30 + b"\r\n")
    assert named is None  # DEL is no text
    named = name_peer(b"+" + b"x" * 100 + b"\r\n")
    assert named is not None and named.sentence.endswith('...")') and len(named.sentence) < 120


def test_silence_says_how_long_and_what_was_asked() -> None:
    said = silence_sentence(5.0, "ApiVersions v5, then Metadata v0", every_release=True)
    assert said.startswith("the peer accepted the connection but answered nothing in 5 s (ApiVersions v5")
    assert "a Kafka broker that is up answers at once" in said
    # Without the Metadata v0 probe, a 0.9 broker is silent too: the sentence says 0.10 or later.
    assert "0.10 or later" in silence_sentence(2.25, "ApiVersions v5", every_release=False)


def test_the_client_hello_is_one_tls_record_holding_a_client_hello() -> None:
    record_type, major, _minor, length = struct.unpack(">BBBH", TLS_CLIENT_HELLO[:5])
    assert (record_type, major) == (22, 3) and length == len(TLS_CLIENT_HELLO) - 5
    assert TLS_CLIENT_HELLO[5] == 1  # ClientHello
    assert int.from_bytes(TLS_CLIENT_HELLO[6:9], "big") == length - 4


def test_an_openssl_server_answers_the_client_hello_with_a_tls_record() -> None:
    """In memory, through the ssl module's server side: the hello is one a real TLS server reads."""
    import trustme

    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    server = context.wrap_bio(incoming, outgoing, server_side=True)
    incoming.write(TLS_CLIENT_HELLO)
    with pytest.raises(ssl.SSLWantReadError):  # it answered and now waits for the client
        server.do_handshake()
    answer = outgoing.read()
    named = name_peer(answer)
    assert named is not None and named.kind == "tls"
    assert answer[5] == 2  # a ServerHello (or a HelloRetryRequest, which has its form)
