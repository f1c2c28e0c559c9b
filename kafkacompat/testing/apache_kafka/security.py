"""The secured listeners of a test cluster: SASL users (PLAIN, SCRAM) and a TLS certificate made on the fly.

SCRAM-SHA-256 and SCRAM-SHA-512 (KIP-84, Kafka 0.10.2) keep their
credentials in the cluster's metadata, so users must exist before a client
logs in, and how they get there depends on the release:

- ZooKeeper mode: ``kafka.admin.ConfigCommand --zookeeper`` writes them while
  ZooKeeper runs and no broker does yet (``scram_user_command``), the way
  Kafka's own documentation bootstraps them.
- KRaft 3.5 and later (KIP-900): ``StorageTool format --add-scram`` puts them
  in the bootstrap metadata (``format_scram_arguments``).
- KRaft before 3.5 has no SCRAM at all; asking for it is a ``BrokerStartError``.

Each mechanism needs a JAAS login module on the listener: PLAIN's lists its
users and passwords, SCRAM's lists nothing (the broker reads the metadata).
From 1.1 (KIP-226) they are listener settings; before, a JAAS file named by the JVM's
``java.security.auth.login.config`` (``jaas_file_text``).

The TLS listener's certificate names ``127.0.0.1`` and ``localhost`` and is
signed by a CA made for this cluster (trustme, a test dependency); clients
trust ``ca_file``.  Kafka 2.7 and later take the PEM key and chain as
configuration values (KIP-651); older releases get a PKCS12 keystore holding
the same key.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kafkacompat.errors import BrokerStartError

__all__ = [
    "SCRAM_MECHANISMS",
    "BrokerTls",
    "check_users",
    "format_scram_arguments",
    "jaas_file_text",
    "jaas_inline",
    "jaas_settings",
    "make_broker_tls",
    "scram_user_command",
]

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# Names and passwords go into JAAS text, ConfigCommand's and StorageTool's [k=v,...] syntax:
# only characters none of those treat specially.
_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_PEM_KEYSTORES_FROM = (2, 7)  # KIP-651
_SCRAM_ON_KRAFT_FROM = (3, 5)  # KIP-900
_SCRAM_FROM = (0, 10, 2)  # KIP-84
# Listener-prefixed sasl.jaas.config on brokers came with KIP-226 (1.1): 0.10.2.2 to 1.0.2 exit
# at start without a JAAS file (seen in the matrix), 1.1.1 reads the setting.
_JAAS_INLINE_FROM = (1, 1)


def check_users(kind: str, users: Mapping[str, str]) -> dict[str, str]:
    """``users`` as a dict, every name and password checked to be safe in the broker's configuration."""
    for name, password in users.items():
        for what, text in (("user name", name), ("password", password)):
            if not isinstance(text, str) or not _SAFE.match(text):
                raise BrokerStartError(
                    f"{kind} {what} {text!r} must be 1-64 letters, digits, '_', '.' or '-' "
                    "(it is written into JAAS and [key=value] settings)"
                )
    return dict(users)


def check_scram_release(version: tuple[int, ...], release: str, kraft: bool) -> None:
    if version < _SCRAM_FROM:
        raise BrokerStartError(f"Apache Kafka {release} has no SCRAM (KIP-84 came in 0.10.2)")
    if kraft and version < _SCRAM_ON_KRAFT_FROM:
        raise BrokerStartError(
            f"Apache Kafka {release} has no SCRAM in KRaft mode (KIP-900 came in 3.5); use zookeeper mode"
        )


def jaas_settings(
    listener: str, plain_users: Mapping[str, str], scram: bool, *, inline: bool = True
) -> list[str]:
    """The broker settings enabling PLAIN (with its users) and SCRAM on ``listener``.

    ``inline=False``: the login modules are in a JAAS file (``jaas_file_text``) instead.
    """
    mechanisms = (["PLAIN"] if plain_users else []) + (list(SCRAM_MECHANISMS) if scram else [])
    prefix = f"listener.name.{listener.lower()}"
    lines = [f"sasl.enabled.mechanisms={','.join(mechanisms)}"]
    if not inline:
        return lines
    if plain_users:
        users = " ".join(f'user_{name}="{secret}"' for name, secret in sorted(plain_users.items()))
        lines.append(f"{prefix}.plain.sasl.jaas.config={_PLAIN_MODULE} required {users};")
    if scram:
        lines += [
            f"{prefix}.{m.lower()}.sasl.jaas.config={_SCRAM_MODULE} required;" for m in SCRAM_MECHANISMS
        ]
    return lines


def jaas_inline(version: tuple[int, ...]) -> bool:
    """Whether the release reads a listener's login modules from its settings (1.1 on), not a file."""
    return version >= _JAAS_INLINE_FROM


def jaas_file_text(plain_users: Mapping[str, str], scram: bool) -> str:
    """The ``KafkaServer`` section of a JAAS file: one login module per mechanism (KIP-43)."""
    modules = []
    if plain_users:
        users = " ".join(f'user_{name}="{secret}"' for name, secret in sorted(plain_users.items()))
        modules.append(f"  {_PLAIN_MODULE} required {users};")
    if scram:
        modules.append(f"  {_SCRAM_MODULE} required;")
    return "KafkaServer {\n" + "\n".join(modules) + "\n};\n"


def _credentials(password: str, *, named: str | None = None) -> str:
    name = f"name={named}," if named is not None else ""
    return ",".join(f"{mechanism}=[{name}password={password}]" for mechanism in SCRAM_MECHANISMS)


def format_scram_arguments(users: Mapping[str, str]) -> list[str]:
    """``--add-scram`` arguments of ``StorageTool format`` creating ``users`` with both SCRAM mechanisms."""
    arguments = []
    for name, password in sorted(users.items()):
        for mechanism in SCRAM_MECHANISMS:
            arguments += ["--add-scram", f"{mechanism}=[name={name},password={password}]"]
    return arguments


def scram_user_command(zookeeper: str, name: str, password: str) -> list[str]:
    """``ConfigCommand`` arguments writing one user's SCRAM credentials into ZooKeeper."""
    return [
        "--zookeeper", zookeeper, "--alter", "--add-config", _credentials(password),
        "--entity-type", "users", "--entity-name", name,
    ]  # fmt: skip


@dataclass(frozen=True)
class BrokerTls:
    """A cluster's TLS material: the CA clients trust, and the keystore settings every broker gets."""

    ca_file: Path
    settings: tuple[str, ...]  # broker properties for the SSL listener


def make_broker_tls(directory: Path, version: tuple[int, ...]) -> BrokerTls:
    """A CA and a server certificate for 127.0.0.1 and localhost, as the release's keystore."""
    try:
        import trustme
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError as exc:  # trustme is a test dependency, not the library's
        raise BrokerStartError(f"an SSL listener needs trustme and cryptography ({exc})") from exc
    authority = trustme.CA(key_type=trustme.KeyType.RSA)
    leaf = authority.issue_cert("127.0.0.1", "localhost", key_type=trustme.KeyType.RSA)
    ca_file = directory / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)  # trustme made it with KeyType.RSA
    # Unprefixed ssl.* settings: the SSL listener is the only one that reads them, and Kafka
    # before 0.10.2 (KIP-103) ignores listener.name.ssl.* (seen on 0.10.0.1: no TLS handshake).
    prefix = "ssl"
    if version >= _PEM_KEYSTORES_FROM:
        pkcs8 = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        chain_pem = b"".join(pem.bytes() for pem in leaf.cert_chain_pems)
        # Inline values (the properties file's \n escapes keep the PEM lines): 2.7 to 3.1 refuse an
        # unencrypted key read from a PEM file (KAFKA-12703, seen on 2.8.2), never one given inline.
        settings: tuple[str, ...] = (
            f"{prefix}.keystore.type=PEM",
            f"{prefix}.keystore.key={_escaped(pkcs8)}",
            f"{prefix}.keystore.certificate.chain={_escaped(chain_pem)}",
        )
    else:
        password = secrets.token_hex(16)
        chain = [x509.load_pem_x509_certificate(pem.bytes()) for pem in leaf.cert_chain_pems]
        # SHA-1 and 3DES: the PKCS12 encryption every JDK reads (the AES default needs 11.0.12+).
        encryption = (
            serialization.PrivateFormat.PKCS12.encryption_builder()
            .key_cert_algorithm(pkcs12.PBES.PBESv1SHA1And3KeyTripleDESCBC)
            .hmac_hash(hashes.SHA1())
            .build(password.encode())
        )
        blob = pkcs12.serialize_key_and_certificates(
            b"kafka",
            key,
            chain[0],
            chain[1:] or None,
            encryption,
        )
        keystore = directory / "server-keystore.p12"
        keystore.write_bytes(blob)
        settings = (
            f"{prefix}.keystore.type=PKCS12",
            f"{prefix}.keystore.location={keystore}",
            f"{prefix}.keystore.password={password}",
            f"{prefix}.key.password={password}",
        )
    return BrokerTls(ca_file=ca_file, settings=settings)


def _escaped(pem: bytes) -> str:
    """PEM text as one properties-file value: each line break written as the escape ``\\n``."""
    return pem.decode("ascii").strip().replace("\n", "\\n")
