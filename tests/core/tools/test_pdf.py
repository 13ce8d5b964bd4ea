"""read_pdf on PDFs made here: workspace paths (confined), URLs (under the web policy)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from srh_core.context import AgentContext
from srh_core.tools.base import BaseTool
from srh_core.tools.web import ALLOW_HOSTS_ENV


def make_pdf(pages: list[str]) -> bytes:
    """A valid PDF with one line of Helvetica text per page (offsets computed)."""
    count = len(pages)
    objects = ["<< /Type /Catalog /Pages 2 0 R >>",
               "<< /Type /Pages /Kids [" + " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
               + f"] /Count {count} >>"]
    font = 3 + 2 * count
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents "
                       f"{4 + 2 * i} 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>")
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream.decode()}\nendstream")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return bytes(out)


def read(context, **params):
    return BaseTool.create("read_pdf", context)(**params)


@pytest.fixture
def workspace(tmp_path: Path) -> AgentContext:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "paper.pdf").write_bytes(make_pdf(["Kepler third law", "T squared", "a cubed"]))
    (folder / "notes.txt").write_text("not a pdf")
    (tmp_path / "outside.pdf").write_bytes(make_pdf(["secret"]))
    return AgentContext(data={"x": [1.0, 2.0], "y": [1.0, 2.0]}, target="y",
                        workspace=str(folder))


def test_pages_of_a_workspace_pdf(workspace: AgentContext) -> None:
    result = read(workspace, source="paper.pdf", start_page=2, max_pages=1)
    assert result.ok, result.result_str
    assert result.result["page_count"] == 3
    assert result.result["pages"] == [{"page": 2, "text": "T squared"}]
    assert result.result["truncated"] and "read on with start_page" in result.result_str
    whole = read(workspace, source="paper.pdf")
    assert [p["text"] for p in whole.result["pages"]] == ["Kepler third law", "T squared",
                                                          "a cubed"]
    assert not whole.result["truncated"]


@pytest.mark.parametrize(("params", "message"), [
    ({"source": "../outside.pdf"}, "outside"),
    ({"source": "notes.txt"}, "not a readable PDF"),
    ({"source": "missing.pdf"}, "not a file of the workspace"),
    ({"source": "file:///etc/passwd"}, "Only workspace paths and http(s) URLs"),
    ({"source": "paper.pdf", "start_page": 4}, "past its end"),
    ({"source": "paper.pdf", "max_pages": 51}, "at most 50"),
    ({"source": "paper.pdf", "start_page": 0}, "start_page must be an integer >= 1")],
    ids=["escape", "not-pdf", "missing", "scheme", "past-end", "too-many", "zero"])
def test_bad_sources_and_ranges_fail_with_a_reason(workspace, params, message) -> None:
    result = read(workspace, **params)
    assert not result.ok and message.lower() in result.result_str.lower(), result.result_str


def test_a_pdf_by_url_goes_through_the_web_policy(monkeypatch) -> None:
    body = make_pdf(["Remote page"])

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/p.pdf"
    try:
        refused = read(None, source=url)
        assert not refused.ok and "non-public address" in refused.result_str
        monkeypatch.setenv(ALLOW_HOSTS_ENV, f"127.0.0.1:{server.server_address[1]}")
        done = read(None, source=url)
        assert done.ok, done.result_str
        assert done.result["pages"] == [{"page": 1, "text": "Remote page"}]
    finally:
        server.shutdown()
        server.server_close()
