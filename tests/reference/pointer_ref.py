"""Float64 NumPy transcription of the PANM pointer equations (never imports panm_jax).

Written from Le et al. 2024 (Plug, Play, and Generalize: Length Extrapolation with
Pointer-Augmented Neural Memory, TMLR): the address bank of §2.2 and Algorithm 1
(lines 3-5), address attention and the soft pointer (Eq. 2-3),
pointer dereference (Mode 1) and relational access (Mode 2, Eq. 5-6), with
literal loops over heads, slots, bits and width.

Conventions taken from the library's documented contract (the paper leaves them
open): rows are slots (``M [L, D]``, ``A [L, A]``); address bits are least
significant first; the softmax runs over the real slots only (``mask[n] != 0``),
padded slots get weight 0 and a row with no real slot is all zeros; an inverse
temperature ``beta`` (scalar or one per head) multiplies the score, ``beta = 1``
being the paper; ``"scaled_dot"`` scores ``q . k / sqrt(D)`` (the authors' code).
"""

from __future__ import annotations

import math

import numpy as np

# ---- address bank (§2.2, Algorithm 1 lines 3-5) --------------------------------


def binary_code(value: int, bits: int) -> list[int]:
    # The b-bit code of value by repeated division by 2: the first remainder is bit 0.
    code = []
    for _ in range(bits):
        code.append(value % 2)
        value //= 2
    return code


def binary_addresses(base: int, length: int, bits: int) -> np.ndarray:
    # for j = 0 .. l(M) - 1: A[j] = (a_B + j) mod 2^b
    rows = []
    for j in range(length):
        rows.append(binary_code((base + j) % 2**bits, bits))
    return np.array(rows, dtype=np.float64)


def end_address(base: int, length: int, bits: int) -> int:
    # a_E = (a_B + l(X) - 1) mod 2^b
    return (base + length - 1) % 2**bits


# ---- scores (inside the softmax of Eq. 2 and Eq. 5) ----------------------------


def cosine(u, v) -> float:
    # u . v / (|u| |v|)
    dot = sum(float(a) * float(b) for a, b in zip(u, v))
    nu = math.sqrt(sum(float(a) ** 2 for a in u))
    nv = math.sqrt(sum(float(b) ** 2 for b in v))
    return dot / (nu * nv)


def scaled_dot(u, v) -> float:
    # u . v / sqrt(D)
    dot = sum(float(a) * float(b) for a, b in zip(u, v))
    return dot / math.sqrt(len(u))


def score_fn(kind: str):
    return {"cosine": cosine, "scaled_dot": scaled_dot}[kind]


def _beta(inverse_temperature, h: int) -> float:
    beta = np.asarray(inverse_temperature, dtype=np.float64)
    return float(beta) if beta.ndim == 0 else float(beta[h])


def masked_softmax(scores, mask, inverse_temperature=1.0) -> np.ndarray:
    # w[h, n] = exp(beta_h S[h, n]) / sum_{m real} exp(beta_h S[h, m]) on real slots, 0 on padding.
    # Each term is multiplied above and below by exp(-beta_h c_h), c_h the real score with the
    # largest beta_h S, so the exponents beta_h (S[h, n] - c_h) are <= 0 and nothing overflows for
    # any finite beta and scores (an exponent below float64's range gives exp = 0, as the true
    # value rounds to). beta_h = 0 is the uniform distribution over the real slots.
    heads, slots = len(scores), len(mask)
    out = np.zeros((heads, slots))
    for h in range(heads):
        beta = _beta(inverse_temperature, h)
        real = [n for n in range(slots) if mask[n] != 0]
        if not real:
            continue  # no real slot: all zeros
        if beta == 0.0:
            for n in real:
                out[h, n] = 1.0 / len(real)
            continue
        values = {n: float(scores[h][n]) for n in real}
        best = max(real, key=lambda n: values[n] if beta > 0 else -values[n])
        terms = {n: math.exp(beta * (values[n] - values[best])) for n in real}
        z = math.fsum(terms.values())
        for n in real:
            out[h, n] = terms[n] / z
    return out


def attention(queries, keys, mask, kind="cosine", inverse_temperature=1.0) -> np.ndarray:
    # S[h, n] = score(q_h, k_n), then the masked softmax over n
    f = score_fn(kind)
    scores = [[f(queries[h], keys[n]) for n in range(len(keys))] for h in range(len(queries))]
    return masked_softmax(scores, mask, inverse_temperature)


# ---- Eq. 2-3 and Mode 1 ---------------------------------------------------------


def address_attention(keys, embedded_addresses, mask, kind="cosine", inverse_temperature=1.0) -> np.ndarray:
    # Eq. 2: w^a_t[n] = softmax_n(beta cos(h^a_t, g^a(A[n])))
    return attention(keys, embedded_addresses, mask, kind, inverse_temperature)


def weighted_rows(weights, rows) -> np.ndarray:
    # out[h] = sum_n w[h, n] rows[n]
    heads, slots, width = len(weights), len(rows), len(rows[0])
    out = np.zeros((heads, width))
    for h in range(heads):
        for n in range(slots):
            for d in range(width):
                out[h, d] += float(weights[h][n]) * float(rows[n][d])
    return out


def pointer_values(weights, addresses) -> np.ndarray:
    # Eq. 3: p^a_t = A w^a_t
    return weighted_rows(weights, addresses)


def dereference(weights, memory) -> np.ndarray:
    # Mode 1: *p^a_t = M w^a_t
    return weighted_rows(weights, memory)


# ---- Mode 2, Eq. 5-6 -----------------------------------------------------------


def relational_access(queries, memory, mask, kind="cosine", inverse_temperature=1.0):
    # Eq. 5: w^c_t[n] = softmax_n(beta cos(q_t, M[n]));  Eq. 6: *p^c_t = M w^c_t
    weights = attention(queries, memory, mask, kind, inverse_temperature)
    return weighted_rows(weights, memory), weights


# ---- training distractors (the library's option; not in the paper) --------------


def bank(base: int, length: int, bits: int) -> set[int]:
    # {(a_B + j) mod 2^b : 0 <= j < l(X)}, the addresses the real slots hold
    return {(base + j) % 2**bits for j in range(length)}


def off_bank(base: int, length: int, bits: int) -> set[int]:
    # the addresses that no real slot holds: all 2^b minus the bank
    return set(range(2**bits)) - bank(base, length, bits)


def one_bit_neighbours(base: int, length: int, bits: int) -> set[int]:
    # every address that differs in exactly one bit from a bank address and is not in the bank
    addresses = bank(base, length, bits)
    out = set()
    for a in addresses:
        for j in range(bits):
            out.add(a ^ (1 << j))
    return out - addresses


def snap(pointer) -> list[float]:
    # each bit to the nearer of 0 and 1 (0.5 goes to 0)
    return [1.0 if float(p) > 0.5 else 0.0 for p in pointer]
