#!/bin/sh
# Installs Debian's Chromium for the page's browser tests (bridge/page_test.go)
# where none is found. make test and make race run it; CI never skips those
# tests (ASKCTL_REQUIRE_BROWSER=1). ASKCTL_CHROMIUM names another browser.
set -eu
if [ -n "${ASKCTL_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-chromium: no chromium, and no apt-get to install it: install Chromium, or set ASKCTL_CHROMIUM=PATH" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo=sudo
fi
echo "install-chromium: installing Debian's chromium for the page's browser tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
