"""A server that echoes the API key on the success path (in its model list and in replies) puts it into no file,
no cache and no console line (issue 30, item 3), whatever form it gives the key; neither does a key riding in
a base URL's query string, or the password of a proxy."""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget.generate import build_episode
from amemgym.redact import MASK, redact_content, register_secret
from amemgym.testing.budget import served_episode
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder

KEY = "plainKEYvalue4242zz"
#: A bearer token that was never configured: caught by its shape.
STRANGER = "Bearer zz9TOKENshapedABC123xyz"
FAST = ["--set", "llm.default.max_retries=1"]


def every_text(*roots: Path) -> str:
    texts = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".sqlite", ".db"):
                with sqlite3.connect(p) as conn:
                    texts.extend(str(row) for row in conn.execute("SELECT * FROM responses"))
            elif p.is_file():
                texts.append(p.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def echoing(body: dict[str, Any]) -> str | dict[str, Any]:
    reply = default_responder(body)
    if isinstance(reply, str) and not reply.lstrip().startswith(("{", "[")):
        return f"{reply} (seen: Authorization: Bearer {KEY}; {STRANGER})"
    return reply


def test_a_statetrack_run_stores_and_prints_no_echoed_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, cache = tmp_path / "run", tmp_path / "cache"
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(cache))
    with FakeEndpoint(responder=echoing, model=f"model-{KEY}") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--set",
                                          f"llm.default.model=model-{KEY}", *FAST])
    assert result.exit_code == 0, result.output
    sessions = "".join(p.read_text() for p in out.rglob("sessions.jsonl"))
    assert "(seen: Authorization: Bearer " + MASK in sessions  # the replies were recorded, masked
    assert (out / "report.html").exists() and any(cache.rglob("*.sqlite"))
    text = every_text(out, cache) + result.output
    assert KEY not in text and "zz9TOKENshapedABC123xyz" not in text


def test_a_budget_run_stores_and_prints_no_echoed_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    episode = build_episode("lite", "films", 0)
    env, respond = served_episode(episode, tmp_path)

    def echo(body: dict[str, Any]) -> str:
        reply = respond(body)
        try:
            call = json.loads(reply)
        except ValueError:
            return reply
        if call.get("tool") == "write":
            call["args"]["text"] += f" Authorization: Bearer {KEY}"
        return json.dumps(call)

    out, cache = tmp_path / "run", tmp_path / "cache"
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(cache))
    with FakeEndpoint(responder=echo, model=f"model-{KEY}") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(out), "--set",
                                          f"llm.default.model=model-{KEY}", "--set", "budget.tools=text", *FAST])
    assert result.exit_code == 0, result.output
    assert MASK in (out / "trace.jsonl").read_text() and MASK in (out / "manifest.json").read_text()
    assert KEY not in every_text(out, cache) + result.output


def test_content_redaction_keeps_prose_and_json_intact() -> None:
    register_secret("quote\"d-secret-value")
    prose = "A basic recipe; the bearer of good news; sk-learning is a library; task-manager"
    assert redact_content(prose) == prose
    doc = json.dumps({"a": "Bearer abcDEF123456789 and quote\"d-secret-value", "u": "http://me:pw@host/v1"})
    cleaned = redact_content(doc)
    assert json.loads(cleaned) == {"a": f"Bearer {MASK} and {MASK}", "u": f"http://{MASK}@host/v1"}


#: A key with every character JSON escapes or a server may write escaped (a quote, a backslash, a slash).
ODD = 'PLANTED"q\\bk/ZZ1234+5678'


def transformed(key: str) -> list[str]:
    """The forms a hostile server echoes ``key`` in, as they reach the client's reply text."""
    raw = key.encode()
    return [key, key.lower(), key.upper(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(),
            base64.b64encode(raw).decode().rstrip("="), quote(key, safe=""),
            json.dumps({"k": key}), json.dumps({"k": key}).replace("/", "\\/"),
            # the base64 of a longer text holding the key, e.g. the whole header: the key's bytes sit at each of
            # the three places of a base64 group
            base64.b64encode(b"Bearer " + raw).decode(),
            base64.urlsafe_b64encode(b"auth: Bearer " + raw + b"\n").decode(),
            base64.b64encode(b"k=" + raw + b"&x=1").decode()]


def planted_base64() -> set[str]:
    """What the base64 of any text holding ``PLANTED`` holds, whatever comes before it."""
    return {base64.b64encode(pad + b"PLANTED").decode()[4 if pad else 0:(len(pad) + 7) // 3 * 4]
            for pad in (b"", b"\0", b"\0\0")}


def test_every_form_of_an_echoed_key_is_masked_and_json_stays_json() -> None:
    register_secret(ODD)
    reply = "seen: " + " | ".join(transformed(ODD))
    stored = json.dumps({"reply": reply, "nested": json.dumps({"reply": reply})})
    cleaned = redact_content(stored)
    decoded = json.loads(cleaned)
    inner = json.loads(decoded["nested"])["reply"]
    for text in (decoded["reply"], inner, redact_content(reply)):
        assert text.count(MASK) == len(transformed(ODD)), text
        assert "PLANTED" not in text.upper() and not any(form in text for form in planted_base64())


def test_a_multi_line_key_is_masked_line_by_line() -> None:
    register_secret("FIRSTlineKEY77\nSECONDlineKEY88")
    for shown in ("Illegal header value b'Bearer FIRSTlineKEY77\\nSECONDlineKEY88'",
                  "FIRSTlineKEY77 and SECONDlineKEY88"):
        assert "lineKEY" not in redact_content(shown)


def test_a_statetrack_run_masks_a_key_echoed_in_other_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def echo(body: dict[str, Any]) -> str | dict[str, Any]:
        reply = default_responder(body)
        if isinstance(reply, str) and not reply.lstrip().startswith(("{", "[")):
            return f"{reply} (seen: {' | '.join(transformed(ODD))})"
        return reply

    out, cache = tmp_path / "run", tmp_path / "cache"
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(cache))
    with FakeEndpoint(responder=echo) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", ODD)
        result = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--set",
                                          "llm.default.model=fake-model", *FAST])
    assert result.exit_code == 0, result.output
    text = every_text(out, cache) + result.output
    assert "(seen: " + MASK in text
    assert "PLANTED" not in text.upper() and "PLANTED%22" not in text
    assert not any(form in text for form in planted_base64())


def test_a_key_in_the_base_urls_query_reaches_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "QUERYkeyNOTshaped93xq"  # not configured and not key-shaped: only its place tells it apart
    out, cache = tmp_path / "run", tmp_path / "cache"
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(cache))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeEndpoint() as ep:
        base = ep.base_url
        url = f"{base}?token={secret}#{secret}"
        result = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1", "--set",
                                          f"llm.default.base_url={url}", "--set", "llm.default.model=fake-model",
                                          *FAST])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["llm"]["default"]["base_url"] == base
    assert secret not in every_text(out, cache) + result.output


def test_a_proxys_password_is_masked_in_every_form(monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.llm.http import Transport
    from amemgym.llm.timeouts import resolve_timeouts

    monkeypatch.setenv("HTTPS_PROXY", "http://me:PROXY%2Fpass77zz@127.0.0.1:9/")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    Transport("https://api.example.test/v1", resolve_timeouts("https://api.example.test/v1", None, None, 5.0), {})
    basic = base64.b64encode(b"me:PROXY/pass77zz").decode()
    echoed = f"Proxy-Authorization: Basic {basic}; user me:PROXY/pass77zz; password PROXY/pass77zz"
    assert "pass77zz" not in redact_content(echoed) and basic not in redact_content(echoed)


@pytest.mark.parametrize(("token", "userinfo"), [("PROXYtok3n9Only77zz", "PROXYtok3n9Only77zz"),
                                                ("PROXYtok3n9Colon88yy", "PROXYtok3n9Colon88yy:")])
def test_a_proxy_token_given_as_the_user_alone_is_masked(token: str, userinfo: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Some proxies take a token as the user name with no password; it is sent as basic auth like a password.
    from amemgym.llm.http import Transport
    from amemgym.llm.timeouts import resolve_timeouts

    monkeypatch.setenv("HTTPS_PROXY", f"http://{userinfo}@127.0.0.1:9/")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    Transport("https://api.example.test/v1", resolve_timeouts("https://api.example.test/v1", None, None, 5.0), {})
    basic = base64.b64encode(f"{token}:".encode()).decode()
    echoed = redact_content(f"Proxy-Authorization: Basic {basic}; user {token}")
    assert token[-8:] not in echoed and basic not in echoed
