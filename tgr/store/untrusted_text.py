"""Text from a store is untrusted: make it safe to print on a terminal or write into XML/JSON.

A shipped .db may hold escape sequences (ANSI CSI, OSC window-title or clipboard writes) or
other control characters in any text column. Everything tgr prints or exports passes here.
"""
from __future__ import annotations

import re

# ESC-introduced sequences (CSI "ESC [", OSC "ESC ]" up to BEL or ST, two-byte escapes),
# their 8-bit C1 forms, then any other C0/C1 control character except tab and newline.
_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"     # OSC ... BEL | ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]"               # CSI
    r"|\x1b[@-Z\\-_]"                          # other two-byte escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"                  # 8-bit CSI
    r"|\x9d[^\x07\x9c]*[\x07\x9c]?"            # 8-bit OSC
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# characters XML 1.0 forbids outright (besides the controls above): surrogates, U+FFFE/FFFF
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def terminal_safe(text: str) -> str:
    """Text with escape sequences removed and other control characters shown as '?'."""
    return _CONTROLS.sub("?", _ESCAPES.sub("", str(text)))


def xml_safe(text: str) -> str:
    """Text that any XML 1.0 parser accepts (tab and newline kept)."""
    return _NOT_XML.sub("?", terminal_safe(text))
