"""How the checker reads a reply: names and text normalised, numbers found.

Apart from :mod:`.checker` so that the domain schema (:mod:`.domain`) can hold a pack to what the checker can
tell apart: entity names that read the same, or name parts and units that hold a number, would score a faithful
reply wrong or a wrong one right.
"""

from __future__ import annotations

import re
import unicodedata

#: A number as a reply writes it: an optional minus sign and dollar sign, thousands separators, decimals; not
#: the digits inside a word ("km2").
NUMBER = re.compile(r"(?<![\w.])([-\u2212]?)\$?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")


#: Below this code point a letter is Latin: only there are marks accents to drop ("Café" reads as "cafe"). In
#: other scripts a mark is part of the letter (Devanagari vowel signs, the voicing marks of バ and パ).
_LATIN_END = "\u0250"


def normalise(text: str) -> str:
    """Case folded, Latin accents and punctuation removed, single spaces, no leading article. Letters of every
    script stay, with their marks (a name in kanji, Devanagari or Cyrillic is still a name)."""
    kept: list[str] = []
    latin = False
    for c in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(c):
            if latin:
                continue
        else:
            latin = c < _LATIN_END
        kept.append(c)
    text = unicodedata.normalize("NFC", "".join(kept)).casefold()
    text = "".join(c if c.isalnum() or unicodedata.category(c)[0] == "M" else " " for c in text)
    return re.sub(r"^the ", "", " ".join(text.split()))


def numbers(text: str) -> list[float]:
    """Every number in ``text`` (thousands separators, currency signs and minus signs handled)."""
    out = []
    for sign, whole, frac in NUMBER.findall(text):
        x = float(whole.replace(",", "") + (frac or ""))
        out.append(-x if sign else x)
    return out
