"""Chinese: the seed's texts, verbatim — flower_core's default (``flower_core.lang.SEED``).

The timeout text and the notes' names are the seed's own; the other outcomes were written in the same
language and voice, so a model sees one register whatever happens. Keys and ``{placeholders}`` must match
every other catalogue in this package (tests/core/test_lang.py checks it).
"""

from __future__ import annotations

TEXTS: dict[str, str] = {
    # -- the ask tool's outcomes (flower_core/human/channel.py) ----------------------------------------
    "ask.timeout": (
        "无人应答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
        "不要重复提问,也不要停在这里。"
    ),
    "ask.declined": (
        "对方看过这个问题,选择不回答。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
        "不要换个说法再问同一件事。"
    ),
    "ask.over_budget": (
        "提问次数已用完,这个问题没有发给人。按你自己的判断继续,并把这个问题和你采用的假设写进「未知与假设」那一段。"
        "不要再调用提问工具。"
    ),
    "ask.decline_reason": "对方的说明:",
    "ask.empty_answer": "(对方回复了,但内容为空。按你自己的判断继续。)",
    "ask.invalid_empty": "提问无效:question 为空或不是文字。写出一个具体、能直接回答的问题再调用一次。",
    "ask.invalid_options": (
        "提问无效:options 必须是字符串列表,每项非空且互不重复,最多 {max} 项。"
        "改正后再调用一次,或者去掉 options。"
    ),
    "text.truncated": "\n…[已截断:省略 {n} 个字符]",
    # -- the inbox tool (flower_core/human/tools.py) --------------------------------------------------
    "inbox.empty": "收件箱是空的:人没有新的话要说。继续手上的工作。",
    "inbox.header": "人在运行中主动说了下面这些话(按时间先后)。把它们当作对需求的补充,和原需求冲突时以这里为准:",
    "inbox.amended": "这些话也已追加进需求文件,之后的步骤能读到。",
    # -- approvals of tool calls (flower_core/human/approval.py) ---------------------------------------
    "approval.denied": (
        "对方没有批准这次 {tool} 调用,它没有执行。不要原样重试;换一种做法继续,或在结果里说明你需要什么。"
    ),
    "approval.denied_by_rule": (
        "按这次运行的规则({rule}),{tool} 的这种调用不允许执行,它没有执行。换一种做法继续,不要再试同样的调用。"
    ),
    "approval.timed_out": (
        "等了 {s} 秒没有人批准这次 {tool} 调用,它没有执行。换一种做法继续,并把这件事写进「未知与假设」那一段。"
    ),
    "approval.cancelled": "这次 {tool} 调用的批准被取消了(运行被打断),它没有执行。",
    # -- plan first (flower_core/human/plan_review.py) -------------------------------------------------
    "plan.first": (
        "先做计划:这项工作从计划模式开始。先在不改动任何东西的前提下调查,再用 ExitPlanMode 提交计划;"
        "有人审阅,批准之前什么都不会改动。"
    ),
    "plan.question": "智能体的计划已经写好,等待审阅:批准它,或者说明哪里要重新计划。",
    "plan.planning": (
        "你正在做计划:在有人批准你的计划之前什么都不能改动,所以这次 {tool} 调用没有执行。"
        "用只读工具调查,然后用 ExitPlanMode 提交你的计划。"
    ),
    "plan.revise": (
        "对方审阅了你的计划,希望你继续计划。对方的话:{words}\n"
        "不要开始干活:据此重新计划,然后用 ExitPlanMode 提交修改后的计划。"
    ),
    "plan.revise_silent": (
        "对方审阅了你的计划,希望你继续计划。不要开始干活:再想一想,然后用 ExitPlanMode 提交修改后的计划。"
    ),
    "plan.unattended": (
        "没有人在场审阅你的计划(这次运行无人值守),所以什么都不会改动。停止计划,把计划作为你的结果结束这一轮。"
    ),
    "plan.cancelled": "对你计划的审阅被取消了(运行被打断);你仍在计划阶段。",
    "plan.note_approved": "(你的计划在会话暂停期间等待审阅;对方批准了它,见上面的工具结果。继续干活。)",
    "plan.note_revise": "(你的计划在会话暂停期间等待审阅;对方的答复就是上面的工具结果。继续。)",
    # -- the share tool (flower_core/human/share.py) --------------------------------------------------
    "share.shared": "已把 {path} 发到对话里。",
    "share.outside": "不能分享 {path}:它在工作区之外。只能分享工作区里的文件。",
    "share.missing": "不能分享 {path}:工作区里没有这个文件。",
    "share.empty": "不能分享 {path}:文件是空的。",
    "share.no_root": "这次运行没有可以分享文件的对话。",
    # -- the Q&A log and the brief's additions (flower_core/human/records.py) --------------------------
    "qa.title": "问答记录",
    "qa.none": "(还没有提问)",
    "qa.question": "**问:** ",
    "qa.options": "**选项:** ",
    "qa.outcome": "**结果:** ",
    "qa.answer": "**答:** ",
    "qa.by": "**决定人:** ",
    "qa.waited": "**等待:** ",
    "qa.state.asked": "等待中",
    "qa.state.answered": "已回答",
    "qa.state.timeout": "无人应答",
    "qa.state.declined": "拒答",
    "qa.state.over_budget": "超出提问额度",
    "qa.state.invalid": "提问无效",
    "qa.state.cancelled": "已取消",
    "amend.label": "运行中补充",
    "amend.wake_label": "唤醒时追加",
    # -- the workbench's notes (flower_core/workbench.py, runtime/handoff.py) --------------------------
    "note.brief": "需求.md",
    "note.goal": "目标.md",
    "note.qa": "问答记录.md",
    "note.handoff_prefix": "交接-",
    "note.handoff_archive": "交接",
    # -- the starter's role rules (flower_core/roles.py) -----------------------------------------------
    "role.clarifier": """You clarify a request before anyone works on it. You do not do the work: no code, no edits \
other than the brief file, no pasting of file contents.
- Ask the human with the mcp__human__ask tool (a question, plus a few short options when there are obvious \
choices). There is no limit on questions: ask until the goal, the acceptance criteria and the boundaries are clear. \
Ask one thing at a time, only about decisions that change the outcome.
- You may read the workspace first (Read/Glob/Grep): one look can spare a question.
- If nobody answers, decide yourself and record the question and your assumption under "Unknowns and \
assumptions" (未知与假设).
- Finish by writing the brief with the Write tool, exactly four sections:
  ## Goal (目标) — one sentence: what is built, for whom
  ## Acceptance criteria (验收标准) — decidable conditions, one per line ("running x prints y", not "works well")
  ## Boundaries (边界) — what is explicitly not done
  ## Unknowns and assumptions (未知与假设) — everything not asked, not answered or guessed, one per line""",
    "role.goal_setter": """You set the goal that an independent judge will check the work against. You do not do \
the work.
- Read the brief; turn its acceptance criteria into checks a reader can verify on the spot ("run this, see that").
- The number of checks follows the ways the task can fail — usually three to seven. A boundary is how to work, \
not a check item.
- A check that cannot be verified in this environment ends with "[unverifiable here: reason]".
- Write the goal with the Write tool, two sections:
  ## Goal (目标) — one paragraph
  ## Checklist (判定清单) — one check per line, each starting with "- \"""",
}
