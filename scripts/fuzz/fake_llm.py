#!/usr/bin/env python3
"""Minimal OpenAI-compatible /chat/completions server for the API fuzzer.

Every reply is one fenced candidate (the file given by --candidate); every
request (headers and the first 2000 bytes of the body) is appended to --log,
so a run can check what the orchestrator sent a provider.
  fake_llm.py --port 51903 --candidate cand.cc --log llm_requests.log
"""
import argparse
import http.server
import json

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--candidate", required=True)
ap.add_argument("--log", required=True)
args = ap.parse_args()
SRC = open(args.candidate).read()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        body = self.rfile.read(n)
        with open(args.log, "a") as f:
            f.write(f"=== {self.path}\n{self.headers}\n{body[:2000]!r}\n")
        reply = {"id": "fz", "object": "chat.completion",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "```cpp\n" + SRC + "\n```"}}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}
        b = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
