"""English: the bridge's default language (``[bot] language``, ``FLOWER_LANG``, ``flower --lang``).

Our own wording of what the seed's texts tell the model, in the same order and with the same intent, so
an English-speaking team's run never reads Chinese. Keys and ``{placeholders}`` match ``zh.py``.
"""

from __future__ import annotations

_ON_YOUR_OWN = ("Decide for yourself and go on; write the question and the assumption you made into the "
                "\"Unknowns and assumptions\" section.")

TEXTS: dict[str, str] = {
    # -- the ask tool's outcomes (flower_core/human/channel.py) ----------------------------------------
    "ask.timeout": f"Nobody answered. {_ON_YOUR_OWN} Do not ask again, and do not stop here.",
    "ask.declined": (f"The person saw this question and chose not to answer it. {_ON_YOUR_OWN} "
                     "Do not ask the same thing again in other words."),
    "ask.over_budget": (f"No questions are left, so this one did not reach anyone. {_ON_YOUR_OWN} "
                        "Do not call the ask tool again."),
    "ask.decline_reason": "What they said: ",
    "ask.empty_answer": "(The person replied, but the reply was empty. Decide for yourself and go on.)",
    "ask.invalid_empty": ("Invalid question: `question` is empty or not text. Write one concrete question that can "
                          "be answered directly and call again."),
    "ask.invalid_options": ("Invalid question: `options` must be a list of strings, each non-empty and all "
                            "different, at most {max} of them. Fix them and call again, or leave `options` out."),
    "text.truncated": "\n…[cut: {n} characters left out]",
    # -- the inbox tool (flower_core/human/tools.py) --------------------------------------------------
    "inbox.empty": "The inbox is empty: the person has nothing new to say. Carry on with the work at hand.",
    "inbox.header": ("The person said the following on their own during the run (oldest first). Take it as an "
                     "addition to the requirements; where it conflicts with them, this wins:"),
    "inbox.amended": "These words were also appended to the brief, so later steps read them too.",
    # -- approvals of tool calls (flower_core/human/approval.py) ---------------------------------------
    "approval.denied": ("The person did not approve this {tool} call; it did not run. Do not retry it as it is: go "
                        "on another way, or say in your result what you need."),
    "approval.denied_by_rule": ("This run's rules ({rule}) do not allow this {tool} call; it did not run. Go on "
                                "another way and do not try the same call again."),
    "approval.timed_out": ("Nobody approved this {tool} call within {s} seconds; it did not run. Go on another way, "
                           "and write this into the \"Unknowns and assumptions\" section."),
    "approval.cancelled": "The approval of this {tool} call was cancelled (the run was interrupted); it did not run.",
    # -- plan first (flower_core/human/plan_review.py) -------------------------------------------------
    "plan.first": ("Plan first: this work starts in plan mode. Investigate without changing anything, then present "
                   "your plan with ExitPlanMode; a person reviews it, and nothing changes before they approve it."),
    "plan.question": "The agent's plan is ready for review: approve it, or say what to plan differently.",
    "plan.planning": ("You are planning: nothing may change before a person has approved your plan, so this {tool} "
                      "call did not run. Investigate with read-only tools, then present your plan with ExitPlanMode."),
    "plan.revise": ("The person reviewed your plan and wants you to keep planning. Their words: {words}\nDo not start "
                    "the work: plan again with this in mind, then present the revised plan with ExitPlanMode."),
    "plan.revise_silent": ("The person reviewed your plan and wants you to keep planning. Do not start the work: think "
                           "it over, then present a revised plan with ExitPlanMode."),
    "plan.unattended": ("Nobody is here to review your plan (this run is unattended), so nothing will be changed. "
                        "Stop planning and end your turn with the plan as your result."),
    "plan.cancelled": "The review of your plan was cancelled (the run was interrupted); you are still planning.",
    "plan.note_approved": ("(Your plan waited for a person's review while the session was paused; they approved it, "
                           "as the tool result above says. Go on with the work.)"),
    "plan.note_revise": ("(Your plan waited for a person's review while the session was paused; their answer is the "
                         "tool result above. Continue.)"),
    # -- the share tool (flower_core/human/share.py) --------------------------------------------------
    "share.shared": "{path} was posted to the conversation.",
    "share.outside": "Cannot share {path}: it is outside the workspace. Only files in the workspace can be shared.",
    "share.missing": "Cannot share {path}: there is no such file in the workspace.",
    "share.empty": "Cannot share {path}: the file is empty.",
    "share.no_root": "This run has no conversation to share files to.",
    # -- the Q&A log and the brief's additions (flower_core/human/records.py) --------------------------
    "qa.title": "Q&A log",
    "qa.none": "(no questions yet)",
    "qa.question": "**Q:** ",
    "qa.options": "**Options:** ",
    "qa.outcome": "**Outcome:** ",
    "qa.answer": "**A:** ",
    "qa.by": "**Decided by:** ",
    "qa.waited": "**Waited:** ",
    "qa.state.asked": "waiting",
    "qa.state.answered": "answered",
    "qa.state.timeout": "no answer",
    "qa.state.declined": "declined",
    "qa.state.over_budget": "over the question quota",
    "qa.state.invalid": "invalid question",
    "qa.state.cancelled": "cancelled",
    "amend.label": "Added during the run",
    "amend.wake_label": "Added on waking",
    # -- the workbench's notes (flower_core/workbench.py, runtime/handoff.py) --------------------------
    "note.brief": "brief.md",
    "note.goal": "goal.md",
    "note.qa": "qa-log.md",
    "note.handoff_prefix": "handoff-",
    "note.handoff_archive": "handoff",
    # -- the starter's role rules (flower_core/roles.py) -----------------------------------------------
    "role.clarifier": """You clarify a request before anyone works on it. You do not do the work: no code, no edits \
other than the brief file, no pasting of file contents.
- Ask the human with the mcp__human__ask tool (a question, plus a few short options when there are obvious \
choices). There is no limit on questions: ask until the goal, the acceptance criteria and the boundaries are clear. \
Ask one thing at a time, only about decisions that change the outcome.
- You may read the workspace first (Read/Glob/Grep): one look can spare a question.
- If nobody answers, decide yourself and record the question and your assumption under "Unknowns and \
assumptions".
- Finish by writing the brief with the Write tool, exactly four sections:
  ## Goal — one sentence: what is built, for whom
  ## Acceptance criteria — decidable conditions, one per line ("running x prints y", not "works well")
  ## Boundaries — what is explicitly not done
  ## Unknowns and assumptions — everything not asked, not answered or guessed, one per line""",
    "role.goal_setter": """You set the goal that an independent judge will check the work against. You do not do \
the work.
- Read the brief; turn its acceptance criteria into checks a reader can verify on the spot ("run this, see that").
- The number of checks follows the ways the task can fail — usually three to seven. A boundary is how to work, \
not a check item.
- A check that cannot be verified in this environment ends with "[unverifiable here: reason]".
- Write the goal with the Write tool, two sections:
  ## Goal — one paragraph
  ## Checklist — one check per line, each starting with "- \"""",
}
