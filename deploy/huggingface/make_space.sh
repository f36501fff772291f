#!/usr/bin/env bash
# Make a Hugging Face Space's folder from this repository (Docker SDK): the committed files of HEAD, with
# deploy/huggingface/README.md (the Space's front matter) and deploy/huggingface/Dockerfile at its root and the
# project's README kept as README-kvviz.md. Then, in that folder: git init, add the Space as a remote, push.
#   deploy/huggingface/make_space.sh /path/to/new/space
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR (a new or empty folder)" >&2; exit 2; }
out=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
[ -z "$(ls -A "$out")" ] || { echo "$out is not empty" >&2; exit 2; }
git -C "$repo" archive --format=tar HEAD | tar -x -C "$out"
mv "$out/README.md" "$out/README-kvviz.md"
cp "$repo/deploy/huggingface/README.md" "$out/README.md"
cp "$repo/deploy/huggingface/Dockerfile" "$out/Dockerfile"
printf '.git\n.venv\ntests\ntest-artifacts\n__pycache__\n' > "$out/.dockerignore"
echo "Space folder ready: $out (README.md front matter: sdk docker, app_port 8501)"
