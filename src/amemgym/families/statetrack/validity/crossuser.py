"""Memoryless strategies that look across users or at the whole option set instead of one option at a time.

A policy that never reads the conversation can still beat chance if the data has regularities shared by
many users: a word that tends to mark the correct option, an option text that is correct for most users,
a slot the correct option tends to sit in, or a correct option that resembles all the others. Each
strategy here targets one such regularity.

The learned ones are *cross-fitted*: users are split in two halves by a fixed shuffle of their ids (not
by ``--seed``, so the verdict is the same at every seed), a model fitted on one half picks the options of
the other, and vice versa. So no user is ever scored by a model that saw
its own answers, and a high score means the regularity carries over to unseen users, which is exactly
what a trained memoryless policy would exploit.
"""

from __future__ import annotations

import math
import random
import re
import zlib
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize

from ....seeding import derive_seed
from ....textsim import jaccard, tokens, words
from ..data.model import Environment, UserEnv
from .strategies import Pick, Strategy, TextVectors, all_options, matching_options, top_options

#: Hashed feature space of the learned model (collisions only add noise, they cannot fake a leak).
_DIM = 1 << 14
#: L2 penalty of the conditional logit model, on the summed (not averaged) log-likelihood.
_L2 = 1.0

Scores = dict[tuple[str, int], list[float]]
#: Training examples of a fitted model: (user, question) pairs whose correct options it learns from.
Examples = list[tuple[UserEnv, int]]
Fit = Callable[[Examples], Callable[[UserEnv, int], list[float]]]


def _halves(env: Environment) -> tuple[list[UserEnv], list[UserEnv]]:
    users = sorted(env.users, key=lambda u: u.id)
    random.Random(derive_seed("crossfit")).shuffle(users)
    mid = len(users) // 2
    return users[:mid], users[mid:]


def gold_counts(user: UserEnv, q: int) -> list[int]:
    """How many periods each option of question ``q`` is the unique correct one."""
    counts = [0] * len(user.qas[q].answer_choices)
    for p in range(len(user.periods)):
        found = matching_options(user, p, q)
        if len(found) == 1:
            counts[found[0]] += 1
    return counts


def examples(users: list[UserEnv]) -> Examples:
    """Every (user, question) of ``users``."""
    return [(u, q) for u in users for q in range(len(u.qas))]


def _crossfit(env: Environment, fit: Fit) -> Scores:
    """Option scores for every (user, question), each from a model fitted on the other half of the users."""
    a, b = _halves(env)
    out: Scores = {}
    for train, test in ((a, b), (b, a)):
        if not train or not test:
            continue
        score = fit(examples(train))
        for user in test:
            for q in range(len(user.qas)):
                out[(user.id, q)] = score(user, q)
    return out


def picker(scores: Scores) -> Pick:
    """A pick of the best-scored options of each (user, question); a uniform draw where nothing was fitted."""

    def pick(user: UserEnv, period: int, question: int) -> tuple[int, ...]:
        s = scores.get((user.id, question))
        # A single-user environment has nobody to learn from: the strategy falls back to a uniform draw.
        return all_options(user, question) if s is None else top_options(s)

    return pick


# --- cross-user option frequency -------------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(tokens(text))


def _pieces(text: str) -> list[str]:
    # The whole text and each of its sentences: option texts are often built from shared sentences, so a
    # sentence recurs across users more often than a whole option does.
    sentences = [_norm(x) for x in re.split(r"(?<=[.!?])\s+", text) if _norm(x)]
    return [_norm(text)] + (sentences if len(sentences) > 1 else [])


def fit_frequency(train: Examples) -> Callable[[UserEnv, int], list[float]]:
    """Per option text and per sentence: periods it was correct and periods it was offered, pooled."""
    right: dict[str, int] = defaultdict(int)
    shown: dict[str, int] = defaultdict(int)
    for user, q in train:
        qa = user.qas[q]
        for i, c in enumerate(gold_counts(user, q)):
            for key in _pieces(qa.answer_choices[i].answer):
                right[key] += c
                shown[key] += len(user.periods)

    def score(user: UserEnv, q: int) -> list[float]:
        choices = user.qas[q].answer_choices
        prior = 1 / len(choices)
        # Shrunk towards chance with the weight of one user's periods, so a text seen once decides nothing.
        k = len(user.periods)
        out = []
        for c in choices:
            rates = [(right[key] + k * prior) / (shown[key] + k) for key in _pieces(c.answer)]
            out.append(sum(rates) / len(rates))
        return out

    return score


# --- wording tell (the word, word pair or mark that most often marks the correct option) -----------------


#: A character outside words other than a plain space (punctuation, a symbol or emoji, an unusual or invisible
#: space), a run of plain spaces, or a space opening or closing the text. An option marked by a "!" or a
#: no-break space is as marked as by a word.
_MARK = re.compile(r"[^\w ]|_| {2,}|^ | $")


def _marker_features(text: str) -> set[str]:
    toks = tokens(text)
    marks = {f"mark:{c}" for c in _MARK.findall(text)}
    # The text cut at each plain space, as written: a capital ("Sure" where the others say "sure") tells as a
    # word does, and ``tokens`` folds it.
    pieces = {f"as:{x}" for x in text.split(" ")}
    return set(toks) | {f"{x} {y}" for x, y in zip(toks, toks[1:], strict=False)} | marks | pieces


def shape_features(user: UserEnv, q: int) -> list[set[str]]:
    """Per option: its words and word pairs plus its slot and length rank from either end."""
    texts = [c.answer for c in user.qas[q].answer_choices]
    n = len(texts)
    lengths = sorted(len(t) for t in texts)
    out = []
    for i, t in enumerate(texts):
        rank = lengths.index(len(t))
        out.append(_marker_features(t) | {f"@pos:{i}", f"@rpos:{n - 1 - i}", f"@len:{rank}", f"@rlen:{n - 1 - rank}"})
    return out


def text_features(user: UserEnv, q: int) -> list[set[str]]:
    """Per option: its words and word pairs."""
    return [_marker_features(c.answer) for c in user.qas[q].answer_choices]


def fit_markers(train: Examples, features: Callable[[UserEnv, int], list[set[str]]] = text_features,
                gold: Callable[[UserEnv, int], list[int]] | None = None) -> Callable[[UserEnv, int], list[float]]:
    """The feature that most often marks the correct option in ``train``, as a per-option z-score.

    Per feature, only where it tells options apart (in some options of a question, not all): how often
    the correct option has it, against how often a random pick would. An option scores its most telling
    feature's z-score, so one marker word is not drowned by the dozens of ordinary words around it.

    Args:
        train: the (user, question) pairs to learn from.
        features: each option's features.
        gold: how many periods each option is correct (default: every period).
    """
    counts_of = gold or gold_counts
    observed: dict[str, float] = defaultdict(float)
    expected: dict[str, float] = defaultdict(float)
    for user, q in train:
        counts = counts_of(user, q)
        feats = features(user, q)
        n = len(feats)
        holders: dict[str, list[int]] = defaultdict(list)
        for i, fs in enumerate(feats):
            for f in fs:
                holders[f].append(i)
        for f, idx in holders.items():
            if len(idx) < n:
                observed[f] += sum(counts[i] for i in idx)
                expected[f] += sum(counts) * len(idx) / n
    z = {f: (observed[f] - e) / math.sqrt(e + 1.0) for f, e in expected.items()}

    def score(user: UserEnv, q: int) -> list[float]:
        return [max((z.get(f, 0.0) for f in fs), default=0.0) for fs in features(user, q)]

    return score


# --- learned model: conditional logit over hashed text, question-option pairs and position ----------------


def _hash(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) % _DIM


def _option_features(user: UserEnv, q: int) -> list[list[int]]:
    qa = user.qas[q]
    qwords = sorted(words(qa.query))
    lengths = [len(c.answer) for c in qa.answer_choices]
    n = len(lengths)
    rows = []
    for i, c in enumerate(qa.answer_choices):
        toks = tokens(c.answer)
        feats = {f"w:{t}" for t in toks} | {f"b:{x} {y}" for x, y in zip(toks, toks[1:], strict=False)}
        feats |= {f"q:{a}|{b}" for a in qwords for b in set(toks)}
        rank = sorted(lengths).index(lengths[i])
        feats |= {f"pos:{i}", f"rpos:{n - 1 - i}", f"lenrank:{rank}", f"rlenrank:{n - 1 - rank}"}
        rows.append(sorted({_hash(f) for f in feats}))
    return rows


def _fit_logit(train: Examples) -> Callable[[UserEnv, int], list[float]]:
    """Fit a softmax over each question's options (shared weights) to how often each option was correct."""
    feat_idx: list[int] = []
    row_of_feat: list[int] = []
    y: list[float] = []
    group_start: list[int] = []
    group_n: list[float] = []
    row = 0
    for user, q in train:
        counts = gold_counts(user, q)
        if not sum(counts):
            continue
        group_start.append(row)
        group_n.append(float(sum(counts)))
        for feats, c in zip(_option_features(user, q), counts, strict=True):
            feat_idx += feats
            row_of_feat += [row] * len(feats)
            y.append(float(c))
            row += 1
    if not group_start:
        return lambda user, q: [0.0] * len(user.qas[q].answer_choices)
    # Only features seen in training can get a weight: optimise over those (far fewer than the hash space).
    seen, fi = np.unique(np.asarray(feat_idx), return_inverse=True)
    dim = len(seen)
    rf = np.asarray(row_of_feat)
    ys, starts, ns = np.asarray(y), np.asarray(group_start), np.asarray(group_n)
    sizes = np.diff(np.append(starts, row))
    group_of_row = np.repeat(np.arange(len(starts)), sizes)

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = np.bincount(rf, weights=w[fi], minlength=row)
        top = np.maximum.reduceat(s, starts)
        e = np.exp(s - top[group_of_row])
        z = np.add.reduceat(e, starts)
        nll = float(np.sum(ns * (np.log(z) + top)) - ys @ s)
        g_row = ns[group_of_row] * e / z[group_of_row] - ys
        grad = np.bincount(fi, weights=g_row[rf], minlength=dim)
        return nll + 0.5 * _L2 * float(w @ w), grad + _L2 * w

    # Conjugate gradient rather than L-BFGS-B: the latter's BLAS threads spin on a busy machine and made
    # validation of v1.base several times slower for no better fit.
    fitted = minimize(objective, np.zeros(dim), jac=True, method="CG", options={"maxiter": 100}).x
    w = np.zeros(_DIM)
    w[seen] = fitted

    def score(user: UserEnv, q: int) -> list[float]:
        return [float(w[np.asarray(f, dtype=int)].sum()) if f else 0.0 for f in _option_features(user, q)]

    return score


# --- option centrality -------------------------------------------------------------------------------------


def _centrality(values: list[list[float]]) -> list[float]:
    n = len(values)
    return [sum(values[i][j] for j in range(n) if j != i) / max(1, n - 1) for i in range(n)]


def _option_strategies(vectors: TextVectors, max_options: int) -> list[Strategy]:
    def lexical(user: UserEnv, q: int) -> list[float]:
        ws = [words(c.answer) for c in user.qas[q].answer_choices]
        return _centrality([[jaccard(a, b) for b in ws] for a in ws])

    def embedded(user: UserEnv, q: int) -> list[float]:
        vs = [vectors.vector(c.answer) for c in user.qas[q].answer_choices]
        return _centrality([[float(a @ b) for b in vs] for a in vs])

    def by(fn: Callable[[UserEnv, int], list[float]]) -> Pick:
        return lambda user, period, question: top_options(fn(user, question))

    def slot(k: int) -> Pick:
        def pick(user: UserEnv, period: int, question: int) -> tuple[int, ...]:
            # Questions with fewer options have no slot k: a uniform draw keeps the strategy at chance there.
            return (k,) if k < len(user.qas[question].answer_choices) else all_options(user, question)

        return pick

    out = [Strategy(f"position_{k + 1}", "options", f"always option {k + 1} (a favoured middle slot)", slot(k))
           for k in range(1, max_options - 1)]
    return out + [
        Strategy("centrality_overlap", "options", "the option sharing the most words with the other options",
                 by(lexical)),
        Strategy("centrality_embedding", "options", "the option closest (cosine) to the other options",
                 by(embedded)),
    ]


def option_strategies(env: Environment, vectors: TextVectors) -> list[Strategy]:
    """Favoured middle slots and option centrality (fixed strategies that look at the whole option set)."""
    max_options = max((len(qa.answer_choices) for u in env.users for qa in u.qas), default=0)
    return _option_strategies(vectors, max_options)


def _correct_at(period: int) -> Callable[[UserEnv, int], list[int]]:
    def gold(user: UserEnv, q: int) -> list[int]:
        found = matching_options(user, period, q) if period < len(user.periods) else []
        return [int(len(found) == 1 and i == found[0]) for i in range(len(user.qas[q].answer_choices))]

    return gold


def _marker_by_period(env: Environment) -> Pick:
    """Markers fitted, per period index, on which options were correct at that period for other users."""
    a, b = _halves(env)
    scores: dict[tuple[str, int, int], list[float]] = {}
    periods = max(len(u.periods) for u in env.users)
    for train, test in ((a, b), (b, a)):
        if not train or not test:
            continue
        for p in range(periods):
            score = fit_markers(examples([u for u in train if len(u.periods) > p]), text_features, _correct_at(p))
            for user in test:
                if len(user.periods) > p:
                    for q in range(len(user.qas)):
                        scores[(user.id, q, p)] = score(user, q)

    def pick(user: UserEnv, period: int, question: int) -> tuple[int, ...]:
        s = scores.get((user.id, question, period))
        return all_options(user, question) if s is None else top_options(s)

    return pick


def cross_user_strategies(env: Environment) -> list[Strategy]:
    """The cross-fitted learned strategies for ``env`` (fitted on its users, two halves in turn)."""
    learned: list[tuple[str, str, Fit]] = [
        ("option_frequency", "the option text correct most often for other users (cross-fitted)", fit_frequency),
        ("marker_words", "the word or word pair that most often marks correct options for other users "
                         "(cross-fitted)", fit_markers),
        ("learned_text_model", "a softmax model of question + option words and position fitted on other users "
                               "(cross-fitted)", _fit_logit),
    ]
    out = [Strategy(name, "options", description, picker(_crossfit(env, fit)), "cross-user")
           for name, description, fit in learned]
    # A tell can mean something different at each period index: this learner is conditioned on it.
    out.append(Strategy("marker_words_by_period", "options", "the word or word pair that marks the option correct "
                        "at this period index for other users (cross-fitted, one model per period)",
                        _marker_by_period(env), "cross-user"))
    return out


def duplicate_options(env: Environment, limit: int = 50) -> tuple[int, list[dict[str, object]]]:
    """Questions offering the same option text twice (case and spacing ignored): count and the first ``limit``."""
    found: list[dict[str, object]] = []
    total = 0
    for user in env.users:
        for q, qa in enumerate(user.qas):
            seen: dict[str, int] = {}
            for i, c in enumerate(qa.answer_choices):
                # Only what an agent cannot see apart is ignored: a symbol or a mark is no noise here.
                key = " ".join(c.answer.casefold().split())
                if key in seen:
                    total += 1
                    if len(found) < limit:
                        found.append({"user": user.id, "question": q, "options": [seen[key], i],
                                      "text": c.answer[:120]})
                else:
                    seen[key] = i
    return total, found
