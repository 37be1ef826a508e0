"""What one run of the loop knows about its session, passed explicitly to whoever needs it."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.backends.base import Interrupt
from agent.models import ContextSummary, Session, Turn
from agent.values import LoopEvent, NeutralMessage


@dataclass(eq=False)
class Run:
    """One run of the loop over a session: a turn, or `run_agent(session)` used on its own.

    Made when a turn claims the session's lease (`turns.claim`) and handed to every function that
    reads or writes the transcript for it. Only the holder of the lease adds messages, so what a run
    learns here stays true until it ends: where the next message goes, whether calls still wait for
    a person, and the transcript it loaded for the model (kept in step as it writes).
    """

    session: Session
    turn: Turn | None = None
    #: The position the next message takes; None until the run has read or written the transcript.
    next_position: int | None = None
    #: True once nothing of the session waits for a person (`approvals.settle` has nothing to do).
    approvals_settled: bool = False
    #: Calls that may change something, let through so far (AGENT_MAX_MUTATIONS_PER_TURN, `agent.limits`).
    mutations: int = 0
    #: The latest summary of older messages, and the messages after it, as the model will see them;
    #: None until `context.build` first loads them.
    summary: ContextSummary | None = None
    history: list[tuple[int, NeutralMessage]] | None = field(default=None, repr=False)
    #: Events of calls people had decided (or let lapse), answered as the turn began
    #: (`turns.begin`), for the turn to stream before anything else.
    answered: list[LoopEvent] = field(default_factory=list, repr=False)
    #: The loop also yields `agent.values.Phase` marks around each model call's stream (for the
    #: background driver, `agent.turns`, which moves the run off its database connection meanwhile).
    marks_phases: bool = False
    #: How a Stop reaches a model call while it waits on its server (`agent.backends.base.Interrupt`):
    #: set for a turn (`turns.drive`), whose Stop flag's raisers fire it.
    interrupt: Interrupt | None = field(default=None, repr=False)
    #: The position of the answer a failed model call left unfinished, which a turn that tries again
    #: (`turns.retry`) leaves out of what the model reads: the model answers the person again, rather
    #: than carrying on from words cut off mid-sentence. It stays in the transcript, as it was drawn.
    set_aside: int | None = None

    def forget_history(self) -> None:
        """Read the transcript afresh at the next model call."""
        self.summary, self.history = None, None


@dataclass(eq=False)
class TurnRun(Run):
    """The run of a turn (`agent.turns`): it always has its turn."""

    turn: Turn
