"""The results pages and the settings table at documentation build time: an mkdocs hook (``hooks:`` in
``mkdocs.yml``).

``make docs`` renders every page and image of ``results/`` from the recorded JSON of ``benchmarks/results/``
(``benchmarks.pages.build.render``) and hands them to mkdocs as generated files, so the site's results
are those of the records it is built from, and nothing rendered is committed. A record the renderer
cannot read fails the build, naming the file. A page's ``<!-- settings -->`` line becomes the table of
``TrainConfig``'s and ``OptimizerConfig``'s fields as they are declared (``panm_jax.options.declared``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # mkdocs loads a hook by its path; the renderer is imported from the repository root
    sys.path.insert(0, str(ROOT))

from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

from benchmarks.pages.build import render  # noqa: E402
from benchmarks.pages.records import RecordError  # noqa: E402
from benchmarks.pages.settings import SETTINGS, settings_table  # noqa: E402

FOLDER = "results"  # where the pages are in the site (mkdocs.yml's nav names them there)


def on_files(files: Files, config: Any) -> Files:
    """Add every rendered page and image under ``results/``, in place of any file of the same name."""
    try:
        pages, _ = render()
    except RecordError as err:
        raise PluginError(f"the results pages: {err}") from None
    for name, data in pages.items():
        uri = f"{FOLDER}/{name}"
        stale = files.get_file_from_path(uri)
        if stale is not None:
            files.remove(stale)
        files.append(File.generated(config, uri, content=data))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """The ``<!-- settings -->`` line of a page as the table of the training settings."""
    if SETTINGS not in markdown:
        return markdown
    return markdown.replace(SETTINGS, settings_table())
