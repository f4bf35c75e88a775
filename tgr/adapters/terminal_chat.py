"""`tgr chat`: the read-answer loop over a conversation (tgr.query.chat_session.Chat).

On a terminal, lines are read with readline (line editing, and the session's earlier lines
with the arrow keys); otherwise one line at a time until the end of input, each question
echoed after "> " so that the output reads as a transcript. A line starting with "/" is a
command. Printing is the command line's (tgr.cli hands it in as `show`).
"""
from __future__ import annotations

import sys

from ..errors import TgrError

HELP = """commands:
  /mode local|global|naive   how questions are answered (now: {mode})
  /level N                   community level of global answers (now: {level})
  /sources                   the passages behind the last answer
  /reset                     forget the conversation
  /help                      this list
  /exit                      leave (also /quit, Ctrl-D)"""


class ChatLoop:
    """Reads questions and commands, prints answers; run() returns how many questions failed."""

    def __init__(self, session, *, stream: bool, interactive: bool, show, stops):
        self.session = session
        self.stream = stream
        self.interactive = interactive
        self.show = show    # .streamed(items) -> Answer, .sources(answer, mode, level), .line(text, err), .source(dict)
        self.stops = stops  # context manager: Ctrl-C while answering ends the command cleanly
        self.failed = 0

    def run(self) -> int:
        if self.interactive:
            _line_editing()
            self.show.line(f"tgr chat, {self.session.mode} mode: ask a question; /help lists the commands, "
                           "/exit (or Ctrl-D) leaves.")
        while True:
            line = self._read()
            if line is None:
                return self.failed
            line = line.strip()
            if not line:
                continue
            if not self.interactive:
                self.show.line(f"> {line}")
            if line.startswith("/"):
                if not self.command(line):
                    return self.failed
            else:
                self.answer(line)

    def _read(self) -> str | None:
        """The next line (None: the end of input)."""
        if not self.interactive:
            line = sys.stdin.readline()
            return line if line else None
        while True:
            try:
                return input("> ")
            except EOFError:
                self.show.line("")
                return None
            except KeyboardInterrupt:  # Ctrl-C at the prompt drops the line, as a shell does
                self.show.line("")

    def answer(self, question: str) -> None:
        """Ask the session and print the answer, streamed or whole, then its sources."""
        session = self.session
        try:
            if self.stream and self.interactive:
                answer = self._interruptible(question)
                if answer is None:
                    return
            elif self.stream:
                with self.stops():
                    answer = self.show.streamed(session.ask_stream(question))
            else:
                answer = session.ask(question)
        except (TgrError, ValueError) as exc:
            self.failed += 1
            self.show.line(f"error: {exc}", err=True)
            return
        self.show.answer(answer, session.mode, session.settings.get("level", 0), streamed=self.stream)
        self.show.line("")

    def _interruptible(self, question: str):
        """Stream an answer on a terminal: Ctrl-C stops it and the conversation goes on without it."""
        try:
            return self.show.streamed(self.session.ask_stream(question))
        except KeyboardInterrupt:
            self.show.line("(stopped; this question is not part of the conversation)", err=True)
            return None

    def command(self, line: str) -> bool:
        """Carry out a /command; False: leave."""
        name, _, arg = line[1:].partition(" ")
        name, arg = name.lower(), arg.strip()
        session = self.session
        if name in ("exit", "quit"):
            return False
        if name == "help":
            self.show.line(HELP.format(mode=session.mode, level=session.settings.get("level", 0)))
        elif name == "mode" and arg in ("local", "global", "naive"):
            session.mode = arg
            self.show.line(f"mode: {arg}")
        elif name == "level" and arg.isdigit():
            session.settings["level"] = int(arg)
            self.show.line(f"level: {arg} (global mode)")
        elif name == "sources":
            self._sources()
        elif name == "reset":
            session.reset()
            self.show.line("the conversation starts again")
        else:
            self.failed += not self.interactive  # a script with a wrong command fails at the end
            self.show.line(f"unknown command or argument: {line} (/help lists the commands)", err=True)
        return True

    def _sources(self) -> None:
        last = self.session.last
        if last is None or not last.sources:
            self.show.line("no sources yet: ask a question first")
            return
        for source in last.sources:
            self.show.line("  - " + self.show.source(source))


def _line_editing() -> None:
    """Arrow keys, editing and the session's earlier lines at the prompt, where readline exists."""
    try:
        import readline  # noqa: F401 - importing it is what turns line editing on for input()
    except ImportError:  # e.g. Windows without pyreadline
        pass
