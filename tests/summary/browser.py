"""Headless Chromium (Debian's `chromium`) on TensorBoard's Graphs dashboard.

A small proxy in front of TensorBoard adds one script to its index page; the script walks the
dashboard's shadow DOM, collects the labels of the graph's rendered SVG nodes and POSTs them
back to the proxy, so the test sees what the browser drew. A screenshot is kept as well.
"""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading
import urllib.request

_PROBE = b"""<script>
(function poll(tries) {
  function walk(root, out) {
    root.querySelectorAll('*').forEach(function (e) {
      out.push(e);
      if (e.shadowRoot) walk(e.shadowRoot, out);
    });
    return out;
  }
  var labels = walk(document, []).filter(function (e) {
    return e.tagName === 'text' && e.closest && e.closest('g.node');
  }).map(function (e) {  // the label's own text, not its <title> tooltip
    return Array.prototype.filter.call(e.childNodes, function (n) { return n.nodeType === 3; })
      .map(function (n) { return n.nodeValue; }).join('').trim();
  });
  if (labels.length || tries > 60) {
    fetch('/__report', {method: 'POST', body: JSON.stringify({labels: labels})});
  } else {
    setTimeout(function () { poll(tries + 1); }, 250);
  }
})(0);
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Proxy:
    """Forwards GETs to TensorBoard at `upstream`; records the probe's report."""

    def __init__(self, upstream: str) -> None:
        self.upstream, self.report = upstream, None
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                with urllib.request.urlopen(owner.upstream + self.path, timeout=60) as r:
                    body, kind = r.read(), r.headers.get("Content-Type", "")
                if self.path in ("/", "/index.html"):
                    body = body.replace(b"</body>", _PROBE + b"</body>")
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                owner.report = json.loads(self.rfile.read(n))
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def graph_labels(board_url: str, run: str, screenshot: str) -> list[str]:
    """The node labels Chromium rendered for `run`'s op graph (and a screenshot)."""
    proxy = Proxy(board_url)
    try:
        subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--window-size=1400,900",
                        "--virtual-time-budget=30000", f"--screenshot={screenshot}",
                        f"{proxy.url}/#graphs&run={run}"],
                       capture_output=True, timeout=180, check=False)
        return (proxy.report or {}).get("labels", [])
    finally:
        proxy.close()
