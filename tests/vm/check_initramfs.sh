#!/bin/sh
# check_initramfs.sh FILE: whether the VM test's initramfs (an uncompressed newc cpio, made by
# tests/vm/run.sh) holds what the guest needs, in shell with cpio, od and file: /init, a busybox
# shell script; a static busybox; the static noderecover binary; each module of
# lib/modules/order as a plain ELF .ko (busybox insmod reads no .ko.xz), softdog after the
# watchdog core and the NIC driver; the agent's settings with the fence's variables; a peer
# secret of at least 16 bytes; the CA and token. One line per problem, exit 1 on any; run.sh
# also feeds it one without softdog.ko, which it must refuse.
set -u
f=$1
bad=0
no() { echo "check_initramfs: $f: $*" >&2; bad=1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
[ "$(od -An -c -N6 "$f" | tr -d ' ')" = 070701 ] || no "not an uncompressed newc cpio archive"
(cd "$t" && cpio -id --quiet < "$f") 2>/dev/null || no "cpio cannot extract it"

for p in init bin/busybox bin/noderecover lib/modules/order etc/noderecover/settings \
	etc/noderecover/peer-secret etc/noderecover/ca.crt etc/noderecover/token; do
	[ -f "$t/$p" ] || no "no $p"
done
[ -x "$t/init" ] || no "init is not executable"
[ "$(head -n 1 "$t/init" 2>/dev/null)" = '#!/bin/busybox sh' ] || no "init is not a busybox sh script"
for b in bin/busybox bin/noderecover; do
	[ -x "$t/$b" ] || { no "$b is not executable"; continue; }
	file -L "$t/$b" | grep -q 'statically linked' || no "$b is not statically linked (the guest has no libc)"
done
file -L "$t/bin/noderecover" | grep -q 'x86-64' || no "bin/noderecover is not an x86-64 binary"

# the modules: each listed one there, an ELF relocatable (not compressed), the order right
elf() { [ "$(od -An -c -N4 "$1" | tr -d ' ')" = '177ELF' ]; }
line_of() { grep -nx "$1" "$t/lib/modules/order" 2>/dev/null | cut -d: -f1; }
while read -r m; do
	[ -f "$t/lib/modules/$m" ] || { no "lib/modules/order lists $m, which is missing"; continue; }
	elf "$t/lib/modules/$m" || no "lib/modules/$m is not a plain ELF module (compressed?)"
done < "$t/lib/modules/order"
for m in watchdog.ko softdog.ko e1000.ko; do
	[ -n "$(line_of "$m")" ] && [ -f "$t/lib/modules/$m" ] || no "no $m"
done
w=$(line_of watchdog.ko) s=$(line_of softdog.ko)
[ -z "$w" ] || [ -z "$s" ] || [ "$w" -lt "$s" ] || no "softdog.ko is loaded before the watchdog core it depends on"

# the settings: the fence's, with the short times the test relies on
for v in NODE_RECOVERY_SELF_NODE=vm-node-1 NODE_RECOVERY_FENCE_NAMESPACE=noderecover \
	NODE_RECOVERY_FENCE_AFTER=2s NODE_RECOVERY_FENCE_ISOLATED_AFTER=2s \
	NODE_RECOVERY_FENCE_WATCHDOG=/dev/watchdog NODE_RECOVERY_FENCE_WATCHDOG_TIMEOUT=5s \
	NODE_RECOVERY_FENCE_PEER_SECRET_FILE=/etc/noderecover/peer-secret; do
	grep -qx "$v" "$t/etc/noderecover/settings" 2>/dev/null || no "settings lack $v"
done
n=$(wc -c < "$t/etc/noderecover/peer-secret" 2>/dev/null || echo 0)
[ "$n" -ge 16 ] || no "the peer secret has $n bytes (want 16 or more)"
grep -q 'BEGIN CERTIFICATE' "$t/etc/noderecover/ca.crt" 2>/dev/null || no "ca.crt is no PEM certificate"
[ -s "$t/etc/noderecover/token" ] || no "the token is empty"
[ $bad -eq 0 ] && echo "check_initramfs: $f holds init, busybox, noderecover, $(tr '\n' ' ' < "$t/lib/modules/order")and the agent's settings"
exit $bad
