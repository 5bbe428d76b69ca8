"""A hypothesis as it is recorded: the subject and body of an attempt's commit.

``kernelopt try -m`` refuses a hypothesis that is not valid UTF-8 (Python hands
undecodable argv bytes over as surrogate escapes) or that holds control
characters: the hypothesis is the user's own words, kept in history for good,
so silently changing them would record something nobody wrote, and the shell
or agent that sent them can fix the string and ask again. Text from other
sources (an agent's hypothesis file, knob values) is made safe instead, so
nothing can break the commit message or the trailers read back from it.
Newlines and tabs are text: a first line and a body.
"""

from __future__ import annotations

import json
import re
import unicodedata

_TEXT_CONTROLS = frozenset("\n\t")


def _is_control(char: str) -> bool:
    return char not in _TEXT_CONTROLS and unicodedata.category(char) in ("Cc", "Cs")


def hypothesis_problem(text: str) -> str | None:
    """Why ``text`` cannot be recorded as it is, or None when it can."""
    for position, char in enumerate(text):
        if unicodedata.category(char) == "Cs":
            return f"it is not valid UTF-8 (undecodable byte at character {position})"
        if _is_control(char):
            return f"it holds the control character U+{ord(char):04X} at character {position}"
    return None


def safe_hypothesis(text: str) -> str:
    """``text`` with every undecodable byte and control character (but newline and tab)
    replaced by U+FFFD, and line ends made plain newlines."""
    text = text.replace("\r\n", "\n")
    return "".join("\ufffd" if _is_control(char) else char for char in text)


_KNOB_LABEL = re.compile(
    r"^(re-measure the current knobs|[^,\n]+ -> [^,\n]+(, [^,\n]+ -> [^,\n]+)*)$"
)


def knob_label(hypothesis: str, before: str | None, after: str) -> str:
    """A knob sweep's label (``X 6 -> 5``) as the commit actually changes the knob file.

    The proposer labels a change from the knobs it believes BEST has; when
    BEST moved without it (an agent's ``try``), that label is stale ("X 1 ->
    5" for a 6 -> 5 change). ``before`` is the knob file at the commit's
    parent, ``after`` the committed one. Another hypothesis is kept as it is.
    """
    if not _KNOB_LABEL.match(hypothesis):
        return hypothesis
    try:
        old = json.loads(before) if before else {}
        new = json.loads(after)
    except ValueError:
        return hypothesis
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return hypothesis
    changes = [
        f"{name} {_shown(old.get(name))} -> {_shown(new.get(name))}"
        for name in new
        if new.get(name) != old.get(name)
    ]
    changes += [f"{name} {_shown(old[name])} -> (removed)" for name in old if name not in new]
    return ", ".join(changes) or "re-measure the current knobs"


def _shown(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) or value is None else str(value)


def cut_words(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: cut at a word boundary, ending in "..."."""
    if len(text) <= width:
        return text
    room = max(width - 3, 1)
    head = text[:room]
    space = head.rfind(" ")
    if space > room // 2:  # a very long word is cut inside rather than leaving little
        head = head[:space]
    return head.rstrip(" ,;:-") + "..."
