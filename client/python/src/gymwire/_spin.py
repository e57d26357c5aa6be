"""How long the socket transport polls for an answer before it sleeps: a window that adapts to the answers.

On VMs whose idle cores halt at once (KVM guests with ``guest_halt_poll_ns=0``, like the machines
gymwire's benchmarks run on), a thread that sleeps in ``poll`` costs tens of µs to wake: the
server's write has to interrupt the halted core, and the answer waits for it. A caller that polls
its socket without sleeping for a short window after each request finds an answer that comes back
within that window at once. The server does the same after its answers (``runtime/busy-poll.ts``);
this is the client's half, with the same adaptive rule, so that the two ends of a quick exchange
(a vector env of CartPoles stepped in a loop) keep both cores awake and neither pays a wake-up.

The window is sized from the gap between a request sent and its answer arriving: a gap that a
longer window (up to ``max_s``) would have caught doubles it, a gap past ``max_s`` halves it, and
below ``start_s`` it closes. While closed, every ``probe_every``-th request opens a ``start_s``
probe. Polling pays only while the server has a core of its own, so every ``trial_every`` polled
requests the next ``trial_length`` go unpolled, and unless the median gap polled is shorter than
unpolled by ``keep_below``, polling stays off for ``backoff`` requests (doubling on each failed
trial, up to 64x).

Example::

    window = AdaptiveSpin()
    spin_s = window.next()            # poll this long before sleeping (0: sleep at once)
    ...                               # send, poll up to spin_s, then wait for the answer
    window.learn(gap_s, spin_s)       # gap_s: from the request sent to its answer readable
"""

from __future__ import annotations

from dataclasses import dataclass

from ._protocol import BUSY_POLL_ADAPTIVE


@dataclass(frozen=True)
class SpinOptions:
    """The adaptive window's constants (seconds and counts); the defaults are the server's
    (``runtime/busy-poll.ts``), generated into :data:`gymwire._protocol.BUSY_POLL_ADAPTIVE`."""

    #: Largest window, and the longest gap that counts as "polling would have caught it".
    max_s: float = BUSY_POLL_ADAPTIVE["max_us"] * 1e-6
    #: First window after a caught gap, and the probe's window.
    start_s: float = BUSY_POLL_ADAPTIVE["start_us"] * 1e-6
    #: While closed, one request in this many opens a probe window.
    probe_every: int = int(BUSY_POLL_ADAPTIVE["probe_every"])
    #: Polled requests between two unpolled trials.
    trial_every: int = int(BUSY_POLL_ADAPTIVE["trial_every"])
    #: Requests in a trial (and polled gaps it is compared with).
    trial_length: int = int(BUSY_POLL_ADAPTIVE["trial_length"])
    #: Polling is kept when its median gap is below this fraction of the trial's.
    keep_below: float = BUSY_POLL_ADAPTIVE["keep_below"]
    #: Requests without polling after a failed trial (doubles per failure, up to 64x).
    backoff: int = int(BUSY_POLL_ADAPTIVE["backoff"])

    def __post_init__(self) -> None:
        counts = (self.probe_every, self.trial_every, self.trial_length, self.backoff)
        if not (0 < self.start_s <= self.max_s and all(n > 0 for n in counts) and self.trial_every >= self.trial_length and self.keep_below > 0):
            raise ValueError(f"adaptive spin needs 0 < start_s <= max_s, positive counts, trial_every >= trial_length and keep_below > 0, got {self}")


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) >> 1]


class AdaptiveSpin:
    """The window for the next request, learnt from the gaps of the previous ones (not thread-safe: one reader)."""

    def __init__(self, options: SpinOptions | None = None) -> None:
        self.options = options or SpinOptions()
        #: Seconds; 0: closed.
        self.size = 0.0
        self._since_probe = 0
        self._polled: list[float] = [0.0] * self.options.trial_length
        self._polled_count = 0
        self._trial: list[float] | None = None
        self._suppressed = 0
        self._backoff = self.options.backoff

    @property
    def resting(self) -> bool:
        """True while a failed trial keeps polling off."""
        return self._suppressed > 0

    def next(self) -> float:
        """The window to poll for the request leaving now (seconds; 0: none)."""
        if self._trial is not None or self._suppressed > 0:
            return 0.0
        if self.size > 0:
            return self.size
        self._since_probe += 1
        if self._since_probe < self.options.probe_every:
            return 0.0
        self._since_probe = 0
        return self.options.start_s

    def learn(self, gap_s: float, opened_s: float) -> None:
        """Learns from the gap between a request sent with window ``opened_s`` and its answer arriving."""
        o = self.options
        if self._trial is not None:
            self._trial.append(gap_s)
            if len(self._trial) == o.trial_length:
                self._judge(self._trial)
            return
        if self._suppressed > 0:
            self._suppressed -= 1
            return
        if gap_s > o.max_s:
            # Too long to wait for: polling was (or would have been) wasted.
            half = self.size / 2
            self.size = 0.0 if half < o.start_s else half
        elif gap_s > self.size:
            # A longer window would have caught it (a probe that caught it opens the window).
            self.size = min(o.max_s, max(o.start_s, self.size * 2))
        if opened_s > 0 and self.size > 0:
            self._polled[self._polled_count % o.trial_length] = gap_s
            self._polled_count += 1
            if self._polled_count >= o.trial_every:
                self._trial = []

    def _judge(self, unpolled: list[float]) -> None:
        """Ends a trial: polling stays when its gaps were clearly shorter, else it rests for a while."""
        self._trial = None
        self._polled_count = 0
        if _median(self._polled) < self.options.keep_below * _median(unpolled):
            self._backoff = self.options.backoff
            return
        self._suppressed = self._backoff
        self._backoff = min(self._backoff * 2, self.options.backoff * 64)
        self.size = 0.0
