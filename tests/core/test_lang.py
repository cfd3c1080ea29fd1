"""The language catalogues (flower_core/lang/): complete, consistent, the seed's kept verbatim, chosen per run.

The real-stack half (tests/core/test_lang_real_stack.py) checks what reaches the model through the CLI.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from flower_core import HumanChannel, roles, starter_flow
from flower_core.human import records, texts
from flower_core.human.ask import Ask, check_question
from flower_core.human.tools import inbox_reply
from flower_core.lang import SEED, LanguageError, available, catalogue
from flower_core.workbench import Workbench

CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_every_language_has_the_seeds_keys_and_placeholders() -> None:
    seed = catalogue(SEED)
    assert set(available()) >= {"en", "zh"}
    for code in available():
        other = catalogue(code)
        assert set(other.texts) == set(seed.texts), code
        for key, text in seed.texts.items():
            assert _fields(other[key]) == _fields(text), (code, key)
            assert other[key].strip(), (code, key)


def test_english_has_no_chinese_and_the_seed_is_the_default() -> None:
    assert not [k for k, v in catalogue("en").texts.items() if CJK.search(v)]
    assert catalogue() is catalogue("zh") and catalogue(" EN ") is catalogue("en")
    with pytest.raises(LanguageError, match="choose from en, zh"):
        catalogue("fr")


def test_the_old_names_are_still_the_seeds_texts() -> None:
    zh = catalogue("zh")
    assert texts.TIMEOUT == zh["ask.timeout"] and texts.TIMEOUT.startswith("无人应答。")
    assert texts.INBOX_EMPTY == "收件箱是空的:人没有新的话要说。继续手上的工作。"
    assert roles.CLARIFIER_RULES == zh["role.clarifier"] and "(未知与假设)" in roles.CLARIFIER_RULES


def test_a_channel_speaks_its_language_and_two_channels_may_differ() -> None:
    seed, en = HumanChannel(), HumanChannel(language="en")
    assert seed.timeout_text == texts.TIMEOUT and seed.declined_text == texts.DECLINED
    assert en.timeout_text == catalogue("en")["ask.timeout"] and not CJK.search(en.over_budget_text)
    assert HumanChannel(language="en", timeout_text="custom").timeout_text == "custom"  # an explicit text wins
    assert inbox_reply([], en.lang) == catalogue("en")["inbox.empty"] and inbox_reply([]) == texts.INBOX_EMPTY
    assert not CJK.search(check_question("", None, en.lang)[2] + check_question("q", ["a", "a"], en.lang)[2])
    asked = Ask(id="q1", question="Which?", options=["a", "b"], answer="a")
    log = records.transcript([asked], en.lang) + records.transcript([], en.lang)
    assert "**Q:** Which?" in log and not CJK.search(log)
    assert "**问:** Which?" in records.transcript([asked])


def test_the_starter_names_its_notes_and_rules_in_the_runs_language(tmp_path: Path) -> None:
    en = starter_flow("x", workspace=tmp_path / "a", run_dir=tmp_path / "ra", language="en")
    assert isinstance(en.workbench, Workbench)
    assert (en.workbench.brief.name, en.workbench.goal.name, en.workbench.qa_log.name) == (
        "brief.md", "goal.md", "qa-log.md")
    assert en.channel.lang.code == "en" and en.channel.log_path == en.workbench.qa_log
    prompts = [s.spec.system_prompt for s in en.steps[:2]] + [en.workbench.prompt_block()]
    assert not [p for p in prompts if CJK.search(p)]
    seed = starter_flow("x", workspace=tmp_path / "b", run_dir=tmp_path / "rb")
    assert seed.workbench.brief.name == "需求.md" and seed.workbench.handoff_prefix == "交接-"
    assert seed.steps[0].spec.system_prompt.startswith(roles.CLARIFIER_RULES)
    named = starter_flow("x", workspace=tmp_path / "c", run_dir=tmp_path / "rc", language="en", brief_name="b.md")
    assert named.workbench.brief.name == "b.md"  # a name the caller gives wins over the language's


def test_a_run_plan_carries_its_language_across_processes(tmp_path: Path) -> None:
    from adapters.transport.plan import RunPlan

    plan = RunPlan("t", tmp_path, tmp_path / "runs", language="zh")
    assert RunPlan.from_json(plan.to_json()).language == "zh"
    older = plan.to_json().replace(', "language": "zh"', "")  # a plan kept before the setting existed
    assert "language" not in older and RunPlan.from_json(older).language == "en"
