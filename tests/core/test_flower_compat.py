"""Code written for the original flower, run on flower_core with only the import line changed.

The examples are the original's documented ones (its API reference's minimal examples and the
seed's interaction example), run as user programs in a subprocess whose environment points the
real SDK + bundled CLI at the model double. The pieces behind them (guards, three-outcome goal
guard, documents) are then driven through the same real stack, in process.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from flower_core import (
    ROUND_KEY,
    VERDICT_KEY,
    AgentSpec,
    Goal,
    HumanChannel,
    Runtime,
    Step,
    Verdict,
    Workflow,
    coordinator,
    goal_step,
    judge,
    with_goal,
    worker,
)
from tests.conftest import scenario_of
from tests.core.test_starter import SEED_EXAMPLE
from tests.support.workflow_support import REPO, Events, make_runtime

ONE_AGENT = '''
import asyncio
from pathlib import Path

from flower_core import AgentSpec, Runtime

spec = AgentSpec(
    name="reader",
    instructions="回答极简,一行以内,不解释不寒暄。",
    allowed_tools=["Read", "Glob", "Grep"],
    max_turns=4,
)


async def main() -> None:
    rt = Runtime(workspace=Path("."), run_dir="runs")
    try:
        r = await rt.run(spec, "读 README.md,一句话说它是干什么的。",
                         on_event=lambda ev: print(ev))
        print(f"ok={r.ok} session={r.session_id} ${r.cost_usd:.4f} {r.duration_s}s")
        print(r.text)
    finally:
        rt.close()


asyncio.run(main())
'''

COORDINATED = '''
import asyncio
from pathlib import Path

from flower_core import Runtime, coordinator, worker


async def main() -> None:
    analyst = worker(
        "分析文件内容:统计、查找、比对。要真读文件、跑命令的活派给它。",
        "你负责在 data/ 下做文本分析。用命令行完成,不要手工估算。",
        tools=["Read", "Write", "Bash", "Glob", "Grep"],
    )
    boss = coordinator(
        "主控",
        "目标:摸清 data/ 下几个文件的规模。做完给一句话结论。",
        {"分析员": analyst},
        max_turns=14,
        max_budget_usd=1.5,
    )

    rt = Runtime(workspace=Path("."), run_dir="runs", workbench=True)
    try:
        r = await rt.run(boss, "统计 data/ 下每个 .txt 的行数和总字符数,告诉我哪个最大。",
                         on_event=lambda ev: None)
        print(f"ok={r.ok} turns={r.num_turns} ${r.cost_usd:.4f}")
        print(r.text)
    finally:
        rt.close()


asyncio.run(main())
'''

OWN_WORKFLOW = '''
import asyncio
from pathlib import Path

from flower_core import AgentSpec, Runtime, Step, Workflow

terse = AgentSpec(
    name="terse",
    instructions="回答极简,一行以内,不解释不寒暄。",
    allowed_tools=["Read", "Glob"],
    max_turns=4,
)


async def main() -> None:
    wf = Workflow([
        Step("取词", terse, "读 seed.txt,只回文件里那个词。"),
        Step("造句", terse, lambda ctx: f"用「{ctx['取词']}」造一个五字短句,只回短句。"),
    ])

    rt = Runtime(workspace=Path("."), run_dir="runs")
    try:
        ctx = await wf.run(rt, on_step=lambda s, r: print(f"{s.name} ok={r.ok} {r.text[:40]!r}"))
    finally:
        rt.close()

    print(ctx["造句"])
    print(ctx["_sessions"])
    print(ctx.get("_failed_at"))


asyncio.run(main())
'''

GOAL_GUARD = '''
import asyncio
from pathlib import Path

from flower_core import (HumanChannel, Runtime, Step, Workbench, Workflow,
                         coordinator, goal_step, with_goal, worker)


async def main() -> None:
    wb = Workbench(Path.cwd()).ensure()
    ch = HumanChannel(log_path=wb.notes / "问答记录.md", timeout_s=0)
    goal_path = wb.notes / "目标.md"

    coord = coordinator("协调者", "", {
        "coder": worker("写代码与测试。要动手实现的活派给它。",
                        "你负责实现。每改一处就跑一次验证,别攒到最后。"),
    }, channel=ch)

    work = Step("干活", spec=coord, prompt="把 hello.py 写出来,跑 `python hello.py` 要打印 hello。")
    work = with_goal(work, ch, goal_path=goal_path, rounds=3, can_run=True)

    wf = Workflow(
        [goal_step(ch, goal_path=goal_path), work],
        channel=ch,
        workbench=wb,
        context={"确认需求": "## 目标\\n写一个打印 hello 的 python 脚本\\n\\n## 验收标准\\n"
                             "跑 `python hello.py` 输出 hello"},
    )

    rt = Runtime(workspace=Path.cwd(), run_dir="runs", workbench=wb)
    try:
        ctx = await wf.run(rt)
    finally:
        rt.close()

    print(ctx["_goal"])
    print(ctx["_verdict"])
    print(ctx["_goal_rounds"])
    print(ctx.get("_aborted"))


asyncio.run(main())
'''


def conv(name: str, match: str, *turns: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "match": match, "turn": list(turns)}


def agent_call(kind: str, prompt: str) -> dict[str, Any]:
    return {"tool": "Agent", "input": {"description": "one piece", "prompt": prompt, "subagent_type": kind,
                                       "run_in_background": False}}


async def run_example(code: str, md: Any, cli_home: Path, project: Path) -> str:
    """Run ``code`` as a user's program in ``project``; its stdout, after asserting it exited 0."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "example.py").write_text(code, encoding="utf-8")
    home = project.parent / "home"
    home.mkdir(exist_ok=True)  # the Bash tool sources its shell config: keep the machine's out of it
    env = {**os.environ, **md.env(cli_home), "HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(sys.executable, "example.py", cwd=project, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out_b, err_b = await asyncio.wait_for(proc.communicate(), timeout=120)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, err_b.decode()[-3000:]
    return out_b.decode()


async def test_one_agent_one_step_example(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(conv("reader", "README", {"say": "一个给测试用的小项目。"})))
    out = await run_example(ONE_AGENT, md, cli_home, tmp_path / "proj")
    assert "一个给测试用的小项目。" in out.splitlines()
    assert any(line.startswith("ok=True session=") for line in out.splitlines())
    request = md.model_requests("reader")[0]
    assert "回答极简" in str(request.body.get("system"))  # instructions= reached the system prompt


async def test_coordinator_and_worker_example(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        conv("analyst", "分析任务",
             {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "data/b.txt"}}]},
             {"say": "Noting.", "call": [{"tool": "Write", "input": {"file_path": "report.txt",
                                                                      "content": "b.txt is the largest\n"}}]},
             {"say": "结论:b.txt 最大。"}),
        conv("boss", "统计 data/",
             {"say": "Doing it myself first.", "call": [{"tool": "Write", "input": {
                 "file_path": "count.txt", "content": "guess"}}]},
             {"say": "Refused: {last_tool_result}", "call": [agent_call("分析员", "分析任务:统计 data/ 下的 .txt")]},
             {"say": "最大的是 b.txt。"})))
    project = tmp_path / "proj"
    (project / "data").mkdir(parents=True)
    (project / "data" / "a.txt").write_text("a\n", encoding="utf-8")
    (project / "data" / "b.txt").write_text("b\nbb\nbbb\n", encoding="utf-8")
    out = await run_example(COORDINATED, md, cli_home, project)
    assert out.splitlines()[0].startswith("ok=True") and "最大的是 b.txt。" in out
    assert not (project / "count.txt").exists()  # the coordinator's own Write met the wall
    boss = [r.last_tool_result for r in md.model_requests("boss")]
    assert "you do not use Write yourself" in boss[1] and "Agent tool" in boss[1]
    assert "bbb" in md.model_requests("analyst")[1].last_tool_result
    assert (project / "report.txt").is_file()  # the same wall lets the worker (a subagent) write


async def test_own_workflow_example(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(conv("word", "seed.txt", {"say": "花"}),
                                          conv("sentence", "造一个", {"say": "花开满山坡"})))
    out = await run_example(OWN_WORKFLOW, md, cli_home, tmp_path / "proj")
    assert "花开满山坡" in out.splitlines()
    assert "「花」" in md.model_requests("sentence")[0].first_user_text


GOAL_REPLY = "## 目标\n写一个打印 hello 的脚本 hello.py。\n\n## 判定清单\n- 跑 `python hello.py` 输出 hello\n"


def goal_guard_scenario(*verdicts: str) -> Any:
    """goal → work (coordinator + coder) → one judge conversation per round, routed on the round's report."""
    judges = [conv(f"judge{i + 1}", f"汇报:[\\s\\S]*round {i + 1} done", {"say": text})
              for i, text in enumerate(verdicts)]
    return scenario_of(
        *judges,
        conv("coder", "coder task",
             {"say": "Writing.", "call": [{"tool": "Write", "input": {"file_path": "hello.py",
                                                                       "content": "print('hello')\n"}}]},
             {"say": "结论:hello.py 已写好。"}),
        conv("goal", "判定清单", {"say": GOAL_REPLY}),
        conv("work", "hello.py 写出来",
             {"say": "Delegating.", "call": [agent_call("coder", "coder task: write hello.py")]},
             {"say": "round 1 done"}, {"say": "round 2 done: {last_user_text}"}, {"say": "round 3 done"}))


async def test_goal_guard_example(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(goal_guard_scenario("## 结论\n达成\n## 理由\nhello.py 打印 hello\n## 未通过\n无"))
    project = tmp_path / "proj"
    out = await run_example(GOAL_GUARD, md, cli_home, project)
    lines = out.strip().splitlines()
    assert lines[-2:] == ["1", "None"]  # one round, nothing aborted
    assert "Verdict(state='achieved'" in out and "Goal(statement='写一个打印 hello 的脚本 hello.py。'" in out
    assert (project / "hello.py").read_text(encoding="utf-8") == "print('hello')\n"
    frozen = Goal.load(project / ".flower" / "notes" / "目标.md")
    assert frozen is not None and frozen.checks == ["跑 `python hello.py` 输出 hello"]
    judged = md.model_requests("judge1")[0]
    assert "跑 `python hello.py` 输出 hello" in judged.first_user_text  # the judge reads the frozen goal


async def test_seed_example_runs_unchanged(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory("demo")
    out = await run_example(SEED_EXAMPLE, md, cli_home, tmp_path / "proj")
    assert "=== 干活 (3/3) ===" in out and out.strip().splitlines()[-1].split()[1] == "None"


# -- the goal guard's three outcomes, in process --------------------------------------------------

def guarded_flow(tmp_path: Path, channel: HumanChannel) -> tuple[Workflow, Path]:
    goal_path = tmp_path / "ws" / ".flower" / "notes" / "目标.md"
    coord = coordinator("协调者", "", {"coder": worker("writes code", "You implement.")}, channel=channel)
    work = with_goal(Step("干活", coord, "把 hello.py 写出来"), channel, goal_path=goal_path, rounds=3)
    wf = Workflow([goal_step(channel, goal_path=goal_path), work], channel=channel, continuous=False,
                  context={"确认需求": "## 目标\nhello"})
    return wf, goal_path


async def test_not_yet_pushes_back_into_the_same_session_with_what_is_missing(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(goal_guard_scenario("## 结论\n未达成\n## 理由\n没有打印\n## 未通过\n- 输出 hello",
                                                  "## 结论\n达成\n## 理由\n好了\n## 未通过\n无"))
    channel = HumanChannel(timeout_s=0)
    wf, _ = guarded_flow(tmp_path, channel)
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        ctx = await wf.run(rt)
    finally:
        rt.close()
    assert ctx.get("_failed_at") is None and ctx[ROUND_KEY] == 2 and ctx[VERDICT_KEY].achieved
    pushed = md.model_requests("work")[-1]
    assert "输出 hello" in pushed.last_user_text and "not achieved yet" in pushed.last_user_text
    assert "round 1 done" in str(pushed.body["messages"])  # resumed: the rejected round is in its history


async def test_unreachable_asks_the_human_and_an_accept_closes_the_step(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(goal_guard_scenario("## 结论\n无法验证\n## 理由\n这里没有 python\n## 未通过\n- 输出"))
    events = Events()
    channel = HumanChannel(timeout_s=30)
    wf, _ = guarded_flow(tmp_path, channel)

    async def accept() -> None:
        ask = await channel.next_ask(timeout=60)
        assert ask is not None and "这里没有 python" in ask.question
        channel.answer(ask.id, ask.options[0])

    answering = asyncio.create_task(accept())
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        ctx = await wf.run(rt, on_event=events)
        await asyncio.wait_for(answering, 10)
    finally:
        answering.cancel()
        rt.close()
    assert ctx.get("_failed_at") is None and ctx[VERDICT_KEY].unreachable and ctx[ROUND_KEY] == 1
    assert [e.payload["state"] for e in events.events if e.kind == "ask"] == ["asked", "answered"]


async def test_unreachable_with_nobody_there_aborts_without_spending_rounds(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(goal_guard_scenario("## 结论\n无法达成\n## 理由\n缺硬件"))
    channel = HumanChannel(timeout_s=0)
    wf, goal_path = guarded_flow(tmp_path, channel)
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        ctx = await wf.run(rt)
    finally:
        rt.close()
    assert ctx["_failed_at"] == "干活" and ctx[ROUND_KEY] == 1 and "缺硬件" in (wf.aborted or "")
    assert len(md.model_requests("judge1")) == 1 and Goal.load(goal_path) is not None
    assert "round 2 done" not in str([r.body for r in md.model_requests("work")])  # no second round was paid for


# -- the read-only walls through the real CLI -----------------------------------------------------

async def test_judge_without_can_run_is_walled_off_bash_but_can_run_lets_it_through(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    bash = {"say": "Trying.", "call": [{"tool": "Bash", "input": {"command": "echo ran > proof.txt"}}]}
    md = await double_factory(scenario_of(conv("judge", "JUDGE", bash, {"say": "Tool said: {last_tool_result}"})))
    channel = HumanChannel(timeout_s=0)
    (tmp_path / "home").mkdir()
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", resilience=False,
                 env={**md.env(cli_home), "HOME": str(tmp_path / "home")})
    try:
        walled = await rt.run(judge("裁判", channel, max_turns=4), "JUDGE one")
        runner = judge("裁判", channel, can_run=True, max_turns=4)
        runner.permission_mode = "acceptEdits"  # headless "default" refuses a file-writing Bash without an approver
        ran = await rt.run(runner, "JUDGE two")
    finally:
        rt.close()
    assert walled.ok and "裁判 has no Bash" in walled.text and "intentional" in walled.text
    assert ran.ok and "has no Bash" not in ran.text
    assert (rt.workspace / "proof.txt").read_text(encoding="utf-8").strip() == "ran"


def test_plain_agent_spec_takes_the_original_spelling() -> None:
    spec = AgentSpec("reader", "be terse")
    assert spec.system_prompt == spec.instructions == "be terse"
    assert AgentSpec(name="r", instructions="x").system_prompt == "x"
    assert Verdict.parse("## 结论\n未达成\n## 未通过\n- a\n- b").failed == ["a", "b"]


async def test_a_coordinator_may_glance_but_not_work(double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(conv(
        "boss", "GLANCE",
        {"say": "Looking.", "call": [{"tool": "Bash", "input": {"command": "ls -a | sort"}}]},
        {"say": "Saw: {last_tool_result}", "call": [{"tool": "Bash", "input": {"command": "touch made.txt"}}]},
        {"say": "Then: {last_tool_result}"})))
    (tmp_path / "home").mkdir()
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", resilience=False,
                 env={**md.env(cli_home), "HOME": str(tmp_path / "home")})
    try:
        result = await rt.run(coordinator("主控", "", {}, max_turns=5), "GLANCE around")
    finally:
        rt.close()
    glanced, refused = (r.last_tool_result for r in md.model_requests("boss")[1:3])
    assert result.ok and "you do not use" not in glanced and "." in glanced.split()
    assert "you do not use Bash yourself" in refused and not (rt.workspace / "made.txt").exists()


@pytest.mark.parametrize(("cmd", "glance"), [
    ("git status", True), ("ls -la && git diff --stat", True), ("cat a.txt | grep x | wc -l", True),
    ("find . -name '*.py' 2>/dev/null", True), ("", False), ("touch x", False), ("ls > out.txt", False),
    ("echo $(rm -rf /)", False), ("sleep 5 &", False), ("sed -i s/a/b/ f", False), ("find . -delete", False),
    ("git branch -D main", False), ("git reset --hard", False), ("git push --force", False), ("ls | xargs rm", False),
    ("grep source f", True),    ("awk '{system(\"rm x\")}' f", False), ("sort -o f f", False), ("cat a | tee b", False),
])
def test_is_ephemeral_passes_read_only_glances_only(cmd: str, glance: bool) -> None:
    from flower_core import is_ephemeral
    assert is_ephemeral(cmd) is glance


def test_brief_round_trips_and_reports_missing_sections_by_their_chinese_names(tmp_path: Path) -> None:
    from flower_core import Brief
    partial = Brief.parse("**目标**\n一个脚本\n\n验收标准: 跑了输出 hello\n```\n## 边界\n(pasted code)\n")
    assert partial.goal == "一个脚本" and partial.accept == "跑了输出 hello" and not partial.bounds
    assert partial.missing() == ["边界", "未知与假设"] and not partial.complete()
    path = partial.write(tmp_path / "notes" / "需求.md")
    again = Brief.load(path)
    assert again == partial and again is not None and again.path == path  # "(未填)" reads back as empty
    assert Brief.load(tmp_path / "absent.md") is None
    assert "## 边界" not in partial.prompt_block() and "## 目标\n一个脚本" in partial.prompt_block()


@pytest.mark.parametrize(("text", "state"), [
    ("## 结论\n达成\n## 理由\n好", "achieved"), ("## 结论\n未达成", "not_yet"),
    ("## 结论\n无法验证:没有 mac", "unreachable"),
    ("1", "achieved"), ("false", "not_yet"), ("looks fine to me", ""), ("## Verdict\nnot achieved", "not_yet"),
])
def test_verdict_reads_three_outcomes_and_ambiguity_is_not_achieved(text: str, state: str) -> None:
    verdict = Verdict.parse(text)
    assert verdict.state == state and verdict.ok is bool(state) and verdict.achieved is (state == "achieved")


def test_verdict_feedback_carries_the_reason_and_the_failed_checks() -> None:
    from flower_core.goals import ACHIEVED, NOT_YET, UNREACHABLE

    assert (ACHIEVED, NOT_YET, UNREACHABLE) == ("achieved", "not_yet", "unreachable")
    feedback = Verdict.parse("结论:未达成\n理由:少了列表\n未通过:\n- 输出含 <h1>").feedback()
    assert "少了列表" in feedback and "- 输出含 <h1>" in feedback and "Continue" in feedback
    assert "overruled: go on" in Verdict(state="not_yet", reason="overruled: go on").feedback()


def test_goal_amend_appends_and_unverifiable_checks_are_listed() -> None:
    goal = Goal.parse("## 目标\n打印 hello\n## 判定清单\n1. 输出 hello\n- 在 mac 上跑 [此环境无法验证:没有 mac]")
    assert goal.checks == ["输出 hello", "在 mac 上跑 [此环境无法验证:没有 mac]"] and len(goal.unverifiable) == 1
    assert goal.amend("也打印 world").statement == "打印 hello\n\n(已修改)也打印 world"


async def test_the_channel_speaks_the_originals_ask_and_mail(double_factory: Any, cli_home: Path,
                                                             tmp_path: Path) -> None:
    from flower_core import Ask
    brief = tmp_path / "需求.md"
    brief.write_text("## 目标\nx\n", encoding="utf-8")
    events = Events()
    channel = HumanChannel(on_event=events, timeout_s=0, amend_path=brief)
    ask = await channel.ask("Colour?", ["red"])
    assert isinstance(ask, Ask) and ask.state == "timeout" and ask.answer == ""  # nobody there is an outcome
    mail = channel.send("also blue")
    assert mail is not None and not mail.taken and mail.amended == str(brief) and "also blue" in brief.read_text()
    assert events.events[-1].payload["amended"] == str(brief)
    unsaved = HumanChannel().send("said where nothing is kept")
    assert unsaved is not None and unsaved.amended == ""
    inbox = {"say": "Checking.", "call": [{"tool": "mcp__human__inbox", "input": {}}]}
    md = await double_factory(scenario_of(conv("reader", "INBOX", inbox, {"say": "Inbox: {last_tool_result}"})))
    rt = make_runtime(tmp_path, md, cli_home)
    try:
        result = await rt.run(AgentSpec("reader", "terse", channel=channel, max_turns=4), "INBOX check")
    finally:
        rt.close()
    assert result.ok and "also blue" in result.text and mail.taken


def test_runtime_takes_the_originals_workbench_flag_and_interrupt_keyword(tmp_path: Path) -> None:
    from flower_core import Workbench
    built = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", workbench=True)
    off = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs2", workbench=False)
    try:
        assert isinstance(built.workbench, Workbench) and built.workbench.root == (tmp_path / "runs" / "workbench")
        assert built.workbench.external and built.workbench.index_path.is_file() and off.workbench is None
        assert built.interrupt(message="stop and think") is False  # nothing runs: kept for the next step
        assert built.take_unread() == "stop and think"
    finally:
        built.close()
        off.close()
