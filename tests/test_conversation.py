"""Questions in a conversation: history checked and cut to a budget, follow-ups resolved against
the last turn (with and without a model), kb.chat(), `tgr chat` and the MCP-facing history."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, FIXTURES, SMALL
from fakellm import FakeServer
from tgr.cli import main
from tgr.query.conversation import checked_history, recent_turns, search_text

CHAT_CORPUS = FIXTURES / "corpus_chat"  # the Carol's list of characters and the Cratchits' dinner
CLERK = [{"role": "user", "content": "Who is Scrooge's clerk?"},
         {"role": "assistant", "content": "Scrooge's clerk is Bob Cratchit [Sources: 1]."}]
FOLLOW_UP = "What is his family like?"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("chat") / "carol.db"
    with tgr.open(path, embedder="tgr:hash-384") as kb:
        kb.index([str(CHAT_CORPUS), str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    return path


def turns(*texts):
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": t} for n, t in enumerate(texts)]


def test_history_is_checked_with_a_one_line_error():
    assert checked_history(None) == [] and checked_history(CLERK) == CLERK
    for bad in ("hello", {"role": "user"}, [{"role": "system", "content": "x"}], [{"role": "user", "content": 3}],
                [["user", "hi"]]):
        with pytest.raises(ValueError) as raised:
            checked_history(bad)
        assert "\n" not in str(raised.value)


def test_the_oldest_turns_are_dropped_first_to_fit_the_budget():
    history = turns("first question " * 40, "first answer " * 40, "second question", "second answer")
    assert recent_turns(history, 10_000) == history
    assert recent_turns(history, 30) == history[2:]  # the old exchange does not fit
    assert recent_turns(history[1:], 10_000) == history[2:]  # never an answer without its question
    assert recent_turns(history, 3) == []


def test_a_follow_up_that_names_nobody_carries_the_last_turns_entities():
    names = {"Scrooge": ["Ebenezer Scrooge"], "Bob Cratchit": ["Bob Cratchit"]}
    names_in = lambda text: [n for key, found in names.items() if key in text for n in found]  # noqa: E731
    assert search_text(FOLLOW_UP, [], names_in) == FOLLOW_UP
    assert search_text("And the family?", CLERK, names_in) == "And the family? Ebenezer Scrooge Bob Cratchit"
    assert search_text("Who is Bob Cratchit?", CLERK, names_in) == "Who is Bob Cratchit?"
    # a pronoun is the last answer's leading entity: Bob Cratchit, not the question's own Scrooge
    assert search_text(FOLLOW_UP, CLERK, names_in) == "What is Bob Cratchit's family like?"


NEPHEW = turns("Who is Scrooge's nephew?", "Fred, Scrooge's nephew. [1] 'I'm sure he is very rich, Fred.' [2]")


def _names_in(text: str) -> list[str]:
    """The store's names a text names, as Searcher.names_in gives them: not in text order."""
    return [n for n in ["Scrooge", "Fred", "Bob Cratchit", "孙悟空", "唐僧"] if n.lower() in text.lower()]



@pytest.mark.parametrize("asked, read", [
    ("What does he invite Scrooge to?", "What does Fred invite Scrooge to?"),
    ("Where does she live?", "Where does Fred live?"),
    ("What do they eat, and who visits them?", "What do Fred eat, and who visits Fred?"),
    ("Is his wife kind? What is their house like?", "Is Fred's wife kind? What is Fred's house like?"),
    ("他邀请了谁？其他人呢？", "Fred邀请了谁？其他人呢？"),
    ("Who is Bob Cratchit?", "Who is Bob Cratchit?"),        # no pronoun: as asked
    ("The theory of it", "The theory of Fred"),
])
def test_a_pronoun_is_the_last_answers_leading_entity(asked, read):
    from tgr.query.conversation import leading_entity, resolved

    assert resolved(asked, NEPHEW, _names_in) == read
    assert resolved(asked, [], _names_in) == asked
    # the answer's first entity, unless the question it answered named it: then the next one
    assert leading_entity("Who is Fred?", "Fred is Scrooge's nephew.", _names_in) == "Fred"  # the subject
    assert leading_entity("Who is Scrooge's nephew?", "Scrooge's nephew is Fred.", _names_in) == "Fred"
    assert leading_entity("Who is Fred?", "Fred, the nephew.", _names_in) == "Fred"
    assert leading_entity("谁是孙悟空的师父？", "唐僧是孙悟空的师父。", _names_in) == "唐僧"
    assert leading_entity("Who?", "Nobody knows.", _names_in) is None


def test_he_is_a_person_and_it_is_not():
    """he/she/他 read as the first person (or untyped entity) the answer names, it/它 as the
    first other entity; they as the first of any."""
    from tgr.query.conversation import resolved

    kinds = {"Scrooge": "person", "Fred": "person", "Christmas": "event", "London": "concept"}
    names_in = lambda text: [n for n in kinds if n in text]  # noqa: E731
    history = turns("Who is Scrooge's nephew?", "Scrooge's nephew is Fred, who loves Christmas.")
    read = lambda q: resolved(q, history, names_in, lambda n: kinds.get(n, ""))  # noqa: E731
    assert read("Why does he love it?") == "Why does Fred love Christmas?"
    assert read("他为什么喜欢它？") == "Fred为什么喜欢Christmas？"
    assert read("What do they say?") == "What do Fred say?"  # the first the question names as no owner
    assert resolved("Why does he love it?", history, names_in) == "Why does Fred love Fred?"  # no types
    about_marley = turns("Who was Marley?", "Marley was Scrooge's partner.")  # the question's own subject
    assert resolved("What happened to him?", about_marley, names_in=lambda t: [n for n in ("Marley", "Scrooge")
                                                                             if n in t]) == "What happened to Marley?"


def test_an_offline_chat_reads_he_as_the_last_answers_person(tmp_path):
    """tgr's own chat, offline: the follow-up is answered about Fred, the last answer's person."""
    source = tmp_path / "nephew.txt"
    source.write_text(
        "Ebenezer Scrooge kept a counting-house in the city, and he hated Christmas.\n\n"
        "Fred, Scrooge's nephew, was a cheerful young man who loved Christmas.\n\n"
        "Bob Cratchit, Scrooge's clerk, invited Tiny Tim to the window to watch the snow.\n\n"
        "Fred invited Scrooge to Christmas dinner at his house, and Scrooge refused.\n\n"
        "Fred laughed, and Fred's wife laughed with him at the party.\n\n"
        "Scrooge invited nobody, and he counted his money alone every night.\n", encoding="utf-8")
    with tgr.open(tmp_path / "nephew.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(source)], **SMALL)
        chat = kb.chat()
        first = chat.ask("Who is Scrooge's nephew?")
        second = chat.ask("What does he invite Scrooge to?")
        alone = kb.ask("What does he invite Scrooge to?")
    assert first.answer.startswith("Fred")
    assert "Christmas dinner" in second.answer.splitlines()[0]
    assert "Christmas dinner" not in alone.answer.splitlines()[0]


def family(texts, top=4) -> int:
    """How many of the top passages are about the Cratchits' family."""
    return sum("Cratchit" in t and ("Martha" in t or "Mrs." in t) for t in texts[:top])


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
def test_retrieval_resolves_the_follow_up_offline(store, mode):
    with tgr.open(store, readonly=True, create=False) as kb:
        alone = [p.text for p in kb.retrieve(FOLLOW_UP, mode, k=4)]
        followed = [p.text for p in kb.retrieve(FOLLOW_UP, mode, k=4, history=CLERK)]
        answer = kb.ask(FOLLOW_UP, mode, history=CLERK)
    assert family(followed) >= 2 and family(followed) > family(alone)
    assert family([s["text"] for s in answer.sources], top=len(answer.sources)) >= 1


def test_a_chat_session_keeps_the_conversation_and_the_model_reads_it(store):
    with FakeServer() as fake, tgr.open(store, readonly=True, create=False, chat="openai:fake-chat",
                                        base_url=fake.url) as kb:
        chat = kb.chat()
        first = chat.ask("Who is Scrooge?")
        assert fake.conversations[-1][:-1] == []  # the first question comes alone
        second = chat.ask(FOLLOW_UP)
        sent = fake.conversations[-1]
        assert sent[:-1] == [{"role": "user", "content": "Who is Scrooge?"},
                             {"role": "assistant", "content": first.answer}]
        assert first.answer.startswith("According to the data: Fan, the sister of Scrooge.")
        # "his": the first person the last answer names (Fan is no entity of the store, Christmas no person)
        assert "What is Scrooge's family like?" in sent[-1]["content"]
        assert chat.history[-1] == {"role": "assistant", "content": second.answer} and chat.last is second
        streamed = list(chat.ask_stream("And his nephew?"))
        assert "".join(streamed[:-1]) == streamed[-1].answer and len(chat.history) == 6
        assert [m["role"] for m in fake.conversations[-1]] == ["user", "assistant"] * 2 + ["user"]
        chat.mode = "global"
        chat.ask("What are the main themes?")
        assert len(fake.conversations[-1]) == 7  # the reduce call reads the conversation too
        with pytest.raises(ValueError):
            chat.mode = "nonsense"
        chat.reset()
        chat.ask("Who is Marley?")
        assert len(fake.conversations[-1]) == 1


def test_the_model_reads_only_the_latest_turns_within_the_budget(store):
    long_ago = turns("an old question " * 300, "an old answer " * 300)
    with FakeServer() as fake, tgr.open(store, readonly=True, create=False, chat="openai:fake-chat",
                                        base_url=fake.url) as kb:
        kb.ask(FOLLOW_UP, history=long_ago + CLERK, history_tokens=500)
        assert fake.conversations[-1][:-1] == CLERK


def chat_cli(store, lines, *args, env=None):
    return CliRunner().invoke(main, ["chat", str(store), *args], input="".join(f"{l}\n" for l in lines), env=env)


def test_tgr_chat_reads_one_question_per_line_offline(store):
    result = chat_cli(store, ["Who is Scrooge?", "/mode naive", "What does he say of Christmas?",
                              "/sources", "/level 1", "/mode global", "What is the story about?", "/help"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.count("\nSources:") >= 2 and "mode: naive" in out and "mode: global" in out
    assert "> What does he say of Christmas?" in out and "Reports considered:" in out and "/exit" in out
    assert "(chunk " in out.split("> /sources", 1)[1]


def test_tgr_chat_with_a_model_streams_and_carries_the_conversation(store):
    with FakeServer() as fake:
        result = chat_cli(store, ["Who is Scrooge?", FOLLOW_UP, "/exit", "Never asked"],
                          "--chat-model", "openai:fake-chat", "--stream", env={"TGR_BASE_URL": fake.url})
        calls = fake.stats.chat_calls
        sent = fake.conversations[-1]
    assert result.exit_code == 0, result.output
    assert calls == 2 and [m["role"] for m in sent] == ["user", "assistant", "user"]
    from tgr.query.citations import Renumbering

    shown = Renumbering()  # the first answer as printed: its citations numbered 1..N, as tgr ask does
    assert shown.feed(sent[1]["content"]) + shown.end() in result.stdout
    assert "Never asked" not in result.stdout


def test_tgr_chat_bad_lines_are_said_and_fail_the_script(store):
    result = chat_cli(store, ["/mode sideways", "Who is Scrooge?"])
    assert result.exit_code == 1 and "Sources:" in result.stdout
    assert result.stderr.strip().splitlines() == ["unknown command or argument: /mode sideways "
                                                  "(/help lists the commands)"]


def test_tgr_chat_on_a_terminal_edits_lines_and_recalls_them(store):
    """In a pseudo-terminal: the banner, an answer, the up arrow asking the last question again,
    a line edited with the left arrow, and Ctrl-D leaving with status 0."""
    import os
    import pty
    import select
    import sys
    import time

    from conftest import ROOT

    pid, fd = pty.fork()
    if pid == 0:  # the child: tgr chat with its stdin and stdout on the terminal
        os.environ.update(PYTHONPATH=str(ROOT), TGR_EMBED_MODEL="tgr:hash-384", TERM="xterm")
        os.execv(sys.executable, [sys.executable, "-m", "tgr.cli", "chat", str(store)])
    out = b""

    def read_until(text: bytes, seconds: float = 60) -> None:
        nonlocal out
        deadline = time.monotonic() + seconds
        while text not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    return

    header = b"\r\nSources:\r\n"  # what the answer's citations name, as tgr ask lists them
    read_until(b"> ")
    os.write(fd, b"Who is Marley?\r")
    read_until(header)
    read_until(b"\n> ")
    os.write(fd, b"\x1b[A\r")  # up arrow: the same question again
    read_until(header + out.split(header, 1)[1].split(b"\n> ", 1)[0])
    read_until(b"\n> ")
    os.write(fd, b"/mode naie\x1b[Dv\r")  # left arrow, a letter typed in the middle: "/mode naive"
    read_until(b"mode: naive\r\n> ")  # the next prompt: readline reads the Ctrl-D below
    os.write(fd, b"\x04")  # Ctrl-D
    deadline, status = time.monotonic() + 30, None
    while status is None and time.monotonic() < deadline:
        read_until(b"\x00", 0.2)
        done, code = os.waitpid(pid, os.WNOHANG)
        status = code if done else None
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(fd)
    text = out.decode("utf-8", "replace")
    assert status is not None and os.waitstatus_to_exitcode(status) == 0, text
    assert text.startswith("tgr chat, local mode")
    assert text.count("\nSources:\r\n") == 2 and "\r\nmode: naive\r\n" in text
