# The node runtime's build step, run for a submission that has a package.json: `npm ci`
# against its lock file, leaving the installed packages in /artifact/node_modules (the bot
# sees them as /bot/node_modules). Runs in /src (the submission, read-only) as uid 65534
# with HOME=/tmp, under the build limits, with no network unless KRYT_BUILD_ONLINE=1 (the
# organiser's setting; the backend then also gives the build a network).
#
# Where packages come from, without a network: `file:` dependencies vendored in the
# submission (tarballs or folders), an npm cache folder `npm-cache/` shipped with it, or a
# shipped `node_modules/` (used as it is, after `npm ls` checked it against package.json).
# Install scripts never run (--ignore-scripts): packages must be plain JavaScript. A
# submission's .npmrc is not used (npm's defaults only): npm reads the project's .npmrc from
# the folder it runs in, so every npm command runs in a copy of the submission without it,
# and the user and global config files are ones that are empty or do not exist.
set -u
npm_cli=/opt/kryt/node/node_modules/npm/bin/npm-cli.js
log=/tmp/kryt-npm.log
fail() {
  echo "kryt-build-failed: $*"
  exit 1
}
npm() {
  npm_config_userconfig=/dev/null npm_config_globalconfig=/opt/kryt/node/no-global-npmrc \
    node "$npm_cli" --no-update-notifier --no-audit --no-fund "$@" >"$log" 2>&1
  status=$?
  # The debug log npm names stays inside the build container: no use to the author.
  grep -v "A complete log of this run" "$log"
  return $status
}

if [ ! -f package-lock.json ] && [ ! -f npm-shrinkwrap.json ]; then
  fail "package.json has no package-lock.json next to it: run npm install on your machine and submit package-lock.json too"
fi

# npm ci would first try to fetch what package.json adds: say plainly what is wrong instead.
lock=package-lock.json
[ -f npm-shrinkwrap.json ] && lock=npm-shrinkwrap.json
node -e '
const fs = require("fs");
const read = (file) => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (error) {
    console.log(`${file}: ${error.message}`);
    process.exit(2);
  }
};
const manifest = read("package.json");
const lock = read(process.argv[1]);
if (!lock.packages) process.exit(0); // a version 1 lock file: npm ci checks it itself
const root = lock.packages[""] || {};
const kinds = ["dependencies", "devDependencies", "optionalDependencies", "peerDependencies"];
const differ = [];
for (const kind of kinds) {
  const want = manifest[kind] || {};
  const locked = root[kind] || {};
  for (const name of new Set([...Object.keys(want), ...Object.keys(locked)])) {
    if (want[name] !== locked[name]) {
      differ.push(`${kind}.${name}: ${want[name] || "-"} in package.json, ${locked[name] || "-"} in the lock`);
    }
  }
}
if (differ.length) {
  console.log(differ.sort().join("\n"));
  process.exit(1);
}' "$lock"
case $? in
  0) ;;
  1) fail "package.json and $lock do not match: run npm install on your machine and submit both files" ;;
  *) fail "package.json or $lock cannot be read as JSON (see above)" ;;
esac

work=/tmp/kryt-npm
cache=/tmp/kryt-npm-cache
mkdir -p "$work" "$cache" || fail "cannot create the build folder $work"
cp -R /src/. "$work/" || fail "cannot copy the submission to $work"
# A project .npmrc could name programs npm runs (git=..., script-shell=...) despite
# --ignore-scripts, or where it writes (logs-dir=..., cache=...): the build uses npm's
# defaults only. npm reads it from the folder it runs in, so npm runs in $work only.
rm -f "$work/.npmrc" || fail "cannot remove the submission's .npmrc"
cd "$work" || fail "cannot enter $work"

if [ -e node_modules ]; then
  npm ls --all --omit=dev --offline --cache "$cache" && exit 0
  fail "the shipped node_modules does not match package.json (missing or wrong versions, see npm ls above): run npm ci and submit node_modules again"
fi

if [ -d npm-cache ]; then
  cp -R npm-cache/. "$cache/" || fail "cannot copy npm-cache/"
fi
mode=--offline
if [ "${KRYT_BUILD_ONLINE:-0}" = 1 ]; then
  mode=--prefer-offline
fi
if ! npm ci --omit=dev --ignore-scripts "$mode" --cache "$cache"; then
  if grep -q ENOTCACHED "$log"; then
    fail "a dependency in package-lock.json is not vendored (as a file: dependency or in npm-cache/) and this build has no network: vendor it, or ask the organiser to allow the registry"
  elif grep -q EUSAGE "$log" && grep -q "in sync" "$log"; then
    fail "package.json and package-lock.json do not match: run npm install on your machine and submit both files"
  elif grep -q -E "ENOENT|EISDIR|ENOTDIR" "$log"; then
    fail "a file named in package-lock.json is missing from the submission (see npm's error above)"
  elif grep -q EINTEGRITY "$log"; then
    fail "a vendored package does not match its integrity hash in package-lock.json"
  fi
  fail "npm ci failed (see its output above)"
fi
mkdir -p node_modules && cp -R node_modules /artifact/ || fail "cannot copy node_modules to /artifact"
