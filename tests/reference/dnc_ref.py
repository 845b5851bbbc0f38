"""Float64 NumPy transcription of the DNC equations (never imports panm_jax).

Written from Graves et al. 2016, "Hybrid computing using a neural network with
dynamic external memory", Nature 538 (Methods: "Reading and writing to memory",
"Content-based addressing", "Dynamic memory allocation", "Temporal memory
linkage", interface vector), with ``H`` write heads as DeepMind's ``dnc`` extends
it (github.com/deepmind/dnc): the usage aggregates the heads' previous write
weights as ``1 - prod_h (1 - w_h)``; head ``h`` allocates from the usage that heads
``1..h-1`` would leave (``u <- u + (1 - u) g^a_h g^w_h a_h``); the memory write
multiplies every head's erase and adds every head's vector; each head has its own
link and precedence; every (read head, write head) pair has a backward and a
forward weighting; each read head has ``2H + 1`` modes, ordered
``(backward_1..H, content, forward_1..H)``. The interface vector can be read in two
layouts: Graves et al. 2016's order (read modes last) and the reading-comprehension
DNC paper's supplementary Table 1 (read modes after the read strengths). Literal
loops over slots, heads and time; the allocation uses an explicit stable sort and
a running product; the link a double loop.

States and controls are plain dicts of float64 arrays with the field names of
``panm_jax.kernels.dnc.DNCState`` / ``DNCControls`` (memory [N, W], usage [N],
link [H, N, N], precedence [H, N], read_weights [R, N], write_weights [H, N],
reads [R, W]; write_key [H, W], write_strength [H], erase [H, W],
write_vector [H, W], allocation_gate [H], write_gate [H], read_modes [R, 2H + 1]).

Every sum is ``math.fsum`` (correctly rounded, independent of the order of its
terms), so slots that the equations treat alike (e.g. untouched slots of an empty
memory) get bit-identical values and tie exactly in the allocation sort, where the
stable sort then orders them by slot index.

The one liberty taken: the cosine ``D(u, v) = u.v / (|u| |v|)`` is 0/0 when a
vector is zero (e.g. the empty memory); here it is defined as 0 there.
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------- Definitions


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


# ---------------------------------------------------------------- interface vector


def interface_size(R: int, W: int, H: int = 1) -> int:
    """The sum of the field lengths below; for H = 1 the paper's W R + 3 W + 5 R + 3."""
    return R * W + R + H * W + H + H * W + H * W + R + H + H + R * (2 * H + 1)


# Graves et al. 2016: xi = [k^r; beta^r; k^w; beta^w; e; v; f; g^a; g^w; pi].
GRAVES2016 = (
    "read_keys",
    "read_strengths",
    "write_key",
    "write_strength",
    "erase",
    "write_vector",
    "free_gates",
    "allocation_gate",
    "write_gate",
    "read_modes",
)
# Reading-comprehension DNC paper, supplementary Table 1: read keys, read strengths,
# read modes, write key, write strength, erase vector, write vector, free gates,
# allocation gate, write gate.
TABLE1 = (
    "read_keys",
    "read_strengths",
    "read_modes",
    "write_key",
    "write_strength",
    "erase",
    "write_vector",
    "free_gates",
    "allocation_gate",
    "write_gate",
)


def controls_from_interface(raw: np.ndarray, R: int, W: int, H: int = 1, layout: str = "graves2016") -> dict:
    """Split one raw interface vector [P] in the named layout and activate it.

    Per field: read keys R x W (identity) | read strengths R (oneplus) | write keys
    H x W (identity) | write strengths H (oneplus) | erase H x W (sigmoid) | write
    vectors H x W (identity) | free gates R (sigmoid) | allocation gates H
    (sigmoid) | write gates H (sigmoid) | read modes R x (2H + 1) (softmax per read
    head; per head: backward_1..H, content, forward_1..H). Heads are consecutive.
    """
    order = {"graves2016": GRAVES2016, "table1": TABLE1}[layout]
    raw = np.asarray(raw, np.float64)
    assert raw.shape == (interface_size(R, W, H),)
    pos = 0

    def take(k):
        nonlocal pos
        out = raw[pos : pos + k]
        pos += k
        return out

    out = {}
    for name in order:
        if name == "read_keys":  # k^{r,i}
            out[name] = np.stack([take(W) for _ in range(R)])
        elif name == "read_strengths":  # beta^{r,i} = oneplus(^beta)
            out[name] = oneplus(take(R))
        elif name == "write_key":  # k^{w,h}
            out[name] = np.stack([take(W) for _ in range(H)])
        elif name == "write_strength":  # beta^{w,h}
            out[name] = oneplus(take(H))
        elif name == "erase":  # e^h = sigma(^e^h)
            out[name] = np.stack([sigmoid(take(W)) for _ in range(H)])
        elif name == "write_vector":  # v^h
            out[name] = np.stack([take(W) for _ in range(H)])
        elif name == "free_gates":  # f^i = sigma(^f^i)
            out[name] = sigmoid(take(R))
        elif name == "allocation_gate":  # g^{a,h}
            out[name] = sigmoid(take(H))
        elif name == "write_gate":  # g^{w,h}
            out[name] = sigmoid(take(H))
        elif name == "read_modes":  # pi^i = softmax(^pi^i)
            out[name] = np.stack([softmax(take(2 * H + 1)) for _ in range(R)])
    assert pos == raw.shape[0]
    return out


# ---------------------------------------------------------------- addressing


def init_state(N: int, W: int, R: int, H: int = 1) -> dict:
    return dict(
        memory=np.zeros((N, W)),
        usage=np.zeros(N),
        link=np.zeros((H, N, N)),
        precedence=np.zeros((H, N)),
        read_weights=np.zeros((R, N)),
        write_weights=np.zeros((H, N)),
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
    H = ww_prev.shape[0]
    c = {k: np.asarray(v, np.float64) for k, v in controls.items()}

    # psi_t = prod_{i=1}^{R} (1 - f^i_t w^{r,i}_{t-1})
    psi = np.ones(N)
    for n in range(N):
        for i in range(R):
            psi[n] *= 1.0 - c["free_gates"][i] * wr_prev[i, n]

    # w_{t-1} = 1 - prod_h (1 - w^{w,h}_{t-1});  u_t = (u_{t-1} + w_{t-1} - u_{t-1} o w_{t-1}) o psi_t
    u = np.zeros(N)
    for n in range(N):
        kept = 1.0
        for h in range(H):
            kept *= 1.0 - ww_prev[h, n]
        w_all = 1.0 - kept
        u[n] = (u_prev[n] + w_all - u_prev[n] * w_all) * psi[n]

    # c^{w,h}_t = C(M_{t-1}, k^{w,h}_t, beta^{w,h}_t)
    cw = np.stack([content(M_prev, c["write_key"][h], float(c["write_strength"][h])) for h in range(H)])

    # a^h_t = allocation(u), then u <- u + (1 - u) g^{a,h} g^{w,h} a^h_t for the next head
    a = np.zeros((H, N))
    u_sim = u.copy()
    for h in range(H):
        a[h] = allocation(u_sim)
        for n in range(N):
            u_sim[n] = u_sim[n] + (1.0 - u_sim[n]) * c["allocation_gate"][h] * c["write_gate"][h] * a[h, n]

    # w^{w,h}_t = g^{w,h} [g^{a,h} a^h_t + (1 - g^{a,h}) c^{w,h}_t]
    ww = np.zeros((H, N))
    for h in range(H):
        ga, gw = c["allocation_gate"][h], c["write_gate"][h]
        for n in range(N):
            ww[h, n] = gw * (ga * a[h, n] + (1.0 - ga) * cw[h, n])

    # M_t = M_{t-1} o prod_h (E - w^{w,h}_t e_h^T) + sum_h w^{w,h}_t v_h^T
    M = np.zeros((N, W))
    for n in range(N):
        for k in range(W):
            kept = 1.0
            for h in range(H):
                kept *= 1.0 - ww[h, n] * c["erase"][h, k]
            M[n, k] = M_prev[n, k] * kept + math.fsum(ww[h, n] * c["write_vector"][h, k] for h in range(H))

    # Per write head h:
    # L^h_t = (1 - I)[(1 - w^{w,h}_t[i] - w^{w,h}_t[j]) L^h_{t-1}[i, j] + w^{w,h}_t[i] p^h_{t-1}[j]]
    # p^h_t = (1 - sum_i w^{w,h}_t[i]) p^h_{t-1} + w^{w,h}_t
    L = np.zeros((H, N, N))
    p = np.zeros((H, N))
    for h in range(H):
        for i in range(N):
            for j in range(N):
                if i != j:
                    L[h, i, j] = (1.0 - ww[h, i] - ww[h, j]) * L_prev[h, i, j] + ww[h, i] * p_prev[h, j]
        total_write = math.fsum(ww[h, n] for n in range(N))
        for n in range(N):
            p[h, n] = (1.0 - total_write) * p_prev[h, n] + ww[h, n]

    wr = np.zeros((R, N))
    reads = np.zeros((R, W))
    M_content = M_prev if read_previous_memory else M
    for i in range(R):
        # f^{i,h}_t = L^h_t w^{r,i}_{t-1};  b^{i,h}_t = (L^h_t)^T w^{r,i}_{t-1}
        f = np.zeros((H, N))
        b = np.zeros((H, N))
        for h in range(H):
            for n in range(N):
                f[h, n] = math.fsum(L[h, n, m] * wr_prev[i, m] for m in range(N))
                b[h, n] = math.fsum(L[h, m, n] * wr_prev[i, m] for m in range(N))
        # c^{r,i}_t = C(M, k^{r,i}_t, beta^{r,i}_t)  (M_t by default, M_{t-1} with read_previous_memory)
        cr = content(M_content, c["read_keys"][i], float(c["read_strengths"][i]))
        # w^{r,i}_t = sum_h pi[h] b^h + pi[H] c + sum_h pi[H + 1 + h] f^h
        pi = c["read_modes"][i]
        for n in range(N):
            terms = [pi[h] * b[h, n] for h in range(H)] + [pi[H] * cr[n]]
            terms += [pi[H + 1 + h] * f[h, n] for h in range(H)]
            wr[i, n] = math.fsum(terms)
        # r^i_t = M_t^T w^{r,i}_t
        for k in range(W):
            reads[i, k] = math.fsum(M[n, k] * wr[i, n] for n in range(N))

    new_state = dict(memory=M, usage=u, link=L, precedence=p, read_weights=wr, write_weights=ww, reads=reads)
    return new_state, reads


def rollout(state: dict, controls_seq: list[dict], read_previous_memory: bool = False) -> tuple[dict, np.ndarray]:
    """Apply ``step`` over time; returns (final_state, reads [T, R, W])."""
    all_reads = []
    for controls in controls_seq:
        state, reads = step(state, controls, read_previous_memory)
        all_reads.append(reads)
    return state, np.stack(all_reads)
