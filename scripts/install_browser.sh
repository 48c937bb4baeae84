#!/usr/bin/env bash
# Headless Chromium for the report's browser test (Debian's chromium package), and a
# CJK font so the documents' Chinese headings render in its screenshots.
set -u
have_browser() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }
have_font() { fc-list 2>/dev/null | grep -qi "wenquanyi\|noto sans cjk"; }
if have_browser && have_font; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's chromium and fonts-wqy-zenhei for the report's browser test"
  packages="chromium fonts-wqy-zenhei"
  apt-get install -y -q $packages >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $packages >/dev/null 2>&1; } ||
    echo "could not install $packages; the browser test will be skipped with this reason"
else
  echo "chromium is not installed and cannot be installed here (needs root and apt-get);"
  echo "  the browser test will be skipped with this reason"
fi
exit 0
