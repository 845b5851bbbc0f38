"""Float64 NumPy transcription of the NTM equations (never imports panm_jax).

Written from Graves, Wayne & Danihelka 2014 (Neural Turing Machines, §3.1
Reading, Eq. 2; §3.2 Writing, Eq. 3-4; §3.3 Addressing, Eq. 5-9, with the ranges
of the addressing controls that §3.3 requires), and Reina Campo 2022 (MPSoC-NTM documentation, "Turing Machine" chapter, which
restates them under "Definitions", "Reading", "Writing", "Addressing"), with
literal loops over slots, heads and time.

Conventions taken from the library's documented contract (the sources leave them
open): the shift vector ``s`` has odd width ``S`` and ``s[k]`` is the weight of a
shift by ``k - (S - 1) / 2`` slots; several write heads erase multiplicatively
and add additively (Graves et al. 2014, §3.2); in a step the write heads address
and write ``M_{t-1}``, then the read heads address and read ``M_t``; the raw
interface holds the read heads ``[k, beta, g, s, gamma]`` then the write heads
``[k, beta, g, s, gamma, e, a]`` (the library's contract, ``kernels/ntm.py``).
"""

from __future__ import annotations

import math

import numpy as np

# ---- activations into the ranges of Graves et al. 2014, §3.3 ------------------


def softplus(x: float) -> float:
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)  # log(1 + e^x), overflow-safe


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def softmax(xs) -> np.ndarray:
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    z = sum(e)
    return np.array([v / z for v in e])


# ---- addressing (Graves et al. 2014, §3.3, Eq. 5-9) ---------------------------


def cosine(u, v) -> float:
    # D(u, v) = u . v / (|u| |v|)
    dot = sum(float(a) * float(b) for a, b in zip(u, v))
    nu = math.sqrt(sum(float(a) ** 2 for a in u))
    nv = math.sqrt(sum(float(b) ** 2 for b in v))
    return dot / (nu * nv)


def content_weights(memory, key, beta) -> np.ndarray:
    # w_c[i] = exp(beta D(k, M[i])) / sum_j exp(beta D(k, M[j]))
    n = len(memory)
    scores = [beta * cosine(key, memory[i]) for i in range(n)]
    return softmax(scores)


def interpolate(w_c, w_prev, g) -> np.ndarray:
    # w_g = g w_c + (1 - g) w_prev
    return np.array([g * w_c[i] + (1.0 - g) * w_prev[i] for i in range(len(w_c))])


def circular_shift(w_g, s) -> np.ndarray:
    # w~[i] = sum_j w_g[j] s[i - j]  (indices mod N): the weight at slot j moves
    # to slot j + (k - c) with probability s[k], c = (S - 1) / 2.
    n, width = len(w_g), len(s)
    c = (width - 1) // 2
    out = np.zeros(n)
    for j in range(n):
        for k in range(width):
            i = (j + (k - c)) % n
            out[i] += w_g[j] * s[k]
    return out


def sharpen(w_tilde, gamma) -> np.ndarray:
    # w[i] = w~[i]^gamma / sum_j w~[j]^gamma
    powered = [float(v) ** gamma for v in w_tilde]
    z = sum(powered)
    return np.array([p / z for p in powered])


def address(memory, w_prev, key, beta, g, s, gamma) -> np.ndarray:
    w_c = content_weights(memory, key, beta)
    w_g = interpolate(w_c, w_prev, g)
    w_tilde = circular_shift(w_g, s)
    return sharpen(w_tilde, gamma)


# ---- memory access (Graves et al. 2014, §3.1-3.2, Eq. 2-4) ---------------------


def read(memory, w) -> np.ndarray:
    # r = sum_i w(i) M(i)
    n, width = memory.shape
    r = np.zeros(width)
    for i in range(n):
        r += w[i] * memory[i]
    return r


def write(memory, weights, erases, adds) -> np.ndarray:
    # M~(i) = M(i) [1 - w(i) e]   for each write head in turn (erasures commute)
    # M(i)  = M~(i) + w(i) a      summed over write heads
    m = np.array(memory, dtype=np.float64)
    n = m.shape[0]
    for h in range(len(weights)):
        for i in range(n):
            m[i] = m[i] * (1.0 - weights[h][i] * erases[h])
    for h in range(len(weights)):
        for i in range(n):
            m[i] = m[i] + weights[h][i] * adds[h]
    return m


# ---- interface (the library's layout of the raw controls) ----------------------


def split_interface(raw, word, num_reads, num_writes, shift_width):
    """Returns (read_heads, write_heads): lists of dicts of activated values."""
    pos = 0

    def take(count):
        nonlocal pos
        out = np.array(raw[pos : pos + count], dtype=np.float64)
        pos += count
        return out

    def head():
        return {
            "key": take(word),
            "beta": softplus(float(take(1)[0])),
            "g": sigmoid(float(take(1)[0])),
            "s": softmax(list(take(shift_width))),
            "gamma": 1.0 + softplus(float(take(1)[0])),
        }

    reads = [head() for _ in range(num_reads)]
    writes = []
    for _ in range(num_writes):
        hd = head()
        hd["e"] = np.array([sigmoid(float(v)) for v in take(word)])
        hd["a"] = take(word)
        writes.append(hd)
    assert pos == len(raw), (pos, len(raw))
    return reads, writes


def step(memory, read_w, write_w, raw, word, shift_width):
    """One step; returns (memory, read_weights, write_weights, reads)."""
    num_reads, num_writes = len(read_w), len(write_w)
    rh, wh = split_interface(raw, word, num_reads, num_writes, shift_width)
    new_write_w = [
        address(memory, write_w[h], wh[h]["key"], wh[h]["beta"], wh[h]["g"], wh[h]["s"], wh[h]["gamma"])
        for h in range(num_writes)
    ]
    new_memory = write(memory, new_write_w, [w["e"] for w in wh], [w["a"] for w in wh])
    new_read_w = [
        address(new_memory, read_w[r], rh[r]["key"], rh[r]["beta"], rh[r]["g"], rh[r]["s"], rh[r]["gamma"])
        for r in range(num_reads)
    ]
    reads = [read(new_memory, new_read_w[r]) for r in range(num_reads)]
    return new_memory, np.array(new_read_w), np.array(new_write_w), np.array(reads)


def rollout(memory, read_w, write_w, raws, word, shift_width):
    """Runs ``step`` over ``raws [T, P]``; returns the final state and reads [T, R, W]."""
    all_reads = []
    for t in range(len(raws)):
        memory, read_w, write_w, reads = step(memory, read_w, write_w, raws[t], word, shift_width)
        all_reads.append(reads)
    return memory, read_w, write_w, np.array(all_reads)
