#!/usr/bin/env bash
# Installs the external tools the grading/report tests drive, on a clean Debian machine:
#   chromium       — the HTML report renders in headless Chromium without console errors
#   libxml2-utils  — xmllint validates the JUnit XML against schemas/junit.xsd
#   junitparser    — a real JUnit consumer (Python, from PyPI) parses the JUnit XML
# The tests print "SKIPPED: …" when a tool is missing; CI runs this first so none is skipped.
# Idempotent: installs only what is missing.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_install() {
    if [ "$apt_updated" = 0 ]; then
        apt-get update -qq
        apt_updated=1
    fi
    apt-get install -y -qq --no-install-recommends "$@"
}

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v xmllint >/dev/null 2>&1 || need+=(libxml2-utils)
# Fonts, so the chart text and the screenshot render with real glyphs.
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need+=(fonts-dejavu-core)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "${#need[@]}" -gt 0 ]; then
    apt_install "${need[@]}"
fi

if ! python3 -c 'import junitparser' >/dev/null 2>&1; then
    python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
    pip_install() { python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@" junitparser; }
    # Debian's own python3 refuses pip installs into the system (PEP 668) unless told otherwise.
    pip_install || pip_install --break-system-packages
fi

echo "ci-deps-issue5: $(chromium --version 2>/dev/null | head -1); $(xmllint --version 2>&1 | head -1); junitparser $(python3 -c 'import junitparser; print(junitparser.version)')"
