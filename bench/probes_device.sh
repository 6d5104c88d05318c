#!/bin/bash
# nginx saturated with and without reqlife's own probes, the client to spare (issue 49's aim: a
# loss of 15% at most), on a many-core machine without package registries (the device):
# nginx's one worker on core 0, reqlife `-t 4 -c 100 -d 3s` on eight other cores (none a
# sibling of core 0), 12 rounds in turns (`none` and `own`, their order alternating). Prints each
# run's throughput, nginx's CPU ticks (it was saturated if they are the run's length) and the
# join. Run from the repository root with the kit of ../shared/devicekit (`.kit`: reqlife and
# nginx) as root; its figures are read by hand (medians, and the paired rounds' ratios).
#
#     ../shared/devicekit/make-kit.sh .kit target/release/reqlife /usr/sbin/nginx
#     cp bench/probes_device.sh .kit/run.sh   # then: device run, carry .kit: bash .kit/run.sh
set -u
export LD_LIBRARY_PATH=$PWD/.kit/lib
K=$PWD/.kit/bin
echo "uid $(id -u), kernel $(uname -r), $(nproc) cores"
ls -la /sys/kernel/btf/vmlinux || exit 3
[ -d /sys/kernel/tracing/events/sock ] || mount -t tracefs nodev /sys/kernel/tracing
ls /sys/kernel/tracing/events/sock || echo "no tracefs sock events"
mkdir -p /tmp/ng
cat > /tmp/ng/nginx.conf <<CONF
user root; worker_processes 1; daemon on; pid /tmp/ng/nginx.pid; error_log /tmp/ng/error.log;
worker_rlimit_nofile 100000;
events { worker_connections 10000; }
http { access_log off; keepalive_requests 100000000;
  client_body_temp_path /tmp/ng/cb; proxy_temp_path /tmp/ng/px; fastcgi_temp_path /tmp/ng/fc;
  uwsgi_temp_path /tmp/ng/uw; scgi_temp_path /tmp/ng/sc;
  server { listen 127.0.0.1:18090; location / { return 200 "hello\n"; } } }
CONF
taskset -c 0 $K/nginx -p /tmp/ng -c /tmp/ng/nginx.conf || exit 4
sleep 0.5
W=$(pgrep -f "nginx: worker" | head -1)
taskset -pc 0 $W
cpu() { awk '{print $14+$15}' /proc/$W/stat; }
SIB=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)
echo "cpu0's siblings: $SIB"
CL=$(for c in $(seq 2 15); do case ",$SIB," in *",$c,"*) ;; *) s=$(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list); case "$s" in 0,*|*,0) ;; *) echo $c;; esac;; esac; done | head -8 | paste -sd,)
echo "client cores: $CL"
for r in $(seq 1 12); do
  order="none own"; [ $((r % 2)) -eq 0 ] && order="own none"
  for k in $order; do
    extra=""; [ $k = own ] && extra="--server-probes"
    c0=$(cpu)
    taskset -c $CL $K/reqlife run -t 4 -c 100 -d 3s -o /tmp/$k-$r.json $extra http://127.0.0.1:18090/ > /tmp/$k-$r.txt 2>&1
    rc=$?
    c1=$(cpu)
    echo "$k round $r: rc $rc, nginx ticks $((c1 - c0)); $(grep -E 'Throughput' /tmp/$k-$r.txt | head -1)"
    grep -E "requests joined|probes:" /tmp/$k-$r.txt | head -2
  done
done
kill $(cat /tmp/ng/nginx.pid)
