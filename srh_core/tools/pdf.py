"""``read_pdf`` (the reference's PDFReadTool): the text of a PDF's pages.

The source is a file of the run's workspace (a path relative to it, confined
to it like every workspace tool's) or a public http(s) URL, fetched under the
web tools' network policy (:mod:`srh_core.tools.web`). Text is extracted with
pypdf (the ``pdf`` extra: ``pip install 'srh[pdf]'``); a PDF is read up to
:data:`MAX_PDF_BYTES`, at most :data:`MAX_PAGES` pages per call and
:data:`MAX_CHARACTERS` characters in all.
"""

from __future__ import annotations

import io
from typing import Any

from srh_core.errors import ToolArgumentError
from srh_core.tools.base import BaseTool
from srh_core.tools.web import WebPolicy, fetch
from srh_core.tools.workspace_shell import context_workspace

TOOL_NAME = "read_pdf"
MAX_PAGES = 50
MAX_PDF_BYTES = 2 * 1024**2  # the web fetch cap; a workspace file is held to the same
MAX_CHARACTERS = 50_000
INSTALL_HINT = "read_pdf needs pypdf: pip install 'srh[pdf]' (or pip install pypdf)."


@BaseTool.register(TOOL_NAME)
class PDFReadTool(BaseTool):
    """Extract text from selected pages of a PDF."""

    result_str_limit = MAX_CHARACTERS + 1_000

    def execute(self, source: str, start_page: int = 1, max_pages: int = 10) -> dict[str, Any]:
        """Extract text from selected pages of a local or public PDF.

        Args:
            source: A PDF in the run's workspace (a relative path) or an absolute public
                http(s) URL.
            start_page: First page to read, one-indexed.
            max_pages: Maximum pages to extract, between 1 and 50.
        """
        for name, value, low in (("start_page", start_page, 1), ("max_pages", max_pages, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ToolArgumentError(f"{name} must be an integer >= {low}; got {value!r}.",
                                        parameter=name)
        if max_pages > MAX_PAGES:
            raise ToolArgumentError(f"max_pages must be at most {MAX_PAGES}; got {max_pages}.",
                                    parameter="max_pages")
        if not isinstance(source, str) or not source.strip():
            raise ToolArgumentError("source must be a workspace path or an http(s) URL.",
                                    parameter="source")
        try:
            from pypdf import PdfReader
            from pypdf.errors import PdfReadError
        except ImportError:
            raise ToolArgumentError(INSTALL_HINT, parameter="source") from None
        data = self._read(source.strip())
        try:
            reader = PdfReader(io.BytesIO(data))
            total = len(reader.pages)
        except (PdfReadError, ValueError, OSError) as error:
            raise ToolArgumentError(f"{source} is not a readable PDF: {error}",
                                    parameter="source") from None
        if start_page > total:
            raise ToolArgumentError(f"{source} has {total} page(s); start_page {start_page} is "
                                    "past its end.", parameter="start_page")
        pages, used = [], 0
        for number in range(start_page, min(total, start_page + max_pages - 1) + 1):
            text = (reader.pages[number - 1].extract_text() or "").strip()
            text = text[:max(0, MAX_CHARACTERS - used)]
            used += len(text)
            pages.append({"page": number, "text": text})
        return {"source": source, "pages": pages, "page_count": total,
                "truncated": used >= MAX_CHARACTERS or pages[-1]["page"] < total}

    def _read(self, source: str) -> bytes:
        if source.startswith(("http://", "https://")):
            page = fetch(source, WebPolicy.from_env())
            if page.status >= 400:
                raise ConnectionError(f"{page.url} answered HTTP {page.status}.")
            if page.truncated:
                raise ToolArgumentError(f"{source} is larger than {MAX_PDF_BYTES} bytes.",
                                        parameter="source")
            return page.body
        if "://" in source:
            raise ToolArgumentError(f"Only workspace paths and http(s) URLs can be read; got "
                                    f"{source!r}.", parameter="source")

        path = context_workspace(self.context, TOOL_NAME).resolve(source)
        if not path.is_file():
            raise ToolArgumentError(f"{source} is not a file of the workspace.",
                                    parameter="source")
        if path.stat().st_size > MAX_PDF_BYTES:
            raise ToolArgumentError(f"{source} is larger than {MAX_PDF_BYTES} bytes.",
                                    parameter="source")
        return path.read_bytes()

    @classmethod
    def format_result_dict(cls, result: dict[str, Any]) -> str:
        parts = [f"[{result['source']}: {result['page_count']} page(s)]"]
        parts += [f"--- page {page['page']} ---\n{page['text']}" for page in result["pages"]]
        if result["truncated"]:
            parts.append("[... more pages or text: read on with start_page]")
        return "\n".join(parts)


__all__ = ["PDFReadTool"]
