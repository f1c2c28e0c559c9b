"""The address check tells dotted quads apart exactly as ``ipaddress`` does, without importing it.

``negotiation.addresses`` checks an IPv4 literal with a regular expression so
that every connection to "127.0.0.1" does not load ipaddress; these properties
hold it to ``ipaddress.IPv4Address`` on near-misses of every kind.
"""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from kafkacompat.negotiation import addresses

# Parts that are, or nearly are, octets: leading zeros, 256, signs, other digits.
PART = st.one_of(
    st.integers(min_value=0, max_value=300).map(str),
    st.sampled_from(["", "00", "01", "010", "0255", "+1", "-1", " 1", "1 "]),
    st.sampled_from(["\u0661", "\uff11", "0x1", "1e2"]),  # other scripts' digits, other notations
    st.text(alphabet="0123456789", min_size=1, max_size=4),
)
CANDIDATE = st.one_of(
    st.lists(PART, min_size=1, max_size=6).map(".".join),
    st.lists(PART, min_size=4, max_size=4).map(".".join).map(lambda text: text + "\n"),
)


def is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


@given(CANDIDATE)
def test_a_dotted_quad_is_what_ipaddress_says_it_is(text: str) -> None:
    assert bool(addresses._IPV4.fullmatch(text)) is is_ipv4(text)


@given(st.ip_addresses(v=4))
def test_every_ipv4_address_is_a_valid_host(address: ipaddress.IPv4Address) -> None:
    assert addresses._host_problem(str(address)) is None


NAME = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){0,3}", fullmatch=True)
HOST = st.one_of(
    st.ip_addresses().map(str), st.ip_addresses(v=6).map(lambda address: f"[{address}]"), NAME
)


@given(HOST)
def test_a_checked_host_is_a_literal_of_the_version_ipaddress_gives_or_a_name(host: str) -> None:
    checked, _ = addresses.check_address(host, 9092)
    try:
        expected: int | None = ipaddress.ip_address(checked).version
    except ValueError:
        expected = None
    assert addresses.literal_version(checked) == expected
