"""The results pages: the recorded JSON of ``benchmarks/results/<device>/`` rendered as Markdown in ``docs/results/``.

    python -m benchmarks.pages             # write docs/results/ and the results summary in README.md
    python -m benchmarks.pages --check     # render into a temporary folder; exit 1 naming each file that differs
    python -m benchmarks.pages --out DIR   # write the pages into DIR instead (README.md untouched)

Every number on the pages is read from a results file or computed from one by the arithmetic below (mean
and sample standard deviation over seeds, ours - published), never typed in, so a page cannot drift from
its file; one exception, by design: the Chomsky page's published column is the paper's table as the code
holds it (``benchmarks.accuracy.chomsky_published``), so that older files show the cells known since.
``--check`` (run by ``tests/benchmarks/test_pages.py``) fails on a hand edit of a page or of the README's
summary. The prose beside a table (what it shows, and why) is kept in
``benchmarks/findings/<page>.md``, one ``## KEY`` section per table (the keys are given where each page
takes them); a section no table takes is an error, so prose cannot outlive its table. A plot recorded
beside a JSON (``<name>.png``; the Chomsky runner's ``<name>_<task>.png``) is copied byte for byte to
``docs/results/img/<device>/``.

Result files are named by what sets them apart (``benchmarks/accuracy/reproduce.py``, ``results_name``:
``_quick``, ``_select2Lp1``, ``_capped``, ``_opt-`` and six hex digits of a hash of the model options,
``--name``), and their JSON's ``settings`` spell that out; the pages read the settings, not the names.
Commands are shown as recorded, with the module paths of today's layout (``MOVED``).
"""
