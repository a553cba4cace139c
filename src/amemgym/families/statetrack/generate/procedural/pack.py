"""The shape of a content pack: life domains, their state variables, phrasings and advice questions.

Packs are data files (see :mod:`.packs` for loading); this module holds the
frozen records they load into and :func:`pack_problems`, the rules a schema cannot express (counts,
keys, lengths, leaks).

Writing conventions every phrasing and clause follows (the composer relies on them):

- A **phrasing** is a first-person clause in the present tense that implies one value through a
  situation, starts in lower case (except for "I") and has no final punctuation, so it reads both on
  its own and after a change lead-in ("quick update: <phrasing>"). It mentions nothing that another
  variable of the pack describes.
- A **clause** is one complete advice sentence for one value of one variable within one question. The
  clauses of a variable within a question have similar length and structure, and use vocabulary that
  does not appear in that variable's phrasings, so an option can only be matched to a conversation by
  understanding it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations, product

_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@dataclass(frozen=True)
class Value:
    """One mutually exclusive value of a variable and the situations that imply it."""

    name: str
    phrasings: tuple[str, ...]


@dataclass(frozen=True)
class Variable:
    """A state variable: a self-explanatory snake_case name and its values, in a fixed order."""

    name: str
    values: tuple[Value, ...]

    def value(self, name: str) -> Value:
        """The value called ``name``.

        Raises:
            KeyError: if the variable has no such value.
        """
        for v in self.values:
            if v.name == name:
                return v
        raise KeyError(f"{self.name} has no value {name!r}")

    @property
    def value_names(self) -> tuple[str, ...]:
        """The names of the values, in pack order."""
        return tuple(v.name for v in self.values)


@dataclass(frozen=True)
class Question:
    """An advice question and, per variable it depends on, one advice sentence per value.

    ``variables`` is the order in which the clauses appear in an answer; a user's question over
    fewer variables keeps this order.
    """

    key: str
    query: str
    variables: tuple[str, ...]
    clauses: dict[str, dict[str, str]]

    def answer(self, variables: tuple[str, ...] | list[str], combination: tuple[str, ...] | list[str]) -> str:
        """The advice text for ``combination`` (one value per entry of ``variables``)."""
        return " ".join(self.clauses[var][val] for var, val in zip(variables, combination, strict=True))


@dataclass(frozen=True)
class Domain:
    """A life domain: variables, questions over them, and the surface text used around them."""

    name: str
    label: str
    variables: tuple[Variable, ...]
    questions: tuple[Question, ...]
    requests: tuple[str, ...]
    event_titles: tuple[str, ...]
    needs_job: bool = False
    sha256: str = field(default="", compare=False)

    def variable(self, name: str) -> Variable:
        """The variable called ``name``.

        Raises:
            KeyError: if the domain has no such variable.
        """
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(f"domain {self.name} has no variable {name!r}")


def pack_problems(domains: tuple[Domain, ...], max_length_ratio: float = 1.35) -> list[str]:
    """Every structural problem of a pack, as ``<where>: <what>`` strings (empty when the pack is sound).

    Checks names, counts (4 values, >= 3 phrasings, >= 1 request), that no phrasing is shared by two
    values, that each question's clauses cover every value of its variables, that answer lengths of a
    question stay within ``max_length_ratio`` over every combination, and that no clause quotes a word
    that only its own value's name contains.
    """
    problems: list[str] = []
    seen_vars: set[str] = set()
    seen_questions: set[str] = set()
    for dom in domains:
        at = f"domain {dom.name}"
        if not dom.requests or not dom.event_titles:
            problems.append(f"{at}: needs requests and event titles")
        for variable in dom.variables:
            vat = f"{at}.{variable.name}"
            if not _NAME.match(variable.name) or variable.name in seen_vars:
                problems.append(f"{vat}: bad or duplicate variable name")
            seen_vars.add(variable.name)
            if len(variable.values) != 4:
                problems.append(f"{vat}: expected 4 values, got {len(variable.values)}")
            owner: dict[str, str] = {}
            for value in variable.values:
                if not _NAME.match(value.name):
                    problems.append(f"{vat}.{value.name}: bad value name")
                if len(value.phrasings) < 3:
                    problems.append(f"{vat}.{value.name}: needs at least 3 phrasings")
                for text in value.phrasings:
                    starts_upper = text[0].isupper() and text[:2] not in ("I ", "I'")
                    if text != text.strip() or text.endswith((".", "!", "?")) or starts_upper:
                        problems.append(f"{vat}.{value.name}: phrasing not in clause form: {text!r}")
                    if owner.setdefault(text, value.name) != value.name:
                        problems.append(f"{vat}: phrasing shared by {owner[text]} and {value.name}: {text!r}")
        for q in dom.questions:
            problems.extend(_question_problems(dom, q, seen_questions, max_length_ratio))
        problems.extend(_lexical_leaks(dom))
    return problems


def _lexical_leaks(dom: Domain) -> list[str]:
    # A clause word that also occurs in some phrasing of the same variable would let a bag-of-words
    # match between option and conversation stand in for understanding; words every clause of the
    # question-variable shares add the same to every option and carry no signal.
    problems: list[str] = []
    names = {v.name for v in dom.variables}
    for q in dom.questions:
        for var_name in q.variables:
            if var_name not in names:
                continue  # reported by _question_problems
            variable = dom.variable(var_name)
            spoken = set().union(*(content_stems(t) for v in variable.values for t in v.phrasings))
            per_value = {val: content_stems(c) for val, c in q.clauses[var_name].items()}
            shared = set.intersection(*per_value.values()) if per_value else set()
            for val, stems in per_value.items():
                leak = (stems - shared) & spoken
                if leak:
                    problems.append(f"domain {dom.name}.question {q.key}.{var_name}.{val}: "
                                    f"clause reuses phrasing words {sorted(leak)}")
    return problems


def _question_problems(dom: Domain, q: Question, seen: set[str], max_ratio: float) -> list[str]:
    at = f"domain {dom.name}.question {q.key}"
    problems: list[str] = []
    if q.key in seen or not _NAME.match(q.key):
        problems.append(f"{at}: bad or duplicate key")
    seen.add(q.key)
    if not q.query.endswith("?"):
        problems.append(f"{at}: query should be a question")
    names = {v.name for v in dom.variables}
    for var_name in q.variables:
        if var_name not in names:
            problems.append(f"{at}: unknown variable {var_name}")
            return problems
        variable = dom.variable(var_name)
        if set(q.clauses[var_name]) != set(variable.value_names):
            unknown = sorted(set(q.clauses[var_name]) - set(variable.value_names))
            missing = sorted(set(variable.value_names) - set(q.clauses[var_name]))
            problems.append(f"{at}.{var_name}: clauses must cover exactly {list(variable.value_names)} "
                            f"(unknown {unknown}, missing {missing})")
            return problems
        own_words = {v: set(v.split("_")) for v in variable.value_names}
        for value, clause in q.clauses[var_name].items():
            others = set().union(*(w for k, w in own_words.items() if k != value))
            unique = {w for w in own_words[value] - others if len(w) > 3 and w not in STOPWORDS}
            quoted = unique & set(_words(clause))
            if quoted:
                problems.append(f"{at}.{var_name}.{value}: clause quotes the value name ({sorted(quoted)})")
            if not clause.endswith(".") or not clause[0].isupper():
                problems.append(f"{at}.{var_name}.{value}: clause must be one full sentence")
    # A user may be asked the question over any subset of its variables, so every subset must pass.
    for size in range(1, len(q.variables) + 1):
        for subset in combinations(q.variables, size):
            lengths = [len(q.answer(subset, combo)) for combo in product(*(q.clauses[v] for v in subset))]
            if max(lengths) / min(lengths) >= max_ratio:
                problems.append(
                    f"{at}: answers over {list(subset)} range {min(lengths)}..{max(lengths)} chars "
                    f"(ratio >= {max_ratio})"
                )
    return problems


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


STOPWORDS = frozenset(
    """a about after again all also am an and any are as at be because been before being both but by
    can could did do does doing don down during each even every few for from get gets got had has have
    having he her here hers him his how i if in into is it its just keep let like made make many may me
    more most much my no nor not now of off on once one only or other our out over own per same she so
    some such than that the their them then there these they this those through to too two under until
    up us very was we were what when where which while who whom why will with would you your yours
    well way ways things thing something still really around every much use take cook make work week need
    want time day days new long big need needs set since right anything anyone without start look little
    stay plan open finish nothing free whole small else everything someone ask know pick check feel first
    soon bit hard toward left back people away three ten""".split()
)


def stem(word: str) -> str:
    """A crude stem (lower case, common English suffixes removed) for leak checks between texts."""
    w = word.lower()
    for suffix in ("ing", "ed", "es", "s", "ly", "er"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    return w


def content_stems(text: str) -> set[str]:
    """The stems of the content words of ``text`` (stopwords and words under 3 letters dropped)."""
    stems = {stem(w) for w in _words(text) if len(w) >= 3 and w not in STOPWORDS}
    return stems - STOPWORDS
