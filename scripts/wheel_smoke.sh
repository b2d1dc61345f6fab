#!/usr/bin/env bash
# swag as users install it: build the wheel, then for each extra (spark, beam, flink) install
# it into a fresh virtual environment, not editable, and run a tiny query there from a
# directory outside the checkout (scripts/smoke_query.py: the result checked against brute
# force, swag imported from that environment). Each environment starts from the engine's
# pinned requirements (pip's cache makes that fast); installing 'swag[<extra>]' must then
# change nothing else (the extra's ranges admit what the suites test), `pip check` must be
# clean, and the query must print no Python warning (PySpark's about pandas 3, for one).
#
# Usage: scripts/wheel_smoke.sh [PYTHON [EXTRA...]]   (default: python3, all three extras)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-python3}
shift || true
extras=${*:-spark beam flink}
work=$(mktemp -d "${TMPDIR:-/tmp}/swag-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "wheel_smoke: $*" >&2; exit 1; }

# Built from a copy of the tracked files: the build writes build/ and *.egg-info next to the
# sources, which the other suites running from the checkout need not see.
mkdir "$work/src"
(cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work/src")
"$python" -m pip wheel -q --no-deps -w "$work/dist" "$work/src"
wheel=$(echo "$work"/dist/swag-*.whl)
[ -f "$wheel" ] || fail "no wheel built in $work/dist"
echo "built $(basename "$wheel")"

for extra in $extras; do
    start=$SECONDS
    venv=$work/venv-$extra
    pip=("$venv/bin/python" -m pip)
    "$python" -m venv "$venv"
    "${pip[@]}" install -q -r "$root/requirements/$extra.txt"
    "${pip[@]}" freeze | sort > "$work/$extra.pinned"
    "${pip[@]}" install -q "$wheel[$extra]"
    "${pip[@]}" freeze | grep -v '^swag @ ' | sort > "$work/$extra.installed"
    diff "$work/$extra.pinned" "$work/$extra.installed" >&2 \
        || fail "installing swag[$extra] changed requirements/$extra.txt's environment (above)"
    "${pip[@]}" check
    (cd "$work" && env -u PYTHONPATH "$venv/bin/python" "$root/scripts/smoke_query.py" \
        "$extra" 2> "$work/$extra.stderr") \
        || { cat "$work/$extra.stderr" >&2; fail "the $extra query failed"; }
    if grep -E "[A-Za-z]+Warning: " "$work/$extra.stderr" >&2; then
        fail "the $extra query printed the warnings above"
    fi
    echo "swag[$extra]: installed, pip check clean, query right, no warning ($((SECONDS - start)) s)"
done
