"""Plain data about locks and servers: what Client.status(), doctor() and
stats() return. Durations are seconds."""

import enum
from dataclasses import dataclass
from typing import Optional, Tuple


def _seconds(ms):
    """-1 (no TTL) -> None."""
    return None if ms < 0 else ms / 1000


def _str(data):
    return data.decode("utf-8", "replace") if data else ""


@dataclass(frozen=True)
class Holder:
    """A holder that left its owner record (every dlock client does)."""
    host: str
    pid: int
    since: float  # when it took the lock, seconds since the Unix epoch
    ttl: Optional[float]  # its key's (a semaphore: its permit's) TTL; None: none
    slot: int  # a semaphore's permit; 0 for a mutex
    fence: int  # the last fencing token of its slot (a mutex: the name's)


@dataclass(frozen=True)
class NodeStatus:
    """One server's own answer."""
    server: str  # "host:port" or a socket path
    code: int  # 0: it answered; else why not (a DLOCK_E... code)
    error: str  # the detail of that failure ("" when it answered)
    held: bool
    ttl: Optional[float]  # None: a key without TTL; 0: free
    fence: int


@dataclass(frozen=True)
class Status:
    """What the servers (a majority of them) say about a lock name. The
    holder's token is deliberately not part of it."""
    name: str
    held: bool  # the key exists (held by anyone, dlock or not)
    ttl: Optional[float]  # None: a key without TTL; 0: free
    fence: int  # the last fencing token issued for the name; 0: none
    limit: int  # holders allowed at once: a semaphore's permits, else 1
    shared: bool  # held shared
    holders: Tuple[Holder, ...]
    nodes_answered: int
    nodes_held: int
    nodes: Tuple[NodeStatus, ...]


class Severity(enum.IntEnum):
    INFO = 0  # worth knowing
    WARNING = 1  # a lock can be lost or doubled in some failure
    ERROR = 2  # locks do not work, or are not safe, as things are


@dataclass(frozen=True)
class Finding:
    id: str  # stable: "EVICTABLE", "NO_PERSISTENCE", ...
    severity: Severity
    server: str  # "host:port"; "" for the whole set
    evidence: str  # what was seen
    fix: str  # what to do about it
    offset: float  # CLOCK_SKEW: the server's clock minus ours; SLOW: the round trip


@dataclass(frozen=True)
class Report:
    findings: Tuple[Finding, ...]
    worst: Optional[Severity]  # None: nothing found


@dataclass(frozen=True)
class NodeStats:
    errors: int  # replies that were errors, broken connections
    timeouts: int  # no reply by the deadline


@dataclass(frozen=True)
class Stats:
    """A Client's counters since it was opened, over all its C clients."""
    acquisitions: int
    busy: int
    waits: int
    wait: float  # seconds those waits took, in total
    renewals: int
    min_renewal_margin: Optional[float]  # least validity left at a renewal; None: none yet
    losses: int
    nodes: Tuple[NodeStats, ...]


def status_from(lib, st, name, labels):
    holders = []
    for i in range(lib.dlock_status_holders(st)):
        h = lib.dlock_status_holder(st, i).contents
        holders.append(Holder(_str(h.host), h.pid, h.since_ms / 1000, _seconds(h.ttl_ms),
                              h.slot, h.fence))
    nodes = []
    for i, label in enumerate(labels):
        p = lib.dlock_status_node(st, i)
        if not p:
            continue
        n = p.contents
        nodes.append(NodeStatus(label, n.code, _str(n.error), bool(n.held), _seconds(n.ttl_ms),
                                n.fence))
    return Status(name.decode("utf-8", "surrogateescape"), bool(lib.dlock_status_held(st)),
                  _seconds(lib.dlock_status_ttl_ms(st)), lib.dlock_status_fence(st),
                  lib.dlock_status_limit(st), bool(lib.dlock_status_shared(st)), tuple(holders),
                  lib.dlock_status_nodes_answered(st), lib.dlock_status_nodes_held(st),
                  tuple(nodes))


def report_from(lib, report):
    findings = []
    for i in range(lib.dlock_report_count(report)):
        f = lib.dlock_report_finding(report, i).contents
        findings.append(Finding(_str(f.id), Severity(f.severity), _str(f.server),
                                _str(f.evidence), _str(f.fix), f.offset_ms / 1000))
    worst = lib.dlock_report_worst(report)
    return Report(tuple(findings), None if worst < 0 else Severity(worst))


def stats_from(raw, n_nodes):
    """Sums the counters of several C clients of the same servers."""
    margins = [s.min_renewal_margin_ms for s in raw if s.min_renewal_margin_ms >= 0]
    nodes = tuple(NodeStats(sum(s.node[i].errors for s in raw),
                            sum(s.node[i].timeouts for s in raw)) for i in range(n_nodes))
    return Stats(sum(s.acquisitions for s in raw), sum(s.busy for s in raw),
                 sum(s.waits for s in raw), sum(s.wait_ms for s in raw) / 1000,
                 sum(s.renewals for s in raw), min(margins) / 1000 if margins else None,
                 sum(s.losses for s in raw), nodes)


def merge_stats(into, s):
    """Adds the ctypes counters `s` to `into`."""
    for field in ("acquisitions", "busy", "waits", "wait_ms", "renewals", "losses"):
        setattr(into, field, getattr(into, field) + getattr(s, field))
    if s.min_renewal_margin_ms >= 0 and (into.min_renewal_margin_ms < 0 or
                                         s.min_renewal_margin_ms < into.min_renewal_margin_ms):
        into.min_renewal_margin_ms = s.min_renewal_margin_ms
    for i in range(len(s.node)):
        into.node[i].errors += s.node[i].errors
        into.node[i].timeouts += s.node[i].timeouts
