"""The SRNN of Suzgun et al. 2019, and PANM with the SRNN as its controller (Le et al. 2024, §3.2).

**SRNN** (``srnn``). The Stack-RNN with a softmax decision gate of Suzgun, Gehrmann, Belinkov &
Shieber 2019, "Memory-Augmented Recurrent Neural Networks Can Learn Generalized Dyck Languages"
(arXiv:1911.03329): an Elman RNN whose hidden state reads the top of a stack of ``S`` cells of
width ``W`` (``kernels.srnn``)::

    h~_{t-1} = h_{t-1} + W_sh s_{t-1}[0]                the previous top cell joins the hidden state
    h_t      = tanh(W_ih x_t + b_ih + W_hh h~_{t-1} + b_hh)
    y_t      = sigmoid(W_y h_t + b_y)                   the multi-hot output (one sigmoid per bracket)
    a_t      = softmax(W_a h_t + b_a)                   (push, pop)
    n_t      = sigmoid(W_n h_t + b_n)                   the element to push
    s_t      = a_push [n_t; s_{t-1}[:-1]] + a_pop [s_{t-1}[1:]; 0]      (kernels.srnn)

with ``h_0 = 0`` and an empty (all-zero) stack. The model returns the logits ``W_y h_t + b_y``; the
sigmoid is the task's (Dyck's loss is sigmoid cross-entropy, or with its option ``loss = "mse"``
the mean squared error of the sigmoids; its metrics threshold the sigmoid at 0.5). Defaults are
Suzgun et al.'s code's (``n_hidden = 8``, ``memory_size = 104``, ``memory_dim = 5``). ``W_sh``
has a bias, as in their code; ``W_a`` and ``W_n`` are one linear map to the kernel's raw interface
``[a-logits; n pre-activation]``. Initialisation is this library's (``nnx.Linear``: LeCun normal,
zero biases), not PyTorch's.

**PANM on the SRNN** (``panm_srnn``). Le et al. 2024 (Plug, Play, and Generalize: Length
Extrapolation with Pointer-Augmented Neural Memory, TMLR), §3.2: "we do not need to use any
encoder, i.e., raw input tokens are stored in M", M is masked "to ensure the decoder only see
tokens up to the current decoding step", and SRNN is the decoder, so that "the only difference is
that PANM has Pointer-Based Memory Access". Per step ``t`` (0-based)::

    M[n]      = E x_n                                   raw token embeddings, one slot per input step
    m_t       = causal_mask(mask, t)                    the real slots n <= t (kernels.pointer)
    h^a_t     = GRU_h(p^a_{t-1}, h^a_{t-1})             Eq. 1
    w^a_t     = softmax_{n: m_t}(tau_a cos(h^a_t, g^a(A[n])));  p^a_t = A w^a_t;  *p^a_t = M w^a_t
    q_t       = g^c([*p^a_t]);  w^c_t = softmax_{n: m_t}(tau_c cos(q_t, M[n]));  *p^c_t = M w^c_t
    SRNN step on u_t = [x_t; *p^a_t; *p^c_t]            the controller (Eq. 7's role)
    y_t       = sigmoid(W_y [h_t; *p^a_t; *p^c_t] + b_y)        the output (g^o's role)

Eq. 1-6 are ``modules.panm.PANMDecoder``'s ``point`` and ``read``, called with a context whose
mask and candidates are ``m_t``; so the pointer, Mode 1 and Mode 2 read the prefix alone and step
``t``'s output depends on ``x_0 .. x_t`` only (``tests/models/test_srnn.py``). Choices where the
paper is silent: ``E`` is a learned linear map (the memory's width is the Pointer Units' ``D``);
every Pointer Unit starts at the base address ``a_B`` (the end address ``a_E`` of App. C would
reveal the length of the string, and at ``t = 0`` the prefix ends at ``a_B``); the SRNN reads the
pointer values as extra input and the output layer reads them as PANM's ``g^o`` does; there is no
``h^c_0 = sum_i M[i]`` (it would read the future): the SRNN starts from zero.

**The other reading** (``panm_srnn`` with ``reading = "encoder"``). Le et al. 2024 describe the
setup a second time, differently (App. D.2): "PANM adopts SRNN (an auto-regressive model) as the
encoder and does not stack the Controller on any decoder models", with ``z_t = y^_{t-1}``. Read
so: the SRNN runs over the input, its hidden states fill the memory, and PANM's own Controller GRU
(Eq. 7) and ``g^o`` make the outputs, the causal mask as above::

    h_n       = SRNN(x_0 .. x_n)                        the SRNN (its own sizes), no output layer
    M[n]      = E h_n                                   E a learned linear map to D
    h^a_t, w^a_t, p^a_t, *p^a_t, q_t, w^c_t, *p^c_t     Eq. 1-6 over m_t, as above
    h^c_t     = GRU_c([*p^a_t; *p^c_t; z_t], h^c_{t-1})     Eq. 7, z_t = x_t (the token the step reads)
    y_t       = sigmoid(g^o([*p^a_t; *p^c_t; h^c_t]))

Choices where the paper is silent: ``z_t`` is the token read at step ``t`` (the "previous output"
of an autoregressive model is the symbol it is given next, teacher-forced); ``h^c_0 = 0`` (not
``sum_i M[i]``, which would read the future); the pointers start at ``a_B`` as above. The default
``reading = "decoder"`` is the §3.2 model above, unchanged.

Both models have the aligned mode (one output per input step, Dyck) and the after-input mode (read
the input, then emit ``num_outputs`` outputs on blank, zero-input steps). On an input padding step
(``input_mask == 0``) every state is carried unchanged and the output is zeros.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from panm_jax import checks
from panm_jax.errors import UserError
from panm_jax.kernels import pointer, srnn
from panm_jax.kernels.scan import scan
from panm_jax.models.registry import prepare_inputs
from panm_jax.modules.panm import DecoderCarry as PANMCarry
from panm_jax.modules.panm import DecoderConfig, DecoderContext, PANMDecoder
from panm_jax.options import check_options, option

__all__ = ["PANMSRNN", "PANMSRNNConfig", "SRNN", "SRNNCell", "SRNNConfig", "SRNNTrace"]


@dataclasses.dataclass(frozen=True)
class SRNNConfig:
    """The SRNN's sizes (defaults: Suzgun et al. 2019's public code). Checked when made."""

    hidden: int = option(8, checks.positive_int, doc="the Elman RNN's width (their n_hidden)")
    stack_depth: int = option(104, checks.positive_int, doc="S, cells of the stack (their memory_size)")
    stack_width: int = option(5, checks.positive_int, doc="W, width of a cell (their memory_dim)")

    def __post_init__(self):
        check_options(self)


@dataclasses.dataclass(frozen=True)
class PANMSRNNConfig(DecoderConfig):
    """PANM's pointer access (``DecoderConfig``) with the SRNN as controller (module docstring).

    ``hidden`` is ``D``, the width of the token embeddings in ``M`` and of the Pointer Units; the
    SRNN's own sizes are ``srnn_hidden``, ``stack_depth``, ``stack_width``.
    """

    hidden: int = option(32, checks.positive_int, doc="D (our choice: a small model for Dyck's 4-6 tokens)")
    mlp_hidden: int = option(32, checks.positive_int, doc="width of g^a and g^c (our choice)")
    srnn_hidden: int = option(8, checks.positive_int, doc="the SRNN's width (Suzgun et al.'s code)")
    stack_depth: int = option(104, checks.positive_int, doc="S (Suzgun et al.'s code)")
    stack_width: int = option(5, checks.positive_int, doc="W (Suzgun et al.'s code)")
    reading: str = option(
        "decoder",
        checks.one_of,
        ("decoder", "encoder"),
        doc='"decoder": §3.2 (tokens in M, the SRNN as controller); "encoder": App. D.2 (module docstring)',
    )


class SRNNTrace(NamedTuple):
    """Per-step traces of the SRNN's stack (``[B, T, ...]``; a padded step's are zeros)."""

    stack: jax.Array  # [B, T, S, W] s_t
    actions: jax.Array  # [B, T, 2] a_t = (push, pop)


class SRNNCell(nnx.Module):
    """One SRNN step (module docstring): ``(h_{t-1}, s_{t-1}), u_t -> (h_t, s_t)``, batched.

    Call: ``(carry (h [B, H], srnn.State [B, S, W]), u [B, I], mask [B]) -> (carry, (h_t [B, H],
    a_t [B, 2]))``; where ``mask`` is false the carry is returned unchanged.
    """

    def __init__(self, in_features: int, hidden: int, depth: int, width: int, *, rngs: nnx.Rngs):
        self.hidden, self.depth, self.width = hidden, depth, width
        self.input = nnx.Linear(in_features, hidden, rngs=rngs)  # W_ih, b_ih
        self.recurrent = nnx.Linear(hidden, hidden, rngs=rngs)  # W_hh, b_hh
        self.stack_to_hidden = nnx.Linear(width, hidden, rngs=rngs)  # W_sh (with a bias, as their code)
        self.interface = nnx.Linear(hidden, srnn.interface_size(width), rngs=rngs)  # [W_a; W_n]

    def init_carry(self, batch: int, dtype) -> tuple[jax.Array, srnn.State]:
        """``h_0 = 0`` and an empty stack, for ``batch`` examples."""
        return jnp.zeros((batch, self.hidden), dtype), srnn.init_state(
            self.depth, self.width, dtype, batch_shape=(batch,)
        )

    def __call__(self, carry, u: jax.Array, mask: jax.Array):
        h, state = carry
        h_bar = h + self.stack_to_hidden(srnn.read_top(state))  # h~_{t-1}
        h_new = jnp.tanh(self.input(u) + self.recurrent(h_bar))
        controls = srnn.controls_from_interface(self.interface(h_new), self.width)
        state, _ = srnn.step(state, controls, mask)  # the kernel keeps a masked example's stack
        h_new = jnp.where(mask[:, None], h_new, h)
        return (h_new, state), (h_new, controls.actions)


def _steps(inputs: jax.Array, mask: jax.Array, num_outputs: int, aligned: bool):
    """``(x [T, B, I], mask [T, B])``: the input steps, then (not aligned) ``num_outputs`` blank ones."""
    if not aligned:
        b, _, i = inputs.shape
        inputs = jnp.concatenate([inputs, jnp.zeros((b, num_outputs, i), inputs.dtype)], axis=1)
        mask = jnp.concatenate([mask, jnp.ones((b, num_outputs), bool)], axis=1)
    return jnp.swapaxes(inputs, 0, 1), jnp.swapaxes(mask, 0, 1)


def _outputs(logits: jax.Array, mask: jax.Array, num_outputs: int) -> jax.Array:
    """``[T, B, K]`` per-step logits -> ``[B, T_out, K]``: zeros on padded steps, the last ``T_out``."""
    logits = jnp.where(mask[..., None], logits, 0)
    return jnp.swapaxes(logits, 0, 1)[:, -num_outputs:]


class SRNN(nnx.Module):
    """The SRNN of Suzgun et al. 2019 behind the one model interface (``models.registry``)."""

    def __init__(self, config: SRNNConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        self.config, self.input_size = config, input_size
        self.cell = SRNNCell(input_size, config.hidden, config.stack_depth, config.stack_width, rngs=rngs)
        self.output = nnx.Linear(config.hidden, output_size, rngs=rngs)  # W_y, b_y

    def __call__(self, inputs, input_mask, num_outputs, *, aligned=False, train=False, key=None, return_traces=False):
        del train, key  # nothing random
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size, aligned=aligned)
        xs, mask = _steps(inputs, input_mask, num_outputs, aligned)

        def step(carry, x):
            x_t, m_t = x
            carry, (h, actions) = self.cell(carry, x_t, m_t)
            return carry, (self.output(h), carry[1].stack, actions)

        _, (logits, stacks, actions) = scan(step, self.cell.init_carry(inputs.shape[0], inputs.dtype), (xs, mask))
        logits = _outputs(logits, mask, num_outputs)
        if not return_traces:
            return logits
        return logits, _trace(stacks, actions, mask)


def _trace(stacks, actions, mask) -> SRNNTrace:
    keep = jnp.swapaxes(mask, 0, 1)  # [B, T]
    stacks, actions = jnp.swapaxes(stacks, 0, 1), jnp.swapaxes(actions, 0, 1)
    return SRNNTrace(jnp.where(keep[..., None, None], stacks, 0), jnp.where(keep[..., None], actions, 0))


class _Carry(NamedTuple):
    """PANM-on-SRNN's state between steps."""

    pu_hidden: jax.Array  # [B, H^a, D] h^a_t
    pointers: jax.Array  # [B, H^a, A] p^a_t
    srnn: tuple[jax.Array, srnn.State]  # (h_t [B, H], s_t [B, S, W])


class CausalSRNNDecoder(PANMDecoder):
    """The decoder-only PANM of §3.2: Eq. 1-6 over the causal prefix, the SRNN as controller.

    Reuses ``PANMDecoder``'s address bank, Pointer Units, ``g^a``, ``g^c``, temperatures, ``point``
    and ``read``; replaces the Controller GRU and ``g^o`` by the SRNN and its output layer.
    """

    config: PANMSRNNConfig

    def __init__(self, config: PANMSRNNConfig, input_size: int, num_classes: int, *, rngs: nnx.Rngs):
        self.input_size = input_size
        super().__init__(config, num_classes, rngs=rngs)

    def build_controller(self, num_classes: int, rngs: nnx.Rngs) -> None:
        """The SRNN (its input ``[x_t; *p^a_t; *p^c_t]``) and its output layer over ``[h_t; reads]``."""
        c = self.config
        reads = (c.pointer_heads + c.mode2_heads) * c.hidden
        self.srnn = SRNNCell(self.input_size + reads, c.srnn_hidden, c.stack_depth, c.stack_width, rngs=rngs)
        self.srnn_output = nnx.Linear(c.srnn_hidden + reads, num_classes, rngs=rngs)  # W_y

    def start_state(self, context: DecoderContext) -> _Carry:
        """``h^a_0 = 0``, every ``p^a_0 = bin(a_B)`` (module docstring), ``h_0 = 0``, an empty stack."""
        pu_hidden, pointers = _start_pointers(self, context)
        return _Carry(
            pu_hidden=pu_hidden, pointers=pointers, srnn=self.srnn.init_carry(pu_hidden.shape[0], pu_hidden.dtype)
        )

    def causal_step(self, carry: _Carry, t: jax.Array, x: jax.Array, real: jax.Array, context: DecoderContext):
        """Step ``t``: Eq. 1-6 over ``causal_mask(mask, t)``, then the SRNN on ``[x_t; reads]``.

        Returns ``(carry_t, (logits_t [B, K], (w^a_t, p^a_t, w^c_t), a_t [B, 2]))``; where ``real``
        ``[B]`` is false (an input padding step) the carry is kept.
        """
        prefix = pointer.causal_mask(context.mask, t)  # [B, L]
        now = dataclasses.replace(context, mask=prefix, candidates=prefix)
        pu_hidden, w_a, p_a = self.point(PANMCarry(carry.pu_hidden, carry.pointers, carry.srnn[0]), now)  # Eq. 1-3
        values, w_c = self.read(w_a, now)  # Mode 1, Eq. 4-6
        state, (h, actions) = self.srnn(carry.srnn, jnp.concatenate([x, values], axis=-1), real)
        logits = self.srnn_output(jnp.concatenate([h, values], axis=-1))
        keep = real[:, None, None]
        new = _Carry(jnp.where(keep, pu_hidden, carry.pu_hidden), jnp.where(keep, p_a, carry.pointers), state)
        return new, (logits, (w_a, p_a, w_c), actions)


def _start_pointers(decoder: PANMDecoder, context: DecoderContext) -> tuple[jax.Array, jax.Array]:
    """``(h^a_0 = 0 [B, H^a, D], p^a_0 [B, H^a, A])``, every pointer at ``bin(a_B)`` (module docstring)."""
    memory, base = context.memory, context.base
    b, bits, heads = memory.shape[0], decoder.config.address_bits, decoder.config.pointer_heads
    p0 = jax.vmap(lambda a: pointer.address_bits(a, bits, dtype=memory.dtype))(base)  # [B, A]
    return jnp.zeros((b, heads, decoder.hidden), memory.dtype), jnp.broadcast_to(p0[:, None], (b, heads, bits))


class CausalPANMDecoder(PANMDecoder):
    """App. D.2's reading (``reading = "encoder"``): Eq. 1-6 over the causal prefix of the memory the SRNN
    encoder filled, then PANM's own Controller GRU (Eq. 7, ``z_t = x_t``) and ``g^o``."""

    def __init__(self, config: PANMSRNNConfig, input_size: int, num_classes: int, *, rngs: nnx.Rngs):
        super().__init__(config, num_classes, input_features=input_size, rngs=rngs)

    def start_state(self, context: DecoderContext) -> PANMCarry:
        """``h^a_0 = 0``, every ``p^a_0 = bin(a_B)``, ``h^c_0 = 0`` (module docstring)."""
        pu_hidden, pointers = _start_pointers(self, context)
        return PANMCarry(pu_hidden, pointers, jnp.zeros((pu_hidden.shape[0], self.hidden), pu_hidden.dtype))

    def causal_step(self, carry: PANMCarry, t: jax.Array, x: jax.Array, real: jax.Array, context: DecoderContext):
        """Step ``t``: Eq. 1-6 over ``causal_mask(mask, t)``, then Eq. 7 on ``[reads; x_t]`` and ``g^o``.

        Returns ``(carry_t, (logits_t [B, K], (w^a_t, p^a_t, w^c_t)))``; where ``real`` ``[B]`` is false (an
        input padding step) the carry is kept.
        """
        prefix = pointer.causal_mask(context.mask, t)  # [B, L]
        now = dataclasses.replace(context, mask=prefix, candidates=prefix)
        pu_hidden, w_a, p_a = self.point(carry, now)  # Eq. 1-3
        values, w_c = self.read(w_a, now)  # Mode 1, Eq. 4-6
        ctrl_hidden, logits = self.control(carry.ctrl_hidden, values, x, now)  # Eq. 7, g^o
        keep = real[:, None]
        new = PANMCarry(
            jnp.where(keep[..., None], pu_hidden, carry.pu_hidden),
            jnp.where(keep[..., None], p_a, carry.pointers),
            jnp.where(keep, ctrl_hidden, carry.ctrl_hidden),
        )
        return new, (logits, (w_a, p_a, w_c))


class PANMSRNN(nnx.Module):
    """PANM on the SRNN (module docstring) behind the one model interface (``models.registry``).

    ``train=True`` draws each example's base address ``a_B ~ U{0 .. 2^b - 1}`` from ``key``
    (Algorithm 1, l. 3); at evaluation ``a_B = 0``. Traces: ``(PANMTraces-like tuple (w^a [B, T, H^a,
    L], p^a [B, T, H^a, A], w^c [B, T, H^c, L]), actions [B, T, 2])``.
    """

    def __init__(self, config: PANMSRNNConfig, input_size: int, output_size: int, *, rngs: nnx.Rngs):
        self.config, self.input_size = config, input_size
        if config.reading == "encoder":  # App. D.2: M[n] = E h_n, PANM's Controller
            c = config
            self.encoder = SRNNCell(input_size, c.srnn_hidden, c.stack_depth, c.stack_width, rngs=rngs)
            self.embedding = nnx.Linear(c.srnn_hidden, c.hidden, use_bias=False, rngs=rngs)  # E
            self.decoder = CausalPANMDecoder(config, input_size, output_size, rngs=rngs)
            return
        self.embedding = nnx.Linear(input_size, config.hidden, use_bias=False, rngs=rngs)  # E: M[n] = E x_n
        self.decoder = CausalSRNNDecoder(config, input_size, output_size, rngs=rngs)

    def encode(self, inputs: jax.Array, input_mask: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """``(M [B, L, D], the encoder's actions [B, L, 2] or None)``: ``E x_n`` (``reading = "decoder"``) or
        ``E h_n`` with ``h_n`` the SRNN encoder's state after ``x_0 .. x_n`` (``"encoder"``)."""
        if self.config.reading != "encoder":
            return self.embedding(inputs), None

        def step(carry, x):
            x_t, m_t = x
            return self.encoder(carry, x_t, m_t)

        xs = (jnp.swapaxes(inputs, 0, 1), jnp.swapaxes(input_mask.astype(bool), 0, 1))
        _, (hs, actions) = scan(step, self.encoder.init_carry(inputs.shape[0], inputs.dtype), xs)
        return self.embedding(jnp.swapaxes(hs, 0, 1)), jnp.swapaxes(actions, 0, 1)

    def __call__(self, inputs, input_mask, num_outputs, *, aligned=False, train=False, key=None, return_traces=False):
        inputs, input_mask = prepare_inputs(inputs, input_mask, num_outputs, self.input_size, aligned=aligned)
        b, length, _ = inputs.shape
        bits = self.config.address_bits
        if length > 2**bits:
            raise UserError(f"inputs: expected at most 2^address_bits = {2**bits} memory slots, got L = {length}")
        if train and key is None:
            raise UserError("key: expected a PRNG key to draw the base addresses (train=True), got None")
        base = jax.random.randint(key, (b,), 0, 2**bits, jnp.int32) if train else jnp.zeros((b,), jnp.int32)
        memory, encoder_actions = self.encode(inputs, input_mask)  # [B, L, D] (padding rows are masked)
        context = self.decoder.context(memory, input_mask, base)
        xs, mask = _steps(inputs, input_mask, num_outputs, aligned)

        def step(carry, x):
            t, x_t, m_t = x
            return self.decoder.causal_step(carry, t, x_t, m_t, context)

        steps = jnp.arange(xs.shape[0], dtype=jnp.int32)
        _, outs = scan(step, self.decoder.start_state(context), (steps, xs, mask), remat=self.config.remat)
        logits, trace = outs[0], outs[1]
        logits = _outputs(logits, mask, num_outputs)
        if not return_traces:
            return logits
        actions = jnp.swapaxes(outs[2], 0, 1) if encoder_actions is None else encoder_actions
        return logits, (tuple(jnp.swapaxes(x, 0, 1) for x in trace), actions)


def _build_srnn(config: SRNNConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> SRNN:
    return SRNN(config, input_size, output_size, rngs=rngs)


def _build_panm_srnn(config: PANMSRNNConfig, input_size: int, output_size: int, rngs: nnx.Rngs) -> PANMSRNN:
    return PANMSRNN(config, input_size, output_size, rngs=rngs)
