"""The stdin thread over a real pipe and a real HumanChannel: routing, receipts, stop, EOF."""

from __future__ import annotations

import asyncio
import io
import os
import termios
import threading
from collections.abc import Iterator

import pytest

from adapters.terminal import Render, StdinReader
from adapters.terminal.stdin import ctrl_c_as_input
from flower_core import Event, HumanChannel


class Pipe:
    """A pipe standing in for the terminal: write lines to it, the reader reads the other end."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()

    def type(self, text: str) -> None:
        os.write(self.w, text.encode())

    def close_writer(self) -> None:
        if self.w >= 0:
            os.close(self.w)
            self.w = -1


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    p = Pipe()
    yield p
    p.close_writer()
    os.close(p.r)


def wired(channel: HumanChannel) -> tuple[Render, io.StringIO, list[Event]]:
    out = io.StringIO()
    render = Render(out, color=False)
    seen: list[Event] = []

    def sink(ev: Event) -> None:
        seen.append(ev)
        render(ev)

    channel.on_event = sink
    return render, out, seen


async def until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_a_digit_answers_the_waiting_question_with_that_option(pipe: Pipe) -> None:
    ch = HumanChannel(timeout_s=30)
    render, out, _ = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    try:
        asking = asyncio.create_task(ch.ask_outcome("Which greeting?", ["Hello", "Olá", "안녕하세요"]))
        await until(lambda: ch.pending())
        pipe.type("3\n")
        ask = await asyncio.wait_for(asking, 5)
        assert (ask.state, ask.answer) == ("answered", "안녕하세요")
        assert "  + answered: 안녕하세요" in out.getvalue()
    finally:
        reader.stop()


async def test_lines_typed_while_nothing_waits_go_to_the_inbox_not_the_next_question(pipe: Pipe) -> None:
    ch = HumanChannel(timeout_s=30)
    render, out, seen = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    try:
        pipe.type("also count the bytes\n")
        await until(lambda: any(e.payload.get("kind") == "mail" for e in seen))
        assert [m.text for m in ch.pending_mail()] == ["also count the bytes"]
        assert "  + queued: also count the bytes" in out.getvalue()
        # A question asked later is not answered by what was typed before it.
        asking = asyncio.create_task(ch.ask_outcome("Proceed?", ["yes", "no"]))
        await until(lambda: ch.pending())
        assert ch.pending()[0].state == "asked"
        pipe.type("\n")  # Enter alone skips
        assert (await asyncio.wait_for(asking, 5)).state == "declined"
        ch.take_mail()
        assert "  + delivered: also count the bytes" in out.getvalue()
    finally:
        reader.stop()


async def test_question_mark_lines_go_to_the_oracle_and_the_interrupt_prompt_takes_the_next_line(pipe: Pipe) -> None:
    ch = HumanChannel(timeout_s=30)
    render, out, _ = wired(ch)
    asked: list[str] = []
    interrupts: list[str] = []
    got = threading.Event()

    def oracle(q: str) -> None:
        asked.append(q)
        got.set()

    def interrupt(text: str) -> None:
        interrupts.append(text)
        got.set()

    reader = StdinReader(ch, render, fd=pipe.r, on_oracle=oracle, on_interrupt=interrupt, poll_s=0.05)
    reader.start()
    try:
        pipe.type("? where are we\n")
        assert await asyncio.to_thread(got.wait, 5)
        got.clear()
        pipe.type("？全角也行\n")
        assert await asyncio.to_thread(got.wait, 5)
        got.clear()
        assert asked == ["where are we", "全角也行"]
        reader.arm_interrupt()
        pipe.type("\n")  # Enter alone: not interrupted
        await until(lambda: "not interrupted" in out.getvalue())
        reader.arm_interrupt()
        pipe.type("don't touch the Makefile\n")
        assert await asyncio.to_thread(got.wait, 5)
        assert interrupts == ["don't touch the Makefile"]
        assert not reader.armed and not ch.pending_mail()
    finally:
        reader.stop()


async def test_pasted_lines_are_all_routed_and_stop_wakes_the_thread(pipe: Pipe) -> None:
    ch = HumanChannel(timeout_s=30)
    render, _, _ = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    pipe.type("one\ntwo\nthree\n")  # one read() returns all three
    await until(lambda: len(ch.mail) == 3)
    assert [m.text for m in ch.mail] == ["one", "two", "three"]
    await asyncio.to_thread(reader.stop, 2.0)
    assert not reader.running  # select polling let stop() end it with no input


async def test_end_of_input_skips_the_waiting_question(pipe: Pipe) -> None:
    ch = HumanChannel(timeout_s=30)
    render, _, _ = wired(ch)
    reader = StdinReader(ch, render, fd=pipe.r, poll_s=0.05)
    reader.start()
    try:
        asking = asyncio.create_task(ch.ask_outcome("Anyone?"))
        await until(lambda: ch.pending())
        pipe.close_writer()
        assert (await asyncio.wait_for(asking, 5)).state == "declined"
        assert reader.eof.is_set()
    finally:
        reader.stop()


async def test_on_a_terminal_ctrl_c_is_a_byte_for_the_reader_not_a_signal_for_the_process_group() -> None:
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    restore = ctrl_c_as_input(slave)
    assert restore is not None
    try:
        cc = termios.tcgetattr(slave)[6]
        assert cc[termios.VINTR] == b"\x00" and cc[termios.VEOL] == b"\x03"
        ch = HumanChannel(timeout_s=30)
        render, _, _ = wired(ch)
        pressed = threading.Event()
        reader = StdinReader(ch, render, fd=slave, on_ctrl_c=pressed.set, poll_s=0.05)
        reader.start()
        try:
            os.write(master, b"half-typed\x03")  # no Enter: ^C alone makes the line readable
            assert await asyncio.to_thread(pressed.wait, 5)
            os.write(master, b"next line\n")
            await until(lambda: len(ch.mail) == 1)
            assert [m.text for m in ch.mail] == ["next line"]  # the half-typed text was dropped, like a shell
        finally:
            reader.stop()
    finally:
        if restore is not None:
            restore()
        assert termios.tcgetattr(slave) == before
        os.close(master)
        os.close(slave)
    with open(os.devnull) as devnull:
        assert ctrl_c_as_input(devnull.fileno()) is None  # not a terminal: left alone
