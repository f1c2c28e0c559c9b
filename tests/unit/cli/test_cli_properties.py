"""Kafka properties files and sasl.jaas.config lines, read without ever quoting a value."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkacompat.cli.properties import load_properties, parse_jaas_config, parse_properties
from kafkacompat.errors import ConfigError

SECRET = "s3cr3t-Value-with:separators"


def test_separators_comments_and_blank_lines() -> None:
    text = (
        "# a comment\n"
        "! another comment\n"
        "\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism : SCRAM-SHA-256\n"
        "client.id   my-client\n"
        "   ssl.truststore.location=/etc/ca.pem\n"
        "empty=\n"
        "bare\n"
    )
    assert parse_properties(text) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "client.id": "my-client",
        "ssl.truststore.location": "/etc/ca.pem",
        "empty": "",
        "bare": "",
    }


def test_continuations_and_escapes() -> None:
    text = (
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="alice" \\\n'
        '    password="pw";\n'
        "tabbed=a\\tb\n"
        "unicode=caf\\u00e9\n"
        "escaped\\=key=value\n"
        "double.backslash=ends\\\\\n"
        "next=line\n"
    )
    props = parse_properties(text)
    assert props["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="pw";'
    )
    assert props["tabbed"] == "a\tb"
    assert props["unicode"] == "café"
    assert props["escaped=key"] == "value"
    assert props["double.backslash"] == "ends\\"
    assert props["next"] == "line"


def test_last_repeated_key_wins_and_continuation_line_is_never_a_comment() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}
    assert parse_properties("a=x\\\n#not-a-comment\n") == {"a": "x#not-a-comment"}


def test_errors_name_the_line_never_the_value() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties(f"ok=1\nssl.key.password={SECRET}\\u12\n", source="cfg")
    assert "cfg line 2" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_load_properties_reports_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_properties(tmp_path / "nope.properties")
    with pytest.raises(ConfigError, match="is a directory"):
        load_properties(tmp_path)
    binary = tmp_path / "bin.properties"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="is a binary file, not text"):
        load_properties(binary)
    binary.write_bytes(b"security.protocol=SSL\n\xff\n")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 22 cannot be read\)"):
        load_properties(binary)
    good = tmp_path / "ok.properties"
    good.write_text("a=b\n", encoding="utf-8")
    assert load_properties(good) == {"a": "b"}


def test_jaas_plain_and_scram_entries() -> None:
    plain = parse_jaas_config(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a b;c";'
    )
    assert plain.short_module == "PlainLoginModule"
    assert plain.flag == "required"
    assert plain.options == {"username": "alice", "password": "a b;c"}
    scram = parse_jaas_config(
        "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED username=bob password=xy ;"
    )
    assert scram.options["username"] == "bob"
    assert scram.flag == "required"


def test_jaas_repr_hides_option_values() -> None:
    entry = parse_jaas_config(f'm.PlainLoginModule required username="u" password="{SECRET}";')
    assert SECRET not in repr(entry)
    assert "password" in repr(entry)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must start with a login module class"),
        ("m.PlainLoginModule sometimes password=x;", "control flag"),
        (f"m.PlainLoginModule required password={SECRET}", "must end with a semicolon"),
        (f'm.PlainLoginModule required password="{SECRET}', "unterminated"),
        (f"m.PlainLoginModule required password={SECRET} dangling;", "expected name=value"),
        ("m.PlainLoginModule required a=b; m.Other required c=d;", "more than one"),
    ],
)
def test_jaas_errors_never_quote_values(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_jaas_config(text)
    assert SECRET not in str(caught.value)
    assert "dangling" not in str(caught.value)
