"""Check captured AG-UI streams from ddwire against the ag-ui-protocol Python models.

Usage: python validate_agui.py LABEL FILE.sse...     (in the venv of requirements-agui.txt or
       requirements-agui1.txt; LABEL names the package version in the test names)

For each file (one response body as @ag-ui/client read it, saved by client_agui.mjs), one test
`LABEL/<file stem>` asserts:
- framing: the body is a sequence of `data: <one line of JSON>\\n\\n` frames, LF only (no CR),
  nothing else (@ag-ui/client splits events on `\\n\\n` alone; vendor-notes/sse.md);
- every event validates with `pydantic.TypeAdapter(ag_ui.core.Event)` (the discriminated union of
  every event class, chosen by `type`), the class matching the `type`, and leaves nothing in
  `model_extra` (no field the models do not know: they allow extras, so validation alone would
  let a misspelt field through);
- every frame is byte-equal to what `ag_ui.encoder.EventEncoder().encode(event)` writes for the
  validated event: the reference harness's own encoder would have sent the same bytes.
"""

import json
import pathlib
import sys
import traceback

from ag_ui.core import Event, EventType
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

ADAPTER = TypeAdapter(Event)
ENCODER = EventEncoder()


def check_file(path):
    raw = path.read_bytes()
    if b"\r" in raw:
        raise AssertionError("the stream holds a CR: @ag-ui/client splits events only on LF LF")
    text = raw.decode("utf-8")
    if not text.endswith("\n\n"):
        raise AssertionError(f"the stream does not end with a blank line: {text[-80:]!r}")
    frames = text[:-2].split("\n\n")
    if not frames or frames == [""]:
        raise AssertionError("the stream holds no events")
    types = []
    for i, frame in enumerate(frames):
        if not frame.startswith("data: ") or "\n" in frame:
            raise AssertionError(f"frame {i} is not one `data: ` line: {frame[:200]!r}")
        doc = json.loads(frame[len("data: "):])
        event = ADAPTER.validate_python(doc)
        want = EventType(doc["type"])
        if event.type != want:
            raise AssertionError(f"frame {i}: type {doc['type']} parsed as {type(event).__name__}")
        if event.model_extra:
            raise AssertionError(f"frame {i} ({doc['type']}): fields unknown to the model: "
                                 f"{sorted(event.model_extra)}")
        encoded = ENCODER.encode(event)
        if encoded != frame + "\n\n":
            raise AssertionError(f"frame {i} ({doc['type']}) differs from EventEncoder's bytes:\n"
                                 f"  ddwire:  {frame[:300]!r}\n  encoder: {encoded[:300]!r}")
        types.append(doc["type"])
    print(f"  {path.name}: {len(frames)} events {types}")


def main():
    label, files = sys.argv[1], [pathlib.Path(p) for p in sys.argv[2:]]
    failed = 0
    if not files:
        print(f"FAIL {label}: no captured streams to validate")
        return 1
    for path in files:
        name = f"{label}/{path.stem}"
        try:
            check_file(path)
        except Exception as e:  # noqa: BLE001 - every failure becomes one FAIL line
            failed += 1
            print(f"FAIL {name}: {' '.join(str(e).split())[:600]}", flush=True)
            traceback.print_exc()
        else:
            print(f"PASS {name}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
