#!/usr/bin/env bash
# `make test-container`: builds the image from Debian's archive alone and tries it.
#
# 1. podman, buildah and mmdebstrap from Debian's archive when missing (skips, saying why,
#    when they cannot be installed);
# 2. the base image: $BASE when given, else Debian bookworm made by mmdebstrap
#    (tools/container/base.sh, cached in ~/.cache/kibitz);
# 3. the image, built with `podman build --isolation chroot` (no daemon, no registry);
# 4. in a working container of the image (`buildah run --isolation chroot`, which needs no
#    permission to set resource limits, unlike `podman run`): the user is not root; `kibitz
#    check-config` on the image's configuration with the token and page password as secrets;
#    `kibitz-engine` starts without compiling (numba's cache loaded, nothing written to it);
#    `kibitz demo` plays its game against the sandbox to the end; `kibitz play` with the
#    image's configuration passes the image's HEALTHCHECK and, sent SIGTERM during a game,
#    lets it end and exits 0 (tools/container/play_check.py); nothing is compiled at run time.
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-localhost/kibitz:test}
DEMO_TIMEOUT_S=${DEMO_TIMEOUT_S:-900}
NUMBA_CACHE=/opt/kibitz/numba-cache  # NUMBA_CACHE_DIR in the Containerfile
TOKEN=lip_containerTest123  # a made-up token: the test only checks where it is read from

skip() {
    echo "test-container: SKIPPED: $*"
    exit 0
}
fail() {
    echo "test-container: FAILED: $*" >&2
    exit 1
}

missing=""
for tool in podman buildah mmdebstrap; do
    command -v "$tool" > /dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get > /dev/null 2>&1; then
        skip "${missing# } not installed, and apt-get cannot install them here (not root, or no apt)"
    fi
    echo "installing$missing from Debian's archive"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } \
        || skip "apt-get could not install$missing"
fi
podman info > /dev/null 2>&1 || skip "podman cannot run here: $(podman info 2>&1 | tail -1)"

if [ -z "${BASE:-}" ]; then
    BASE=localhost/kibitz-base:bookworm
    BASE_IMAGE=$BASE tools/container/base.sh
fi

# The CA bundle this machine's pip trusts (a network that inspects HTTPS), lent to the build.
host_ca=${PIP_CERT:-$(sed -n 's/^cert *= *//p' /etc/pip.conf 2>/dev/null | head -1)}
ca_args=()
if [ -n "$host_ca" ] && [ -f "$host_ca" ]; then
    ca_args=(--volume "$host_ca:/run/build-ca.crt:ro" --build-arg PIP_CERT=/run/build-ca.crt)
fi

echo "building $IMAGE on $BASE"
build_start_s=$(date +%s)
# The docker format keeps HEALTHCHECK (the OCI image format has no such field).
podman build --isolation chroot --format docker --pull=never --build-arg "BASE=$BASE" \
    "${ca_args[@]}" --tag "$IMAGE" --file Containerfile .
build_s=$(( $(date +%s) - build_start_s ))
size_b=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "image: $IMAGE, $(( size_b / 1000000 )) MB, built in ${build_s} s"
podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" | grep -q healthz \
    || fail "the image has no HEALTHCHECK on /healthz"

secrets=$(mktemp -d)
container=""
cleanup() {
    [ -z "$container" ] || buildah rm "$container" > /dev/null
    rm -rf "$secrets"
}
trap cleanup EXIT
printf '%s\n' "$TOKEN" > "$secrets/lichess-token"
printf 'page-password\n' > "$secrets/watch-password"
chmod 0755 "$secrets"
chmod 0444 "$secrets"/*
container=$(buildah from --pull-never "$IMAGE")
in_image() {
    buildah run --isolation chroot --volume "$secrets:/run/secrets:ro" "$container" -- "$@"
}

uid=$(in_image id -u)
[ "$uid" != 0 ] || fail "the image runs as root"
echo "user: uid $uid"
in_image touch /tmp/before-first-start

echo "--- kibitz check-config --config /etc/kibitz/config.yml"
report=$(in_image kibitz check-config --config /etc/kibitz/config.yml) \
    || fail "check-config refused the image's configuration: $report"
echo "$report" | grep -E '^# (server|token|problem|warning)' || true
echo "$report" | grep -q "^  host: 0.0.0.0" || fail "the page does not listen on 0.0.0.0"
echo "$report" | grep -q "from container secret /run/secrets/lichess-token" \
    || fail "the token was not read from the secret"
case "$report" in *"$TOKEN"*) fail "check-config printed the token" ;; esac

echo "--- kibitz-engine: start-up from the compiled cache"
in_image python3 -c '
import subprocess, sys, time
start_s = time.monotonic()
engine = subprocess.Popen(["kibitz-engine"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
assert engine.stdin is not None and engine.stdout is not None
engine.stdin.write("uci\nisready\nposition startpos\ngo depth 8\n")
engine.stdin.flush()
seen = {}
for line in engine.stdout:
    word = line.split(" ", 1)[0].strip()
    if word in ("uciok", "readyok", "bestmove") and word not in seen:
        seen[word] = time.monotonic() - start_s
    if word == "bestmove":
        break
engine.stdin.write("quit\n")
engine.stdin.close()
engine.wait()
print("  ".join(f"{word} after {at_s:.2f} s" for word, at_s in seen.items()))
sys.exit(0 if "bestmove" in seen else 1)
' || fail "kibitz-engine did not answer"
bench=$(in_image env NUMBA_DEBUG_CACHE=1 kibitz-engine bench 2>&1) || fail "bench failed: $bench"
echo "$bench" | grep -v '^\[cache\]' | tail -3
loaded=$(echo "$bench" | grep -c '^\[cache\] data loaded from' || true)
saved=$(echo "$bench" | grep -c '^\[cache\] data saved to' || true)
echo "numba cache: $loaded functions loaded, $saved compiled and saved"
[ "$loaded" -gt 0 ] && [ "$saved" = 0 ] || fail "the bench compiled instead of loading the cache"

echo "--- kibitz demo (a game against the sandbox, to its end)"
in_image timeout "$DEMO_TIMEOUT_S" kibitz demo | tail -4 || fail "the demo game did not end"
echo "--- kibitz play: the health check, then SIGTERM during a game"
if (exec 3<> /dev/tcp/127.0.0.1/8740) 2> /dev/null; then
    fail "port 8740 is in use on this machine (the working container shares its network)"
fi
healthcheck=$(podman image inspect --format '{{json .Config.Healthcheck.Test}}' "$IMAGE")
buildah run --isolation chroot --volume "$secrets:/run/secrets:ro" \
    --volume "$PWD/tools/container:/tmp/container-check:ro" "$container" -- \
    timeout "$DEMO_TIMEOUT_S" python3 /tmp/container-check/play_check.py \
    --healthcheck "$healthcheck" | grep -v '^  | ' || fail "kibitz play in the image"
compiled=$(in_image find "$NUMBA_CACHE" -type f -newer /tmp/before-first-start)
[ -z "$compiled" ] || fail "compiled at run time: $compiled"
echo "numba cache: nothing compiled at run time"
echo "test-container: OK (image $(( size_b / 1000000 )) MB, built in ${build_s} s)"
