#!/bin/busybox sh
# /init of the VM test's initramfs (tests/vm/run.sh): busybox-static is the shell and every
# tool; the kernel's watchdog core, softdog and e1000 modules are loaded from /lib/modules (in
# the order of /lib/modules/order), the network is qemu's user network (10.0.2.15, the host's
# loopback at 10.0.2.2), and the agent runs with the settings of /etc/noderecover/settings and
# the kernel command line's nr.port (the stand-in's port on the host) and nr.action (watchdog
# or reboot). Every line goes to the console (ttyS0), which run.sh reads.
#
# PID 1 never exits (the kernel would panic, and with panic=-1 reset: a reset the test must not
# mistake for a fence): when the agent ends, init says so and waits for ever.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1

say() { echo "vm-init: $*"; }

port= action=watchdog agent=noderecover
for w in $(cat /proc/cmdline); do
	case $w in
	nr.port=*) port=${w#nr.port=} ;;
	nr.action=*) action=${w#nr.action=} ;;
	nr.agent=*) agent=${w#nr.agent=} ;;
	esac
done

while read -r m; do
	insmod "/lib/modules/$m" || say "insmod $m failed"
done < /lib/modules/order
# softdog's device node appears when it registers
i=0
while [ ! -c /dev/watchdog ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -c /dev/watchdog ] || say "no /dev/watchdog"

ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 ||
	say "network set-up failed"
hostname vm-node-1

say "up: $(cat /proc/uptime | cut -d' ' -f1)s, port ${port:-none}, action $action, agent $agent"
[ -n "$port" ] || { say "no nr.port on the command line"; while :; do sleep 3600; done; }

case $agent in
noderecover)
	set -a
	. /etc/noderecover/settings
	set +a
	say "starting noderecover fence"
	# the kubelet check off: no kubelet here
	/bin/noderecover fence --server "https://10.0.2.2:$port" --ca-file /etc/noderecover/ca.crt \
		--token-file /etc/noderecover/token --fence-action "$action" --fence-kubelet-url ""
	say "noderecover fence ended: exit $?"
	;;
placeholder)
	# The harness's own check, without the agent: pets /dev/watchdog every second while the
	# stand-in's port takes a connection, says so every 5 s (run.sh counts these as renewals);
	# refused twice in a row, it logs a fence line and stops petting (or reboots).
	say "starting the placeholder agent"
	# the agent sets the timeout with WDIOC_SETTIMEOUT; the placeholder loads softdog with it
	rmmod softdog && insmod /lib/modules/softdog.ko soft_margin=5 && sleep 0.5 || say "softdog soft_margin=5 failed"
	exec 3>/dev/watchdog
	down=0 n=0
	while :; do
		if nc -w 1 10.0.2.2 "$port" -e /bin/true 2>/dev/null; then down=0; else down=$((down + 1)); fi
		[ $down -ge 2 ] && break
		echo . >&3
		n=$((n + 1))
		[ $((n % 5)) -eq 0 ] && say "placeholder: renewed"
		sleep 1
	done
	echo "placeholder: Fencing node vm-node-1: cut off from the API server (placeholder); action $action"
	[ "$action" = reboot ] && { sync; reboot -f; }
	;;
esac
while :; do sleep 3600; done
