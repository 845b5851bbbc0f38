"""Float64 NumPy transcription of the DNC equations (never imports panm_jax).

Written from seed ``002_44e42d2b9681fe3e.txt`` (section "Differentiable Neural
Computer": "Definitions" and "Addressing") and seed ``003_6adbd108c178b20b.txt``
(interface vector of Table 1, oneplus strengths, read modes backward / content /
forward). Literal loops over slots, heads and time; the allocation uses an explicit
stable sort and a running product; the link a double loop.

States and controls are plain dicts of float64 arrays with the field names of
``panm_jax.kernels.dnc.DNCState`` / ``DNCControls`` (memory [N, W], usage [N],
link [N, N], precedence [N], read_weights [R, N], write_weights [N], reads [R, W]).

Every sum is ``math.fsum`` (correctly rounded, independent of the order of its
terms), so slots that the equations treat alike (e.g. untouched slots of an empty
memory) get bit-identical values and tie exactly in the allocation sort, where the
stable sort then orders them by slot index.

The one liberty taken: the seed's cosine ``D(u, v) = u.v / (|u| |v|)`` is 0/0 when
a vector is zero (e.g. the empty memory); here it is defined as 0 there.
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------- Definitions (seed 002)


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    """D(u, v) = u.v / (|u| |v|); 0 when either vector is zero."""
    nu = math.sqrt(math.fsum(x * x for x in u))
    nv = math.sqrt(math.fsum(x * x for x in v))
    if nu == 0.0 or nv == 0.0:
        return 0.0
    return float(math.fsum(a * b for a, b in zip(u, v)) / (nu * nv))


def content(memory: np.ndarray, key: np.ndarray, beta: float) -> np.ndarray:
    """C(M, k, beta)[i] = exp(D(k, M[i]) beta) / sum_j exp(D(k, M[j]) beta)."""
    n = memory.shape[0]
    scores = [cosine(key, memory[i]) * beta for i in range(n)]
    top = max(scores)  # shift for a stable exp; cancels in the ratio
    e = [math.exp(s - top) for s in scores]
    total = math.fsum(e)
    return np.array([x / total for x in e])


def sigmoid(x):
    """sigma(x) = 1 / (1 + e^-x)."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def oneplus(x):
    """oneplus(x) = 1 + log(1 + e^x)."""
    return 1.0 + np.log1p(np.exp(np.asarray(x, np.float64)))


def softmax(x):
    """softmax(x)_j = e^{x_j} / sum_k e^{x_k} (last axis)."""
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- interface (seed 003)


def interface_size(R: int, W: int) -> int:
    """sq + 5s + 3q + 3 with s = R heads, q = W word size."""
    return R * W + 5 * R + 3 * W + 3


def controls_from_interface(raw: np.ndarray, R: int, W: int) -> dict:
    """Split one raw interface vector [P] in the documented layout and activate it.

    Layout: read keys R*W | read strengths R | write key W | write strength 1 |
    erase W | write vector W | free gates R | allocation gate 1 | write gate 1 |
    read modes 3R (per head: backward, content, forward).
    """
    raw = np.asarray(raw, np.float64)
    assert raw.shape == (interface_size(R, W),)
    pos = 0

    def take(k):
        nonlocal pos
        out = raw[pos : pos + k]
        pos += k
        return out

    read_keys = take(R * W).reshape(R, W)  # k^{r,i}
    read_strengths = oneplus(take(R))  # beta^{r,i} = oneplus(^beta)
    write_key = take(W)  # k^w
    write_strength = oneplus(take(1)[0])  # beta^w
    erase = sigmoid(take(W))  # e = sigma(^e)
    write_vector = take(W)  # v
    free_gates = sigmoid(take(R))  # f^i = sigma(^f^i)
    allocation_gate = sigmoid(take(1)[0])  # g^a = sigma(^g^a)
    write_gate = sigmoid(take(1)[0])  # g^w = sigma(^g^w)
    read_modes = np.stack([softmax(take(3)) for _ in range(R)])  # pi^i = softmax(^pi^i)
    assert pos == raw.shape[0]
    return dict(
        read_keys=read_keys,
        read_strengths=read_strengths,
        write_key=write_key,
        write_strength=float(write_strength),
        erase=erase,
        write_vector=write_vector,
        free_gates=free_gates,
        allocation_gate=float(allocation_gate),
        write_gate=float(write_gate),
        read_modes=read_modes,
    )


# ---------------------------------------------------------------- Addressing (seed 002)


def init_state(N: int, W: int, R: int) -> dict:
    return dict(
        memory=np.zeros((N, W)),
        usage=np.zeros(N),
        link=np.zeros((N, N)),
        precedence=np.zeros(N),
        read_weights=np.zeros((R, N)),
        write_weights=np.zeros(N),
        reads=np.zeros((R, W)),
    )


def allocation(u: np.ndarray) -> np.ndarray:
    """a[phi[j]] = (1 - u[phi[j]]) prod_{i<j} u[phi[i]], phi = ascending sort of u."""
    n = u.shape[0]
    phi = np.argsort(u, kind="stable")  # free list: least used first, ties by slot index
    a = np.zeros(n)
    running = 1.0  # prod_{i=1}^{j-1} u[phi[i]]
    for j in range(n):
        a[phi[j]] = (1.0 - u[phi[j]]) * running
        running *= u[phi[j]]
    return a


def step(state: dict, controls: dict, read_previous_memory: bool = False) -> tuple[dict, np.ndarray]:
    """One DNC step, equation by equation; returns (new_state, reads [R, W])."""
    M_prev = np.asarray(state["memory"], np.float64)
    u_prev = np.asarray(state["usage"], np.float64)
    L_prev = np.asarray(state["link"], np.float64)
    p_prev = np.asarray(state["precedence"], np.float64)
    wr_prev = np.asarray(state["read_weights"], np.float64)
    ww_prev = np.asarray(state["write_weights"], np.float64)
    N, W = M_prev.shape
    R = wr_prev.shape[0]
    c = {k: np.asarray(v, np.float64) for k, v in controls.items()}

    # psi_t = prod_{i=1}^{R} (1 - f^i_t w^{r,i}_{t-1})
    psi = np.ones(N)
    for n in range(N):
        for i in range(R):
            psi[n] *= 1.0 - c["free_gates"][i] * wr_prev[i, n]

    # u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} o w^w_{t-1}) o psi_t
    u = np.zeros(N)
    for n in range(N):
        u[n] = (u_prev[n] + ww_prev[n] - u_prev[n] * ww_prev[n]) * psi[n]

    # c^w_t = C(M_{t-1}, k^w_t, beta^w_t)
    cw = content(M_prev, c["write_key"], float(c["write_strength"]))

    # a_t[phi_t[j]] = (1 - u_t[phi_t[j]]) prod_{i=1}^{j-1} u_t[phi_t[i]]
    a = allocation(u)

    # w^w_t = g^w_t [g^a_t a_t + (1 - g^a_t) c^w_t]
    ga, gw = float(c["allocation_gate"]), float(c["write_gate"])
    ww = np.zeros(N)
    for n in range(N):
        ww[n] = gw * (ga * a[n] + (1.0 - ga) * cw[n])

    # M_t = M_{t-1} o (E - w^w_t e_t^T) + w^w_t v_t^T
    M = np.zeros((N, W))
    for n in range(N):
        for k in range(W):
            M[n, k] = M_prev[n, k] * (1.0 - ww[n] * c["erase"][k]) + ww[n] * c["write_vector"][k]

    # L_t = (1 - I)[(1 - w^w_t[i] - w^w_t[j]) L_{t-1}[i, j] + w^w_t[i] p_{t-1}[j]]
    L = np.zeros((N, N))
    for i in range(N):
        for j in range(N):
            if i != j:
                L[i, j] = (1.0 - ww[i] - ww[j]) * L_prev[i, j] + ww[i] * p_prev[j]

    # p_t = (1 - sum_i w^w_t[i]) p_{t-1} + w^w_t
    total_write = math.fsum(ww[n] for n in range(N))
    p = np.zeros(N)
    for n in range(N):
        p[n] = (1.0 - total_write) * p_prev[n] + ww[n]

    wr = np.zeros((R, N))
    reads = np.zeros((R, W))
    M_content = M_prev if read_previous_memory else M
    for i in range(R):
        # f^i_t = L_t w^{r,i}_{t-1};  b^i_t = L_t^T w^{r,i}_{t-1}
        f = np.zeros(N)
        b = np.zeros(N)
        for n in range(N):
            f[n] = math.fsum(L[n, m] * wr_prev[i, m] for m in range(N))
            b[n] = math.fsum(L[m, n] * wr_prev[i, m] for m in range(N))
        # c^{r,i}_t = C(M, k^{r,i}_t, beta^{r,i}_t)  (M_t by default, M_{t-1} as seed 002 prints)
        cr = content(M_content, c["read_keys"][i], float(c["read_strengths"][i]))
        # w^{r,i}_t = pi[1] b + pi[2] c + pi[3] f   (backward, content, forward)
        pi = c["read_modes"][i]
        for n in range(N):
            wr[i, n] = pi[0] * b[n] + pi[1] * cr[n] + pi[2] * f[n]
        # r^i_t = M_t^T w^{r,i}_t
        for k in range(W):
            reads[i, k] = math.fsum(M[n, k] * wr[i, n] for n in range(N))

    new_state = dict(
        memory=M, usage=u, link=L, precedence=p, read_weights=wr, write_weights=ww, reads=reads
    )
    return new_state, reads


def rollout(state: dict, controls_seq: list[dict], read_previous_memory: bool = False) -> tuple[dict, np.ndarray]:
    """Apply ``step`` over time; returns (final_state, reads [T, R, W])."""
    all_reads = []
    for controls in controls_seq:
        state, reads = step(state, controls, read_previous_memory)
        all_reads.append(reads)
    return state, np.stack(all_reads)
