"""A Kafka release typed on the command line, checked against the release table, the closest one named.

Every option that takes a release (``emulate --release``,
``--fallback-release``) reads it here, so a release the table lacks gets the
same one-line ``UsageError`` everywhere: the table knows releases by
major.minor (0.8.0 to 0.11.0 by three numbers), so ``2.3.1`` is answered with
``did you mean 2.3?``, ``0.9`` with ``0.9.0``; a release outside the table
says how far the table goes; a kind may follow a slash, spelled as Kafka's
docs say it (``4.0/kraft``).
"""

from __future__ import annotations

from collections.abc import Collection

from kafkacompat.cli.usage import closest
from kafkacompat.errors import UsageError
from kafkacompat.reference.releases import KINDS, RELEASES

__all__ = ["KIND_ALIASES", "release_option", "release_span"]

# Short names people type for a kind, as Kafka's docs say them.
KIND_ALIASES = {"kraft": "kraft-broker", "broker": "kraft-broker", "controller": "kraft-controller",
                "zk": "zk-broker", "zookeeper": "zk-broker"}


def _number(release: str) -> tuple[int, ...] | None:
    parts = release.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _by_number(releases: Collection[str]) -> list[str]:
    return sorted(releases, key=lambda r: _number(r) or ())


def release_span() -> str:
    """``0.8.0-4.4``: the oldest and the newest release of the table."""
    known = _by_number({p.release for p in RELEASES})
    return f"{known[0]}-{known[-1]}"


def _kind(spec: str, flag: str, kind: str) -> str:
    kind = KIND_ALIASES.get(kind, kind)
    if kind in KINDS:
        return kind
    guess = closest(kind, [*KINDS, *KIND_ALIASES])
    hint = f"did you mean {KIND_ALIASES.get(guess, guess)}?" if guess else f"kinds: {', '.join(KINDS)}"
    raise UsageError(f"{flag} {spec}: unknown broker kind {kind!r}; {hint}")


def release_option(spec: str, flag: str, *, kinds: Collection[str] = KINDS, with_kind: bool = True) -> str:
    """``RELEASE[/KIND]`` as the table names it (``4.0/kraft`` -> ``4.0/kraft-broker``), or a ``UsageError``.

    ``kinds``: the broker kinds the option can use (its releases are those of
    these kinds); ``with_kind=False``: the option takes a release alone.
    """
    release, slash, kind = spec.strip().partition("/")
    if slash and not with_kind:
        raise UsageError(f"{flag} {spec}: give a release alone, e.g. 0.8.2")
    if slash:
        kind = _kind(spec, flag, kind)
    offered = {p.kind for p in RELEASES if p.release == release and p.kind in kinds}
    if offered and (not slash or kind in offered):
        return f"{release}/{kind}" if slash else release
    if offered:
        raise UsageError(f"{flag} {spec}: Kafka {release} has no {kind}; it has {', '.join(sorted(offered))}")
    known = _by_number({p.release for p in RELEASES if p.kind in kinds and (not slash or p.kind == kind)})
    span = f"the table has {known[0]} to {known[-1]}"
    number, short = _number(release), ".".join(release.split(".")[:2])
    oldest, newest = _number(known[0]) or (), _number(known[-1]) or ()
    if short in known:
        guess: str | None = short
    elif number is not None and not oldest <= number <= newest:
        guess = None  # older or newer than every release of the table: no near miss to offer
    else:
        guess = next((r for r in known if r.startswith(f"{release}.")), None) or closest(release, known)
    hint = f"did you mean {guess}?" if guess else span
    which = "" if set(kinds) >= set(KINDS) else f" ({', '.join(sorted(kinds))})"
    raise UsageError(f"{flag} {spec}: no Kafka {release}{which} in the release table; {hint}")
