"""The connection options every command shares, turned into a ``ConnectionConfig``.

Where to connect: ``--bootstrap-server H:P[,H:P...]`` or a positional ``H:P``;
or KRaft controllers with ``--bootstrap-controller H:P[,H:P...]`` (KIP-919).
How: ``--command-config FILE`` (Kafka's client properties: ``security.protocol``,
``ssl.*``, ``sasl.*``) and flags that override it: ``--tls``, ``--ca-file``,
``--no-hostname-check``, ``--sasl-mechanism``, ``--sasl-username``,
``--sasl-password-env VAR``.  A password is never taken on the command line
(it would show in ``ps`` and in shell history): it comes from the environment
variable named by ``--sasl-password-env`` or from ``sasl.jaas.config``.

Version policy flags (``--cap``, ``--pin``, ``--deprecate``, ``--block``,
``--honour-spec-deprecations``) narrow the versions picked, and
``--fallback-release`` names the release whose API table stands in for a
broker that sends no ApiVersions answer (0.8.x and 0.9 are recognised without
it; given, it overrides what their behaviour names).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkacompat.cli.files import read_head
from kafkacompat.cli.properties import JaasEntry, load_properties, parse_jaas_config
from kafkacompat.cli.redaction import Redactor
from kafkacompat.cli.releases import release_option
from kafkacompat.cli.usage import closest
from kafkacompat.cluster.discovery import parse_bootstrap
from kafkacompat.connection.config import DEFAULT_CONFIG, ConnectionConfig, RetryPolicy
from kafkacompat.connection.security import MECHANISMS, SaslConfig, Secret, TlsConfig
from kafkacompat.errors import ConfigError, UsageError
from kafkacompat.negotiation.handshake.config import HandshakeConfig
from kafkacompat.negotiation.version_policy import VersionPolicy
from kafkacompat.reference import API_NAMES

__all__ = [
    "PROTOCOLS",
    "ConnectionOptions",
    "add_connection_options",
    "build_policy",
    "resolve_connection",
]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# The keys read here; any other ssl./sasl. key is reported as ignored (by name only).
_READ_KEYS = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "default.api.timeout.ms",
        "request.timeout.ms",
        "security.protocol",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.password",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "sasl.mechanism",
        "sasl.jaas.config",
    }
)
_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_DEFAULT_TIMEOUT = 10.0


class _RefusePassword(argparse.Action):
    """``--sasl-password`` exists only to refuse it, without echoing what followed it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "passwords are not taken on the command line; "
            "use --sasl-password-env VAR or sasl.jaas.config in --command-config"
        )


def add_connection_options(
    parser: argparse.ArgumentParser, *, addresses: bool = True, policy_flags: bool = True
) -> None:
    """Add the shared connection, security and policy options to a subcommand's parser.

    ``addresses=False`` leaves out where to connect (HOST:PORT, --bootstrap-server,
    --bootstrap-controller) for a command that takes it its own way into
    ``args.bootstrap`` (``check --bootstrap``); ``policy_flags=False`` leaves out
    the version policy, for a command whose answer does not depend on it.
    """
    if addresses:
        parser.add_argument("bootstrap", nargs="?", metavar="HOST:PORT", help="a bootstrap broker")
    else:
        parser.set_defaults(bootstrap_server=None, bootstrap_controller=None)
    where = parser.add_argument_group("connection")
    if addresses:
        where.add_argument(
            "--bootstrap-server", metavar="HOST:PORT[,HOST:PORT...]", help="the broker(s) to bootstrap from"
        )
        where.add_argument(
            "--bootstrap-controller",
            metavar="HOST:PORT[,HOST:PORT...]",
            help="KRaft controller(s) to bootstrap from instead of brokers (KIP-919)",
        )
    where.add_argument(
        "--command-config",
        metavar="FILE",
        type=Path,
        help="Kafka client properties: security.protocol, ssl.*, sasl.*",
    )
    where.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="connect and request timeout (default 10; given, a silent peer is waited for that long)",
    )
    where.add_argument(
        "--retries",
        type=int,
        default=3,
        metavar="N",
        help="attempts per address for transport errors (default 3)",
    )
    where.add_argument("--tls", action="store_true", help="use TLS (SSL or SASL_SSL)")
    where.add_argument("--ca-file", type=Path, metavar="PEM", help="CA certificates (PEM) to trust")
    where.add_argument(
        "--no-hostname-check",
        action="store_true",
        help="do not check the broker's certificate name (as an empty ssl.endpoint.identification.algorithm)",
    )
    where.add_argument("--sasl-mechanism", choices=MECHANISMS, type=str.upper)
    where.add_argument("--sasl-username", metavar="USER")
    where.add_argument(
        "--sasl-password-env", metavar="VAR", help="the environment variable holding the SASL password"
    )
    where.add_argument("--sasl-password", nargs="?", action=_RefusePassword, help=argparse.SUPPRESS)
    where.add_argument(
        "--fallback-release",
        metavar="RELEASE",
        help="for a broker older than 0.10 (recognised without it): use this release's API table",
    )
    if not policy_flags:
        parser.set_defaults(cap=[], pin=[], deprecate=[], block=[], honour_spec_deprecations=False)
        return
    policy = parser.add_argument_group("version policy")
    policy.add_argument(
        "--cap",
        action="append",
        default=[],
        metavar="API=V",
        help="never send API above version V (API: name or key)",
    )
    policy.add_argument("--pin", action="append", default=[], metavar="API=V", help="send API at V only")
    policy.add_argument(
        "--deprecate",
        action="append",
        default=[],
        metavar="API=VERSIONS",
        help="treat these versions as deprecated (e.g. Fetch=0-3)",
    )
    policy.add_argument(
        "--block",
        action="append",
        default=[],
        metavar="API=VERSIONS",
        help="never send these versions (e.g. Produce=9,10)",
    )
    policy.add_argument(
        "--honour-spec-deprecations",
        action="store_true",
        help="also avoid the versions the protocol specs deprecate",
    )


@dataclass(frozen=True)
class ConnectionOptions:
    """Where and how to connect, with the secrets to keep out of every output."""

    bootstrap: str
    config: ConnectionConfig
    protocol: str
    redactor: Redactor = field(repr=False)
    ignored_keys: tuple[str, ...] = ()
    controllers: bool = False  # --bootstrap-controller: the addresses are KRaft controllers


def _api_pairs(values: Sequence[str], flag: str) -> list[tuple[str | int, str]]:
    pairs: list[tuple[str | int, str]] = []
    for value in values:
        api, found, rest = value.partition("=")
        if not found or not api.strip() or not rest.strip():
            raise UsageError(f"{flag} wants API=VERSION, got {value!r}")
        name = api.strip()
        if not name.isdigit() and name not in API_NAMES.values():
            guess = closest(name, API_NAMES.values())
            hint = f"did you mean {guess}?" if guess else "name it as Kafka does (Fetch) or by its key (1)"
            raise UsageError(f"{flag} {value}: unknown API {name!r}; {hint}")
        pairs.append((int(name) if name.isdigit() else name, rest.strip()))
    return pairs


def build_policy(args: argparse.Namespace) -> VersionPolicy | None:
    """The version policy of the policy flags; None when none is given."""
    if not (args.cap or args.pin or args.deprecate or args.block or args.honour_spec_deprecations):
        return None

    def versions(text: str, flag: str) -> list[str]:
        return [part.strip() for part in text.split(",") if part.strip()] or [text]

    def single(text: str, flag: str) -> int:
        if not text.isdigit():
            raise UsageError(f"{flag} wants one version number, got {text!r}")
        return int(text)

    try:
        return VersionPolicy(
            caps={api: single(v, "--cap") for api, v in _api_pairs(args.cap, "--cap")},
            pins={api: single(v, "--pin") for api, v in _api_pairs(args.pin, "--pin")},
            deprecated={
                api: versions(v, "--deprecate") for api, v in _api_pairs(args.deprecate, "--deprecate")
            },
            blocked={api: versions(v, "--block") for api, v in _api_pairs(args.block, "--block")},
            honour_spec_deprecations=args.honour_spec_deprecations,
        )
    except UsageError:
        raise
    except (ValueError, TypeError) as exc:
        raise UsageError(f"bad version policy: {exc}") from None


def _bootstrap(args: argparse.Namespace, properties: Mapping[str, str]) -> str:
    given = [value for value in (args.bootstrap_server, args.bootstrap) if value]
    if len(given) == 2 and given[0] != given[1]:
        raise UsageError("give the bootstrap server once: either --bootstrap-server or HOST:PORT")
    if given:
        where = "--bootstrap-server" if args.bootstrap_server else "the address"
        return _addresses(given[0], where, UsageError)
    bootstrap = properties.get("bootstrap.servers", "").strip()
    if not bootstrap:
        raise UsageError("no broker given: pass --bootstrap-server HOST:PORT (or HOST:PORT)")
    return _addresses(bootstrap, "bootstrap.servers in --command-config", ConfigError)


def _addresses(bootstrap: str, where: str, error: type[ConfigError]) -> str:
    """``bootstrap`` when every address in it can be connected to, else ``error`` saying which cannot.

    A command-line mistake is a ``UsageError``; the same in the command config is a ``ConfigError``.
    """
    if "://" in bootstrap:  # a URL where Kafka takes HOST:PORT
        example = bootstrap.split("://", 1)[1].split("/")[0]
        raise error(f"{where} {bootstrap}: give HOST:PORT without a scheme, e.g. {example}")
    try:
        parse_bootstrap(bootstrap)
    except ConfigError as exc:
        raise error(exc.message) from None
    return bootstrap


def _check_pem(path: Path, what: str, kind_key: str, kind: str | None) -> Path:
    if kind is not None and kind.upper() != "PEM":
        raise ConfigError(
            f"{kind_key}={kind} is not supported: kafkacompat reads PEM files only "
            f"(export a JKS or PKCS12 store with keytool -exportcert -rfc, or openssl pkcs12 -nodes)"
        )
    head = read_head(path, f"the {what}")
    if head.startswith(_JKS_MAGIC):
        raise ConfigError(
            f"the {what} {path} is a JKS keystore, which is not supported: export it to PEM "
            f"(keytool -exportcert -rfc -keystore {path.name} -file ca.pem) and point to that"
        )
    if b"-----BEGIN " not in head:
        raise ConfigError(
            f"the {what} {path} is not a PEM file (no -----BEGIN line); PKCS12 and JKS "
            "stores are not supported"
        )
    return path


def _tls(args: argparse.Namespace, props: Mapping[str, str], redactor: Redactor) -> TlsConfig:
    ca_file: Path | None = args.ca_file
    if ca_file is None and props.get("ssl.truststore.location"):
        ca_file = Path(props["ssl.truststore.location"])
    if ca_file is not None:
        _check_pem(ca_file, "CA file", "ssl.truststore.type", props.get("ssl.truststore.type"))
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("", "https"):
        raise ConfigError("ssl.endpoint.identification.algorithm must be https or empty (no hostname check)")
    cert_file: Path | None = None
    key_password: Secret | None = None
    if props.get("ssl.keystore.location"):
        cert_file = _check_pem(
            Path(props["ssl.keystore.location"]),
            "keystore",
            "ssl.keystore.type",
            props.get("ssl.keystore.type"),
        )
        if props.get("ssl.key.password"):
            key_password = Secret(props["ssl.key.password"])
            redactor.add(key_password)
    return TlsConfig(
        ca_file=ca_file,
        cert_file=cert_file,
        key_password=key_password,
        check_hostname=algorithm == "https" and not args.no_hostname_check,
    )


def _jaas(props: Mapping[str, str]) -> JaasEntry | None:
    text = props.get("sasl.jaas.config", "").strip()
    if not text:
        return None
    entry = parse_jaas_config(text)
    if entry.module not in (_PLAIN_MODULE, _SCRAM_MODULE):
        raise ConfigError(
            f"sasl.jaas.config names {entry.short_module}, which is not supported: "
            "use PlainLoginModule or ScramLoginModule with username= and password="
        )
    return entry


def _sasl(
    args: argparse.Namespace, props: Mapping[str, str], environ: Mapping[str, str], redactor: Redactor
) -> SaslConfig:
    entry = _jaas(props)
    mechanism = args.sasl_mechanism or props.get("sasl.mechanism", "").strip().upper()
    if not mechanism:
        if entry is not None and entry.module == _PLAIN_MODULE:
            mechanism = "PLAIN"
        else:
            raise UsageError(
                "SASL needs a mechanism: --sasl-mechanism or sasl.mechanism "
                f"({', '.join(MECHANISMS)}); Kafka's default, GSSAPI, is not supported"
            )
    if mechanism not in MECHANISMS:
        raise ConfigError(f"SASL mechanism {mechanism} is not supported; use one of {', '.join(MECHANISMS)}")
    if entry is not None:
        wanted = _PLAIN_MODULE if mechanism == "PLAIN" else _SCRAM_MODULE
        if entry.module != wanted:
            raise ConfigError(
                f"sasl.jaas.config uses {entry.short_module}, but the mechanism "
                f"{mechanism} needs {wanted.rsplit('.', 1)[-1]}"
            )
    options = entry.options if entry is not None else {}
    username = args.sasl_username or options.get("username")
    if args.sasl_password_env:
        password = Secret(environ[_password_variable(args.sasl_password_env, environ)])
    elif "password" in options:
        password = Secret(options["password"])
    else:
        raise UsageError("SASL needs a password: --sasl-password-env VAR, or password= in sasl.jaas.config")
    redactor.add(password)
    if not username:
        raise UsageError("SASL needs a username: --sasl-username, or username= in sasl.jaas.config")
    return SaslConfig(mechanism, username, password)


# How environment variables are conventionally named; anything else unset is taken for a value typed there.
_VARIABLE_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def _password_variable(name: str, environ: Mapping[str, str]) -> str:
    """The variable ``--sasl-password-env`` names.

    Unset, its name is repeated only when it is shaped like a variable's name
    (upper case, digits, underscores): anything else may be the password typed
    in its place, and is never echoed.
    """
    if name in environ:
        return name
    if _VARIABLE_NAME.fullmatch(name):
        raise ConfigError(f"the environment variable {name} (named by --sasl-password-env) is not set")
    raise UsageError(
        "--sasl-password-env takes the name of an environment variable, and what followed it looks like "
        "a value (not shown): put the password in a variable and name that"
    )


def _protocol(args: argparse.Namespace, props: Mapping[str, str]) -> str:
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper() or "PLAINTEXT"
    if protocol not in PROTOCOLS:
        raise ConfigError(f"security.protocol must be one of {', '.join(PROTOCOLS)}")
    tls = protocol.endswith("SSL") or args.tls or args.ca_file is not None
    sasl = protocol.startswith("SASL") or bool(
        args.sasl_mechanism or args.sasl_username or args.sasl_password_env
    )
    return ("SASL_" if sasl else "") + ("SSL" if tls else "PLAINTEXT")


def resolve_connection(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ConnectionOptions:
    """The bootstrap list and ``ConnectionConfig`` the parsed options describe."""
    env = os.environ if environ is None else environ
    redactor = Redactor()
    props = load_properties(args.command_config) if args.command_config is not None else {}
    for key, value in props.items():  # mask every password-like value, whatever happens later
        if "password" in key or key == "sasl.jaas.config":
            redactor.add(Secret(value))
    if props.get("sasl.jaas.config"):
        with suppress(ConfigError):  # mask its password on its own too, even when SASL is not used
            redactor.add(Secret(parse_jaas_config(props["sasl.jaas.config"]).options.get("password", "")))
    if args.sasl_password_env:  # a password given in the variable's place is masked too
        redactor.add(Secret(args.sasl_password_env))
        if args.sasl_password_env in env:
            redactor.add(Secret(env[args.sasl_password_env]))
    controllers = bool(getattr(args, "bootstrap_controller", None))
    if controllers:
        if args.bootstrap_server or args.bootstrap:
            raise UsageError("give either brokers (--bootstrap-server, HOST:PORT) or --bootstrap-controller")
        bootstrap = _addresses(args.bootstrap_controller.strip(), "--bootstrap-controller", UsageError)
    else:
        bootstrap = _bootstrap(args, props)
    protocol = _protocol(args, props)
    tls = _tls(args, props, redactor) if protocol.endswith("SSL") else None
    sasl = _sasl(args, props, env, redactor) if protocol.startswith("SASL") else None
    timeout = _DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if not 0 < timeout < math.inf:  # NaN too
        raise UsageError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.retries < 1:
        raise UsageError(f"--retries must be at least 1, got {args.retries}")
    request_timeout = _milliseconds(props, "request.timeout.ms", timeout)
    call_timeout = _milliseconds(props, "default.api.timeout.ms", DEFAULT_CONFIG.call_timeout)
    client_id = props.get("client.id") or "kafkacompat"
    fallback = args.fallback_release
    if fallback is not None:  # the releases whose tables stand in for a broker without ApiVersions
        fallback = release_option(fallback, "--fallback-release", kinds=("zk-broker",), with_kind=False)
    handshake = HandshakeConfig(fallback_release=fallback)  # its client id: ConnectionConfig's
    config = ConnectionConfig(
        connect_timeout=timeout,
        request_timeout=request_timeout,
        call_timeout=call_timeout,
        # a silent peer is named after the library's few seconds, or after --timeout when given
        first_contact_timeout=DEFAULT_CONFIG.first_contact_timeout if args.timeout is None else timeout,
        client_id=client_id,
        handshake=handshake,
        policy=build_policy(args),
        tls=tls,
        sasl=sasl,
        # an inspector wants its answer now: a silent peer is named, not waited for
        retry=RetryPolicy(attempts=args.retries, retry_silent_peers=False),
    )
    ignored = tuple(sorted(k for k in props if k not in _READ_KEYS))
    return ConnectionOptions(bootstrap, config, protocol, redactor, ignored, controllers)


def _milliseconds(props: Mapping[str, str], key: str, default: float) -> float:
    """A timeout of the command config in seconds (Kafka writes them in milliseconds)."""
    if key not in props:
        return default
    try:
        value = int(props[key]) / 1000
    except ValueError:
        raise ConfigError(f"{key} must be a whole number of milliseconds") from None
    if value <= 0:
        raise ConfigError(f"{key} must be positive")
    return value


def warn_ignored(options: ConnectionOptions) -> None:
    """Name (never show the values of) the command config keys that are not used."""
    if options.ignored_keys:
        print(
            f"kafkacompat: ignoring command config key(s): {', '.join(options.ignored_keys)}", file=sys.stderr
        )
