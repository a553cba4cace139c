"""The simulator's echo guard and the audit's echo flags read words of every script: a conversation in
Chinese, Japanese, Thai or Hindi whose user turn quotes the assistant back is caught as one in English is."""

from __future__ import annotations

import pytest

from amemgym.families.statetrack.simulate.simulator import echoes_assistant
from amemgym.families.statetrack.validity.sim_audit import degenerate_flags
from amemgym.textsim import shares_run, tokens

REPLIES = {
    "zh": "为了规划您明年春天去京都的家庭旅行，我建议您先确定预算，然后预订靠近车站的酒店，并提前购买火车通票。",
    "ja": ("来年の春に京都へ家族旅行をするなら、まず予算を決めて、"
           "駅の近くのホテルを予約し、早めに鉄道パスを買うのがおすすめです。"),
    "th": ("สำหรับการวางแผนเที่ยวเกียวโตกับครอบครัวใ"
           "นฤดูใบไม้ผลิปีหน้า ผมแนะนำให้กำหนดงบประม"
           "าณก่อนแล้วจองโรงแรมใกล้สถานี"),
    "hi": ("अगले वसंत में अपने परिवार के साथ क्योटो "
           "की यात्रा की योजना बनाने के लिए पहले बजट"
           " तय करें फिर स्टेशन के पास होटल बुक करें"
           " और रेल पास पहले से खरीद लें"),
    "ru": ("Чтобы спланировать семейную поездку в Ки"
           "ото следующей весной, сначала определите"
           " бюджет, затем забронируйте отель рядом "
           "с вокзалом и заранее купите железнодорож"
           "ный проездной."),
}
OWN = {
    "zh": "好的，谢谢。其实我最近换了工作，所以假期可能要改到秋天。",
    "ja": "ありがとう。実は最近仕事を変えたので、休みは秋になりそうです。",
    "th": "ขอบคุณครับ ที่จริงผมเพิ่งเปลี่ยนงาน วันหยุดอาจต้องเลื่อนไปฤดูใบไม้ร่วง",
    "hi": "धन्यवाद असल में मैंने हाल ही में नौकरी बदली है इसलिए छुट्टी शायद पतझड़ में होगी",
    "ru": ("Спасибо. Вообще-то я недавно сменил рабо"
           "ту, так что отпуск, возможно, придётся п"
           "еренести на осень."),
}


@pytest.mark.parametrize("lang", sorted(REPLIES))
def test_a_framed_quote_of_the_reply_is_an_echo_in_any_script(lang: str) -> None:
    reply = REPLIES[lang]
    quoted = f"**{reply}**"
    framed = f"Here is a message for you: {reply} Hope it helps!"
    for turn in (quoted, framed):
        assert echoes_assistant(turn, reply), (lang, turn)
        assert "near_echo" in degenerate_flags(turn, "Can you help me?", reply, []), (lang, turn)
    assert shares_run(framed, reply, 12)


@pytest.mark.parametrize("lang", sorted(REPLIES))
def test_a_users_own_turn_is_not_an_echo_in_any_script(lang: str) -> None:
    assert not echoes_assistant(OWN[lang], REPLIES[lang])
    assert degenerate_flags(OWN[lang], "Can you help me?", REPLIES[lang], []) == []


def test_tokens_keep_ascii_words_as_before_and_split_unspaced_scripts() -> None:
    assert tokens("Plan a TRIP to Kyoto, 2027!") == ["plan", "a", "trip", "to", "kyoto", "2027"]
    assert tokens("京都へ行く") == ["京都", "都へ", "へ行", "行く"]
    assert tokens("Привет, мир") == ["привет", "мир"]
    assert tokens("snake_case") == ["snake", "case"]
