#!/usr/bin/env bash
# Makes the image's base from Debian's archive, for machines with no container registry:
# a minimal Debian bookworm made by mmdebstrap from the mirror this machine's apt uses,
# imported as a local image ($BASE_IMAGE). The tarball is cached outside the repository
# ($KIBITZ_CACHE_DIR, default ~/.cache/kibitz), so a later run only imports it.
set -euo pipefail

BASE_IMAGE=${BASE_IMAGE:-localhost/kibitz-base:bookworm}
CACHE_DIR=${KIBITZ_CACHE_DIR:-$HOME/.cache/kibitz}
TARBALL=$CACHE_DIR/debian-bookworm-minbase.tar
SUITE=bookworm

# The first deb.debian.org-style URI apt is configured with (deb822 or one-line format).
apt_mirror() {
    local uri
    uri=$(grep -hs -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
          | grep -v -- '-security' | awk '{print $2; exit}')
    if [ -z "$uri" ]; then
        uri=$(grep -hs -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
              | grep -v -- '-security' | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}')
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

if podman image exists "$BASE_IMAGE"; then
    echo "base: $BASE_IMAGE is present"
    exit 0
fi
mkdir -p "$CACHE_DIR"
if [ ! -s "$TARBALL" ]; then
    mirror=$(apt_mirror)
    security=${mirror%/debian}/debian-security
    echo "base: making Debian $SUITE (minbase) from $mirror with mmdebstrap"
    # Like debian:bookworm-slim: no documentation, manual pages or translations (the image
    # installs python3 on top); apt's package lists are not kept.
    # /usr merged by mmdebstrap's hook, as in Debian's images: the usrmerge package would
    # pull in perl (50 MB).
    mmdebstrap --variant=minbase --mode=auto --format=tar \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --aptopt='Acquire::Languages "none"' \
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
        "$SUITE" "$TARBALL.part" \
        "deb $mirror $SUITE main" \
        "deb $mirror $SUITE-updates main" \
        "deb $security $SUITE-security main"
    mv "$TARBALL.part" "$TARBALL"
fi
echo "base: importing $TARBALL as $BASE_IMAGE"
podman import --change 'CMD ["bash"]' "$TARBALL" "$BASE_IMAGE" > /dev/null
