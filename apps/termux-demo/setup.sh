#!/bin/sh
# bmoe phone demo: one-time setup for Termux (Android). Safe to run again: every step checks
# before it acts. Usage:  sh setup.sh        (sh setup.sh --help for the settings)
#
# Steps: 1 Node.js (pkg install nodejs)  2 free storage  3 RAM  4 the bmoe packages (npm)
#        5 the native binary (build tools with pkg; bmoe native build when no native binary loads)
#        6 the models folder on Termux's home (/data), with an O_DIRECT probe  7 the start command,
#        then what `bmoe native status` says
set -eu

BMOE_HOME="${BMOE_HOME:-$HOME/bmoe}"
APP_DIR="$BMOE_HOME/app"
MODELS_DIR="${BMOE_MODELS_DIR:-$BMOE_HOME/models}"
PACKAGES="@bmoe/cli @bmoe/server @bmoe/termux-demo"
NODE_MIN_MAJOR=20
NODE_MIN_MINOR=17
MIN_FREE_MIB=512

usage() {
  cat <<EOF
bmoe demo setup (Termux). Run: sh setup.sh

Settings (environment variables):
  BMOE_HOME          where the demo lives (default: ~/bmoe); the app goes in \$BMOE_HOME/app
  BMOE_MODELS_DIR    the models folder (default: \$BMOE_HOME/models)
  BMOE_NPM_REGISTRY  npm registry to install the bmoe packages from (default: npm's own)
  BMOE_TARBALL_DIR   install the bmoe packages from the *.tgz files in this folder instead
  BMOE_UPGRADE=1     reinstall the packages even when they are installed already
  BMOE_NATIVE_BUILD=auto|always|never
                     build the native binary on this device with bmoe native build (10-20 minutes
                     on a phone; clang, cmake, ninja and git, which setup installs on Termux):
                     auto (default) when no native binary loads (no prebuilt for this device; the
                     wasm fallback cannot stream experts), always, or never
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) printf 'setup.sh: unknown argument %s (try --help)\n' "$1" >&2; exit 2 ;;
esac
NATIVE_BUILD="${BMOE_NATIVE_BUILD:-auto}"
case "$NATIVE_BUILD" in
  auto | always | never) ;;
  *) printf 'setup.sh: BMOE_NATIVE_BUILD=%s: use auto, always or never (try --help)\n' "$NATIVE_BUILD" >&2; exit 2 ;;
esac

STEP=""
step() {
  STEP="$1"
  printf '\n[%s] %s\n' "$STEP" "$2"
}
say() { printf '  %s\n' "$*"; }
warn() { printf '  warning: %s\n' "$*"; }
die() {
  printf '\nsetup.sh: step "%s" failed: %s\n' "$STEP" "$*" >&2
  exit 1
}

is_termux() {
  [ -n "${TERMUX_VERSION:-}" ] && return 0
  command -v termux-info >/dev/null 2>&1 && return 0
  case "${PREFIX:-}" in */com.termux/*) return 0 ;; esac
  return 1
}

if is_termux; then
  TERMUX=1
  [ -n "${PREFIX:-}" ] || die "PREFIX is not set (Termux sets it; run this in a Termux session)"
  BIN_DIR="$PREFIX/bin"
else
  TERMUX=0
  BIN_DIR="${BMOE_BIN_DIR:-$HOME/.local/bin}"
fi

printf 'bmoe demo setup: %s, user %s, home %s\n' "$([ "$TERMUX" = 1 ] && echo "Termux ${TERMUX_VERSION:-}" || echo "not Termux ($(uname -s))")" "$(id -un 2>/dev/null || id -u)" "$HOME"
if [ "$(id -u)" = 0 ]; then
  warn "running as root: Termux never does; the files made here will belong to root"
fi

# ---- 1. Node.js -------------------------------------------------------------------------------
step 1/7 "Node.js >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR and npm"

node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  v=$(node -p 'process.versions.node' 2>/dev/null) || return 1
  major=${v%%.*}
  rest=${v#*.}
  minor=${rest%%.*}
  [ "$major" -gt "$NODE_MIN_MAJOR" ] || { [ "$major" -eq "$NODE_MIN_MAJOR" ] && [ "$minor" -ge "$NODE_MIN_MINOR" ]; }
}

if node_ok && command -v npm >/dev/null 2>&1; then
  say "node $(node -p 'process.versions.node') and npm $(npm --version 2>/dev/null) already installed"
elif [ "$TERMUX" = 1 ]; then
  command -v pkg >/dev/null 2>&1 || die "Termux's pkg command is missing"
  say "installing Node.js: pkg install -y nodejs"
  pkg install -y nodejs || die "pkg install -y nodejs exited $? (check the network, then run 'pkg update' and try again)"
  hash -r 2>/dev/null || true
  node_ok || die "node is still missing or older than $NODE_MIN_MAJOR.$NODE_MIN_MINOR after pkg install ($(command -v node || echo 'no node on PATH'))"
  command -v npm >/dev/null 2>&1 || die "npm is missing after pkg install nodejs"
  say "node $(node -p 'process.versions.node') and npm $(npm --version) installed"
else
  die "Node.js >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR with npm is needed; install it with your package manager (found: $(node --version 2>/dev/null || echo none))"
fi

# ---- 2. storage -------------------------------------------------------------------------------
step 2/7 "free storage in $HOME"
mkdir -p "$BMOE_HOME" || die "cannot create $BMOE_HOME"
free_kib=$(df -Pk "$BMOE_HOME" 2>/dev/null | awk 'NR == 2 { print $4 }')
case "$free_kib" in
  '' | *[!0-9]*) die "could not read the free space of $BMOE_HOME (df -Pk)" ;;
esac
free_mib=$((free_kib / 1024))
say "$free_mib MiB free on the filesystem of $BMOE_HOME"
[ "$free_mib" -ge "$MIN_FREE_MIB" ] || die "only $free_mib MiB free; the packages need about $MIN_FREE_MIB MiB, and a model needs its GGUF's size on top"
say "a model needs as much free space as its GGUF file"

# ---- 3. RAM -----------------------------------------------------------------------------------
step 3/7 "memory"
if [ -r /proc/meminfo ]; then
  total_mib=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
  avail_mib=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
  say "RAM ${total_mib:-?} MiB, available now ${avail_mib:-?} MiB"
  say "a model larger than what the phone can spare is not loaded whole: its experts stream from flash"
  say "(bmoe-demo models shows the settings each model gets)"
else
  warn "/proc/meminfo is not readable; the demo will fall back to Node's view of memory"
fi

# ---- 4. packages ------------------------------------------------------------------------------
step 4/7 "the bmoe packages ($PACKAGES) in $APP_DIR"
installed_version() {
  [ -x "$APP_DIR/node_modules/.bin/bmoe-demo" ] || return 1
  "$APP_DIR/node_modules/.bin/bmoe-demo" --version 2>/dev/null
}

if v=$(installed_version) && [ "${BMOE_UPGRADE:-0}" != 1 ]; then
  say "already installed (bmoe-demo $v); BMOE_UPGRADE=1 sh setup.sh reinstalls"
else
  mkdir -p "$APP_DIR" || die "cannot create $APP_DIR"
  [ -f "$APP_DIR/package.json" ] || printf '{ "name": "bmoe-app", "private": true, "description": "installed by bmoe setup.sh" }\n' >"$APP_DIR/package.json" ||
    die "cannot write $APP_DIR/package.json"
  set --
  if [ -n "${BMOE_TARBALL_DIR:-}" ]; then
    [ -d "$BMOE_TARBALL_DIR" ] || die "BMOE_TARBALL_DIR=$BMOE_TARBALL_DIR is not a folder"
    for t in "$BMOE_TARBALL_DIR"/*.tgz; do
      [ -f "$t" ] && set -- "$@" "$t"
    done
    [ "$#" -gt 0 ] || die "no .tgz files in BMOE_TARBALL_DIR=$BMOE_TARBALL_DIR"
    say "from $# local tarballs in $BMOE_TARBALL_DIR"
  else
    # shellcheck disable=SC2086 # PACKAGES is a list of names without spaces
    set -- $PACKAGES
    [ -n "${BMOE_NPM_REGISTRY:-}" ] && set -- --registry "$BMOE_NPM_REGISTRY" "$@"
    say "from ${BMOE_NPM_REGISTRY:-the npm registry}"
  fi
  (cd "$APP_DIR" && npm install --no-audit --no-fund --omit=dev "$@") ||
    die "npm install exited with an error (see above); check the network${BMOE_NPM_REGISTRY:+ and BMOE_NPM_REGISTRY}, then run setup.sh again"
  v=$(installed_version) || die "bmoe-demo does not run after the install ($APP_DIR/node_modules/.bin/bmoe-demo)"
  say "installed bmoe-demo $v"
fi

mkdir -p "$BIN_DIR" || die "cannot create $BIN_DIR"
for b in bmoe bmoe-demo; do
  [ -x "$APP_DIR/node_modules/.bin/$b" ] || die "$APP_DIR/node_modules/.bin/$b is missing after the install"
  ln -sf "$APP_DIR/node_modules/.bin/$b" "$BIN_DIR/$b" || die "cannot link $BIN_DIR/$b"
done
say "commands: $BIN_DIR/bmoe, $BIN_DIR/bmoe-demo"
case ":$PATH:" in
  *":$BIN_DIR:"*) ;;
  *) warn "$BIN_DIR is not on PATH: add  export PATH=\"$BIN_DIR:\$PATH\"  to your shell profile" ;;
esac

# ---- 5. native binary -------------------------------------------------------------------------
step 5/7 "the native binary (expert streaming needs one)"
BMOE="$APP_DIR/node_modules/.bin/bmoe"

# What `bmoe native build` needs and this device lacks, as Termux names the packages: a C++
# compiler (clang on Termux), cmake, ninja, git and tar (npm is there since step 1).
missing_tools() {
  m=""
  if [ "$TERMUX" = 1 ]; then
    command -v clang++ >/dev/null 2>&1 || m="$m clang"
  else
    command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1 || m="$m c++"
  fi
  for t in cmake ninja git tar; do
    command -v "$t" >/dev/null 2>&1 || m="$m $t"
  done
  printf '%s' "${m# }"
}
# How to install them: Termux's pkg, or Debian/Ubuntu's apt-get package names.
install_hint() {
  if [ "$TERMUX" = 1 ]; then
    printf 'pkg install -y %s' "$1"
    return
  fi
  printf 'sudo apt-get install -y'
  for n in $1; do
    case "$n" in
      c++) printf ' g++' ;;
      ninja) printf ' ninja-build' ;;
      *) printf ' %s' "$n" ;;
    esac
  done
}

tools=$(missing_tools)
if [ -z "$tools" ]; then
  say "build tools present (C++ compiler, cmake, ninja, git)"
elif [ "$NATIVE_BUILD" = never ]; then
  say "build tools missing ($tools): not installed, BMOE_NATIVE_BUILD=never"
elif [ "$TERMUX" = 1 ]; then
  say "installing the build tools bmoe native build needs: pkg install -y $tools"
  # shellcheck disable=SC2086 # tools is a list of package names without spaces
  pkg install -y $tools || warn "pkg install -y $tools exited $? (needed only if a build is)"
  hash -r 2>/dev/null || true
  tools=$(missing_tools)
  [ -z "$tools" ] || warn "still missing after pkg install: $tools"
else
  say "build tools missing: $tools (needed only to build the native binary here: $(install_hint "$tools"))"
fi

# Which binary the installed bmoe loads: sets kind (checkout, prebuilt, local, env, wasm, or none
# when nothing loads), streaming (true/false) and detail (the file, or why nothing loads: error,
# else the candidates that failed). Fails
# when `bmoe native status --json` gives no JSON (then why says what it printed).
native_status() {
  json=$("$BMOE" native status --json 2>/dev/null) || true
  line=$(node -e '
    let j;
    try { j = JSON.parse(process.argv[1]); } catch { process.exit(1); }
    if (!j || typeof j !== "object" || !("loaded" in j)) process.exit(1);
    const l = j.loaded;
    const failed = (j.failed || []).map((f) => f.candidate + ": " + f.reason).join("; ");
    if (l) console.log(l.kind + " " + Boolean(j.streaming) + " " + l.file + (l.variant ? " (" + l.variant + ")" : ""));
    else console.log("none false " + (j.error || failed || "no candidate"));
  ' "$json" 2>/dev/null) || {
    why=$("$BMOE" native status --json 2>&1 >/dev/null | head -n 1) || true
    return 1
  }
  kind=${line%% *}
  rest=${line#* }
  streaming=${rest%% *}
  detail=${rest#* }
}
is_native() {
  case "$1" in checkout | prebuilt | local | env) return 0 ;; esac
  return 1
}
status_or_die() {
  native_status ||
    die "bmoe native status --json did not answer (${why:-no output}): the installed bmoe is older than this setup.sh; BMOE_UPGRADE=1 sh setup.sh installs the current one"
}

status_or_die
if is_native "$kind"; then
  say "a native binary loads ($kind: $detail); expert streaming: $([ "$streaming" = true ] && echo yes || echo no)"
elif [ "$kind" = wasm ]; then
  say "only the wasm32-wasi fallback loads ($detail): slow, resident models only, no expert streaming"
else
  say "no bmoe binary loads: $detail"
  [ -z "${BMOE_NATIVE_PATH:-}" ] ||
    die "BMOE_NATIVE_PATH=$BMOE_NATIVE_PATH does not load ($detail); while it is set no other binary is tried: fix or unset it"
fi

build=0
case "$NATIVE_BUILD" in
  always) build=1 ;;
  auto) is_native "$kind" || build=1 ;;
esac
if [ "$build" = 0 ]; then
  if is_native "$kind"; then
    say "nothing to build"
  elif [ "$kind" = wasm ]; then
    warn "not building a native binary (BMOE_NATIVE_BUILD=never): models larger than RAM cannot run; bmoe native build makes one later"
  else
    die "no bmoe binary loads and BMOE_NATIVE_BUILD=never: nothing can run a model (run setup.sh without it to build one)"
  fi
else
  [ -z "$tools" ] || die "cannot build the native binary: missing $tools; install them ($(install_hint "$tools")) and run setup.sh again"
  say "building the native binary for this CPU: bmoe native build"
  say "this takes 10-20 minutes on a phone (seconds when it is built and current already)"
  [ "$TERMUX" = 1 ] && say "keep Termux open (termux-wake-lock keeps Android from pausing it)"
  "$BMOE" native build || die "bmoe native build exited $? (see above); fix what it says and run setup.sh again"
  status_or_die
  is_native "$kind" || die "after bmoe native build the loader still loads no native binary ($kind: $detail)"
  say "a native binary loads now ($kind: $detail)"
fi

# ---- 6. models folder -------------------------------------------------------------------------
step 6/7 "the models folder $MODELS_DIR"
mkdir -p "$MODELS_DIR" || die "cannot create $MODELS_DIR"
say "put GGUF models here. It is in Termux's home, on the phone's internal /data partition, where"
say "bmoe reads experts with O_DIRECT (straight from flash, bypassing the page cache)."
say "Not on /sdcard (~/storage/...): that is a FUSE filesystem, where O_DIRECT falls back to buffered reads"
say "that fill the page cache and evict the rest of the phone. Copy a downloaded model in with e.g."
say "  cp ~/storage/downloads/model.gguf $MODELS_DIR/    (after termux-setup-storage)"
case "$MODELS_DIR" in
  /sdcard* | /storage/* | "$HOME"/storage/*) warn "$MODELS_DIR looks like shared storage (FUSE): prefer a folder under $HOME" ;;
esac

if [ "$kind" = wasm ]; then
  warn "O_DIRECT probe skipped: only the wasm32-wasi fallback loads, and it reads nothing with O_DIRECT"
else
  probe_out=$("$BIN_DIR/bmoe-demo" probe "$MODELS_DIR" 2>&1) && probe_rc=0 || probe_rc=$?
  case "$probe_rc" in
    0) say "probe: $probe_out" ;;
    3) warn "probe: $probe_out" ;;
    *) die "the bmoe engine could not probe $MODELS_DIR: $probe_out" ;;
  esac
fi

# ---- 7. start ---------------------------------------------------------------------------------
step 7/7 "ready"
count=$(find "$MODELS_DIR" -maxdepth 1 -name '*.gguf' 2>/dev/null | wc -l | tr -d ' ')
if [ "$count" = 0 ]; then
  say "no model yet: copy a GGUF into $MODELS_DIR, or make the small synthetic demo model (a few hundred MiB):"
  say "  bmoe make-model --preset demo-qwen3moe --out $MODELS_DIR/demo-qwen3moe.gguf"
else
  say "$count model(s) in $MODELS_DIR (bmoe-demo models lists them with their settings)"
fi
[ "$TERMUX" = 1 ] && say "tip: termux-wake-lock keeps Android from pausing Termux while the demo runs"
start="bmoe-demo --open"
[ -n "${BMOE_MODELS_DIR:-}" ] && start="bmoe-demo --models $MODELS_DIR --open"
printf '\nStart the demo with:\n\n  %s\n\n(it serves the chat page on http://127.0.0.1:8080 and opens it in the browser)\n' "$start"

# Last: which binary runs the models, as `bmoe native status` says it.
printf '\nThe native binary (bmoe native status):\n\n'
"$BMOE" native status 2>&1 || true
