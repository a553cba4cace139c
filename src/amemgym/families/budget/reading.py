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


def normalise(text: str) -> str:
    """Case folded, accents and punctuation removed, single spaces, no leading article. Letters of every script
    stay (a name in kanji or Cyrillic is still a name)."""
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = " ".join(re.sub(r"[\W_]+", " ", text.casefold()).split())
    return re.sub(r"^the ", "", text)


def numbers(text: str) -> list[float]:
    """Every number in ``text`` (thousands separators, currency signs and minus signs handled)."""
    out = []
    for sign, whole, frac in NUMBER.findall(text):
        x = float(whole.replace(",", "") + (frac or ""))
        out.append(-x if sign else x)
    return out
