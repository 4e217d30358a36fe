"""Which nodes' free resources changed, in order: columns derived from them catch up at those nodes alone."""

from __future__ import annotations


class ChangeLog:
    """An append-only list of node positions (one entry per bind or unbind), read from a mark a reader kept.

    Old entries are dropped once the log holds ``4 * nodes`` of them: a reader whose mark is older than that gets
    None and recomputes its column whole (by then most nodes have changed anyway).
    """

    __slots__ = ("_nodes", "_base", "_limit")

    def __init__(self, nodes: int):
        self._nodes: list[int] = []
        self._base = 0  # log position of self._nodes[0]
        self._limit = 4 * nodes + 1024

    @property
    def mark(self) -> int:
        """The position after the newest entry: what a reader keeps to ask what changed since."""
        return self._base + len(self._nodes)

    def record(self, node: int) -> None:
        """Node ``node``'s free resources changed."""
        self._nodes.append(node)
        if len(self._nodes) > self._limit:
            drop = len(self._nodes) // 2
            del self._nodes[:drop]
            self._base += drop

    def since(self, mark: int) -> list[int] | None:
        """The nodes changed since ``mark`` (repeats possible, oldest first); None when that is older than the log."""
        start = mark - self._base
        if start < 0:
            return None
        return self._nodes[start:]
