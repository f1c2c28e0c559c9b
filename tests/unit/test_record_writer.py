"""The recorder's profile writer: atomic, private, never following a link, failing once out loud."""

from __future__ import annotations

import io
import json
import os
import stat
import struct
from pathlib import Path

import pytest
import trio

from kafkacompat.negotiation.recording import ProfileBook, WireRecorder
from kafkacompat.recorder import ProfileWriter, write_lines


def _book(*client_ids: str) -> ProfileBook:
    book = ProfileBook()
    for client_id in client_ids:
        recorder = WireRecorder(book)
        name = client_id.encode()
        frame = struct.pack(">hhih", 3, 1, 1, len(name)) + name
        recorder.from_client(struct.pack(">i", len(frame)) + frame)
    return book


def test_the_file_is_replaced_atomically_private_and_a_link_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("not yours\n")
    link = tmp_path / "profiles.jsonl"
    link.symlink_to(target)
    write_lines(link, [b"one\n", b"two\n"])
    assert not link.is_symlink() and link.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(link.stat().st_mode) == 0o600
    assert target.read_text() == "not yours\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.txt", "profiles.jsonl"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    class Broken:
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield b"half"
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_lines(tmp_path / "profiles.jsonl", Broken())  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_failing_write_is_said_once_retried_and_its_recovery_said(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    out = folder / "profiles.jsonl"
    book = _book("app-1", "app-2")
    report = io.StringIO()
    writer = ProfileWriter(book, out, report)

    async def cycles() -> None:
        for _ in range(3):
            await writer.write()
        assert writer.failing == "No such file or directory"
        folder.mkdir()
        await writer.write()  # nothing changed since: the failed write is still owed

    trio.run(cycles)
    lines = report.getvalue().splitlines()
    assert lines == [
        f"kafkacompat record: cannot write {out} (No such file or directory); "
        "forwarding goes on and the write is retried",
        f"kafkacompat record: {out} written again",
    ]
    assert [json.loads(line)["client"] for line in out.read_text().splitlines()] == ["app-1", "app-2"]
    assert os.listdir(folder) == ["profiles.jsonl"]


def test_only_the_profiles_that_changed_are_serialised_again(tmp_path: Path) -> None:
    book = _book("app-1", "app-2")
    writer = ProfileWriter(book, tmp_path / "profiles.jsonl", io.StringIO())
    trio.run(writer.write)
    first = writer.lines()
    book.clients[("app-1", "")].client_ids["marker"] = None  # changed behind the book's back: not seen
    WireRecorder(book).from_client(b"")  # a connection that says nothing changes no profile
    trio.run(writer.write)
    assert writer.lines() == first
    book.changed.add(("app-1", ""))
    trio.run(writer.write)
    assert writer.lines()[0] != first[0] and writer.lines()[1] == first[1]
