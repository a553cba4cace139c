"""Scrubbing secrets out of everything amemgym stores or prints.

A server (or a proxy in front of it) may echo the request's ``Authorization`` header: in an error body, but
also in a successful reply or in the model list of ``/models``. Two levels of scrubbing:

- :func:`redact`, for error texts: every registered key and anything shaped like a credential (bearer and
  basic tokens, ``sk-`` and vendor keys, ``api_key=...``, ``user:password@`` in URLs). Error texts are ours,
  so a false match costs nothing.
- :func:`redact_content`, for everything else written or printed (run files, traces, reports, the response
  cache, the console; ``amemgym.storage`` applies it to every write): registered keys and bearer-shaped
  tokens only, narrow enough to leave ordinary conversation ("a basic recipe", "the bearer of news") alone.
  Its patterns never match a JSON quote or backslash, so a JSON text stays valid JSON.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from typing import Any
from urllib.parse import quote

_KNOWN: set[str] = set()
#: Every form (:func:`secret_forms`) of the registered keys of :data:`SHORT_KEY_CHARS` or more, longest first.
_KNOWN_SORTED: list[str] = []
#: The forms of the shorter registered keys, and one pattern that matches a form only where it stands on its own.
_SHORT: list[tuple[list[str], re.Pattern[str]]] = []
#: Pieces of :data:`PREFIX_CHARS` characters of each registered key longer than that (:func:`_pieces`): the
#: piece, and the key with where the piece starts in it.
_PIECES: dict[str, tuple[str, int]] = {}
_LOCK = threading.Lock()

#: Shorter "keys" (e.g. a placeholder like "x") are not registered: replacing them would mangle every text.
MIN_SECRET_CHARS = 6
#: A key shorter than this is masked only where it stands on its own, not inside a longer run of letters,
#: digits or ``._+-`` (a 6-digit key inside a JSON number, a short word inside an identifier): a short string
#: turns up by chance, and a mask inside a number would break the JSON it is in.
SHORT_KEY_CHARS = 16
#: Keys the documentation of local servers (llama.cpp, Ollama, LM Studio) tells users to set, since those
#: servers take any key: they are public, and masking them would mask ordinary words ("ollama", "anything").
PLACEHOLDER_KEYS = frozenset({"ollama", "lm-studio", "sk-no-key-required", "no-key", "not-needed", "placeholder",
                              "anything"})
#: A text cut short inside a key (an error body kept to its first N characters, a note's name) still holds a
#: part of the key, and a server may echo only its end: a key's first or last this many characters, and any
#: ``2 * PREFIX_CHARS - 1`` of them in a row, are masked wherever they appear, with all of the key around them.
PREFIX_CHARS = 12
#: How the keys of some vendors begin. Several are lower case with underscores, which :func:`looks_like_key`
#: alone would take for a name; what follows the prefix must hold a digit and be 16 characters or more.
VENDOR_PREFIXES = ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_", "tgp_v1_", "gsk_",
                   "github_pat_", "ghp_", "gho_", "ghs_", "hf_", "nvapi-", "xai-", "r8_")
_VENDOR_TOKEN = r"(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{16,}"
_VENDOR = "|".join(re.escape(p) for p in VENDOR_PREFIXES)
MASK = "[REDACTED]"
#: How many layers of JSON string escaping a registered key is also looked for under.
_JSON_DEPTH = 3

# Anything shaped like a credential: a bearer/basic token, an OpenAI-style "sk-..." key, common vendor
# prefixes, and ``user:password@`` in a URL.
_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]{4,}"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{6,}"),
    re.compile(r"\b(?:ghp|gho|ghs|xox[abp]|AIza|hf)_?[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?i)(api[_-]?key|authorization|x-api-key)([\"']?\s*[:=]\s*[\"']?)(?!(?:bearer|basic)\b)"
               r"(?=[^\s\"',;}]*[0-9])[^\s\"',;}]{4,}"),
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"),
    re.compile(rf"\b(?:{_VENDOR}){_VENDOR_TOKEN}"),
)


# Credential shapes that can be told from prose: a bearer token, an ``sk-`` key or a vendor's key with at least
# one digit, and ``user:password@`` after a URL scheme. None of them crosses a quote, a backslash or whitespace.
# Each is matched only where ``str.find`` sees a literal of it (the regex engine alone scans a long text about
# ten times slower, and each literal costs a scan of the text, so the vendor prefixes are found by what they
# share): (the literals, where the match starts from one (a match starting at or before its literal must not
# start inside a word), the pattern matched there). The rarer vendor prefixes are left to :func:`redact`.
_TOKEN = r"(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]"
_CONTENT_PATTERNS: tuple[tuple[tuple[str, ...], int, re.Pattern[str], bool], ...] = (
    (("bearer", "Bearer", "BEARER"), 0, re.compile(rf"(?i)(bearer)\s+{_TOKEN}{{12,}}"), False),
    (("sk-", "pk-", "rk-"), 0, re.compile(rf"(?:sk|pk|rk)-{_TOKEN}{{16,}}"), True),
    (("://",), 3, re.compile(r"[^/\s:@\"'\\]+:[^/\s@\"'\\]+@"), False),
    (("_live_", "_test_"), -2, re.compile(rf"(?:sk|pk|rk)_(?:live|test)_{_VENDOR_TOKEN}"), True),
    (("tgp_v1_", "gsk_", "hf_", "github_pat_", "nvapi-", "xai-"), 0, re.compile(rf"(?:{_VENDOR}){_VENDOR_TOKEN}"),
     True),
)
#: A run of letters and digits mixing both, 12 or more long: what a generated key holds and an identifier made
#: of words ("sk-learn-tutorial-2023", "hf_hub_download_v3") does not. The shapes marked True above need one.
_RANDOM_RUN = re.compile(r"(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])[A-Za-z0-9]{12,}")


def _random_enough(token: str) -> bool:
    return any(_RANDOM_RUN.match(run) for run in re.split(r"[^A-Za-z0-9]+", token))


def _json_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def secret_forms(secret: str) -> set[str]:
    """The ways ``secret`` may be written back by a server that echoes it: as is, in lower and upper case,
    percent-encoded, in hex and base64-encoded (standard and URL-safe, with and without padding); each also as the
    text of a JSON string, up to :data:`_JSON_DEPTH` times over (a key inside JSON that a model wrote, in a
    record that is itself a JSON string of a JSON file), and with ``/`` written ``\\/`` (as some JSON encoders
    do). A key made of letters, digits, ``-`` and ``_`` has a handful of forms; escaping changes none of them."""
    raw = secret.encode("utf-8")
    b64 = {base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}
    bases = {secret, secret.lower(), secret.upper(), *_percent_forms(secret), *b64, *(b.rstrip("=") for b in b64),
             *_base64_cores(raw), raw.hex(), raw.hex().upper()}
    forms: set[str] = set()
    for base in bases:
        for text in (base, _json_text(base).replace("/", "\\/")):
            for _ in range(_JSON_DEPTH + 1):
                forms.add(text)
                text = _json_text(text)
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


def _percent_forms(secret: str) -> set[str]:
    """``secret`` percent-encoded as a URL encoder writes it (letters, digits and ``-._~`` left as they are) and
    with every character but letters and digits encoded (as some servers over-encode), in upper- and lower-case
    hex."""
    usual = quote(secret, safe="")
    every = "".join(c if c.isascii() and c.isalnum() else quote(c, safe="").replace("-", "%2D").replace(
        ".", "%2E").replace("_", "%5F").replace("~", "%7E") for c in secret)
    return {form for text in (usual, every) for form in (text, re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), text))}


def _base64_cores(raw: bytes) -> set[str]:
    """The characters that the base64 of any text holding ``raw`` must contain, whatever comes before it.

    A server may echo the key inside a longer value, most often the whole header (``Bearer <key>``), whose
    base64 does not contain the key's own: the key's bytes start at one of the three places of a three-byte
    group. For each, the characters of the groups made of the key's bytes alone are the same in every such
    text; the groups the key shares with what comes before or after it are left out."""
    cores = set()
    for pad in (b"", b"\0", b"\0\0"):
        start, end = (4 if pad else 0), (len(pad) + len(raw)) // 3 * 4
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            cores.add(encode(pad + raw).decode("ascii")[start:end])
    return cores


def register_secret(value: str | None) -> None:
    """Remember a configured key so :func:`redact` and :func:`redact_content` remove it, in every form of
    :func:`secret_forms`, wherever it appears. A key that spans lines is also remembered line by line: an
    error that quotes it may break it there."""
    if not value or len(value.strip()) < MIN_SECRET_CHARS or value.strip().lower() in PLACEHOLDER_KEYS:
        return
    secret = value.strip()
    parts = {p for p in secret.split() if len(p) >= MIN_SECRET_CHARS}
    with _LOCK:
        _KNOWN.update({secret, *parts})
        forms = {form for known in _KNOWN if len(known) >= SHORT_KEY_CHARS for form in secret_forms(known)}
        _KNOWN_SORTED[:] = sorted(forms, key=len, reverse=True)
        short = sorted({form for known in _KNOWN if len(known) < SHORT_KEY_CHARS for form in secret_forms(known)},
                       key=len, reverse=True)
        alone = rf"(?<![A-Za-z0-9._+-])(?:{'|'.join(map(re.escape, short))})(?![A-Za-z0-9._+-])"
        _SHORT[:] = [(short, re.compile(alone))] if short else []
        for known in _KNOWN:
            if len(known) >= SHORT_KEY_CHARS:
                _PIECES.update(_pieces(known))


def registered() -> list[str]:
    """The keys registered so far, for a child process to :func:`register_secret` again (it starts with none)."""
    with _LOCK:
        return sorted(_KNOWN)


def _mask_known(text: str) -> str:
    """``text`` with every registered key masked: each form of a long one and its pieces wherever they are, a
    short one where it stands on its own (:data:`SHORT_KEY_CHARS`)."""
    with _LOCK:
        known, pieces, short = list(_KNOWN_SORTED), dict(_PIECES), list(_SHORT)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    for forms, pattern in short:
        if any(form in text for form in forms):  # the regex engine scans a long text far slower than ``in``
            text = pattern.sub(MASK, text)
    return _mask_pieces(text, pieces)


def _pieces(key: str) -> dict[str, tuple[str, int]]:
    """Pieces of :data:`PREFIX_CHARS` characters cut from ``key`` at every multiple of that length, and its
    last ones: any run of ``2 * PREFIX_CHARS - 1`` of the key's characters holds a whole piece."""
    if len(key) <= PREFIX_CHARS:
        return {}
    starts = {*range(0, len(key) - PREFIX_CHARS + 1, PREFIX_CHARS), len(key) - PREFIX_CHARS}
    return {key[at:at + PREFIX_CHARS]: (key, at) for at in sorted(starts)}


def _mask_pieces(text: str, pieces: dict[str, tuple[str, int]]) -> str:
    """``text`` with every piece of a key masked, together with the key's characters on either side of it."""
    spans = []
    for piece, (key, at) in pieces.items():
        i = text.find(piece)
        while i != -1:
            start, end = i, i + len(piece)
            while start > 0 and at - (i - start) > 0 and text[start - 1] == key[at - (i - start) - 1]:
                start -= 1
            while end < len(text) and at + end - i < len(key) and text[end] == key[at + end - i]:
                end += 1
            spans.append((start, end))
            i = text.find(piece, end)
    if not spans:
        return text
    out, last = [], 0
    for start, end in sorted(spans):
        if end <= last:
            continue
        out.append(text[last:start] + MASK if start >= last else "")
        last = end
    return "".join(out) + text[last:]


def _sub(match: re.Match[str]) -> str:
    groups = match.groups()
    if len(groups) == 2:  # key=value forms keep the name, so the message still says what was hidden
        return f"{groups[0]}{groups[1]}{MASK}"
    if groups and groups[0]:
        return f"{groups[0]} {MASK}"
    return MASK + ("@" if match.group(0).endswith("@") else "")


def redact(text: str) -> str:
    """``text`` with every registered key and anything shaped like a credential replaced by a mask."""
    if not text:
        return text
    text = _mask_known(text)
    for pattern in _PATTERNS:
        text = pattern.sub(_sub, text)
    return text


def redact_content(text: str) -> str:
    """``text`` with every registered key and every bearer-shaped token replaced by a mask.

    For run files, reports, the cache and the console; see the module docstring for why it is narrower
    than :func:`redact`.
    """
    if not text:
        return text
    text = _mask_known(text)
    spans = sorted(_token_spans(text))
    if not spans:
        return text
    out, last = [], 0
    for start, end, mask in spans:
        if start >= last:
            out += [text[last:start], mask]
            last = end
    out.append(text[last:])
    return "".join(out)


def _token_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) of every credential shape of :data:`_CONTENT_PATTERNS` in ``text``."""
    spans = []
    for literals, offset, pattern, random_only in _CONTENT_PATTERNS:
        for literal in literals:
            i = text.find(literal)
            while i != -1:
                start = i + offset
                # A literal inside a word ("task-", "unbearer") does not start a token.
                inside_word = start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-")
                if start >= 0 and (offset > 0 or not inside_word):
                    m = pattern.match(text, start)
                    if m and (not random_only or _random_enough(m.group(0))):
                        spans.append((m.start(), m.end(), _sub(m)))
                i = text.find(literal, i + 1)
    return spans


def redact_obj(obj: Any) -> Any:
    """A copy of a JSON-like value with every string redacted (for failure records before they are written)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj


#: Characters no credential shape of :data:`_CONTENT_PATTERNS` contains, except the whitespace after "bearer".
_BREAKS = frozenset(" \t\n\r\f\v\"'\\")
#: Every credential shape of :data:`_CONTENT_PATTERNS` holds one of these (the whitespace after "bearer", the
#: hyphen of "sk-", the colon of "://", the underscore or hyphen of a vendor prefix); keep it in step with them.
_SHAPE_NEEDS = (" ", "\t", "\n", "\r", "\f", "\v", "-", ":", "_")
_BEARER_END = re.compile(r"(?i)bearer\s*\Z")


def joins_safely(left: str, right: str) -> bool:
    """Whether ``left + right`` may be written in two pieces, each redacted on its own, and mask what
    :func:`redact_content` of the whole would: no registered key and no credential shape can span the joint.

    That holds when no registered key spans it and either the joint is at a character no credential holds
    (a quote, a backslash, whitespace not after "bearer") or the whole text has none of the characters every
    credential shape needs (a base64 run). Anything else is False (the text is then written whole).
    """
    if not left or not right:
        return True
    if left[-1] in _BREAKS or right[0] in _BREAKS:
        if _BEARER_END.search(left[-64:]) or _BEARER_END.search(left[-64:] + right[:1]):
            return False  # "bearer" + whitespace + token: a match that crosses whitespace
    elif any(c in left or c in right for c in _SHAPE_NEEDS):
        return False  # str's "in" is a fast scan; a regex over a long text would cost more than it saves
    with _LOCK:
        known = [*_KNOWN_SORTED, *_PIECES, *(form for forms, _ in _SHORT for form in forms)]
    return not any(secret in left[1 - len(secret):] + right[: len(secret) - 1] for secret in known)
