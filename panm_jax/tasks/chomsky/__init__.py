"""The 15 length-generalisation tasks of Delétang et al. (2023), *Neural Networks and the Chomsky Hierarchy*.

Source: Delétang et al. 2023, *Neural Networks and the Chomsky Hierarchy* (ICLR
2023; arXiv 2207.02098), the task descriptions of its appendix. The definitions
and the length conventions below were checked against the task descriptions
the authors published with the benchmark; every generator here is written
independently, in NumPy, behind this project's ``Task`` interface.

Tasks, by level of the hierarchy (registry name, then the map):

* regular: ``even_pairs`` (is the number of ``ab`` and ``ba`` pairs even?),
  ``modular_arithmetic`` (``+ - *`` over 0..4 with precedence, mod 5),
  ``parity_check`` (is the number of ``b`` even?), ``cycle_navigation`` (final
  position on a cycle of 5 after ``stay``/``+1``/``-1`` moves from 0);
* deterministic context-free: ``modular_arithmetic_brackets`` (bracketed
  ``+ - *`` expressions with unary minus, mod 5), ``reverse_string``
  (``w -> reverse(w)``), ``solve_equation`` (the value of ``x`` in a bracketed
  ``+ -`` equation mod 5), ``stack_manipulation`` (a stack and ``POP`` / ``PUSH a``
  / ``PUSH b`` actions -> the final stack, top first);
* context-sensitive: ``duplicate_string`` (``w -> ww``), ``missing_duplicate``
  (``ww`` with one token hidden -> the hidden token), ``odds_first``
  (``w_1 w_3 w_5 ... w_2 w_4 ...``), ``binary_addition``,
  ``binary_multiplication`` (little-endian binary), ``compute_sqrt``
  (``floor(sqrt(n))``, big-endian binary), ``bucket_sort`` (sort over 5 symbols).

Protocol (the paper's):

* ``length`` is the paper's input length ``N``: the number of input tokens. The
  input is ``N`` one-hot rows over the task's input vocabulary (no delimiter
  rows: ``input_size`` = the vocabulary size), except where a class docstring
  says how its input is derived from ``N`` (``modular_arithmetic`` drops one
  token at even ``N``).
* ``output_mode = "after_input"``: the model reads the input, then emits
  ``T_out = output_steps(N)`` outputs on blank steps; targets are class ids
  over the output vocabulary (softmax cross-entropy). ``T_out`` is 1 for the
  six single-answer tasks and a function of ``N`` alone for the others, so a
  batch of one length has one shape.
* Variable-length answers (``stack_manipulation``, ``binary_addition``,
  ``binary_multiplication``) are followed by the end symbol ``END`` and padded
  up to ``T_out`` with ``END`` (the option ``padding="zero"``: with output 0, as
  the benchmark's released code pads; ``EndedAnswerTask``). The loss covers every output step, padding
  included (as the benchmark's released training does); the metrics, as its
  accuracy does, score the steps up to and including the first ``END`` of the
  target (``scored_mask``).
  ``compute_sqrt`` writes its answer with leading zeros on exactly
  ``ceil(N / 2)`` bits, so it needs no end symbol.
* Metrics: ``token_accuracy`` (the headline: the paper's score is a per-token
  accuracy) then ``sequence_accuracy`` (exact match).
* Lengths: training ``N ~ U{1..40}`` (``max_train_length``), one length per
  batch; test mode ``"41-500"``: ``N ~ U{41..500}`` (``max_train_length + 1
  .. max_test_length``); mode ``"1-40"`` (``min .. max_train_length``) draws fresh
  examples at the training lengths, the in-distribution validation set that
  selects checkpoints (``select_mode``) without looking at the test lengths.
  Tasks with no instance at small ``N`` start higher (``missing_duplicate`` at 2; ``solve_equation``,
  ``binary_addition`` and
  ``binary_multiplication`` at 3); ``sample`` accepts any ``N`` up to 4096.

Generation is vectorised over the batch where the task allows it (the string
tasks, the regular tasks, the stack and the binary tasks' bit layouts); the two
bracketed-expression grammars draw each expression with an explicit stack from
a block of pre-drawn uniforms, and the binary arithmetic uses Python integers
per example. A batch of mixed per-example lengths is generated length by length
and padded with masks.

**Modules**, as the reference suite groups its tasks: ``regular``,
``context_free`` (the deterministic context-free level) and
``context_sensitive``, one module per level, and ``base`` with what they share
(``ChomskyTask``, ``MAX_LENGTH``). ``CHOMSKY_TASKS`` maps each registry name to
its class, level by level; every name is importable from
``panm_jax.tasks.chomsky`` itself.
"""

from panm_jax.tasks.base import Task
from panm_jax.tasks.chomsky.base import MAX_LENGTH, ChomskyTask
from panm_jax.tasks.chomsky.context_free import (
    ModularArithmeticBracketsTask,
    ReverseStringTask,
    SolveEquationTask,
    StackManipulationTask,
)
from panm_jax.tasks.chomsky.context_sensitive import (
    BinaryAdditionTask,
    BinaryMultiplicationTask,
    BucketSortTask,
    ComputeSqrtTask,
    DuplicateStringTask,
    MissingDuplicateTask,
    OddsFirstTask,
)
from panm_jax.tasks.chomsky.regular import CycleNavigationTask, EvenPairsTask, ModularArithmeticTask, ParityCheckTask

__all__ = [
    "BinaryAdditionTask",
    "BinaryMultiplicationTask",
    "BucketSortTask",
    "CHOMSKY_TASKS",
    "ChomskyTask",
    "ComputeSqrtTask",
    "CycleNavigationTask",
    "DuplicateStringTask",
    "EvenPairsTask",
    "MAX_LENGTH",
    "MissingDuplicateTask",
    "ModularArithmeticBracketsTask",
    "ModularArithmeticTask",
    "OddsFirstTask",
    "ParityCheckTask",
    "ReverseStringTask",
    "SolveEquationTask",
    "StackManipulationTask",
]

# The suite's tasks by registry name, level by level (the task registry lists them in this order).
CHOMSKY_TASKS: dict[str, type[Task]] = {
    # regular
    "even_pairs": EvenPairsTask,
    "modular_arithmetic": ModularArithmeticTask,
    "parity_check": ParityCheckTask,
    "cycle_navigation": CycleNavigationTask,
    # deterministic context-free
    "modular_arithmetic_brackets": ModularArithmeticBracketsTask,
    "reverse_string": ReverseStringTask,
    "solve_equation": SolveEquationTask,
    "stack_manipulation": StackManipulationTask,
    # context-sensitive
    "duplicate_string": DuplicateStringTask,
    "missing_duplicate": MissingDuplicateTask,
    "odds_first": OddsFirstTask,
    "binary_addition": BinaryAdditionTask,
    "binary_multiplication": BinaryMultiplicationTask,
    "compute_sqrt": ComputeSqrtTask,
    "bucket_sort": BucketSortTask,
}
