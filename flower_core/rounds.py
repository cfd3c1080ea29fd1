"""A run's next round: a person speaks again after the run ended, and its last agent step hears it.

A run that ended keeps on disk all that a next round needs: which session each step used
(lineage.json), the transcripts (the session store) and the brief. `next_round` turns the workflow a
factory builds for the run into a one-step workflow:

    last agent step   the last step of the workflow that has a session in the lineage (a judge's
                      run never enters the lineage, so it is never the one)
    its session       resumed, as a woken step is (`Workflow` finds it in the lineage)
    its prompt        the person's words; with no words (the round is woken after a restart) the
                      step's own resume prompt, so a cut-off round picks up where it was
    the brief         the words are appended to the amend file (the channel's `amend`), as inbox
                      mail that amends the brief is, so later steps and the judge read them
    the step event    carries ``"round": N`` (Workflow.round)

The round is not judged: it is the person's turn in the conversation, not a pass of the work step.
"""

from __future__ import annotations

from pathlib import Path

from flower_core.lineage import Lineage
from flower_core.workflow import Step, Workflow

__all__ = ["ROUND_LABEL", "last_agent_step", "next_round"]

ROUND_LABEL = "Next round"  # the heading of the words appended to the brief


def last_agent_step(wf: Workflow, lineage: Lineage) -> Step | None:
    """The workflow's last step with a recorded session (None: no step ever got one)."""
    return next((s for s in reversed(wf.steps) if lineage.steps.get(s.name)), None)


def next_round(wf: Workflow, text: str, *, run_dir: str | Path, workspace: str | Path, round_: int) -> Workflow:
    """The workflow of round ``round_`` of a run, from the workflow its factory builds (``wf``).

    Raises ValueError when no step of the run has a session to continue."""
    if round_ < 2:
        raise ValueError(f"round {round_}: a next round is round 2 or later")
    last = last_agent_step(wf, Lineage.open(run_dir, workspace))
    if last is None:
        raise ValueError("no step of this run has a session to continue")
    words = text.strip()
    if words:
        step = Step(last.name, last.spec, words, resume_prompt=words)
        if wf.channel is not None:
            wf.channel.amend(words, label=ROUND_LABEL)  # the brief says it before the model hears it
    else:  # woken mid-round: the step's own way of picking up where it was cut off
        step = Step(last.name, last.spec, last.prompt, resume_prompt=last.resume_prompt)
    return Workflow([step], name=wf.name, channel=wf.channel, workbench=wf.workbench, budget=wf.budget,
                    round=round_)
