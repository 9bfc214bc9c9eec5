#!/usr/bin/env bash
# Set up .venv in the project root with vidload installed (editable) and its test extras.
# Installs the CPU build of torch first (TORCH_SPEC, default torch==2.13.0) so that the
# project's plain `torch>=2.1` requirement does not pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet "$TORCH_SPEC"
fi
.venv/bin/python -m pip install --quiet -e ".[test]"
.venv/bin/python -c "import vidload, torch, av, cv2, h5py; print('vidload', vidload.__version__, '| torch', torch.__version__, '| av', av.__version__, '| opencv', cv2.__version__)"
