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
(function () {
  var opts = window.TAPEFLOW_PROBE || {};
  function walk(root, out) {
    root.querySelectorAll('*').forEach(function (e) {
      out.push(e);
      if (e.shadowRoot) walk(e.shadowRoot, out);
    });
    return out;
  }
  function ownText(e) {  // the label's own text, not its <title> tooltip
    return Array.prototype.filter.call(e.childNodes, function (n) { return n.nodeType === 3; })
      .map(function (n) { return n.nodeValue; }).join('').trim();
  }
  function labels() {
    return walk(document, []).filter(function (e) {
      return e.tagName === 'text' && e.closest && e.closest('g.node');
    }).map(ownText);
  }
  function fills() {  // [label, computed fill of the node's shape] per drawn node
    return walk(document, []).filter(function (e) {
      return e.tagName === 'g' && e.classList.contains('node');
    }).map(function (g) {
      var text = g.querySelector('text'), shape = g.querySelector('.nodeshape > :not(title)');
      return [text ? ownText(text) : '', shape ? getComputedStyle(shape).fill : null];
    });
  }
  function report(body) {
    fetch('/__report', {method: 'POST', body: JSON.stringify(body)});
  }
  function later(f, ms) { setTimeout(f, ms); }
  function colour(controls, tries) {  // the run metadata is loaded: colour the nodes by it
    if (!controls.stats && tries < 80) {
      later(function () { colour(controls, tries + 1); }, 250);
      return;
    }
    controls.colorBy = opts.colorBy;
    later(function () {
      var tags = controls.datasets[controls._selectedRunIndex].tags;
      report({labels: labels(), fills: fills(), stats: !!controls.stats,
              tags: tags.map(function (t) { return t.tag; })});
    }, 3000);
  }
  (function poll(tries) {
    var found = labels();
    if (!found.length && tries <= 60) { later(function () { poll(tries + 1); }, 250); return; }
    if (!opts.colorBy) { report({labels: found}); return; }
    var controls = walk(document, []).filter(function (e) {
      return e.tagName === 'TF-GRAPH-CONTROLS';
    })[0];
    var tags = controls.datasets[controls._selectedRunIndex].tags;
    controls._selectedTagIndex = tags.map(function (t) { return t.tag; }).indexOf(opts.tag);
    colour(controls, 0);
  })(0);
})();
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Proxy:
    """Forwards GETs to TensorBoard at `upstream`; records the probe's report."""

    def __init__(self, upstream: str, options: dict | None = None) -> None:
        self.upstream, self.report = upstream, None
        probe = b"<script>window.TAPEFLOW_PROBE = " + json.dumps(options or {}).encode() + \
            b";</script>" + _PROBE
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                with urllib.request.urlopen(owner.upstream + self.path, timeout=60) as r:
                    body, kind = r.read(), r.headers.get("Content-Type", "")
                if self.path in ("/", "/index.html"):
                    body = body.replace(b"</body>", probe + b"</body>")
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


def _load(board_url: str, run: str, screenshot: str, options: dict | None = None) -> dict:
    proxy = Proxy(board_url, options)
    try:
        subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--window-size=1400,900",
                        "--virtual-time-budget=60000", f"--screenshot={screenshot}",
                        f"{proxy.url}/#graphs&run={run}"],
                       capture_output=True, timeout=240, check=False)
        return proxy.report or {}
    finally:
        proxy.close()


def graph_labels(board_url: str, run: str, screenshot: str) -> list[str]:
    """The node labels Chromium rendered for `run`'s op graph (and a screenshot)."""
    return _load(board_url, run, screenshot).get("labels", [])


def coloured_nodes(board_url: str, run: str, tag: str, color_by: str,
                   screenshot: str) -> dict:
    """Select `run`'s run metadata `tag` in the Graphs dashboard and colour the nodes by
    `color_by` ("compute_time" or "memory"): {"labels", "fills": [[label, css fill]],
    "stats": whether the dashboard loaded the run's stats, "tags"} (and a screenshot)."""
    return _load(board_url, run, screenshot, {"tag": tag, "colorBy": color_by})
