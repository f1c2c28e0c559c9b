"""Client sides of the SASL mechanisms Kafka offers: PLAIN and SCRAM-SHA-256/512.

Theory
======
Kafka runs SASL as a string of opaque tokens: the client sends one, the broker
answers one, until the mechanism is done.  This module is the mechanism
alone, sans I/O: ``initial()`` is the first client token, ``step(challenge)``
takes the broker's answer to the last token and returns the next token, or
None once nothing more is to be sent (``finished`` is then True).  Every
refusal is an ``AuthenticationError`` whose text never holds the password,
nor anything derived from it (salted password, keys, proof).

PLAIN (RFC 4616) is one token, ``authzid NUL authcid NUL passwd``, with an
empty authzid as Kafka's client sends it; the broker answers with an empty
token.

SCRAM (RFC 5802, SHA-256 and SHA-512 as in RFC 7677) is two round trips:

    client-first   n,,n=<user>,r=<client nonce>          (gs2 header "n,,": no channel binding)
    server-first   r=<client nonce + server nonce>,s=<salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<proof>            ("biws" is base64 of "n,,")
    server-final   v=<server signature>  or  e=<error>

The client proves it knows the password without sending it, and the
server-final signature proves the broker knows the stored credential: a broker
(or something in between) that cannot produce it is refused.  Kafka applies
no SASLprep: the password is used as its UTF-8 bytes and the user name only
has ``=`` and ``,`` escaped, so credentials created by Kafka's tools match.
The iteration count the broker asks for is bounded both ways: below 4096
(Kafka's minimum) is a downgrade, above ``max_iterations`` a CPU trap.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from kafkacompat.connection.security import SaslConfig, Secret
from kafkacompat.errors import AuthenticationError
from kafkacompat.negotiation.sasl_exchange import SaslMechanism  # what the mechanisms here satisfy

__all__ = [
    "MIN_SCRAM_ITERATIONS",
    "PlainMechanism",
    "SaslMechanism",
    "ScramMechanism",
    "create_mechanism",
]

MIN_SCRAM_ITERATIONS = 4096  # Kafka's ScramMechanism minimum for both hashes

_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_GS2_HEADER = "n,,"
_CHANNEL_BINDING = base64.b64encode(_GS2_HEADER.encode()).decode()  # "biws"


def _credentials(username: str, password: str | Secret) -> Secret:
    """The password as a Secret, once both halves are known to encode as UTF-8."""
    secret = password if isinstance(password, Secret) else Secret(password)
    for what, text in (("user name", username), ("password", secret.reveal())):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise AuthenticationError(f"the SASL {what} cannot be encoded as UTF-8") from None
    return secret


class PlainMechanism:
    """RFC 4616 PLAIN: user name and password in one token (use it over TLS only)."""

    name = "PLAIN"

    def __init__(self, username: str, password: str | Secret) -> None:
        self._username = username
        self._password = _credentials(username, password)
        # A NUL would move the field boundaries: the broker would read another user.
        if "\0" in username or "\0" in self._password.reveal():
            raise AuthenticationError("PLAIN user names and passwords cannot contain NUL characters")
        self._sent = False
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    def __repr__(self) -> str:
        return f"<PlainMechanism user={self._username!r}>"

    def initial(self) -> bytes:
        if self._sent:
            raise AuthenticationError("PLAIN sends its token only once")
        self._sent = True
        return b"\0" + self._username.encode() + b"\0" + self._password.reveal().encode()

    def step(self, challenge: bytes) -> bytes | None:
        if not self._sent or self._finished:
            raise AuthenticationError("PLAIN got a broker token it did not expect")
        # Kafka's broker answers with an empty token; success or failure is in the error code.
        self._finished = True
        return None


def _escape_username(username: str) -> str:
    # RFC 5802 saslname: "=" and "," are the only characters that need escaping.
    return username.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: str, what: str) -> dict[str, str]:
    """``a=value,b=value`` into a dict; the first occurrence of a key wins."""
    found: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise AuthenticationError(f"the broker's SCRAM {what} is malformed (attribute {part[:16]!r})")
        found.setdefault(part[0], part[2:])
    return found


class ScramMechanism:
    """RFC 5802 SCRAM with SHA-256 or SHA-512, no channel binding (as Kafka does it)."""

    def __init__(
        self,
        name: str,
        username: str,
        password: str | Secret,
        *,
        max_iterations: int = 100_000,
        nonce: str | None = None,
    ) -> None:
        if name not in _HASHES:
            raise AuthenticationError(f"unknown SCRAM mechanism {name!r}")
        self.name = name
        self._hash = _HASHES[name]
        self._username = username
        self._password = _credentials(username, password)
        self._max_iterations = max_iterations
        # token_urlsafe never yields "," (the attribute separator); tests may inject a nonce.
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(24)
        if not self._nonce or "," in self._nonce or not self._nonce.isprintable():
            raise AuthenticationError("a SCRAM nonce must be printable and contain no comma")
        self._client_first_bare = ""
        self._expected_signature: bytes | None = None
        self._state = "start"

    @property
    def finished(self) -> bool:
        return self._state == "done"

    def __repr__(self) -> str:
        return f"<ScramMechanism {self.name} user={self._username!r} state={self._state}>"

    def initial(self) -> bytes:
        if self._state != "start":
            raise AuthenticationError("SCRAM sends its first message only once")
        self._client_first_bare = f"n={_escape_username(self._username)},r={self._nonce}"
        self._state = "sent-first"
        return (_GS2_HEADER + self._client_first_bare).encode()

    def step(self, challenge: bytes) -> bytes | None:
        text = self._decode(challenge)
        if text.startswith("e="):
            # Seen in place of server-first or server-final (Tansu sends it with error code 0).
            raise AuthenticationError(f"the broker refused {self.name} authentication: {text[2:]}")
        if self._state == "sent-first":
            return self._client_final(text)
        if self._state == "sent-final":
            self._verify_server_final(text)
            return None
        raise AuthenticationError(f"{self.name} got a broker message it did not expect ({self._state})")

    # -- the two answers --------------------------------------------------------------

    def _decode(self, challenge: bytes) -> str:
        try:
            return challenge.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationError(f"the broker's {self.name} message is not UTF-8") from None

    def _client_final(self, server_first: str) -> bytes:
        if server_first.startswith("m="):
            raise AuthenticationError(f"the broker's {self.name} server-first asks for an unknown extension")
        attrs = _attributes(server_first, "server-first message")
        nonce, salt_b64, iterations_text = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if nonce is None or salt_b64 is None or iterations_text is None:
            raise AuthenticationError(f"the broker's {self.name} server-first lacks the nonce, salt or count")
        # A nonce that does not extend ours is a replay or a broker answering someone else.
        if not nonce.startswith(self._nonce) or len(nonce) <= len(self._nonce):
            raise AuthenticationError(f"the broker's {self.name} nonce does not extend the client nonce")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except (binascii.Error, ValueError):
            raise AuthenticationError(f"the broker's {self.name} salt is not base64") from None
        if not iterations_text.isdigit() or len(iterations_text) > 10:
            raise AuthenticationError(f"the broker's {self.name} iteration count is not a number")
        iterations = int(iterations_text)
        if iterations < MIN_SCRAM_ITERATIONS:
            raise AuthenticationError(
                f"the broker asks for {iterations} {self.name} iterations, "
                f"fewer than the minimum of {MIN_SCRAM_ITERATIONS}"
            )
        if iterations > self._max_iterations:
            raise AuthenticationError(
                f"the broker asks for {iterations} {self.name} iterations, more than the "
                f"configured maximum of {self._max_iterations} (max_scram_iterations)"
            )
        without_proof = f"c={_CHANNEL_BINDING},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        proof, self._expected_signature = self._proof_and_signature(salt, iterations, auth_message)
        self._state = "sent-final"
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _proof_and_signature(self, salt: bytes, iterations: int, auth_message: bytes) -> tuple[bytes, bytes]:
        salted = hashlib.pbkdf2_hmac(self._hash, self._password.reveal().encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        client_signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self._hash)
        return proof, hmac.digest(server_key, auth_message, self._hash)

    def _verify_server_final(self, server_final: str) -> None:
        attrs = _attributes(server_final, "server-final message")
        signature_b64 = attrs.get("v")
        if signature_b64 is None:
            raise AuthenticationError(f"the broker's {self.name} server-final has no signature")
        try:
            signature = base64.b64decode(signature_b64, validate=True)
        except (binascii.Error, ValueError):
            raise AuthenticationError(f"the broker's {self.name} server signature is not base64") from None
        assert self._expected_signature is not None
        if not hmac.compare_digest(signature, self._expected_signature):
            raise AuthenticationError(
                f"the broker's {self.name} server signature is wrong: it does not hold this user's "
                "credential (or something between us rewrote the exchange)"
            )
        self._expected_signature = None
        self._state = "done"


def create_mechanism(config: SaslConfig, *, nonce: str | None = None) -> PlainMechanism | ScramMechanism:
    """The client mechanism ``config`` names (its mechanism is already validated)."""
    if config.mechanism == "PLAIN":
        return PlainMechanism(config.username, config.password)
    return ScramMechanism(
        config.mechanism,
        config.username,
        config.password,
        max_iterations=config.max_scram_iterations,
        nonce=nonce,
    )
