"""One seed, named sub-streams: each component draws from its own generator derived from the seed.

Streams are keyed by a fixed number per component, so adding a component never shifts the draws
of another, and the order in which components are built does not matter.
"""

from __future__ import annotations

import functools

import numpy as np

STREAMS = {
    "arrivals": 1,
    "service": 2,
    "platform": 3,
    "channel": 4,
    "faults": 5,
    "placement": 6,
    "cluster": 7,
    "policy": 8,
    "requests": 9,  # the function platform: request generators (one sub-stream per function)
    "execution": 10,  # the function platform: execution times (one sub-stream per replica)
    "startup": 11,  # the function platform: replica start-up times
    "pods": 12,  # the pod world: the FGD paper's workload tuning (which pods fill the cluster)
    "node_autoscaler": 22,  # node groups' boot times (one sub-stream per group) and the expanders' tie-breaks
}


def stream(seed: int, name: str) -> np.random.Generator:
    """The generator of component ``name`` for ``seed``."""
    return np.random.default_rng(np.random.SeedSequence([seed, STREAMS[name]]))


# SeedSequence's constants (numpy/random/bit_generator.pyx, after M.E. O'Neill's seed_seq design)
_M32 = 0xFFFFFFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _XSHIFT = 0xCA01F9DD, 0x4973F715, 16
_POOL = 4


def _words(n: int) -> list[int]:
    """An int as SeedSequence takes it: 32-bit words, least significant first ([0] for 0)."""
    out = [n & _M32]
    while n := n >> 32:
        out.append(n & _M32)
    return out


def _hash_constants(n: int) -> list[tuple[int, int]]:
    """(xor, multiplier) of SeedSequence's first ``n`` hashmix calls (its running constant, before and after)."""
    out, c = [], _INIT_A
    for _ in range(n):
        x = c
        c = (c * _MULT_A) & _M32
        out.append((x, c))
    return out


def _column(constants: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([x for x, _ in constants], dtype=np.uint32)[:, None],
        np.array([m for _, m in constants], dtype=np.uint32)[:, None],
    )


@functools.cache
def _mixing_plan(n_entropy: int) -> tuple:
    """SeedSequence's hashmix constants for ``n_entropy`` entropy words, as columns: the pool's four, then per source
    word of the pool the ones it is hashed with for each other word, then those of the entropy words past the pool."""
    extra = max(0, n_entropy - _POOL)
    constants = _hash_constants(_POOL * _POOL + extra * _POOL)
    rounds, at = [], _POOL
    for src in range(_POOL):
        dsts = [d for d in range(_POOL) if d != src]
        rounds.append((dsts, *_column(constants[at : at + len(dsts)])))
        at += len(dsts)
    extras = []
    for _ in range(extra):
        extras.append(_column(constants[at : at + _POOL]))
        at += _POOL
    return _column(constants[:_POOL]), rounds, extras


def _output_constants() -> tuple[np.ndarray, np.ndarray]:
    xs, ms, c = [], [], _INIT_B
    for _ in range(8):
        xs.append(c)
        c = (c * _MULT_B) & _M32
        ms.append(c)
    return np.array(xs, dtype=np.uint32)[:, None], np.array(ms, dtype=np.uint32)[:, None]


_OUT_ROWS = [i % _POOL for i in range(8)]
_OUT_X, _OUT_M = _output_constants()


def pcg64_states(seed: int, first: int, count: int) -> np.ndarray:
    """``SeedSequence([seed, i]).generate_state(4, np.uint64)`` for ``i`` in ``first .. first + count - 1`` (< 2**32),
    one row each: the same 32-bit mixing, done on every ``i`` at once. The pool is a (4, count) array; the three
    hashmix calls of one source word (the same value, each call's own constants) and the eight output words are
    one operation each (a run of a function platform makes one block: its ufunc calls were its cost)."""
    k = count
    entropy = [np.full(k, w, dtype=np.uint32) for w in _words(seed)] + [np.arange(first, first + k, dtype=np.uint32)]
    start, rounds, extras = _mixing_plan(len(entropy))
    shift = np.uint32(_XSHIFT)
    left, right = np.uint32(_MIX_L), np.uint32(_MIX_R)

    def hashmix(v: np.ndarray, xs: np.ndarray, ms: np.ndarray) -> np.ndarray:  # v: one row or (len(xs), k)
        v = (v ^ xs) * ms
        return v ^ (v >> shift)

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = left * x - right * y
        return r ^ (r >> shift)

    with np.errstate(over="ignore"):  # uint32 arithmetic wraps, as in C
        pool = hashmix(np.stack([entropy[i] if i < len(entropy) else np.zeros(k, dtype=np.uint32) for i in range(_POOL)]), *start)
        for src, (dsts, xs, ms) in enumerate(rounds):  # pool[src] does not change within its round
            pool[dsts] = mix(pool[dsts], hashmix(pool[src], xs, ms))
        for word, (xs, ms) in zip(entropy[_POOL:], extras, strict=True):
            pool = mix(pool, hashmix(word, xs, ms))
        v = (pool[_OUT_ROWS] ^ _OUT_X) * _OUT_M
        out = np.ascontiguousarray((v ^ (v >> shift)).T)
    return out.view(np.uint64)


class _KnownState(np.random.bit_generator.ISpawnableSeedSequence):
    """``SeedSequence(entropy)`` whose PCG64 seeding state is known already; anything else asks the real one."""

    def __init__(self, entropy: list[int], state: np.ndarray):
        self._entropy, self._state = entropy, state
        self._real: np.random.SeedSequence | None = None

    def _seq(self) -> np.random.SeedSequence:
        if self._real is None:
            self._real = np.random.SeedSequence(self._entropy)
        return self._real

    def generate_state(self, n_words: int, dtype: type = np.uint32) -> np.ndarray:
        if n_words == 4 and (dtype is np.uint64 or np.dtype(dtype) == np.uint64):  # PCG64 passes the type itself
            return self._state.copy()
        return self._seq().generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        return self._seq().spawn(n_children)

    # the rest of SeedSequence's interface is the real one's (properties, not __getattr__: a class with __getattr__
    # makes PCG64's construction several times slower)
    entropy = property(lambda self: self._seq().entropy)
    spawn_key = property(lambda self: self._seq().spawn_key)
    pool_size = property(lambda self: self._seq().pool_size)
    n_children_spawned = property(lambda self: self._seq().n_children_spawned)
    pool = property(lambda self: self._seq().pool)
    state = property(lambda self: self._seq().state)


class SubStreams:
    """``np.random.default_rng([seed, i])`` for ``i = 0, 1, 2...``, bit for bit, at a tenth of its cost: the seeding
    states are mixed for a block of ``i`` at a time (:func:`pcg64_states`). For one generator per replica."""

    def __init__(self, seed: int, block: int = 256):  # a block costs about as much for 16 ids as for 256
        self.seed, self.block = int(seed), block
        self._first, self._states = 0, np.zeros((0, 4), dtype=np.uint64)

    def __call__(self, i: int) -> np.random.Generator:
        if not 0 <= i < 2**32:
            return np.random.default_rng([self.seed, i])
        row = i - self._first
        if not 0 <= row < len(self._states):
            self._first, row = i, 0
            self._states = pcg64_states(self.seed, i, min(self.block, 2**32 - i))
        return np.random.Generator(np.random.PCG64(_KnownState([self.seed, i], self._states[row])))


MIN_CV = 1e-6  # below this a distribution is taken as fixed (1/cv**2 would overflow)


def gamma_shape(cv: float) -> float | None:
    """Gamma shape for a coefficient of variation; None when the value is effectively fixed."""
    return None if cv < MIN_CV else 1.0 / (cv * cv)


def gamma_delay(rng: np.random.Generator, mean: float, cv: float) -> float:
    """A delay with the given mean and coefficient of variation (gamma; fixed when cv or mean is 0)."""
    if mean <= 0.0:
        return 0.0
    shape = gamma_shape(cv)
    if shape is None:
        return mean
    return float(rng.gamma(shape, mean / shape))
