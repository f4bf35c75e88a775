from tgr.store.untrusted_text import terminal_safe, xml_safe


def test_escape_sequences_are_removed():
    hostile = "a\x1b]0;pwned\x07b\x1b[2Jc\x1b]52;c;ZXZpbA==\x1b\\d\x9b31me"
    assert terminal_safe(hostile) == "abcde"


def test_other_controls_become_question_marks_and_text_survives():
    assert terminal_safe("x\x00y\x08z\ttab\nline é 中文") == "x?y?z\ttab\nline é 中文"


def test_xml_safe_drops_what_xml_forbids():
    import xml.etree.ElementTree as ET

    text = xml_safe("ok\x0c\ud800\uffff\x1b[1mbold")
    ET.fromstring(f"<a>{text}</a>")  # parses
    assert text == "ok???bold"
