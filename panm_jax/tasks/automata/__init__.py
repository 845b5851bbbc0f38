"""Automata as data: finite automata, pushdown automata and Turing machines as tasks.

A machine is written as data, in a small TOML file (``load_machine``) or as a
Python dataclass, and a task generates examples from it:

* ``AcceptanceTask`` (``automaton_acceptance``): classify a string over the
  machine's input alphabet as accepted or rejected (a finite or pushdown
  automaton);
* ``TransductionTask`` (``automaton_transduction``): write the tape a Turing
  machine leaves when it halts.

**Definitions.** The standard ones of Hopcroft & Ullman (1979), "Introduction
to Automata Theory, Languages, and Computation":

* ``FiniteAutomaton`` (Q, Sigma, delta, q0, F): deterministic; ``delta`` may be
  partial (a missing move rejects, as if into a dead state).
* ``PushdownAutomaton`` (Q, Sigma, Gamma, delta, q0, gamma0, F), the 7-tuple
  of Suzgun, Gehrmann, Belinkov & Shieber (2019), "Memory-Augmented Recurrent
  Neural Networks Can Learn Generalized Dyck Languages": ``delta`` maps
  (state, input symbol or epsilon, stack top) to a finite set of (state, string
  pushed in place of the top); acceptance by final state (the input consumed
  and an accepting state reached, epsilon moves included). It may be
  nondeterministic: ``accepts`` searches the configurations (state, input
  position, stack) breadth first, each configuration once, and raises
  ``MachineLimitError`` rather than answer when more than
  ``max_configurations`` would be needed (only machines whose epsilon moves
  grow the stack without bound get there). ``deterministic = true`` asks for
  the deterministic conditions to be checked on load (at most one move per
  (state, symbol, top), and no reading move where an epsilon move exists); the
  search then follows a single path.
* ``TuringMachine`` (Q, Sigma, Gamma, delta, q0, B, F): one tape, infinite both
  ways; deterministic; moves ``L`` and ``R``. The head starts on the first input
  symbol; the machine halts when it enters an accepting state (which therefore
  has no moves) or when no move is defined; it accepts when it halts in an
  accepting state. A run longer than the step bound (``max_steps``, by default
  ``10 (n + 2)^2`` for an input of length ``n``) raises ``MachineLimitError``.
  Its output is the tape window from ``output_left`` cells before the input to
  ``output_right`` cells after it, blanks included (a fixed ``n + output_left +
  output_right`` cells); a halted tape with a non-blank symbol outside the
  window raises ``MachineLimitError``.

Symbols and states are non-empty strings; the empty string ``""`` stands for
epsilon in a pushdown automaton's ``read``. A word is a sequence of symbols (a
Python ``str`` is the sequence of its characters, which is what one-character
alphabets want).

**TOML format** (``kind`` is ``"dfa"``, ``"pda"`` or ``"tm"``)::

    kind = "pda"
    name = "anbn"                       # optional: the file's stem
    description = "a^n b^n, n >= 1"    # optional
    deterministic = true                # pda, optional (default false)
    states = ["push", "pop", "accept"]
    input_alphabet = ["a", "b"]
    stack_alphabet = ["Z", "A"]         # pda
    start = "push"
    start_stack = "Z"                   # pda: gamma0
    accepting = ["accept"]
    transitions = [
      { from = "push", read = "a", pop = "Z", to = "push", push = ["A", "Z"] },
      ...
    ]

A finite automaton's transitions have ``from, read, to``; a pushdown
automaton's ``from, read, pop, to, push`` (``push[0]`` ends on top, ``[]``
pops); a Turing machine's ``from, read, to, write, move`` and the machine has
``tape_alphabet``, ``blank`` and optionally ``output_left``, ``output_right``,
``max_steps``. Optional for a pushdown automaton: ``max_configurations``
(default 200000). Every field is checked on load (unknown keys, types,
symbols and states that are not declared, determinism where it is required, no
move out of a Turing machine's accepting state); a malformed machine raises
``MachineFormatError``, whose message starts with the file and the field
(``anbn.toml: transitions[3].push[0]: ...``), as do files that are not UTF-8
or not TOML. The same checks run on a dataclass built in Python (its
``source`` is ``"<python>"``).

Shipped machines (``list_machines()``; ``load_machine("anbn")``):
``anbn`` (a deterministic PDA for a^n b^n, n >= 1), ``palindromes`` (a
nondeterministic PDA for every palindrome over {a, b}, odd and even length: it
guesses the middle), ``even_ones`` (a DFA: an even number of 1s over {0, 1})
and ``binary_increment`` (a TM adding 1 to a binary number, most significant
bit first; the output window has one cell before the input, for the carry).

**Generating members.** Random strings of a^n b^n are almost never members,
so positives are built from the machine:

* finite automaton: exactly uniform over the members of length ``n``, by
  counting the accepted strings of each length from each state (dynamic
  programming) and drawing one symbol at a time in proportion;
* pushdown automaton: a randomised depth-first search over concrete
  configurations (state, stack, symbols left to read) that picks uniformly
  among the moves whose successor may still accept, each configuration
  visited at most once, stacks bounded by ``1 + g (N + 1)`` (``g``: the most
  one move adds to the stack, ``N``: the longest length of the task). "May
  still accept" is an over-approximation computed once per machine: whether an
  abstract configuration (state, stack height, top symbol) can accept after
  reading exactly ``r`` more symbols, where the symbol uncovered by a pop is
  any symbol that can ever sit at that height (a forward fixed point). It
  never prunes a configuration that can accept, and for the shipped machines it
  is exact, so the search never backtracks there; it terminates in any case (a
  finite, deduplicated space; past ``max_configurations`` visited
  configurations it raises ``MachineLimitError``). The strings are not uniform
  over the language in general (for the shipped ``palindromes`` they are).

Negatives are verified non-members of the same length: half of the attempts a
*near miss* (a member with one symbol changed to another), half a uniformly
random string; each is run through the machine and kept only if rejected
(a palindrome with its middle symbol changed is still a palindrome, and is
discarded). A batch has ``B // 2`` positives (plus one more with probability
1/2 when ``B`` is odd), at random places; every positive is run through the
machine as well before it is used.

**Lengths without members** (odd lengths for a^n b^n) **or without
non-members** (length 1 for palindromes: every single symbol is one) are
skipped: the admissible lengths of the acceptance task are the lengths
``1..max_test_length`` at which the machine may have both members and
non-members, which must form an arithmetic progression ``lo, lo + step, ...``;
the task's ``LengthRange`` takes that step (a^n b^n: 2, 4, 6, ..., and a
request for an odd length is a ``ValueError`` that says "an even integer";
palindromes: 2, 3, 4, ...). Members are decided exactly for a finite
automaton and by the over-approximation above for a pushdown automaton;
non-members exactly for a finite automaton and, for a pushdown automaton, by
trying every string while there are at most 4096 of them (assumed beyond). A
machine whose admissible lengths are not a progression is refused with a
``TaskOptionError`` naming the first missing length; a length admitted by
these tests at which the generator finds no member (or no non-member) raises
``MachineError`` when it is sampled.

**Task format.** Acceptance: the input is the string, one one-hot row over the
input alphabet per symbol (``T_in = n``; lengths start at 1), ``output_mode =
"after_input"`` with one output step, classes 0 = reject, 1 = accept; metric
``accuracy``. Transduction: the input is the input tape (``T_in = n``,
one-hot over the input alphabet), the targets the output window as class ids
over the tape alphabet (``T_out = n + output_left + output_right``); inputs
are uniform strings over the input alphabet, and when the machine has
accepting states only those it accepts (its domain; redrawn up to 100 times);
metrics ``sequence_accuracy`` (headline) and ``token_accuracy``. Both tasks
draw one length per example (``per_example``) uniformly from the mode's
range: train ``..max_train_length``, test ``max_train_length + 1 ..
max_test_length``.

**Modules**, one concept each: ``base`` (the errors and the checks the machines
share), ``finite``, ``pushdown`` and ``turing`` (one machine kind each),
``loader`` (TOML files and the shipped machines) and ``tasks`` (the two tasks).
Every name above is importable from ``panm_jax.tasks.automata`` itself.
"""

from panm_jax.tasks.automata.base import MachineError, MachineFormatError, MachineLimitError, UnknownMachineError
from panm_jax.tasks.automata.finite import FATransition, FiniteAutomaton
from panm_jax.tasks.automata.loader import list_machines, load_machine, machine_from_toml
from panm_jax.tasks.automata.pushdown import PDATransition, PushdownAutomaton
from panm_jax.tasks.automata.tasks import AcceptanceTask, TransductionTask
from panm_jax.tasks.automata.turing import TMResult, TMTransition, TuringMachine

__all__ = [
    "AcceptanceTask",
    "FATransition",
    "FiniteAutomaton",
    "MachineError",
    "MachineFormatError",
    "MachineLimitError",
    "PDATransition",
    "PushdownAutomaton",
    "TMResult",
    "TMTransition",
    "TransductionTask",
    "TuringMachine",
    "UnknownMachineError",
    "list_machines",
    "load_machine",
    "machine_from_toml",
]
