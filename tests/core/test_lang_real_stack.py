"""What the model reads, through the real SDK + CLI and the model double, in the bot's language.

A bot-like run: the hub's run factory (adapters' default_factory, the starter flow with the bot's step
names) built from a RunPlan, unattended (the question times out), over the shipped demo scenario. In
English no request the double receives carries Chinese in any text we sent (the user turns, the tool
results, the system prompt); in "zh" the seed's timeout and empty-inbox texts arrive verbatim.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from adapters.transport.plan import RunPlan, default_factory
from flower_core.devmodel import ModelDouble
from flower_core.human import texts
from tests.support.workflow_support import make_runtime

CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _ours(body: dict[str, Any]) -> list[str]:
    """Every text in a request that did not come from the model: system, user turns, tool results."""
    out: list[str] = []
    system = body.get("system")
    out += [system] if isinstance(system, str) else [b.get("text", "") for b in system or [] if isinstance(b, dict)]
    for msg in body.get("messages") or []:
        if msg.get("role") == "assistant":
            continue  # the double's own lines (its demo answers include other scripts)
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") == "text":
                out.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                out += [inner] if isinstance(inner, str) else [str(b.get("text", "")) for b in inner or []]
    return out


async def _bot_run(md: ModelDouble, cli_home: Path, tmp_path: Path, language: str) -> tuple[Any, Any]:
    plan = RunPlan("write a greeting note", tmp_path / "ws", tmp_path / "runs", timeout_s=0, language=language)
    wf = default_factory(plan)
    rt = make_runtime(tmp_path, md, cli_home, workbench=wf.workbench)
    try:
        ctx = await wf.run(rt)
    finally:
        rt.close()
    return wf, ctx


def _tool_results(md: ModelDouble) -> list[str]:
    found: list[str] = []
    for r in md.model_requests():
        for msg in r.body.get("messages") or []:
            for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    found.append(inner if isinstance(inner, str) else
                                 "".join(str(b.get("text", "")) for b in inner or []))
    return found


async def test_in_english_the_model_reads_no_chinese(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory("demo")
    wf, ctx = await _bot_run(md, cli_home, tmp_path, "en")
    assert ctx.get("_failed_at") is None
    requests = md.model_requests()
    assert {"clarify", "goal", "coordinator", "worker", "judge"} <= {r.conversation for r in requests}
    chinese = [(r.conversation, t[:200]) for r in requests for t in _ours(r.body) if CJK.search(t)]
    assert chinese == []
    results = _tool_results(md)
    assert any(t.startswith("Nobody answered.") for t in results)  # the question timed out, in English
    assert any(t.startswith("The inbox is empty") for t in results)
    notes = sorted(p.name for p in wf.workbench.notes.iterdir() if p.is_file())
    assert notes == ["brief.md", "goal.md", "qa-log.md"]
    assert not CJK.search(wf.workbench.qa_log.read_text(encoding="utf-8"))


async def test_in_chinese_the_seeds_texts_arrive_verbatim(double_factory: Any, cli_home: Path,
                                                           tmp_path: Path) -> None:
    md = await double_factory("demo")
    wf, ctx = await _bot_run(md, cli_home, tmp_path, "zh")
    assert ctx.get("_failed_at") is None
    results = _tool_results(md)
    assert texts.TIMEOUT in results and texts.INBOX_EMPTY in results
    assert wf.workbench.brief.name == "需求.md" and wf.workbench.brief.is_file()
    assert "**问:** Which greeting should the note use?" in wf.workbench.qa_log.read_text(encoding="utf-8")
