"""Float64 NumPy transcription of the neural Stack, Queue and DeQue (never imports panm_jax).

Written from Grefenstette et al. 2015 (Learning to Transduce with Unbounded
Memory, NeurIPS 2015: §3.1 Neural Stack, Eq. 1-3; §3.2 Neural Queue, Eq. 4-5;
§3.3 the DeQue, Eq. 6-11). Each operation is the PROSE of the paper, one slot at a time:

  "We traverse the strength vector s_{t-1} from the highest index to the lowest.
  If the next strength scalar is less than the remaining deletion quantity, it is
  subtracted from the remaining quantity and its value is set to 0. If the
  remaining deletion quantity is less than the next strength scalar, the
  remaining deletion quantity is subtracted from that scalar and deletion stops.
  Next, the push value is set as the strength for the value added in the current
  timestep." (pop and push, §3.1)

  "A fixed initial read quantity of 1 is set at the top of a temporary copy of the
  strength vector s_t which is traversed from the highest index to the lowest. If
  the next strength scalar is smaller than the remaining read quantity, its value
  is preserved for this operation and subtracted from the remaining read
  quantity. If not, it is temporarily set to the remaining read quantity, and the
  strength scalars of all lower indices are temporarily set to 0." (read, §3.1)

  The Queue "operates the same way ... with the exception that the pop operation
  reads the lowest index of the strength vector" (§3.2): pop and read traverse
  from the lowest index up.

  The DeQue pops the top (highest index down) then the bottom (lowest index up),
  appends the new top value above the current top and the new bottom value below
  the current bottom, and reads at both ends.

``V`` and ``s`` grow by a row per step, as the paper's ``V_t`` (``t x m``) and
``s_t`` (length ``t``): lists of float64 rows, no preallocation.
"""

from __future__ import annotations

import numpy as np

# ---- traversals (one slot at a time) -----------------------------------------


def pop_from_top(s: list[float], u: float) -> list[float]:
    """Eq. 2 (first case) as the §3.1 prose: delete ``u`` from the highest index down."""
    s = list(s)
    remaining = float(u)  # the initial deletion quantity u_t
    for i in range(len(s) - 1, -1, -1):  # highest index to lowest
        if remaining <= 0.0:
            break  # deletion has stopped
        if s[i] < remaining:  # the strength is less than the remaining quantity:
            remaining -= s[i]  #   subtract it from the remaining quantity
            s[i] = 0.0  #   and set it to 0
        else:  # the remaining quantity is less than the strength:
            s[i] -= remaining  #   subtract the remaining quantity from it
            remaining = 0.0  #   and stop
    return s


def pop_from_bottom(s: list[float], u: float) -> list[float]:
    """Eq. 4 (first case) as the §3.2 prose: delete ``u`` from the lowest index up."""
    s = list(s)
    remaining = float(u)
    for i in range(len(s)):  # lowest index to highest
        if remaining <= 0.0:
            break
        if s[i] < remaining:
            remaining -= s[i]
            s[i] = 0.0
        else:
            s[i] -= remaining
            remaining = 0.0
    return s


def read_weights_from_top(s: list[float]) -> list[float]:
    """The temporary scalars of Eq. 3 as the §3.1 prose: a read quantity of 1 from the top down."""
    w = [0.0] * len(s)  # lower indices stay "temporarily set to 0"
    remaining = 1.0  # a fixed initial read quantity of 1
    for i in range(len(s) - 1, -1, -1):  # highest index to lowest
        if s[i] < remaining:  # smaller than the remaining quantity:
            w[i] = s[i]  #   preserved
            remaining -= s[i]  #   and subtracted from the remaining quantity
        else:  # not smaller:
            w[i] = remaining  #   set to the remaining quantity
            break  #   all lower indices are 0
    return w


def read_weights_from_bottom(s: list[float]) -> list[float]:
    """The temporary scalars of Eq. 5: a read quantity of 1 from the lowest index up."""
    w = [0.0] * len(s)
    remaining = 1.0
    for i in range(len(s)):  # lowest index to highest
        if s[i] < remaining:
            w[i] = s[i]
            remaining -= s[i]
        else:
            w[i] = remaining
            break
    return w


def weighted_rows(V: list[np.ndarray], w: list[float], width: int) -> np.ndarray:
    """``r = sum_i w[i] V[i]`` (the weighted sum of rows of Eq. 3 and 5)."""
    r = np.zeros(width, np.float64)
    for i in range(len(V)):
        r += w[i] * V[i]
    return r


# ---- one step of each structure ----------------------------------------------


def stack_step(V, s, d, u, v):
    """Pop (Eq. 2) -> push (Eq. 1, Eq. 2 second case) -> read (Eq. 3). Returns (V, s, r, w)."""
    s = pop_from_top(s, u)  # s_t[1..t-1] from s_{t-1}
    V = V + [np.asarray(v, np.float64)]  # V_t[t] = v_t, earlier rows unchanged
    s = s + [float(d)]  # s_t[t] = d_t
    w = read_weights_from_top(s)
    return V, s, weighted_rows(V, w, len(v)), w


def queue_step(V, s, d, u, v):
    """Pop (Eq. 4) -> push (Eq. 1, Eq. 4 second case) -> read (Eq. 5). Returns (V, s, r, w)."""
    s = pop_from_bottom(s, u)
    V = V + [np.asarray(v, np.float64)]
    s = s + [float(d)]
    w = read_weights_from_bottom(s)
    return V, s, weighted_rows(V, w, len(v)), w


def deque_step(V, s, d_top, u_top, v_top, d_bot, u_bot, v_bot):
    """Pop top then bottom (Eq. 7-8) -> push both ends (Eq. 6, 9) -> read both (Eq. 10-11).

    Returns (V, s, r_top, r_bot).
    """
    s = pop_from_top(s, u_top)  # s^top_t
    s = pop_from_bottom(s, u_bot)  # s^both_t
    V = [np.asarray(v_bot, np.float64)] + V + [np.asarray(v_top, np.float64)]  # below the bottom, above the top
    s = [float(d_bot)] + s + [float(d_top)]
    r_top = weighted_rows(V, read_weights_from_top(s), len(v_top))
    r_bot = weighted_rows(V, read_weights_from_bottom(s), len(v_bot))
    return V, s, r_top, r_bot


# ---- rollouts -----------------------------------------------------------------


def rollout(step, d, u, v):
    """Run a Stack or Queue ``step`` over ``T`` steps from the empty structure.

    Args: ``d [T]``, ``u [T]``, ``v [T, W]``. Returns a list of ``(V_t, s_t, r_t)``.
    """
    V, s, out = [], [], []
    for t in range(len(d)):
        V, s, r, _ = step(V, s, float(d[t]), float(u[t]), np.asarray(v[t], np.float64))
        out.append((np.array(V), np.array(s), r))
    return out


def deque_rollout(d_top, u_top, v_top, d_bot, u_bot, v_bot):
    """Run the DeQue over ``T`` steps; a list of ``(V_t [2t, W], s_t [2t], r_top, r_bot)``."""
    V, s, out = [], [], []
    for t in range(len(d_top)):
        V, s, r_top, r_bot = deque_step(
            V, s, float(d_top[t]), float(u_top[t]), v_top[t], float(d_bot[t]), float(u_bot[t]), v_bot[t]
        )
        out.append((np.array(V), np.array(s), r_top, r_bot))
    return out
