"""Replay: what a new holder of a run does with the inputs the last holder left unsettled.

A holder dies (a crash, a kill, a worker that went silent) with some intents applied only in its
memory. The next one reads the run's unsettled intents and the run's stored sessions
(``Runtime.session_facts``: what reached the model) and sorts each intent into what to do now:

| intent          | the stored session shows                       | the new holder                         |
|-----------------|------------------------------------------------|----------------------------------------|
| stop            | -                                              | ends the run as stopped, nothing runs  |
| answer, decline | the question's call returned its outcome       | settles it (it was delivered)          |
|                 | the question's call still open                 | applies it to the restored question    |
|                 | no call asking it (it never got stored)        | answer: sends it as inbox mail;        |
|                 |                                                |   decline: nothing to say (moot)       |
|                 | its inbox mail "[<mail id>]" already read      | settles it (an earlier holder sent it) |
|                 | (a tool approval's decision)                   | applies it to the approval restored    |
|                 |                                                |   from the park record; moot if the    |
|                 |                                                |   step goes on without it              |
|                 | (a question of the runtime's own: the cap)     | moot: the gate asks again if still due |
| send            | "[<mail id>]" in a tool result or a prompt     | settles it                             |
|                 | nothing                                        | queues the mail again (same id)        |
| interrupt       | its words in that many prompts since it was    | settles the delivered ones, gives the  |
|                 | given                                          |   rest to the next prompt              |
| oracle          | -                                              | asks it again; the answer is published |

Only this table decides; `plan` is a pure function of the intents and the facts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from adapters.transport.intents import Intent, Op, mail_id_for
from adapters.view.approval_card import APPROVAL
from flower_core.runtime.transcript import SessionFacts

# Clocks of two processes on one machine agree; across machines allow this much skew.
CLOCK_SKEW_S = 5.0


@dataclass
class Replay:
    stop: Intent | None = None
    waiting: list[Intent] = field(default_factory=list)  # answers/declines for a question still open
    to_inbox: list[Intent] = field(default_factory=list)  # answers whose question never reached the session
    mail: list[Intent] = field(default_factory=list)
    words: list[Intent] = field(default_factory=list)
    oracle: list[Intent] = field(default_factory=list)
    steer: list[Intent] = field(default_factory=list)  # the run's model/effort changes, oldest first: apply again
    delivered: list[Intent] = field(default_factory=list)  # settle as done
    moot: list[Intent] = field(default_factory=list)  # settle as moot

    def __bool__(self) -> bool:
        return any((self.stop, self.waiting, self.to_inbox, self.mail, self.words, self.oracle, self.steer,
                    self.delivered, self.moot))


def plan(intents: list[Intent], facts: SessionFacts) -> Replay:
    """Sort unsettled intents (oldest first) against ``facts`` (what the stored sessions say reached the model)."""
    out = Replay()
    words: dict[str, list[Intent]] = defaultdict(list)
    for intent in intents:
        if intent.op is Op.STOP:
            out.stop = out.stop or intent
        elif intent.op in (Op.ANSWER, Op.DECLINE):
            if intent.kind == APPROVAL:  # decided between two holders: the next one restores the approval
                out.waiting.append(intent)
            elif intent.kind:  # a question of the runtime's own (the cost cap): it asks again if still due
                out.moot.append(intent)
            elif intent.op is Op.ANSWER and facts.delivered(f"[{mail_id_for(intent)}]"):
                out.delivered.append(intent)  # an earlier holder sent it to the inbox, and the model read it
            elif facts.open(intent.question):
                out.waiting.append(intent)
            elif facts.settled(intent.question):
                out.delivered.append(intent)
            else:
                (out.to_inbox if intent.op is Op.ANSWER else out.moot).append(intent)
        elif intent.op is Op.SEND:
            seen = facts.delivered(f"[{mail_id_for(intent)}]")
            (out.delivered if seen else out.mail).append(intent)
        elif intent.op is Op.INTERRUPT:
            if intent.text.strip():
                words[intent.text.strip()].append(intent)
            else:
                out.delivered.append(intent)  # "stop and go on": the restart did that already
        elif intent.op is Op.ORACLE:
            out.oracle.append(intent)
        elif intent.op is Op.MODEL:
            out.steer.append(intent)  # the launch's plan may predate it (a worker taking the run over)
    for said, group in words.items():
        reached = facts.delivered(said, since=group[0].at - CLOCK_SKEW_S, prompts_only=True)
        out.delivered += group[:reached]
        out.words += group[reached:]
    return out


def inbox_text(intent: Intent) -> str:
    """The mail that carries an answer whose question the new holder never saw asked."""
    return (f"The human's answer to your earlier question “{intent.question}” (given while the run was restarting): "
            f"{intent.text}")
