"""Serving a decode loop with Ray Serve: one PersistentValueState (one KV cache) per request.

    pip install onnx-light-runtime[ray]
    python examples/ray_serve_decode.py [--steps 16] [--replicas 1]

Each replica builds the demo decoder once (onnx_light.ray_helpers.DecodeLoop); each request runs
its own decode loop on its own PersistentValueState, closed when the request ends, so requests
never see each other's cache. HTTP clients POST {"prompt": [[...d_model floats...], ...],
"steps": N} to http://127.0.0.1:8000/decode; Python callers use the deployment handle
(``handle.generate.remote(prompt, steps)``), as tests/python/test_ray.py does. See docs/ray.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request

import numpy as np
from ray import serve

from onnx_light.ray_helpers import DecodeLoop


@serve.deployment(ray_actor_options={"num_cpus": 1})
class DecoderDeployment:
    """A replica: one DecodeLoop, shared by the requests it serves (generate is thread-safe)."""

    def __init__(self, layers: int = 2, heads: int = 4, head_size: int = 16):
        self.loop = DecodeLoop(layers=layers, heads=heads, head_size=head_size)

    def generate(self, prompt, steps: int = 16) -> dict:
        result = self.loop.generate(np.asarray(prompt, dtype=np.float32), int(steps))
        return {"outputs": result["outputs"], "cache_length": result["cache_length"]}

    async def __call__(self, request) -> dict:
        body = await request.json()
        result = self.generate(body["prompt"], body.get("steps", 16))
        return {"outputs": result["outputs"].tolist(), "cache_length": result["cache_length"]}


def app(layers: int = 2, heads: int = 4, head_size: int = 16, replicas: int = 1):
    return DecoderDeployment.options(num_replicas=replicas).bind(layers=layers, heads=heads, head_size=head_size)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--keep-running", action="store_true", help="serve until Ctrl-C instead of exiting")
    args = parser.parse_args(argv)

    serve.run(app(replicas=args.replicas), route_prefix="/decode")
    prompt = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    request = urllib.request.Request("http://127.0.0.1:8000/decode", method="POST",
                                     data=json.dumps({"prompt": prompt.tolist(), "steps": args.steps}).encode(),
                                     headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        reply = json.load(response)
    elapsed = time.perf_counter() - start
    print(f"{args.steps} tokens in {elapsed * 1e3:.1f} ms over HTTP; cache length {reply['cache_length']}; "
          f"first output row starts {np.round(reply['outputs'][0][:4], 4).tolist()}")
    if args.keep_running:
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    serve.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
