"""Every fault knob over TCP: what the client actually sees on the socket."""

from __future__ import annotations

import errno
import socket

import pytest
import trio
import trio.lowlevel

from kafkacompat.protocol import framing
from kafkacompat.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafkacompat.testing.emulator import EmulatedCluster, Fault
from kafkacompat.testing.emulator.faults import GARBAGE, HTTP_REPLY, TLS_ALERT
from tests.integration.emulator.wire_client import WireClient

V3 = ApiVersionsRequest(client_software_name="emulator-tests", client_software_version="1.0")


async def started(emulated_cluster: object, *faults: Fault, release: str = "3.9") -> EmulatedCluster:
    cluster: EmulatedCluster = await emulated_cluster(release, faults=faults)  # type: ignore[operator]
    return cluster


async def test_close_sends_nothing_and_closes(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.close(3))
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            _, ok = await client.request(ApiVersionsRequest(), 0)
            assert ok.error_code == 0
            await client.send(MetadataRequest(topics=[]), 9)
            assert await client.recv_bytes() == b""


async def test_close_after_bytes_sends_exactly_that_many(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.close_after_bytes(7, 18))
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            await client.send(ApiVersionsRequest(), 0)
            got = await client.recv_bytes()
            assert len(got) == 7 and got[4:7] == b"\x00\x00\x00"  # size, then part of the id


async def test_reset_is_a_connection_reset(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.reset(18))
    with trio.fail_after(5):
        host, port = cluster.bootstrap.split(":")
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(framing.encode_request(ApiVersionsRequest(), 0, 1, "t"))
            with pytest.raises(trio.BrokenResourceError) as caught:
                while await stream.receive_some(100):
                    pass
            assert isinstance(caught.value.__cause__, ConnectionResetError)
            assert caught.value.__cause__.errno == errno.ECONNRESET


async def test_stall_keeps_the_connection_open_and_silent(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.stall(3))
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            await client.send(MetadataRequest(topics=[]), 9)
            with trio.move_on_after(0.3) as waited:
                await client.recv_frame()
            assert waited.cancelled_caught  # nothing came back, and nothing closed
            await client.send(ApiVersionsRequest(), 0)  # still open, still silent
            with trio.move_on_after(0.2) as waited:
                await client.recv_frame()
            assert waited.cancelled_caught


async def test_delay_answers_late(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.delay(0.3, 18))
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            start = trio.current_time()
            _, reply = await client.request(ApiVersionsRequest(), 0)
            assert reply.error_code == 0 and trio.current_time() - start >= 0.3


@pytest.mark.parametrize(
    ("fault", "expected", "closes"),
    [
        (Fault.garbage(api_key=18), GARBAGE, False),
        (Fault.tls(18), TLS_ALERT, True),
        (Fault.http(18), HTTP_REPLY, True),
    ],
    ids=["garbage", "tls", "http"],
)
async def test_foreign_bytes_instead_of_a_reply(
    emulated_cluster: object, fault: Fault, expected: bytes, closes: bool
) -> None:
    cluster = await started(emulated_cluster, fault)
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            await client.send(ApiVersionsRequest(), 0)
            if closes:
                assert await client.recv_bytes() == expected
            else:
                got = b""
                while len(got) < len(expected):
                    got += await client.stream.receive_some(100)
                assert got == expected
                with pytest.raises(Exception, match=r"negative|exceeds"):
                    framing.FrameSplitter().feed(got)


async def test_wrong_correlation_id(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.wrong_correlation_id(5, 18))
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            sent_id = await client.send(ApiVersionsRequest(), 0)
            frame = await client.recv_frame()
            assert frame is not None
            got_id, body = framing.decode_response(frame, ApiVersionsResponse, 0)
            assert isinstance(body, ApiVersionsResponse)
            assert got_id == sent_id + 5 and body.error_code == 0


async def test_hostile_unsupported_version_never_lowers(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.hostile_unsupported_version())
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            for version in (4, 3, 2, 1, 0):
                _, reply = await client.request(
                    V3 if version >= 3 else ApiVersionsRequest(), version, read_as=0
                )
                assert reply.error_code == 35
                assert [(k.api_key, k.max_version >= max(version, 4)) for k in reply.api_keys] == [(18, True)]


async def test_event_hubs_resets_v3_and_answers_v0(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.event_hubs())
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            await client.send(V3, 3)
            assert await client.is_closed()
        async with await WireClient.connect(cluster.bootstrap) as client:
            _, reply = await client.request(ApiVersionsRequest(), 0)
            assert reply.error_code == 0 and reply.api_keys


async def _bytes_taken_after(fault: Fault, emulated_cluster: object) -> int:
    """How many bytes the socket takes, unanswered, after the request that sets ``fault`` off."""
    cluster = await started(emulated_cluster, fault)
    host, port = cluster.bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(framing.encode_request(MetadataRequest(topics=[]), 9, 1, "t"))
        await trio.sleep(0.2)  # the broker reads it and applies the fault
        sock.setblocking(False)
        taken, chunk = 0, b"\x00" * 65536
        while taken < 64 * 1024 * 1024:
            for _ in range(20):  # full buffers: a second for a broker that reads to drain them
                try:
                    taken += sock.send(chunk)
                    break
                except BlockingIOError:
                    await trio.sleep(0.05)
            else:
                return taken  # nothing read them
            await trio.lowlevel.checkpoint()
        return taken


async def test_freeze_stops_reading_so_the_clients_writes_back_up(emulated_cluster: object) -> None:
    with trio.fail_after(30):
        frozen = await _bytes_taken_after(Fault.freeze(3), emulated_cluster)
        stalled = await _bytes_taken_after(Fault.stall(3), emulated_cluster)
    # A stalled broker goes on reading (64 MiB went in); a frozen one took what the socket
    # buffers hold, a few MiB at most on loopback.
    assert stalled >= 64 * 1024 * 1024 and frozen < 16 * 1024 * 1024, (frozen, stalled)


async def test_tansu_answers_v5_with_a_v3_body(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, Fault.tansu_api_versions())
    with trio.fail_after(5):
        async with await WireClient.connect(cluster.bootstrap) as client:
            frame = framing.encode_request(V3, 4, 11, "t")
            await client.send_bytes(frame[:6] + (5).to_bytes(2, "big") + frame[8:])
            reply = await client.recv_frame()
            assert reply is not None
            got_id, body = framing.decode_response(reply, ApiVersionsResponse, 3)
            assert isinstance(body, ApiVersionsResponse)
            assert got_id == 11 and body.error_code == 0
            assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}[18] == (0, 4)


async def test_faults_added_at_run_time_and_counted(emulated_cluster: object) -> None:
    cluster = await started(emulated_cluster, release="2.3")
    fault = Fault.close(18, skip=1, times=1)
    cluster.add_fault(fault)
    with trio.fail_after(5):
        outcomes = []
        for _ in range(3):
            async with await WireClient.connect(cluster.bootstrap) as client:
                await client.send(ApiVersionsRequest(), 0)
                outcomes.append(await client.recv_frame() is not None)
        assert outcomes == [True, False, True]
        assert cluster.brokers[0].faults.fired(fault) == 1
        cluster.clear_faults()
        assert cluster.brokers[0].faults.faults == ()
