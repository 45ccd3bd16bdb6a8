"""Toy seed: predict y = SLOPE * x + INTERCEPT for the validation and test inputs."""

import json
import os
import sys
from pathlib import Path

DATA = Path(os.environ["RLAB_DATA_DIR"])
OUT = Path(os.environ["RLAB_OUTPUT_DIR"])

SLOPE = 1.0
INTERCEPT = 0.0
# extra behaviour


def main():
    data = json.loads((DATA / "inputs.json").read_text())
    OUT.mkdir(parents=True, exist_ok=True)
    for split in ("val", "test"):
        predictions = [SLOPE * x + INTERCEPT for x in data[f"{split}_x"]]
        (OUT / f"{split}_predictions.json").write_text(json.dumps(predictions))
    print("stage", os.environ.get("RLAB_STAGE"), "debug" if "--debug" in sys.argv else "full")


if __name__ == "__main__":
    main()
