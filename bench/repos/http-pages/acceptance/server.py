"""The paged API fetch.py reads, serving data the checker draws.

Started by check.py as a background process: reads {"<dataset>": [{"token": …, "items": […],
"next": …}, …], …} as JSON on stdin, listens on 127.0.0.1 at a free port, prints the port on a
line, and serves GET /<dataset>/items?page=<token> until it is killed.
"""
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGES = {}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        token = urllib.parse.parse_qs(url.query).get("page", [""])[0]
        page = PAGES.get((parts[0], token)) if len(parts) == 2 and parts[1] == "items" else None
        if page is None:
            self.send_error(404)
            return
        body = json.dumps(page).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    for name, pages in json.load(sys.stdin).items():
        for page in pages:
            PAGES[(name, page["token"])] = {"items": page["items"], "next": page["next"]}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
