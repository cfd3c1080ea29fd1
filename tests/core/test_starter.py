"""starter_flow over the shipped demo scenario: clarify -> goal -> work (judged), all offline."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from flower_core.starter import CLARIFY, GOAL, WORK, JudgeGate, starter_flow
from flower_core.workbench import Workbench
from tests.support.workflow_support import REPO, Events, Steps, make_runtime

# The seed's minimal example, as written there (only the package name differs: flower -> flower_core).
SEED_EXAMPLE = '''
import asyncio

from flower_core import Event, HumanChannel, Runtime, starter_flow


def sink(ev: Event) -> None:
    """Renderiza o Event na sua própria UI — é a única coisa que precisa ser trocada."""
    if ev.kind == "step":
        print(f"\\n=== {ev.text} ({ev.payload['index']}/{ev.payload['total']}) ===")
    elif ev.kind == "text" and not ev.payload.get("subagent"):
        print(ev.text)
    elif ev.kind == "tool_call":
        print(f"  [{ev.tool}] {ev.text}")
    elif ev.kind == "handoff":
        print(f"  ~ 换代/{ev.payload.get('phase')}: {ev.text}")
    elif ev.kind == "retry":
        print(f"  ~ 重试: {ev.text}")
    elif ev.kind == "ask" and ev.payload.get("kind") == "mail":
        print(f"  ~ 人主动说:{ev.text}")
    # kind == "ask" que não seja mail fica com o answerer abaixo (modo pull)


async def answerer(ch: HumanChannel) -> None:
    """Busca perguntas em modo pull. Ao migrar para Web / HTTP, esta corrotina é o outro ponto a mudar."""
    while True:
        ask = await ch.next_ask()           # sem timeout, espera indefinidamente
        if ask is None:
            continue
        print(f"\\n?? {ask.question} 选项={ask.options}")
        ch.answer(ask.id, "按你的判断来")     # ou ch.decline(ask.id, "先跳过")


async def main() -> None:
    wf = starter_flow("帮我做一个 X", workspace=".", run_dir="runs", timeout_s=60)
    # O Runtime usa o workbench que o próprio workflow criou — não monte outro
    rt = Runtime(workspace=".", run_dir="runs", workbench=wf.workbench)
    task = asyncio.create_task(answerer(wf.channel))
    try:
        ctx = await wf.run(rt, on_event=sink)
    finally:
        task.cancel()
        rt.close()                          # fecha a conexão SQLite
    print(rt.total_cost(), ctx.get("_failed_at"))


asyncio.run(main())
'''


async def answer_all(channel: Any, text: str, mail: str = "") -> None:
    while True:
        ask = await channel.next_ask()
        if ask is not None:
            if mail:  # said while the brief is still being written, which later overwrites the file
                channel.send(mail)
                mail = ""
            channel.answer(ask.id, text)


async def test_starter_flow_plays_the_demo_to_a_pass(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory("demo")
    wf = starter_flow("write a greeting note", workspace=tmp_path / "ws", run_dir=tmp_path / "runs", timeout_s=30)
    wb = wf.workbench
    assert isinstance(wb, Workbench) and wf.channel.log_path == wb.qa_log and wf.channel.amend_path == wb.brief
    rt = make_runtime(tmp_path, md, cli_home, workbench=wb)
    steps, events = Steps(), Events()
    answering = asyncio.create_task(answer_all(wf.channel, "Olá", mail="also sign it with a flower"))
    try:
        ctx = await wf.run(rt, on_event=events, on_step=steps)
    finally:
        answering.cancel()
        rt.close()
    assert ctx.get("_failed_at") is None and steps.ok() == {CLARIFY: True, GOAL: True, WORK: True}
    assert [(n, p["index"], p["total"]) for n, p in events.steps()] == [(CLARIFY, 1, 3), (GOAL, 2, 3), (WORK, 3, 3)]
    assert wf.channel.on_event is events  # wired by run() because it had none
    assert "## Acceptance criteria" in wb.brief.read_text(encoding="utf-8") == ctx[CLARIFY]
    assert "also sign it with a flower" in ctx[CLARIFY]  # mail during clarify survives the brief's rewrite
    assert "## Checklist" in wb.goal.read_text(encoding="utf-8") == ctx[GOAL]
    qa = wb.qa_log.read_text(encoding="utf-8")
    assert "Which greeting should the note use?" in qa and "Olá" in qa
    assert "You answered: Olá" in steps.seen[0][1].text
    assert (rt.workspace / "notes.md").read_text(encoding="utf-8").startswith("Hello")
    gate = wf.steps[-1].gate
    assert isinstance(gate, JudgeGate) and [v.passed for v in gate.verdicts] == [True]
    convs = [r.conversation for r in md.model_requests()]
    assert convs.count("worker") == 4 and convs[-2:] == ["judge", "judge"]
    assert "write a greeting note" in md.model_requests("clarify")[0].first_user_text
    inbox = [e for e in events.events if e.kind == "tool_call" and e.tool == "mcp__human__inbox"]
    assert inbox and inbox[0].payload.get("subagent")  # the worker subagent reached the human's inbox


async def test_waking_appends_the_remark_and_sets_the_goal_again(double_factory: Any, cli_home: Path,
                                                                  tmp_path: Path) -> None:
    md = await double_factory("demo")
    wb = Workbench(tmp_path / "ws").ensure()
    wb.brief.write_text("## Goal\nA note.\n## Acceptance criteria\n- notes.md exists\n## Boundaries\n- nothing else\n"
                        "## Unknowns and assumptions\n- none\n", encoding="utf-8")
    wb.goal.write_text("## Goal\nOld goal.\n## Checklist\n- old check\n", encoding="utf-8")
    wf = starter_flow("also sign it", workspace=tmp_path / "ws", run_dir=tmp_path / "runs", timeout_s=0)
    assert "also sign it" in wb.brief.read_text(encoding="utf-8")  # amended before anything runs
    rt = make_runtime(tmp_path, md, cli_home, workbench=wf.workbench)
    events = Events()
    try:
        ctx = await wf.run(rt, on_event=events)
    finally:
        rt.close()
    assert ctx.get("_failed_at") is None
    assert [n for n, _ in events.steps()] == [GOAL, WORK]  # clarify skipped: the brief was frozen
    assert md.model_requests("clarify") == []
    assert "old check" not in wb.goal.read_text(encoding="utf-8")  # derived again from the amended brief
    assert "also sign it" in md.model_requests("goal")[0].first_user_text
    assert "also sign it" in md.model_requests("coordinator")[0].first_user_text


def test_starter_flow_needs_a_task_or_a_brief(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        starter_flow("  ", workspace=tmp_path / "ws", run_dir=tmp_path / "runs")
    wf = starter_flow("x", workspace=tmp_path / "ws", run_dir=tmp_path / "runs", clarify_only=True,
                      home=tmp_path / "desk", brief_name="brief.md", qa_name="qa.md")
    assert [s.name for s in wf.steps] == [CLARIFY]
    assert wf.workbench.brief == (tmp_path / "desk" / "notes" / "brief.md").resolve()
    assert wf.channel.log_path == (tmp_path / "desk" / "notes" / "qa.md").resolve()
    assert wf.steps[0].spec.add_dirs == [str((tmp_path / "desk").resolve())]  # a desk outside is reachable
    assert [s.name for s in starter_flow("x", workspace=tmp_path / "w2", goal=False).steps] == [CLARIFY, WORK]


def test_workbench_paths(tmp_path: Path) -> None:
    wb = Workbench(tmp_path / "ws")
    root = (tmp_path / "ws" / ".flower").resolve()
    assert (wb.root, wb.notes, wb.artifacts, wb.scripts) == (root, root / "notes", root / "artifacts",
                                                              root / "scripts")
    assert (wb.brief.name, wb.goal.name, wb.qa_log.name) == ("需求.md", "目标.md", "问答记录.md")
    assert not wb.external and wb.show(wb.brief) == ".flower/notes/需求.md"
    (wb.scripts).mkdir(parents=True)
    (wb.scripts / "count.py").write_text("#!/usr/bin/env python\n# desc: count the words\n", encoding="utf-8")
    index = wb.refresh()
    assert wb.notes.is_dir() and wb.artifacts.is_dir() and "count the words" in index
    assert wb.index_path.read_text(encoding="utf-8") == index
    away = Workbench(tmp_path / "ws", home=tmp_path / "desk")
    assert away.external and away.show(away.brief) == str((tmp_path / "desk" / "notes" / "需求.md").resolve())


async def test_the_seed_example_runs_as_written(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory("demo")
    (tmp_path / "example.py").write_text(SEED_EXAMPLE, encoding="utf-8")
    env = {**os.environ, **md.env(cli_home), "PYTHONPATH": str(REPO)}  # the example reads the process env
    proc = await asyncio.create_subprocess_exec(sys.executable, "example.py", cwd=tmp_path, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out_b, err_b = await asyncio.wait_for(proc.communicate(), timeout=90)
    out = out_b.decode()
    assert proc.returncode == 0, err_b.decode()[-2000:]
    for line in (f"=== {CLARIFY} (1/3) ===", f"=== {GOAL} (2/3) ===", f"=== {WORK} (3/3) ===",  # the original's
                 "?? Which greeting should the note use? 选项=['Hello', 'Olá', '안녕하세요']",
                 "You answered: 按你的判断来. Writing the brief now.", "  [Agent] write the note"):
        assert line in out
    cost, failed = out.strip().splitlines()[-1].split()
    assert float(cost) > 0 and failed == "None"
    assert (tmp_path / ".flower" / "notes" / "需求.md").is_file() and (tmp_path / "runs" / "manifest.json").is_file()


def test_steps_carry_the_original_names_unless_the_caller_names_them(tmp_path: Path) -> None:
    from adapters.transport.plan import BOT_STEPS

    assert [s.name for s in starter_flow("x", workspace=tmp_path / "a").steps] == ["确认需求", "设定目标", "干活"]
    named = starter_flow("x", workspace=tmp_path / "b", step_names=BOT_STEPS)
    assert [s.name for s in named.steps] == ["clarify", "goal", "work"]
    assert named.steps[-1].gate.step == "work" and named.steps[-1].gate.goal_key == "goal"
