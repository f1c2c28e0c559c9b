"""The sans-I/O SASL mechanisms: RFC 7677's SCRAM-SHA-256 vector, PLAIN, and every refusal."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
import scramp  # type: ignore[import-untyped]

from kafkacompat.connection.sasl_mechanisms import (
    MIN_SCRAM_ITERATIONS,
    PlainMechanism,
    ScramMechanism,
    create_mechanism,
)
from kafkacompat.connection.security import SaslConfig, Secret
from kafkacompat.errors import AuthenticationError

# RFC 7677, section 3.
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_client(**kwargs: object) -> ScramMechanism:
    return ScramMechanism("SCRAM-SHA-256", "user", Secret("pencil"), nonce=RFC_NONCE, **kwargs)  # type: ignore[arg-type]


def test_rfc7677_vector_byte_for_byte() -> None:
    client = rfc_client()
    assert client.initial() == RFC_CLIENT_FIRST
    assert not client.finished
    assert client.step(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.finished
    assert client.step(RFC_SERVER_FINAL) is None
    assert client.finished


def test_rfc7677_tampered_server_signature_is_refused() -> None:
    client = rfc_client()
    client.initial()
    client.step(RFC_SERVER_FIRST)
    signature = bytearray(base64.b64decode(RFC_SERVER_FINAL[2:]))
    signature[0] ^= 1
    with pytest.raises(AuthenticationError, match="server signature is wrong"):
        client.step(b"v=" + base64.b64encode(bytes(signature)))
    assert not client.finished


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        (b"r=someoneElsesNonce123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", "fewer than the minimum of 4096"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100001", "more than the configured max"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=-5", "not a number"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=***,i=4096", "salt is not base64"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "lacks the nonce, salt or count"),
        (b"m=ext,r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "unknown extension"),
        (b"garbage", "malformed"),
        (b"\xff\xfe", "not UTF-8"),
        (b"e=unknown-user", "refused SCRAM-SHA-256 authentication: unknown-user"),
    ],
)
def test_bad_server_first_is_refused(server_first: bytes, match: str) -> None:
    client = rfc_client()
    client.initial()
    with pytest.raises(AuthenticationError, match=match):
        client.step(server_first)


def test_iteration_cap_comes_from_the_config() -> None:
    config = SaslConfig("SCRAM-SHA-256", "user", Secret("pencil"), max_scram_iterations=4096)
    client = create_mechanism(config, nonce=RFC_NONCE)
    client.initial()
    assert client.step(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL  # 4096 is at the cap: allowed
    config = SaslConfig("SCRAM-SHA-256", "user", Secret("pencil"), max_scram_iterations=4000)
    client = create_mechanism(config, nonce=RFC_NONCE)
    client.initial()
    with pytest.raises(AuthenticationError, match="max_scram_iterations"):
        client.step(RFC_SERVER_FIRST)
    assert MIN_SCRAM_ITERATIONS == 4096


@pytest.mark.parametrize(
    ("server_final", "match"),
    [
        (b"e=invalid-proof", "refused SCRAM-SHA-256 authentication: invalid-proof"),
        (b"x=1", "no signature"),
        (b"v=!!!", "not base64"),
        (b"v=" + base64.b64encode(b"\0" * 32), "server signature is wrong"),
    ],
)
def test_bad_server_final_is_refused(server_final: bytes, match: str) -> None:
    client = rfc_client()
    client.initial()
    client.step(RFC_SERVER_FIRST)
    with pytest.raises(AuthenticationError, match=match):
        client.step(server_final)
    assert not client.finished


def test_steps_out_of_order_are_refused() -> None:
    client = rfc_client()
    client.initial()
    with pytest.raises(AuthenticationError):
        client.initial()
    client.step(RFC_SERVER_FIRST)
    client.step(RFC_SERVER_FINAL)
    with pytest.raises(AuthenticationError, match="did not expect"):
        client.step(RFC_SERVER_FINAL)


def test_username_escaping() -> None:
    client = ScramMechanism("SCRAM-SHA-256", "a=b,c", "pw", nonce="abc")
    assert client.initial() == b"n,,n=a=3Db=2Cc,r=abc"


def test_default_nonce_is_random_and_safe() -> None:
    firsts = {ScramMechanism("SCRAM-SHA-512", "u", "p").initial() for _ in range(8)}
    assert len(firsts) == 8
    for first in firsts:
        nonce = first.decode().split(",r=", 1)[1]
        assert len(nonce) >= 24 and "," not in nonce and nonce.isprintable()


@pytest.mark.parametrize("nonce", ["", "a,b", "a\nb"])
def test_injected_nonce_must_be_valid(nonce: str) -> None:
    with pytest.raises(AuthenticationError, match="nonce"):
        ScramMechanism("SCRAM-SHA-256", "u", "p", nonce=nonce)


@pytest.mark.parametrize("name", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_against_scramp_server(name: str) -> None:
    """An independent server implementation accepts our proof and we accept its signature."""
    mechanism = scramp.ScramMechanism(name)
    auth_info = mechanism.make_auth_info("pässwörd", iteration_count=4096)
    server = mechanism.make_server(lambda username: auth_info if username == "üser" else None)
    client = ScramMechanism(name, "üser", "pässwörd")
    server.set_client_first(client.initial().decode())
    final = client.step(server.get_server_first().encode())
    assert final is not None
    server.set_client_final(final.decode())
    assert client.step(server.get_server_final().encode()) is None
    assert client.finished


def test_scram_512_by_hand() -> None:
    """SCRAM-SHA-512 checked against the RFC 5802 formulas written out here."""
    client = ScramMechanism("SCRAM-SHA-512", "user", "pencil", nonce="fyko+d2lbbFgONRv9qkxdawL")
    client_first_bare = client.initial()[3:]
    salt = b"0123456789abcdef"
    server_first = b"r=fyko+d2lbbFgONRv9qkxdawLserver,s=" + base64.b64encode(salt) + b",i=4096"
    final = client.step(server_first)
    assert final is not None
    without_proof, proof_b64 = final.split(b",p=")
    auth_message = client_first_bare + b"," + server_first + b"," + without_proof
    salted = hashlib.pbkdf2_hmac("sha512", b"pencil", salt, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    signature = hmac.digest(hashlib.sha512(client_key).digest(), auth_message, "sha512")
    assert base64.b64decode(proof_b64) == bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_signature = hmac.digest(hmac.digest(salted, b"Server Key", "sha512"), auth_message, "sha512")
    assert client.step(b"v=" + base64.b64encode(server_signature)) is None
    assert client.finished


def test_plain() -> None:
    plain = PlainMechanism("alice", Secret("s3cret"))
    assert plain.initial() == b"\0alice\0s3cret"
    assert not plain.finished
    assert plain.step(b"") is None
    assert plain.finished
    with pytest.raises(AuthenticationError):
        plain.step(b"")


@pytest.mark.parametrize(("user", "password"), [("a\0b", "p"), ("a", "p\0q")])
def test_plain_refuses_nul(user: str, password: str) -> None:
    with pytest.raises(AuthenticationError, match="NUL") as info:
        PlainMechanism(user, password)
    assert password not in str(info.value) or password == "p"


def test_unencodable_credentials_are_refused() -> None:
    with pytest.raises(AuthenticationError, match="UTF-8"):
        ScramMechanism("SCRAM-SHA-256", "user", "\ud800")


def test_no_secret_in_reprs_or_errors() -> None:
    password = "hunter2-Very-Secret"
    config = SaslConfig("scram-sha-256", "user", password)  # type: ignore[arg-type]
    assert password not in repr(config)
    client = create_mechanism(config, nonce=RFC_NONCE)
    client.initial()
    final = client.step(b"r=" + RFC_NONCE.encode() + b"x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final is not None
    assert password not in repr(client)
    with pytest.raises(AuthenticationError) as info:
        client.step(b"v=" + base64.b64encode(b"x" * 32))
    text = str(info.value) + repr(info.value)
    proof = final.split(b",p=")[1].decode()
    assert password not in text and proof not in text
    assert password not in repr(PlainMechanism("user", password))
