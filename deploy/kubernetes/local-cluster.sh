#!/usr/bin/env bash
# A one-node Kubernetes cluster on this machine, to run reqlife's Indexed Job for real.
#
#   deploy/kubernetes/local-cluster.sh up            # build (cached) and start; waits for Ready
#   deploy/kubernetes/local-cluster.sh try --segments N (--count C | --duration D) [--rate R]
#                                          [--threshold EXPR]... --out DIR
#   deploy/kubernetes/local-cluster.sh down          # stop everything it started
#   deploy/kubernetes/local-cluster.sh status | env
#
# Made for a root shell without Docker or a registry, on cgroup v1 or v2: Kubernetes is built
# from the Go module proxy (k8s.io/kubernetes), containerd, runc, etcd and the CNI plugins come
# from Debian, images are written as docker-save tarballs and imported into containerd. Every
# pod uses the host's network, and all traffic stays on 127.0.0.1. See
# docs/several-generators.md, "A cluster on one machine".
#
# Environment: K8S_VERSION (v1.34.2), REQLIFE_K8S_CACHE (/var/cache/reqlife-k8s: binaries,
# images), REQLIFE_K8S_STATE (/var/lib/reqlife-k8s: certificates, logs, pid files, etcd data),
# REQLIFE_BIN (the reqlife binary put in the image; default: cargo build --release here),
# REQLIFE_K8S_NODE (the node's name: the host's if it resolves to loopback, else localhost).
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.2}
CACHE=${REQLIFE_K8S_CACHE:-/var/cache/reqlife-k8s}
STATE=${REQLIFE_K8S_STATE:-/var/lib/reqlife-k8s}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MANIFESTS=$REPO/deploy/kubernetes
BIN=$CACHE/bin/$K8S_VERSION
IMAGES=$CACHE/images
LOGS=$STATE/logs
PIDS=$STATE/pids
PKI=$STATE/pki
# The node's name: the host's when it resolves to a loopback address (the apiserver reaches the
# kubelet on 127.0.0.1 by it), else localhost; REQLIFE_K8S_NODE to choose.
node_name() {
    local h
    h=$(hostname)
    case $(getent hosts "$h" | awk '{print $1; exit}') in
        127.* | ::1) printf '%s\n' "$h" ;;
        *) echo localhost ;;
    esac
}
NODE=${REQLIFE_K8S_NODE:-$(node_name)}
APISERVER_PORT=${REQLIFE_K8S_APISERVER_PORT:-6443}
ETCD_PORT=${REQLIFE_K8S_ETCD_PORT:-2379}
CONTAINERD_SOCK=/run/reqlife-k8s/containerd/containerd.sock
CONTAINERD_ROOT=/var/lib/reqlife-k8s-containerd
REQLIFE_IMAGE=docker.io/library/reqlife:local
PAUSE_IMAGE=registry.k8s.io/pause:reqlife-local

say() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { printf 'local-cluster: error: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is missing${2:+ ($2)}"; }

# ---------------------------------------------------------------------------------------------
# Kubernetes binaries, built once from the module proxy and cached.

build_kubernetes() {
    local bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl) b missing=0
    for b in "${bins[@]}"; do [[ -x $BIN/$b ]] || missing=1; done
    ((missing)) || return 0
    need go "Go 1.24 or newer"
    say "building Kubernetes $K8S_VERSION from the Go module proxy into $BIN (cold: ~10 min on 2 cores; log: $CACHE/build.log)"
    mkdir -p "$CACHE" "$BIN"
    local src=$CACHE/src/kubernetes-$K8S_VERSION
    {
        if [[ ! -f $src/.prepared ]]; then
            local dir
            dir=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
                sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
            [[ -d $dir ]] || die "go mod download k8s.io/kubernetes@$K8S_VERSION gave no directory"
            rm -rf "$src"; mkdir -p "$(dirname "$src")"
            cp -r "$dir" "$src"; chmod -R u+w "$src"; rm -f "$src/go.work" "$src/go.work.sum"
            # The module's go.mod points every k8s.io staging module at ./staging/src/..., which the
            # module zip does not hold: require the published ones (v0.MINOR.PATCH) instead.
            local staged edits=()
            staged=$(sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*|\1|p' "$src/go.mod")
            for b in $staged; do edits+=("-dropreplace=$b" "-require=$b@v0.${K8S_VERSION#v1.}"); done
            (cd "$src" && go mod edit "${edits[@]}")
            touch "$src/.prepared"
        fi
        local pkg=k8s.io/component-base/version cpkg=k8s.io/client-go/pkg/version minor ld=
        minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
        for p in $pkg $cpkg; do
            ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
            ld+=" -X $p.gitTreeState=clean -X $p.buildDate=2025-11-11T00:00:00Z"
        done
        local targets=()
        for b in "${bins[@]}"; do targets+=("./cmd/$b"); done
        # A Go build cache of its own (~3 GB), dropped once the binaries are there: they are
        # the cache. REQLIFE_K8S_KEEP_GOCACHE=1 keeps it, for rebuilding with other flags.
        (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOCACHE="$CACHE/go-build" \
            go build -trimpath -ldflags "-s -w$ld" -o "$BIN/" "${targets[@]}")
    } >"$CACHE/build.log" 2>&1 || die "building Kubernetes failed; read $CACHE/build.log"
    [[ ${REQLIFE_K8S_KEEP_GOCACHE:-0} == 1 ]] || rm -rf "$CACHE/go-build"
    "$BIN/kubelet" --version | grep -q "$K8S_VERSION" || die "the kubelet built does not say $K8S_VERSION; read $CACHE/build.log"
    say "built: ${bins[*]} in $BIN"
}


# ---------------------------------------------------------------------------------------------
# Images: written as docker-save tarballs (manifest.json, a config, one layer) and imported
# into containerd's k8s.io namespace; pods take them with imagePullPolicy: Never.

# image_tar TAG ROOTFS ENTRYPOINT_JSON OUT
image_tar() {
    local tag=$1 rootfs=$2 entrypoint=$3 out=$4 work diff
    work=$(mktemp -d)
    tar -C "$rootfs" --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -cf "$work/layer.tar" .
    diff=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
    printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Env":["PATH=/usr/local/bin:/usr/bin:/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"deploy/kubernetes/local-cluster.sh"}]}' \
        "$entrypoint" "$diff" >"$work/config.json"
    local cfg
    cfg=$(sha256sum "$work/config.json" | cut -d' ' -f1)
    mv "$work/config.json" "$work/$cfg.json"
    mkdir -p "$work/$diff"; mv "$work/layer.tar" "$work/$diff/layer.tar"
    printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$tag" "$diff" >"$work/manifest.json"
    tar -C "$work" -cf "$out.tmp" manifest.json "$cfg.json" "$diff"
    mv "$out.tmp" "$out"
    rm -rf "$work"
}

# copy_with_libs ROOTFS FILE...: the files and the shared libraries ldd lists for them.
copy_with_libs() {
    local rootfs=$1 f lib; shift
    for f in "$@"; do
        mkdir -p "$rootfs$(dirname "$f")"; cp -L "$f" "$rootfs$f"
        for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
            [[ -e $rootfs$lib ]] && continue
            mkdir -p "$rootfs$(dirname "$lib")"; cp -L "$lib" "$rootfs$lib"
        done
    done
}

reqlife_binary() {
    if [[ -n ${REQLIFE_BIN:-} ]]; then
        [[ -x $REQLIFE_BIN ]] || die "REQLIFE_BIN=$REQLIFE_BIN is not an executable"
        printf '%s\n' "$REQLIFE_BIN"; return
    fi
    need cargo "or give REQLIFE_BIN=path/to/reqlife"
    local target=${CARGO_TARGET_DIR:-$REPO/target}
    say "cargo build --release --bin reqlife (in $REPO; log: $LOGS/cargo.log)"
    (cd "$REPO" && cargo build --release --locked --bin reqlife) >"$LOGS/cargo.log" 2>&1 ||
        die "cargo build --release failed; read $LOGS/cargo.log"
    printf '%s\n' "$target/release/reqlife"
}

build_images() {
    mkdir -p "$IMAGES"
    if [[ ! -f $IMAGES/pause.tar ]]; then
        need gcc
        local dir root
        dir=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
            sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
        root=$(mktemp -d)
        gcc -Os -static -DVERSION="$K8S_VERSION-reqlife" -o "$root/pause" "$dir/build/pause/linux/pause.c" ||
            die "gcc -static build/pause/linux/pause.c failed"
        strip "$root/pause" || true
        image_tar "$PAUSE_IMAGE" "$root" '["/pause"]' "$IMAGES/pause.tar"
        rm -rf "$root"
    fi
    local bin sum root
    bin=$(reqlife_binary)
    # The image is remade when the binary, the shell or this recipe (image-2) changes.
    sum=$({ cat "$bin" /bin/dash; echo image-2; } | sha256sum | cut -c1-16)
    if [[ ! -f $IMAGES/reqlife-$sum.tar ]]; then
        root=$(mktemp -d)
        copy_with_libs "$root" /bin/dash
        mkdir -p "$root/usr/local/bin" "$root/tmp" "$root/etc" "$root/results"
        ln -s dash "$root/bin/sh"
        cp -L "$bin" "$root/usr/local/bin/reqlife"
        for lib in $(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*' || true); do
            mkdir -p "$root$(dirname "$lib")"; [[ -e $root$lib ]] || cp -L "$lib" "$root$lib"
        done
        printf 'root:x:0:0:root:/:/bin/sh\n' >"$root/etc/passwd"
        chmod 1777 "$root/tmp"
        rm -f "$IMAGES"/reqlife-*.tar
        image_tar "$REQLIFE_IMAGE" "$root" '["reqlife"]' "$IMAGES/reqlife-$sum.tar"
        rm -rf "$root"
        say "reqlife image: $bin ($(du -h "$IMAGES/reqlife-$sum.tar" | cut -f1))"
    fi
    printf '%s\n' "$IMAGES/reqlife-$sum.tar" >"$STATE/reqlife-image"
}

# ---------------------------------------------------------------------------------------------
# Certificates and kubeconfigs.

# cert NAME SUBJECT KIND(server|client|both) [SANS]
cert() {
    local name=$1 subj=$2 kind=$3 sans=${4:-} eku ext
    [[ -f $PKI/$name.crt ]] && return 0
    case $kind in server) eku=serverAuth ;; client) eku=clientAuth ;; *) eku=serverAuth,clientAuth ;; esac
    ext=$PKI/$name.ext
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$eku"
        if [[ -n $sans ]]; then echo "subjectAltName=$sans"; fi
    } >"$ext"
    openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
    openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
    openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -days 825 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
    rm -f "$PKI/$name.csr" "$ext"
}

make_pki() {
    mkdir -p "$PKI"; chmod 700 "$PKI"
    if [[ ! -f $PKI/ca.crt ]]; then
        openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$PKI/ca.key" -subj "/CN=reqlife-local-ca" \
            -days 3650 -sha256 -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out "$PKI/ca.crt" 2>/dev/null
    fi
    cert apiserver "/CN=kube-apiserver" server \
        "DNS:localhost,DNS:$NODE,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:10.96.0.1"
    cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
    cert admin "/O=system:masters/CN=reqlife-admin" client
    cert controller-manager "/CN=system:kube-controller-manager" client
    cert scheduler "/CN=system:kube-scheduler" client
    cert kubelet "/O=system:nodes/CN=system:node:$NODE" client
    cert kubelet-serving "/CN=$NODE" server "DNS:$NODE,DNS:localhost,IP:127.0.0.1"
    if [[ ! -f $PKI/sa.key ]]; then
        openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
        openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
    fi
    local who
    for who in admin controller-manager scheduler kubelet; do
        cat >"$STATE/$who.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$PKI/ca.crt"}
users:
  - name: $who
    user: {client-certificate: "$PKI/$who.crt", client-key: "$PKI/$who.key"}
contexts:
  - name: local
    context: {cluster: local, user: $who}
current-context: local
KC
    done
}

# ---------------------------------------------------------------------------------------------
# Processes: each started in a session of its own, its pid in $PIDS/NAME.pid, its output in
# $LOGS/NAME.log.

start() {
    local name=$1; shift
    setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
    echo $! >"$PIDS/$name.pid"
}

alive() {
    local pid
    [[ -f $PIDS/$1.pid ]] || return 1
    pid=$(cat "$PIDS/$1.pid")
    [[ -d /proc/$pid ]] && grep -qa -- "$2" "/proc/$pid/cmdline" 2>/dev/null
}

# stop NAME BINARY: TERM, up to 15 s, then KILL; only the pid in the pid file, and only if it
# is still that program.
stop() {
    local name=$1 what=$2 pid i
    [[ -f $PIDS/$name.pid ]] || return 0
    pid=$(cat "$PIDS/$name.pid")
    if alive "$name" "$what"; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 150; i++)); do alive "$name" "$what" || break; sleep 0.1; done
        if alive "$name" "$what"; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.5; fi
        say "stopped $name (pid $pid)"
    fi
    rm -f "$PIDS/$name.pid"
}

# wait_for NAME BINARY SECONDS WHAT COMMAND...: until COMMAND succeeds, while NAME runs.
wait_for() {
    local name=$1 what=$2 secs=$3 desc=$4 i; shift 4
    for ((i = 0; i < secs * 2; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        alive "$name" "$what" || die "$name exited before $desc; read $LOGS/$name.log ($0 down stops the rest)"
        sleep 0.5
    done
    die "$desc: not within ${secs}s; read $LOGS/$name.log ($0 down stops the rest)"
}

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

# free_ports N: the first of N consecutive free ports, from a random one in 20000-31999: below
# the ephemeral range, since others connect to them before they listen (the coordinator), and
# a port of that range could meanwhile be one of their sockets' own.
free_ports() {
    local n=$1 base i
    for ((base = 20000 + RANDOM % 12000; ; base += n)); do
        ((base + n <= 32000)) || base=20000
        for ((i = 0; i < n; i++)); do port_free $((base + i)) || continue 2; done
        printf '%s\n' "$base"; return
    done
}

kubectl_() { "$BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" --request-timeout=20s "$@"; }

# ---------------------------------------------------------------------------------------------
# up

write_configs() {
    mkdir -p "$STATE/cni/net.d" "$STATE/containerd" /run/reqlife-k8s
    # Every pod here uses the host's network, but a node is not Ready without a CNI
    # configuration, and containerd 1.6 reads it once, as it starts.
    cat >"$STATE/cni/net.d/10-reqlife.conflist" <<'CNI'
{
  "cniVersion": "0.4.0",
  "name": "reqlife-local",
  "plugins": [
    {"type": "bridge", "bridge": "reqlife0", "isGateway": false, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]]}},
    {"type": "loopback"}
  ]
}
CNI
    cat >"$STATE/containerd/config.toml" <<TOML
version = 2
root = "$CONTAINERD_ROOT"
state = "/run/reqlife-k8s/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # root here lacks CAP_SYS_RESOURCE: the pause container's oom_score_adj=-998 would fail
  # with runc's "can't get final child's PID from pipe: EOF"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "/run/reqlife-k8s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
TOML
    cat >"$STATE/kubelet.yaml" <<KUBELET
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$PKI/kubelet-serving.crt"
tlsPrivateKeyFile: "$PKI/kubelet-serving.key"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$CONTAINERD_SOCK"
imageServiceEndpoint: "unix://$CONTAINERD_SOCK"
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%"}
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
KUBELET
}

up() {
    [[ $(id -u) == 0 ]] || die "run as root"
    local c
    for c in containerd containerd-shim-runc-v2 runc etcd ctr openssl ss curl setsid; do
        need "$c" "apt-get install -y containerd runc etcd-server containernetworking-plugins curl"
    done
    [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || die "CNI plugins missing (apt-get install -y containernetworking-plugins)"
    case $(getent hosts "$NODE" | awk '{print $1; exit}') in
        127.* | ::1) ;;
        *) die "the node name $NODE must resolve to a loopback address (/etc/hosts) so that the apiserver reaches the kubelet on 127.0.0.1" ;;
    esac
    mkdir -p "$STATE" "$LOGS" "$PIDS"
    if alive kube-apiserver kube-apiserver && alive kubelet kubelet; then
        say "already up; $0 down first to restart"; env_; return 0
    fi
    local t0=$SECONDS p
    for p in "$APISERVER_PORT" "$ETCD_PORT" $((ETCD_PORT + 1)) 10250 10248 10257 10259; do
        port_free "$p" || die "127.0.0.1:$p is taken (another cluster? $0 down)"
    done
    build_kubernetes
    build_images
    make_pki
    write_configs

    say "containerd (log: $LOGS/containerd.log)"
    start containerd containerd --config "$STATE/containerd/config.toml"
    wait_for containerd containerd 30 "containerd's socket" ctr --address "$CONTAINERD_SOCK" version
    ctr --address "$CONTAINERD_SOCK" -n k8s.io images import "$IMAGES/pause.tar" >>"$LOGS/images.log" 2>&1 ||
        die "importing the pause image failed; read $LOGS/images.log"
    ctr --address "$CONTAINERD_SOCK" -n k8s.io images import "$(cat "$STATE/reqlife-image")" >>"$LOGS/images.log" 2>&1 ||
        die "importing the reqlife image failed; read $LOGS/images.log"

    say "etcd (log: $LOGS/etcd.log)"
    rm -rf "$STATE/etcd"
    start etcd etcd --name local --data-dir "$STATE/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "local=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls ""
    wait_for etcd etcd 30 "etcd's health" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

    say "kube-apiserver (log: $LOGS/kube-apiserver.log)"
    start kube-apiserver "$BIN/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
        --endpoint-reconciler-type none \
        --service-cluster-ip-range 10.96.0.0/24 \
        --client-ca-file "$PKI/ca.crt" \
        --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
        --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
        --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
        --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
        --kubelet-certificate-authority "$PKI/ca.crt" \
        --kubelet-preferred-address-types Hostname \
        --allow-privileged=true --profiling=false
    wait_for kube-apiserver kube-apiserver 120 "the apiserver's /readyz" kubectl_ get --raw /readyz

    say "kube-controller-manager, kube-scheduler (logs: $LOGS/kube-controller-manager.log, $LOGS/kube-scheduler.log)"
    start kube-controller-manager "$BIN/kube-controller-manager" \
        --kubeconfig "$STATE/controller-manager.kubeconfig" \
        --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
        --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
        --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
        --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
        --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
        --controllers '*,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
        --profiling=false
    start kube-scheduler "$BIN/kube-scheduler" \
        --kubeconfig "$STATE/scheduler.kubeconfig" \
        --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
        --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
        --bind-address 127.0.0.1 --leader-elect=false --profiling=false

    say "kubelet (log: $LOGS/kubelet.log)"
    mkdir -p /var/lib/kubelet
    start kubelet "$BIN/kubelet" \
        --config "$STATE/kubelet.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
        --hostname-override "$NODE" --root-dir /var/lib/kubelet
    wait_for kubelet kubelet 180 "node $NODE Ready" \
        sh -c "'$BIN/kubectl' --kubeconfig '$STATE/admin.kubeconfig' --request-timeout=10s get node '$NODE' \
            -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
    wait_for kube-controller-manager kube-controller-manager 60 "the default service account" \
        kubectl_ get serviceaccount default -n default
    say "node $NODE Ready in $((SECONDS - t0))s; state, logs and pid files: $STATE"
    env_
}

env_() {
    # shellcheck disable=SC2016 # $PATH is for the shell that reads this
    printf 'export KUBECONFIG=%s\nexport PATH=%s:$PATH\n' "$STATE/admin.kubeconfig" "$BIN"
}

# ---------------------------------------------------------------------------------------------
# down

mounts_under() { # mount points under any of the given prefixes, deepest first
    local m p
    awk '{print $5}' /proc/self/mountinfo | while read -r m; do
        for p in "$@"; do
            if [[ $m == "$p"/* || $m == "$p" ]]; then printf '%s\n' "$m"; fi
        done
    done | awk '{print length, $0}' | sort -rn | cut -d' ' -f2- | uniq
    return 0
}

down() {
    local prefixes=(/var/lib/kubelet "$CONTAINERD_ROOT" /run/reqlife-k8s) leftover=0 m id pid f
    mkdir -p "$PIDS"
    stop prometheus prometheus
    stop kubelet kubelet
    if [[ -S $CONTAINERD_SOCK ]] && alive containerd containerd; then
        local ctr_=(timeout 20 ctr --address "$CONTAINERD_SOCK" -n k8s.io)
        for id in $("${ctr_[@]}" tasks list -q 2>/dev/null); do
            "${ctr_[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
        done
        sleep 1
        for id in $("${ctr_[@]}" tasks list -q 2>/dev/null); do
            "${ctr_[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true
        done
        for id in $("${ctr_[@]}" containers list -q 2>/dev/null); do
            "${ctr_[@]}" containers delete "$id" >/dev/null 2>&1 || true
        done
    fi
    # Whatever runc still knows of (containerd gone or a task it could not delete).
    if [[ -d /run/reqlife-k8s/runc ]]; then
        for id in $(runc --root /run/reqlife-k8s/runc/k8s.io list -q 2>/dev/null); do
            runc --root /run/reqlife-k8s/runc/k8s.io kill "$id" KILL >/dev/null 2>&1 || true
            runc --root /run/reqlife-k8s/runc/k8s.io delete -f "$id" >/dev/null 2>&1 || true
        done
    fi
    stop containerd containerd
    # The shims of the pods (one per pod) outlive containerd: by their pid files.
    for f in /run/reqlife-k8s/containerd/io.containerd.runtime.v2.task/*/*/shim.pid; do
        [[ -f $f ]] || continue
        pid=$(cat "$f")
        if [[ -d /proc/$pid ]] && grep -qa containerd-shim "/proc/$pid/cmdline"; then
            if kill -KILL "$pid" 2>/dev/null; then say "killed shim $pid"; fi
        fi
    done
    stop kube-scheduler kube-scheduler
    stop kube-controller-manager kube-controller-manager
    stop kube-apiserver kube-apiserver
    stop etcd etcd
    for m in $(mounts_under "${prefixes[@]}"); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "could not unmount $m"
    done
    ip link delete reqlife0 2>/dev/null || true
    rm -rf "$STATE/etcd" /var/lib/kubelet/pods /var/lib/kubelet/plugins /var/lib/kubelet/pod-resources \
        /run/reqlife-k8s 2>/dev/null || true
    for f in "$PIDS"/*.pid; do
        if [[ -f $f ]]; then say "still running: $f ($(cat "$f"))"; leftover=1; fi
    done
    m=$(mounts_under "${prefixes[@]}")
    [[ -z $m ]] || { say "still mounted: $m"; leftover=1; }
    ((leftover == 0)) || die "down left something behind (above)"
    say "down: nothing left running or mounted (state and logs kept in $STATE)"
}

status_() {
    local n
    for n in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet; do
        if alive "$n" "$n"; then echo "$n: running (pid $(cat "$PIDS/$n.pid"))"; else echo "$n: stopped"; fi
    done
    if alive kube-apiserver kube-apiserver; then kubectl_ get nodes -o wide || true; fi
}

# ---------------------------------------------------------------------------------------------
# try: docs/several-generators.md's walk-through, on this cluster.

# The generators' command line, the one place it is written (the repository's load-job.yaml
# has its own; this one differs only where a one-node cluster must: a metrics port of each
# pod's own (METRICS_BASE + its index, with try --prometheus) or none, since the N pods share
# the host's network, a request count when the plan has one, the thresholds given to try, and
# pod 0's HTML page). Pod 0 is the coordinator: the others
# reach it at $COORDINATOR, all start together once all are ready, and it merges their
# records into /results/all.json, prints the merged report in its log and exits with the
# verdict, which decides the Job. $SEGMENTS, $TARGET_URL, $RATE, $DURATION, $CONNECTIONS,
# $COORDINATOR and $REQUESTS come from the pod's environment (the plan's ConfigMap);
# JOB_COMPLETION_INDEX from the Indexed Job.
generator_args() {
    local t thresholds="" metrics=""
    for t in "$@"; do thresholds+=" --threshold '$t'"; done
    if [[ -n ${METRICS_BASE:-} ]]; then
        metrics="
              --metrics-addr \"127.0.0.1:\$(($METRICS_BASE + JOB_COMPLETION_INDEX))\" --metrics-linger 5s"
    fi
    cat <<ARGS
          args:
            - >-
              k=\$((JOB_COMPLETION_INDEX + 1));
              out="/results/segment-\$k.json"; page="";
              if [ "\$k" = 1 ]; then out=/results/all.json; page="--html /results/report.html"; fi;
              exec reqlife run
              --segment "\$k/\$SEGMENTS"
              --coordinator "\$COORDINATOR"$thresholds
              \${RATE:+-R "\$RATE"} \${DURATION:+-d "\$DURATION"} \${REQUESTS:+-n "\$REQUESTS"}
              -c "\$CONNECTIONS"
              --quiet$metrics
              -o "\$out" \$page
              "\$TARGET_URL"
ARGS
}

# ---------------------------------------------------------------------------------------------
# try --prometheus: Debian's Prometheus scrapes each generator during the run; once the Job has
# ended, the sum of their last scrapes must be the merged record's request count. Debian builds
# Prometheus without its Kubernetes discovery, so try does that part: it lists the Job's pods
# through the API, keeps those with the prometheus.io/scrape annotation (as the usual pod
# discovery does), and writes them as file_sd targets, labelled with the pod's name and index.
# On a real cluster each pod has its own address and the annotation's port; here every pod
# shares the host's network, so pod k serves on METRICS_BASE + k.

# prometheus_start RUN_DIR: starts Prometheus on a free loopback port, its targets from
# RUN_DIR/pods.json; prints the port.
prometheus_start() {
    local dir=$1 port
    need prometheus "apt-get install -y prometheus"
    port=$(free_ports 1)
    echo '[]' >"$dir/pods.json"
    cat >"$dir/prometheus.yml" <<CONFIG
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: reqlife-load
    file_sd_configs: [{files: ["$dir/pods.json"], refresh_interval: 1s}]
CONFIG
    start prometheus prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/prometheus-data" \
        --web.listen-address="127.0.0.1:$port" --log.level=warn
    wait_for prometheus prometheus 60 "Prometheus ready" curl -fsS "http://127.0.0.1:$port/-/ready"
    printf '%s\n' "$port"
}

# prometheus_discover RUN_DIR SEGMENTS METRICS_BASE: waits (60 s at most) until the Job's
# SEGMENTS pods exist, and writes those annotated prometheus.io/scrape: "true" into
# RUN_DIR/pods.json.
prometheus_discover() {
    local dir=$1 segments=$2 base=$3 i pods
    for ((i = 0; i < 120; i++)); do
        pods=$(kubectl_ get pods -l batch.kubernetes.io/job-name=reqlife-load -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.batch\.kubernetes\.io/job-completion-index} {.metadata.annotations.prometheus\.io/scrape}{"\n"}{end}')
        (($(grep -c . <<<"$pods") >= segments)) && break
        sleep 0.5
    done
    awk -v base="$base" '$3 == "true" {
            printf "%s{\"targets\": [\"127.0.0.1:%d\"], \"labels\": {\"pod\": \"%s\", \"index\": \"%s\"}}", n++ ? ", " : "[", base + $2, $1, $2 }
        END { print n ? "]" : "[]" }' <<<"$pods" >"$dir/pods.json.tmp"
    mv "$dir/pods.json.tmp" "$dir/pods.json"
    say "try: Prometheus's targets: $(grep -o '"pod": "[^"]*"' "$dir/pods.json" | cut -d'"' -f4 | paste -sd' ')"
}

# prometheus_value PORT QUERY: the first value of an instant query's result, or "none".
prometheus_value() {
    curl -fsS "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" |
        python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}

# prometheus_check PORT SEGMENTS RECORD: the pods scraped and the sum of their last scrapes
# against the merged record's request count; one line, written to prometheus.txt beside the
# record; fails when they differ.
prometheus_check() {
    local port=$1 segments=$2 record=$3 pods running scrapes summed total line
    pods=$(prometheus_value "$port" 'count(last_over_time(reqlife_running{job="reqlife-load"}[30m]))')
    running=$(prometheus_value "$port" 'sum(max_over_time(reqlife_running{job="reqlife-load"}[30m]))')
    scrapes=$(prometheus_value "$port" 'sum(count_over_time(reqlife_running{job="reqlife-load"}[30m]))')
    summed=$(prometheus_value "$port" 'sum(last_over_time(reqlife_requests_total{job="reqlife-load"}[30m]))')
    total=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["summary"]["requests"]["total"])' "$record")
    line="Prometheus scraped $pods of $segments pods ($scrapes scrapes, $running pods seen running); the sum of their last scrapes $summed requests, the merged record $total"
    printf '%s\n' "$line" >"$(dirname "$record")/prometheus.txt"
    say "try: $line"
    [[ $pods == "$segments" ]] || die "Prometheus scraped $pods of the $segments pods (its targets: $(dirname "$record")/pods.json)"
    [[ $running == "$segments" ]] ||
        die "Prometheus saw $running of the $segments pods while they ran: a run shorter than a few scrapes (1s)? give try --rate so that it lasts"
    [[ $summed == "$total" ]] || die "Prometheus's sum ($summed) is not the merged record's count ($total)"
}

# adapt FILE RESULTS_DIR ARGS_FILE: a manifest of the repository for this cluster: the local
# image, never pulled; the host's network; a hostPath instead of the pod's own /results (so
# that try can copy them out); the args block replaced by ARGS_FILE's (when given); the
# container's ports dropped (when ARGS_FILE is given: the generators' metrics port).
adapt() {
    awk -v image="$REQLIFE_IMAGE" -v results="$2" -v argsfile="${3:-}" '
        function indent(l) { match(l, /^ */); return RLENGTH }
        skip >= 0 && (indent($0) > skip || $0 ~ /^ *$/) { next }
        { skip = -1 }
        /^ *image: reqlife:latest/ {
            n = indent($0); printf "%*simage: %s\n%*simagePullPolicy: Never\n", n, "", image, n, ""; next }
        /^      containers:$/ { print "      hostNetwork: true"; print "      dnsPolicy: ClusterFirstWithHostNet" }
        /^ *emptyDir: \{\}$/ {
            n = indent($0)
            printf "%*shostPath: {path: \"%s\", type: Directory}\n", n, "", results; next }
        argsfile != "" && /^ *args:$/ {
            while ((getline line < argsfile) > 0) print line
            skip = indent($0); next }
        argsfile != "" && /^          ports:$/ { skip = indent($0); next }
        { print }
        BEGIN { skip = -1 }
    ' "$1"
}

try_() {
    local segments="" count="" rate="" duration="" connections="" out="" timeout=900 prom=0
    local thresholds=()
    while (($#)); do
        case $1 in
            --segments) segments=$2; shift 2 ;;
            --count) count=$2; shift 2 ;;
            --rate) rate=$2; shift 2 ;;
            --duration) duration=$2; shift 2 ;;
            --connections) connections=$2; shift 2 ;;
            --threshold) thresholds+=("$2"); shift 2 ;;
            --out) out=$2; shift 2 ;;
            --timeout) timeout=$2; shift 2 ;;
            --prometheus) prom=1; shift ;;
            *) die "try: unknown argument $1 (--segments N --count C [--rate R] [--duration D] [--connections C] [--threshold EXPR]... [--prometheus] [--timeout S] --out DIR)" ;;
        esac
    done
    [[ $segments =~ ^[1-9][0-9]*$ ]] || die "try: --segments N is required"
    [[ -n $count || -n $duration ]] || die "try: --count C or --duration D is required"
    [[ -n $out ]] || die "try: --out DIR is required"
    local t
    for t in "${thresholds[@]}"; do [[ $t != *"'"* ]] || die "try: a threshold with a single quote: $t"; done
    if ! alive kube-apiserver kube-apiserver || ! alive kubelet kubelet; then die "the cluster is not up: $0 up"; fi
    if ((${#thresholds[@]} == 0)); then
        thresholds=("$(sed -n 's/^  threshold: "\(.*\)".*/\1/p' "$MANIFESTS/run.yaml")")
    fi
    [[ -n $connections ]] || connections=$(sed -n 's/^  connections: "\([0-9]*\)".*/\1/p' "$MANIFESTS/run.yaml")
    ((connections >= segments)) || connections=$segments

    local run port
    run=$STATE/runs/$(date -u +%Y%m%d-%H%M%S)
    local results=$run/results man=$run/manifests
    mkdir -p "$results" "$man" "$out"
    port=$(free_ports 1)
    say "try: run dir $run; the demo target on 127.0.0.1:$port"

    # Whatever a previous try left in the namespace.
    kubectl_ delete job reqlife-load --ignore-not-found --wait=true --timeout=60s >/dev/null
    kubectl_ delete deployment,service reqlife-target --ignore-not-found --wait=true --timeout=60s >/dev/null

    # The demo target: target.yaml, on a free loopback port, probed there.
    adapt "$MANIFESTS/target.yaml" "$results" |
        sed -e "s|\"--addr\", \"0.0.0.0:8080\"|\"--addr\", \"127.0.0.1:$port\"|" \
            -e "s|containerPort: 8080|containerPort: $port|" \
            -e "s|^\( *\)path: /\$|\1path: /\n\1host: 127.0.0.1|" >"$man/target.yaml"
    grep -q "127.0.0.1:$port" "$man/target.yaml" || die "target.yaml changed shape: its --addr was not found"
    kubectl_ apply -f "$man/target.yaml" >/dev/null
    kubectl_ rollout status deployment/reqlife-target --timeout=120s >/dev/null ||
        die "the demo target is not ready in 120s; kubectl describe pod -l app.kubernetes.io/component=target"

    # The plan: run.yaml, with this run's values; the coordinator (pod 0) on a free loopback
    # port (the pods share the host's network: no Service names them).
    local cport
    cport=$(free_ports 1)
    sed -e "s|^  target-url: .*|  target-url: \"http://127.0.0.1:$port/\"|" \
        -e "s|^  rate: .*|  rate: \"$rate\"|" \
        -e "s|^  duration: .*|  duration: \"$duration\"|" \
        -e "s|^  connections: .*|  connections: \"$connections\"\n  requests: \"$count\"|" \
        -e "s|^  coordinator: .*|  coordinator: \"127.0.0.1:$cport\"|" \
        "$MANIFESTS/run.yaml" >"$man/run.yaml"
    grep -q "127.0.0.1:$cport" "$man/run.yaml" || die "run.yaml changed shape: its coordinator was not found"
    kubectl_ apply -f "$man/run.yaml" >/dev/null

    # Prometheus, when asked: it finds the pods through the API and scrapes them as they run.
    local prom_port="" METRICS_BASE=""
    if ((prom)); then
        METRICS_BASE=$(free_ports "$segments")
        prom_port=$(prometheus_start "$run") || die "Prometheus did not start; read $LOGS/prometheus.log"
        trap 'stop prometheus prometheus' EXIT
        say "try: Prometheus on 127.0.0.1:$prom_port, the pods' metrics on 127.0.0.1:$METRICS_BASE-$((METRICS_BASE + segments - 1))"
    fi

    # The generators: load-job.yaml, N segments, the command line of generator_args.
    generator_args "${thresholds[@]}" >"$man/load-args"
    adapt "$MANIFESTS/load-job.yaml" "$results" "$man/load-args" |
        sed -e "s|^  completions: [0-9]*|  completions: $segments|" \
            -e "s|^  parallelism: [0-9]*|  parallelism: $segments|" \
            -e "/- name: SEGMENTS/{n;s|value: \"[0-9]*\"|value: \"$segments\"|}" \
            -e "s|^\(          env:\)\$|\1\n            - name: REQUESTS\n              valueFrom:\n                configMapKeyRef: {name: reqlife-run, key: requests}|" \
            >"$man/load-job.yaml"
    say "try: $segments generators, pod 0 coordinating on 127.0.0.1:$cport (count ${count:-none}, rate ${rate:-closed loop}, duration ${duration:-none}, $connections connections)"
    kubectl_ apply -f "$man/load-job.yaml" >/dev/null
    ((prom)) && prometheus_discover "$run" "$segments" "$METRICS_BASE"
    local verdict
    verdict=$(wait_job reqlife-load "$timeout")
    local i pod code=""
    for ((i = 0; i < segments; i++)); do
        pod=$(kubectl_ get pods -l "batch.kubernetes.io/job-name=reqlife-load,batch.kubernetes.io/job-completion-index=$i" -o name | head -1)
        [[ -n $pod ]] || continue
        kubectl_ logs "$pod" >"$results/segment-$((i + 1)).log" 2>&1 || true
        if ((i == 0)); then
            code=$(kubectl_ get "$pod" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}' 2>/dev/null || true)
        fi
    done
    kubectl_ get pods -o wide >"$results/pods.txt" 2>&1 || true
    cp -r "$results/." "$out/"
    cp -r "$man" "$out/manifests"
    if ((prom)); then cp "$run/pods.json" "$run/prometheus.yml" "$out/"; fi
    # Pod 0's log is the merged report (the run's report goes to stdout, its lines to stderr).
    [[ -f $out/segment-1.log ]] && cp "$out/segment-1.log" "$out/report.txt"
    [[ -f $out/all.json ]] || die "pod 0 wrote no merged record ($verdict); its log: $out/segment-1.log"
    say "try: merged record $out/all.json; report $out/report.txt, $out/report.html"
    if ((prom)); then
        prometheus_check "$prom_port" "$segments" "$out/all.json"
        stop prometheus prometheus
    fi
    if [[ $verdict != Complete ]]; then
        tail -n 5 "$out/segment-1.log" >&2 || true
        say "error: the load Job failed ($verdict, pod 0's exit code ${code:-unknown}): a threshold failed, or a segment; read $out/segment-*.log"
        [[ $code =~ ^[1-9][0-9]*$ ]] && exit "$code"
        exit 1
    fi
    say "try: passed"
}

# wait_job NAME SECONDS: prints Complete, Failed or Timeout.
wait_job() {
    local name=$1 secs=$2 i state
    for ((i = 0; i < secs; i += 2)); do
        state=$(kubectl_ get job "$name" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null || true)
        case " $state " in
            *" Complete "*) echo Complete; return ;;
            *" Failed "*) echo Failed; return ;;
        esac
        sleep 2
    done
    echo "Timeout after ${secs}s"
}

main() {
    local cmd=${1:-}; shift || true
    case $cmd in
        up) up ;;
        down) down ;;
        try) try_ "$@" ;;
        status) status_ ;;
        env) env_ ;;
        build) build_kubernetes ;;
        *) die "usage: $0 up | try ... | down | status" ;;
    esac
}
main "$@"
