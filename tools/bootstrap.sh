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
# pip's editable install takes 15-50 s even when nothing changed (it builds in isolation and
# resolves against the index): skip it when this tree's pyproject.toml is what was installed last
# and the venv's vidload is this tree's (a second call, as .ci/run makes, then takes seconds)
stamp=".venv/.vidload-bootstrap"
want="$(pwd -P) $(sha256sum pyproject.toml | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
here="$(.venv/bin/python -c 'import os, vidload; print(os.path.realpath(vidload.__path__[0]))' 2>/dev/null || true)"
if [ "$want" != "$have" ] || [ "$here" != "$(pwd -P)/vidload" ]; then
    .venv/bin/python -m pip install --quiet -e ".[test]"
    echo "$want" > "$stamp"
fi
.venv/bin/python -c "import vidload, torch, av, cv2, h5py; print('vidload', vidload.__version__, '| torch', torch.__version__, '| av', av.__version__, '| opencv', cv2.__version__)"
