#!/usr/bin/env bash
# Installs the external tools that the grading/report tests drive on a clean Debian machine:
# headless Chromium (HTML report renders without console errors), xmllint (JUnit XML against our
# XSD) and python junitparser (a real JUnit consumer parses our XML). Idempotent; safe to re-run.
set -euo pipefail

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v xmllint >/dev/null 2>&1 || need_apt+=(libxml2-utils)
# Fonts so the screenshot and the SVG text render with real glyphs.
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need_apt+=(fonts-dejavu-core)

if [ "${#need_apt[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

if ! python3 -c 'import junitparser' >/dev/null 2>&1; then
    python3 -m pip install --quiet --disable-pip-version-check junitparser
fi

echo "ci-deps-issue5: chromium $(chromium --version 2>/dev/null | head -1), xmllint $(xmllint --version 2>&1 | head -1), junitparser $(python3 -c 'import junitparser; print(junitparser.version)' 2>/dev/null || echo '?')"
