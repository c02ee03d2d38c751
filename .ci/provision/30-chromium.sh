# shellcheck shell=bash
# Provision headless Chromium for the browser tests of the leaderboard site (sourced by .ci/run
# as root on Debian 12, with `set -euo pipefail` active): Debian's chromium and its matching
# chromedriver. Selenium (the 'dev' extra) drives them through the explicit paths exported
# here, so nothing is downloaded at test time. Idempotent: installs only what is missing.
#
# Exports KRYT_CHROMIUM and KRYT_CHROMEDRIVER (read by tests/web/test_browser.py).

_kryt_apt_missing=()
# DejaVu has the suit symbols the pages and screenshots use.
for _pkg in chromium chromium-driver fonts-dejavu-core; do
  dpkg-query -W -f='${Status}' "$_pkg" 2>/dev/null | grep -q "install ok installed" \
    || _kryt_apt_missing+=("$_pkg")
done
if [ "${#_kryt_apt_missing[@]}" -gt 0 ]; then
  echo "installing: ${_kryt_apt_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${_kryt_apt_missing[@]}" >/dev/null
fi
unset _kryt_apt_missing _pkg

export KRYT_CHROMIUM=/usr/bin/chromium
export KRYT_CHROMEDRIVER=/usr/bin/chromedriver
# Fail here, with the reason, rather than in the middle of the test run.
"$KRYT_CHROMIUM" --version
"$KRYT_CHROMEDRIVER" --version
