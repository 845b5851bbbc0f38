"""The results pages: the recorded JSON of ``benchmarks/results/<device>/`` rendered as Markdown.

    make docs                              # the site, its results pages rendered from the records as it builds
    python -m benchmarks.pages             # write README.md's results summary
    python -m benchmarks.pages --check     # exit 1 if README.md's summary differs from its rendering
    python -m benchmarks.pages --out DIR   # also write every page and image into DIR, to read them

One module per page (``algorithmic``, ``ablations``, ``authors_code``, ``diagnosis``, ``chomsky``, ``seq2seq``,
``transduction``, ``m10ae``, ``dyck``, ``index``), on ``records`` (reading the files and the prose beside them),
``tables`` (the arithmetic and the Markdown), ``options`` (the option sets tables name), ``verdicts`` (each
page's opening summary); ``build`` renders them all and ``mkdocs_hook`` hands them to mkdocs. Nothing rendered
is committed but README.md's summary, which ``--check`` (and the test suite) holds to its rendering.

Every number on the pages is read from a results file or computed from one by the arithmetic of ``tables``
(mean and sample standard deviation over seeds, ours - published), never typed in; every published number
is ``benchmarks.accuracy.published``'s. A page takes the records of the runner that wrote them (the module
of the record's command) and chooses among them by their own settings (task, protocol, budget, seeds). The
prose beside a table (what it shows, and why) is kept in ``benchmarks/findings/<page>.md``, one ``## KEY``
section per table (each page module names its keys); a section no table takes is an error, so prose cannot
outlive its table. A plot recorded beside a JSON (``<name>.png``, ``<name>_<task>.png``) is shown under
``img/<device>/``. A record the pages cannot read stops the rendering with ``records.RecordError``, naming
the file and what is wrong with it.
"""
