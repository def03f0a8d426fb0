#!/bin/sh
# The fence's real watchdog test (issue 23): `noderecover fence` as PID 1's child in a qemu
# virtual machine (TCG: no KVM needed) with Debian's kernel and its softdog, against the stand-in
# API server (tests/vm/standin_vm.py) on the host's loopback, which the guest reaches as
# 10.0.2.2 through qemu's user network (the only address the guest is given to reach).
#
#   tests/vm/run.sh [BINARY]      default build/noderecover (static: it runs in the guest as is)
#   NODERECOVER_VM_CACHE=DIR      where the kernel is kept (default /var/cache/noderecover-vm,
#                                 or ~/.cache/noderecover-vm when that is not writable)
#   NODERECOVER_VM_AGENT=placeholder  a shell stand-in for the agent (the harness's own check)
#
# Cases, each in a VM of its own, both VMs at once:
#   watchdog  --fence-action watchdog on /dev/watchdog (softdog, 5 s): the stand-in up for 30 s,
#             the machine keeps running and the agent renews its Lease (must-fail half); the
#             stand-in stopped, the agent logs its fence line and stops petting, softdog resets
#             the machine and qemu (-no-reboot) exits by itself within 60 s;
#   reboot    the same with --fence-action reboot (sync, reboot(RB_AUTOBOOT)).
# And the initramfs checked by check_initramfs.sh, which must refuse one that lacks softdog.
#
# As root on Debian 12 it installs what it needs (qemu-system-x86, busybox-static, cpio, kmod,
# python3, openssl, file) and downloads the kernel package linux-image-amd64 depends on
# (apt-get download, extracted with dpkg-deb -x; the cache keeps vmlinuz and three modules: no
# kernel is installed on the host). 75 to 105 s cached on 2 cores; the first run adds the
# packages' install and about 20 s for the kernel. Prints "vm: N passed, N failed"; exit 1 when a case failed. Every wait is bounded and
# every qemu and stand-in it started is killed on any exit.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=${1:-$top/build/noderecover}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
agent=${NODERECOVER_VM_AGENT:-noderecover}
work=$top/build/vm
t_start=$(date +%s)

say() { printf 'vm: %s\n' "$*"; }
fail_early() { say "$*"; say "0 passed, 1 failed"; exit 1; }

[ -x "$bin" ] || fail_early "binary $bin not found or not executable (./build.sh build first)"

# ---------------------------------------------------------------- what the test needs

need() {
	missing=
	command -v qemu-system-x86_64 >/dev/null 2>&1 || missing="$missing qemu-system-x86"
	# busybox-static replaces busybox: one static binary is the guest's shell and tools
	{ [ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked'; } || missing="$missing busybox-static"
	command -v cpio >/dev/null 2>&1 || missing="$missing cpio"
	command -v modinfo >/dev/null 2>&1 || [ -x /usr/sbin/modinfo ] || [ -x /sbin/modinfo ] || missing="$missing kmod"
	command -v python3 >/dev/null 2>&1 || missing="$missing python3"
	command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
	command -v file >/dev/null 2>&1 || missing="$missing file"
	[ -n "$missing" ] || return 0
	say "installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends $missing >/dev/null
}
need
PATH=$PATH:/usr/sbin:/sbin

cache_root() {
	c=${NODERECOVER_VM_CACHE:-}
	if [ -z "$c" ]; then
		c=/var/cache/noderecover-vm
		if ! mkdir -p "$c" 2>/dev/null || [ ! -w "$c" ]; then
			c="${XDG_CACHE_HOME:-$HOME/.cache}/noderecover-vm"
		fi
	fi
	mkdir -p "$c"
	echo "$c"
}
cache=$(cache_root)

# The kernel linux-image-amd64 depends on (its ABI name, 6.1.0-N-amd64), downloaded once and
# extracted (dpkg-deb -x) into a temporary directory, from which $cache/linux-image-ABI-VERSION
# keeps only vmlinuz and the modules the guest loads (a few MB of its 400): softdog and e1000,
# each after what it depends on (modinfo's depends), as plain .ko files (busybox insmod reads no
# .ko.xz or .ko.zst), listed in load order in modules/order. apt's lists are updated only when
# apt knows no such package yet.
MODULES="softdog e1000"   # the watchdog the agent pets; qemu's default NIC
kernel_abi() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1; }
abi=$(kernel_abi)
if [ -z "$abi" ]; then
	apt-get update -qq
	abi=$(kernel_abi)
fi
[ -n "$abi" ] || fail_early "apt-cache knows no kernel that linux-image-amd64 depends on"
kver=$(apt-cache show "linux-image-$abi" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)
kdir=$cache/linux-image-$abi-$kver
# add_module NAME: NAME and what it depends on into $kdir/modules, dependencies first, once each
add_module() {
	grep -qx "$1.ko" "$kdir/modules/order" 2>/dev/null && return 0
	f=$(find "$moddir/kernel" \( -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" \) | head -n 1)
	[ -n "$f" ] || fail_early "module $1 not in $moddir"
	for dep in $(modinfo -F depends "$f" | tr ',' ' '); do add_module "$dep"; done
	f=$(find "$moddir/kernel" \( -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" \) | head -n 1)   # the recursion used f
	case $f in
	*.xz) xz -dc "$f" > "$kdir/modules/$1.ko" ;;
	*.zst) zstd -qdc "$f" > "$kdir/modules/$1.ko" ;;
	*) cp "$f" "$kdir/modules/$1.ko" ;;
	esac
	echo "$1.ko" >> "$kdir/modules/order"
}
if [ ! -f "$kdir/done" ] || [ "$(cat "$kdir/done")" != "$MODULES" ]; then
	t0=$(date +%s)
	rm -rf "$kdir" && mkdir -p "$kdir/modules"
	x=$(mktemp -d "$cache/extract.XXXXXX")
	# apt's _apt user may not write here: the download runs as root (a warning, no failure)
	(cd "$x" && apt-get download -q "linux-image-$abi=$kver" >/dev/null 2>&1) ||
		{ rm -rf "$x"; fail_early "apt-get download linux-image-$abi=$kver failed"; }
	dpkg-deb -x "$x"/*.deb "$x/root"
	moddir=$x/root/lib/modules/$abi
	cp "$x/root/boot/vmlinuz-$abi" "$kdir/vmlinuz"
	: > "$kdir/modules/order"
	for m in $MODULES; do add_module "$m"; done
	rm -rf "$x"
	echo "$MODULES" > "$kdir/done"
	say "kernel linux-image-$abi $kver downloaded in $(($(date +%s) - t0)) s; kept in $kdir: vmlinuz, $(tr '\n' ' ' < "$kdir/modules/order")"
fi
vmlinuz=$kdir/vmlinuz
[ -f "$vmlinuz" ] && [ -s "$kdir/modules/order" ] || fail_early "no $vmlinuz or modules in the cache (remove $kdir to fetch it again)"

# ---------------------------------------------------------------- the initramfs

rm -rf "$work" && mkdir -p "$work"
root=$work/root
mkdir -p "$root/bin" "$root/lib/modules" "$root/etc/noderecover" "$root/dev"
cp /bin/busybox "$root/bin/busybox"
cp "$here/init.sh" "$root/init"
chmod 0755 "$root/init"
cp "$bin" "$root/bin/noderecover"
cp "$kdir"/modules/*.ko "$kdir/modules/order" "$root/lib/modules/"

# The stand-in's CA and a server certificate for 10.0.2.2 (the address the guest dials), its
# token, and the peer secret, 32 random bytes as hex (the agent wants at least 16).
certs=$work/certs
mkdir -p "$certs"
python3 "$here/standin_vm.py" --make-certs "$certs"
token=vm-token-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$token" > "$root/etc/noderecover/token"
cp "$certs/ca.crt" "$root/etc/noderecover/ca.crt"
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$root/etc/noderecover/peer-secret"
chmod 0600 "$root/etc/noderecover/peer-secret" "$root/etc/noderecover/token"
# The agent's settings as the DaemonSet gives them (variables); the per-run ones (the server,
# the action) come from the kernel command line, the kubelet check is off (no kubelet here).
cat > "$root/etc/noderecover/settings" <<'EOF'
NODE_RECOVERY_SELF_NODE=vm-node-1
NODE_RECOVERY_FENCE_NAMESPACE=noderecover
NODE_RECOVERY_FENCE_CHECK=2s
NODE_RECOVERY_FENCE_AFTER=2s
NODE_RECOVERY_FENCE_ISOLATED_AFTER=2s
NODE_RECOVERY_FENCE_RENEW=5s
NODE_RECOVERY_FENCE_WATCHDOG=/dev/watchdog
NODE_RECOVERY_FENCE_WATCHDOG_TIMEOUT=5s
NODE_RECOVERY_FENCE_LISTEN=:9466
NODE_RECOVERY_FENCE_ADDRESS=10.0.2.15:9466
NODE_RECOVERY_FENCE_PEER_SECRET_FILE=/etc/noderecover/peer-secret
EOF
initramfs=$work/initramfs.cpio
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$initramfs"
say "initramfs $initramfs: $(wc -c < "$initramfs") bytes, modules $(tr '\n' ' ' < "$root/lib/modules/order")"

PASSED=0 FAILED=0
pass() { PASSED=$((PASSED + 1)); say "PASS $*"; }
fail() { FAILED=$((FAILED + 1)); say "FAIL $*"; }

if sh "$here/check_initramfs.sh" "$initramfs"; then pass "initramfs holds what it should"; else fail "initramfs check"; fi
# must-fail: the same without softdog is refused
broken=$work/broken
mkdir -p "$broken" && (cd "$broken" && cpio -id --quiet < "$initramfs" && rm lib/modules/softdog.ko &&
	find . | LC_ALL=C sort | cpio -o -H newc --quiet > "$work/broken.cpio")
if sh "$here/check_initramfs.sh" "$work/broken.cpio" >/dev/null 2>&1; then
	fail "check_initramfs.sh took an initramfs without softdog.ko"
else
	pass "check_initramfs.sh refuses an initramfs without softdog.ko"
fi
rm -rf "$broken" "$work/broken.cpio"

# ---------------------------------------------------------------- the machines

PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || :; done
	sleep 0.2
	for p in $PIDS; do kill -9 "$p" 2>/dev/null || :; done
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

alive() { kill -0 "$1" 2>/dev/null; }
# count FILE REGEXP: lines matching (0 when none)
count() { grep -cE "$2" "$1" 2>/dev/null || :; }
# until SECONDS CMD...: waits for CMD to succeed, at most SECONDS; returns its last status
until_ok() {
	limit=$1; shift
	end=$(($(date +%s) + limit))
	while ! "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.5
	done
}

# What the console must show: the agent's fence line (fence.c: "Fencing node NODE (why); action
# A", logged before it acts), and for each action the kernel's own line of the reset.
FENCE_LINE='Fencing node vm-node-1[ :]'
RESET_watchdog='softdog: Initiating system reboot'
RESET_reboot='reboot: Restarting system'

# start_case NAME ACTION: a stand-in and a VM; sets their pids in NAME's files
start_case() {
	name=$1 action=$2 d=$work/$1
	mkdir -p "$d"
	python3 "$here/standin_vm.py" "$certs" "$token" "$d/port" --seconds 400 > "$d/standin.log" 2>&1 &
	echo $! > "$d/standin.pid"
	PIDS="$PIDS $!"
	until_ok 20 test -s "$d/port" || { echo "no port" > "$d/error"; return 1; }
	port=$(cat "$d/port")
	date +%s > "$d/boot.at"
	# bounded by itself too (timeout passes a TERM on to qemu): even a run.sh killed by SIGKILL
	# leaves no VM behind for long
	timeout 400 qemu-system-x86_64 -nographic -no-reboot -no-user-config -nodefaults -serial stdio -m 256 -smp 1 \
		-accel tcg -kernel "$vmlinuz" -initrd "$initramfs" \
		-append "console=ttyS0 panic=-1 quiet loglevel=4 nr.port=$port nr.action=$action nr.agent=$agent" \
		-netdev user,id=net0 -device e1000,netdev=net0,romfile= < /dev/null > "$d/console.log" 2>&1 &
	echo $! > "$d/qemu.pid"
	PIDS="$PIDS $!"
}

# lease_writes NAME: the agent's Lease writes the stand-in saw
# (the placeholder's "renewed" lines on the console)
lease_writes() {
	if [ "$agent" = placeholder ]; then count "$work/$1/console.log" 'placeholder: renewed'
	else count "$work/$1/standin.log" '^LEASE WRITE noderecover-fence-vm-node-1 '; fi
}
# the agent's first Lease write, or its end (then no use waiting)
has_lease() { [ "$(lease_writes "$1")" -ge 1 ] || grep -q 'vm-init: noderecover fence ended' "$work/$1/console.log"; }
qemu_gone() { ! alive "$(cat "$work/$1/qemu.pid")"; }

# run_case NAME ACTION: the case's checks, after start_case; its verdicts into NAME/verdict
run_case() {
	name=$1 action=$2 d=$work/$1
	v=$d/verdict
	: > "$v"
	qpid=$(cat "$d/qemu.pid") spid=$(cat "$d/standin.pid")
	# boot and the agent's first Lease write: TCG on a loaded 2-core machine, loosely bounded
	if ! until_ok 180 has_lease "$name" || [ "$(lease_writes "$name")" -lt 1 ]; then
		echo "FAIL $name: no Lease written by the agent within 180 s of boot (qemu $(alive "$qpid" && echo up || echo gone))" >> "$v"
		return 0
	fi
	up=$(($(date +%s) - $(cat "$d/boot.at")))
	# must-fail half: the stand-in up for 30 s, the machine keeps running and renews
	w0=$(lease_writes "$name")
	sleep 30
	w1=$(lease_writes "$name")
	# the agent's Lease says the action it was given (the placeholder writes none)
	armed=$(count "$d/standin.log" "^LEASE WRITE .* noderecover.io/fence-action=$action ")
	[ "$agent" = placeholder ] && armed=1
	if alive "$qpid" && [ $((w1 - w0)) -ge 3 ] && [ "$armed" -ge 1 ] && [ "$(count "$d/console.log" "$FENCE_LINE")" -eq 0 ]; then
		echo "PASS $name: the agent up $up s after boot, the stand-in up 30 s: the machine runs, $((w1 - w0)) renewals, no fence" >> "$v"
	else
		echo "FAIL $name: the stand-in up 30 s: qemu $(alive "$qpid" && echo up || echo gone), $((w1 - w0)) Lease writes (want 3 or more), $armed with fence-action=$action (want 1 or more), $(count "$d/console.log" "$FENCE_LINE") fence lines (want 0)" >> "$v"
		return 0
	fi
	# the cut: the stand-in stopped (its port refuses), then the reset, bounded
	kill "$spid"
	cut=$(date +%s)
	if ! until_ok 60 qemu_gone "$name"; then
		echo "FAIL $name: qemu still up 60 s after the stand-in was stopped (fence lines: $(count "$d/console.log" "$FENCE_LINE"))" >> "$v"
		return 0
	fi
	took=$(($(date +%s) - cut))
	eval reset=\$RESET_$action
	fl=$(grep -nE "$FENCE_LINE" "$d/console.log" | head -n 1 | cut -d: -f1)
	rl=$(grep -nF "$reset" "$d/console.log" | head -n 1 | cut -d: -f1)
	if [ -n "$fl" ] && [ -n "$rl" ] && [ "$fl" -lt "$rl" ] && [ "$(count "$d/console.log" 'Kernel panic')" -eq 0 ]; then
		echo "PASS $name: stand-in stopped, the fence line, then '$reset'; qemu exited $took s after the cut" >> "$v"
	else
		echo "FAIL $name: qemu exited $took s after the cut but the console lacks the fence line (line ${fl:-none}) before '$reset' (line ${rl:-none}), or shows a panic" >> "$v"
	fi
}

say "booting two VMs ($agent): watchdog and reboot"
start_case watchdog watchdog || :
start_case reboot reboot || :
run_case watchdog watchdog &
c1=$!
run_case reboot reboot &
c2=$!
wait $c1 || :
wait $c2 || :
for c in watchdog reboot; do
	d=$work/$c
	[ -f "$d/error" ] && echo "FAIL $c: $(cat "$d/error")" >> "$d/verdict"
	[ -s "$d/verdict" ] || echo "FAIL $c: no verdict" >> "$d/verdict"
	while read -r word rest; do
		case $word in PASS) pass "$rest" ;; *) fail "$rest" ;; esac
	done < "$d/verdict"
	if grep -q '^FAIL' "$d/verdict"; then
		say "--- $c: console (last 60 lines) ---"
		tail -n 60 "$d/console.log" | sed 's/^/  | /'
		say "--- $c: stand-in (last 20 lines) ---"
		tail -n 20 "$d/standin.log" | sed 's/^/  | /'
	fi
done
say "took $(($(date +%s) - t_start)) s"
say "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
