#!/usr/bin/env bash
# .ci/setup by capability, without root or network (label unit):
#  1. the GPU machine: apt-get is there but cannot reach its lists (a stub that fails like it), and an
#     optional command (gnuplot) is missing: the set-up tries apt, says it cannot install, and exits 0
#     because everything the build needs is present (on CI after the first set-up; on the GPU machine);
#  2. --check only reports: it never calls apt-get;
#  3. a required command is missing (a PATH without cmake): exit 1, naming cmake and its package;
#  4. a fresh machine: apt reaches its lists and has a candidate (an apt-cache stub that answers in
#     two writes, as the real one does): the set-up installs the missing optional gnuplot-nox;
#  5. a fresh machine's sequence: nothing installed (dpkg-query says so, no cmake to probe with), so
#     the first round installs libtorch-dev, which brings the reference BLAS into a staged library
#     folder; the check after it wants OpenBLAS, and the same run installs it in a second round.
#   ctest/ci/test_setup.sh SOURCE_DIR
set -u
src="${1:?usage: test_setup.sh SOURCE_DIR}"
work=$(mktemp -d "${TMPDIR:-/tmp}/kbrl-test-setup.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# stubs: apt-get fails as on a machine without network (and logs that it was called); sudo runs its
# command as is (no password prompt in a test)
mkdir -p "$work/stubs"
printf '#!/bin/sh\necho "apt-get $*" >> "%s/apt-calls"\necho "E: Failed to fetch (simulated: no network)" >&2\nexit 100\n' \
  "$work" > "$work/stubs/apt-get"
printf '#!/bin/sh\nexec "$@"\n' > "$work/stubs/sudo"
chmod +x "$work/stubs/apt-get" "$work/stubs/sudo"

# path_without NAME...: $PATH with every folder that holds one of NAMEs replaced by a copy made of
# links to its other entries, so those commands are not found and everything else still is.
path_without() {
  local out="" dir farm name entry hide
  IFS=: read -r -a dirs <<< "$PATH"
  for dir in "${dirs[@]}"; do
    hide=no
    for name in "$@"; do [ -e "$dir/$name" ] && hide=yes; done
    if [ "$hide" = yes ]; then
      farm=$(mktemp -d "$work/path.XXXXXX")
      for entry in "$dir"/*; do
        name=${entry##*/}
        case " $* " in *" $name "*) continue ;; esac
        ln -s "$entry" "$farm/$name"
      done
      dir="$farm"
    fi
    out="$out${out:+:}$dir"
  done
  echo "$out"
}

# 1. the GPU machine's situation
rm -f "$work/apt-calls"
log=$(PATH="$work/stubs:$(path_without gnuplot)" bash "$src/.ci/setup" --no-llm 2>&1); rc=$?
echo "--- 1. apt without its lists, gnuplot missing (rc $rc):"; echo "$log"
[ "$rc" -eq 0 ] || fail "1: exit $rc, expected 0 (everything required is present)"
[ -s "$work/apt-calls" ] || fail "1: apt-get was not tried for the missing gnuplot-nox"
grep -q "apt cannot reach its package lists" <<< "$log" || fail "1: no line saying apt cannot reach its lists"
grep -qE "gnuplot +optional .*gnuplot-nox" <<< "$log" || fail "1: gnuplot not reported as optional (gnuplot-nox)"
grep -q "the build can proceed" <<< "$log" || fail "1: no line saying the build can proceed"

# 2. --check: a report, no apt
rm -f "$work/apt-calls"
log=$(PATH="$work/stubs:$(path_without gnuplot)" bash "$src/.ci/setup" --check 2>&1); rc=$?
echo "--- 2. --check (rc $rc):"; echo "$log"
[ "$rc" -eq 0 ] || fail "2: exit $rc, expected 0"
[ -e "$work/apt-calls" ] && fail "2: --check called apt-get: $(cat "$work/apt-calls")"

# 3. no cmake: the build cannot proceed, and the report says what to install
rm -f "$work/apt-calls"
log=$(PATH="$work/stubs:$(path_without cmake)" bash "$src/.ci/setup" --no-llm 2>&1); rc=$?
echo "--- 3. no cmake (rc $rc):"; echo "$log"
[ "$rc" -ne 0 ] || fail "3: exit 0 without cmake"
grep -qE "^  - cmake: .*\(Debian: cmake\)" <<< "$log" || fail "3: the missing list does not name cmake and its package"
grep -q "the build cannot proceed" <<< "$log" || fail "3: no line saying the build cannot proceed"

# 4. a fresh machine with apt online: the missing package is installed
mkdir -p "$work/online"
printf '#!/bin/sh\necho "apt-get $*" >> "%s/apt-calls"\nexit 0\n' "$work" > "$work/online/apt-get"
printf '#!/bin/sh\necho "$2:"\necho "  Installed: (none)"\necho "  Candidate: 1.0-1"\nsleep 0.2\necho "  Version table:"\necho "     1.0-1 500"\n' \
  > "$work/online/apt-cache"
cp "$work/stubs/sudo" "$work/online/sudo"
chmod +x "$work/online/apt-get" "$work/online/apt-cache" "$work/online/sudo"
rm -f "$work/apt-calls"
log=$(PATH="$work/online:$(path_without gnuplot)" bash "$src/.ci/setup" --no-llm 2>&1); rc=$?
echo "--- 4. apt online, gnuplot missing (rc $rc):"; echo "$log"
[ "$rc" -eq 0 ] || fail "4: exit $rc, expected 0"
grep -q "apt-get install .*gnuplot-nox" "$work/apt-calls" 2> /dev/null ||
  fail "4: gnuplot-nox was not installed (apt-get calls: $(cat "$work/apt-calls" 2> /dev/null))"
grep -q "no candidate" <<< "$log" && fail "4: a package with a candidate was called unavailable"

# 5. nothing installed -> libtorch-dev installed -> OpenBLAS, in one run
mkdir -p "$work/fresh" "$work/libdir/blas" "$work/libdir/openblas-pthread"
touch "$work/libdir/blas/libblas.so.3" "$work/libdir/openblas-pthread/libblas.so.3"
cat > "$work/fresh/apt-get" <<STUB
#!/bin/sh
echo "apt-get \$*" >> "$work/apt-calls"
[ "\$1" = install ] || exit 0
for p in "\$@"; do
  echo "\$p" >> "$work/installed"
  case "\$p" in
    libtorch-dev) touch "$work/libdir/libtorch_cpu.so"; ln -sf blas/libblas.so.3 "$work/libdir/libblas.so.3" ;;
    libopenblas0-pthread) ln -sf openblas-pthread/libblas.so.3 "$work/libdir/libblas.so.3" ;;
  esac
done
STUB
cat > "$work/fresh/dpkg-query" <<STUB
#!/bin/sh
for p in "\$@"; do last="\$p"; done
grep -qx "\$last" "$work/installed" 2>/dev/null && echo "install ok installed" && exit 0
exit 1
STUB
cp "$work/online/apt-cache" "$work/online/sudo" "$work/fresh/"
chmod +x "$work/fresh/"*
rm -f "$work/apt-calls" "$work/installed"
log=$(PATH="$work/fresh:$(path_without cmake)" KBRL_SYSTEM_LIBDIR="$work/libdir" \
      bash "$src/.ci/setup" --no-llm 2>&1); rc=$?
echo "--- 5. a fresh machine (rc $rc):"; echo "$log"; echo "apt-get calls:"; cat "$work/apt-calls" 2> /dev/null
grep -q "apt-get install .*libtorch-dev" "$work/apt-calls" 2> /dev/null || fail "5: libtorch-dev was not installed"
grep -q "apt-get install .*libopenblas0-pthread" "$work/apt-calls" 2> /dev/null ||
  fail "5: OpenBLAS was not installed after libtorch-dev brought the reference BLAS"
[ "$(grep -c '^apt-get update' "$work/apt-calls" 2> /dev/null)" = 1 ] || fail "5: apt-get update ran other than once"
[ "$(grep -c 'apt-get install .*libtorch-dev' "$work/apt-calls" 2> /dev/null)" = 1 ] ||
  fail "5: libtorch-dev was installed more than once"

[ "$failures" -eq 0 ] && echo "test_setup: all checks passed" && exit 0
echo "test_setup: $failures check(s) failed"
exit 1
