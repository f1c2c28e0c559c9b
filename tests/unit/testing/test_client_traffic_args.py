"""The traffic harness's command line: a bad request timeout or library is refused, never run."""

from __future__ import annotations

import pytest

from kafkacompat.testing.client_traffic import Traffic, main


@pytest.mark.parametrize("seconds", ["0", "-1", "3601", "nan"])
def test_a_request_timeout_out_of_range_is_refused(seconds: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--request-timeout", seconds, "kafka-python", "127.0.0.1:1"]) == 2
    assert "--request-timeout must be in (0, 3600] seconds" in capsys.readouterr().err


def test_an_unknown_library_or_no_bootstrap_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kafka-go", "127.0.0.1:1"]) == 2
    assert main(["--request-timeout", "4"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_the_request_timeout_reaches_the_clients_in_milliseconds() -> None:
    assert Traffic("aiokafka", "h:1", "t", request_timeout_s=4.0).request_timeout_ms == 4000
    assert Traffic("aiokafka", "h:1", "t", request_timeout_s=0.0001).request_timeout_ms == 1
    assert Traffic("aiokafka", "h:1", "t").request_timeout_ms is None  # the scenario's defaults
