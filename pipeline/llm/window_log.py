"""The log a strict-window limiter keeps of what it sent (`tracejudge.llm.ratelimit`).

One `WindowLog` per limit (requests, tokens). Entries are
`serial → [amount, expires, settled_at, admitted_at, sent_at]` (monotonic
seconds; `settled_at` is when its reply was read, `sent_at` when the
request left, `admitted_at` until known); `expires` and `settled_at` are
`None` while the request is in flight (it counts, and no time is known yet
at which it leaves the provider's window).
`total` is kept as entries come and go, and the settled ones are queued by
expiry, so admission costs the few entries it looks at, not the whole
window (tens of thousands at high RPM).
"""

from __future__ import annotations

from collections import deque

__all__ = ["WindowLog"]


class WindowLog:
    """What we sent within the window for one limit; amounts in the client's own units."""

    def __init__(self) -> None:
        self.entries: dict[int, list] = {}
        self.total = 0.0
        self._by_expiry: deque[int] = deque()
        self._sorted = True

    def add(self, serial: int, amount: float, admitted_at: float, expires: float | None = None, settled_at: float | None = None) -> None:
        """Log a request (or, with `expires`, an amount someone else spent that leaves then)."""
        self.entries[serial] = [amount, expires, settled_at, admitted_at, admitted_at]
        self.total += amount
        if expires is not None:
            self._enqueue(serial, expires)

    def drop(self, serial: int) -> None:
        """Forget a request the provider refused (it counts nothing there)."""
        entry = self.entries.pop(serial, None)
        if entry is not None:
            self.total -= entry[0]

    def settle(self, serial: int, amount: float, expires: float, now: float, sent_at: float | None = None) -> None:
        """A request was answered (its reply read at `now`; it left at `sent_at` when known): it costs `amount` and leaves the window at `expires`."""
        entry = self.entries.get(serial)
        if entry is None:
            return
        self.total += amount - entry[0]
        entry[:3] = [amount, expires, now]
        if sent_at is not None:
            entry[4] = max(entry[3], sent_at)
        self._enqueue(serial, expires)

    def _enqueue(self, serial: int, expires: float) -> None:
        # Entries mostly settle in expiry order; one that overtakes a few (its flight was
        # longer) is put in its place by a short walk from the end, not a re-sort.
        order = self._by_expiry
        i = len(order)
        while i and (prev := self.entries.get(order[i - 1])) is not None and prev[1] is not None and prev[1] > expires:
            i -= 1
        order.insert(i, serial)

    def _order(self) -> deque[int]:
        if not self._sorted:
            live = [s for s in dict.fromkeys(self._by_expiry) if s in self.entries and self.entries[s][1] is not None]
            self._by_expiry = deque(sorted(live, key=lambda s: self.entries[s][1]))
            self._sorted = True
        return self._by_expiry

    def used(self, now: float) -> float:
        """What the window holds at `now` (entries past their expiry leave)."""
        order = self._order()
        while order:
            entry = self.entries.get(order[0])
            if entry is not None and entry[1] is not None and entry[1] > now:
                break
            serial = order.popleft()
            if entry is not None and entry[1] is not None:
                del self.entries[serial]
                self.total -= entry[0]
        return self.total

    def in_flight_after(self, admitted_at: float) -> float:
        """What requests admitted after `admitted_at` and still unanswered hold (the provider may not have seen them yet)."""
        held = 0.0
        for entry in reversed(self.entries.values()):
            if entry[3] <= admitted_at:
                break
            if entry[1] is None:
                held += entry[0]
        return held

    def left_maybe(self, cutoff: float) -> float:
        """What answered entries sent by `cutoff` (one window ago) hold: the provider may have let them go already, we still count them.

        One sent later the provider surely still counts: it cannot have booked it before it left.
        """
        held = 0.0
        for serial in self._order():
            entry = self.entries.get(serial)
            if entry is None or entry[1] is None:
                continue
            if entry[4] > cutoff:
                break
            held += entry[0]
        return held

    def wait_for(self, amount: float, capacity: float, now: float) -> float | None:
        """Seconds until `amount` fits under `capacity`; `None` when it depends on requests still in flight."""
        excess = self.used(now) + amount - capacity
        if excess <= 0:
            return 0.0
        for serial in self._order():
            entry = self.entries.get(serial)
            if entry is None or entry[1] is None:
                continue
            excess -= entry[0]
            if excess <= 0:
                return float(entry[1] - now)
        return None

    def delay(self, shift: float, window_s: float, before_reply: float = 0.0) -> None:
        """The provider keeps entries `shift` seconds longer than we thought: each leaves later, but never later than one window after its reply.

        `before_reply`: seconds each booking surely preceded its reply being read (the entry's `settled_at`).
        """
        for serial in self._order():
            entry = self.entries.get(serial)
            if entry is not None and entry[1] is not None and entry[2] is not None:
                entry[1] = min(entry[1] + shift, max(entry[1], entry[2] + window_s - before_reply))
        self._sorted = False

    def cap_expiry(self, latest: float, settled_before: float) -> None:
        """The provider said its window is empty by `latest`: no entry settled before `settled_before` stays longer.

        Only those entries surely reached the provider before the request whose reply said so.
        """
        for serial in reversed(self._order()):
            entry = self.entries.get(serial)
            if entry is None or entry[1] is None:
                continue
            if entry[1] <= latest:
                break
            if entry[2] <= settled_before:
                entry[1] = latest
                self._sorted = False
