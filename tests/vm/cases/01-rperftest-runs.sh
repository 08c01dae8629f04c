#!/bin/bash
# The project binary is on PATH in the guest, is a static executable (no ELF
# interpreter: it must run on hosts without rdma-core and in the bare image)
# and executes without a loader error.  While the CLI is a stub that prints
# "not yet implemented", only "it ran" is asserted; once `--version` works it
# must exit 0 and name itself.
# mode: any
# timeout: 60
. "$VMTEST_LIB"

bin=$(command -v rperftest) || fail "rperftest not on PATH ($PATH)"
log "rperftest at $bin ($(wc -c <"$bin") bytes)"
interp=$(elf_interp "$bin") || fail "rperftest is not an ELF file"
[ -z "$interp" ] || fail "rperftest is dynamically linked (interpreter $interp); build it with tests/vm/build-static.sh"

run rperftest --version
for bad in "error while loading shared libraries" "No such file or directory" "not found" "Exec format error"; do
    expect_not_contains "$bad"
done
case "$LAST_RC" in
    126|127) fail "rperftest could not be executed (rc=$LAST_RC)" ;;
esac
[ "$LAST_RC" -lt 128 ] || fail "rperftest died from signal $((LAST_RC - 128))"
if grep -qF "not yet implemented" "$LAST_OUT"; then
    log "rperftest ran (the CLI is still a stub: rc=$LAST_RC, 'not yet implemented')"
    exit 0
fi
[ "$LAST_RC" = 0 ] || fail "rperftest --version exited $LAST_RC"
expect_contains "rperftest"
