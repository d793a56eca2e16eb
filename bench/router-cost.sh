#!/usr/bin/env bash
# What the router costs, on loopback, side by side in one run (docs/benchmarks/router-cost.md).
#
#   bench/router-cost.sh throughput   closed loops of 16 and 64 clients, ordinary and streamed, against
#                                     two zero-latency fake vLLM members: directly, through the bare Go
#                                     proxy of router/server/cost_bench_test.go, through anvil-router
#                                     (round robin and capacity tiers) and, when haproxy is installed,
#                                     through HAProxy (leastconn, maxconn); ROUNDS rounds, the targets'
#                                     order rotating each round; a table of medians and ratios.
#   bench/router-cost.sh latency      the added latency at low load: an open loop of 3 streamed requests
#                                     per second against one 8b-h100 member, directly and through a
#                                     direct tier (anvil-bench compare, ROUNDS rounds alternating); and
#                                     the same through the bare proxy first, the floor of one more hop.
#   bench/router-cost.sh hops         where the added first-token latency goes: requests one at a time
#                                     (HOP_REQUESTS a target, 300 ms apart) rotating over the 8b-h100
#                                     member directly, a direct tier of a router built from HEAD with
#                                     bench/hoptrace/router.patch (timestamps at each hop, on stderr)
#                                     and the bare proxy; bench/hoptrace joins both sides on one clock.
#   bench/router-cost.sh profile      the throughput load (16 clients; PROFILE_MODES, default "ordinary
#                                     stream", may add responses) against a router process under the CPU
#                                     and then the allocation profiler (go tool pprof FILE).
#   bench/router-cost.sh gc           the garbage collector's share: the 16-client loads (ordinary,
#                                     streamed, Responses) against each router of ROUTERS under each
#                                     setting of GC_ENV, with GODEBUG=gctrace=1; per load, the collections
#                                     per 1,000 requests, the trace's GC cpu times over the router process's
#                                     CPU (/proc/PID/stat; the trace counts time on a P, so a loaded machine
#                                     inflates it: the profile's share is the sturdier one), and the
#                                     process's CPU per request.
#
# Environment:
#   ROUTERS   space-separated LABEL=BINARY anvil-router builds to measure side by side (default: the
#             tree's build as "router"), e.g. ROUTERS="before=/tmp/before/anvil-router after=bin/anvil-router"
#   ROUNDS    rounds (default 5 for throughput, 2 for latency)
#   REQUESTS  measured requests per throughput run (default 6000); LATENCY_REQUESTS per latency run (300)
#   GC_ENV    gc mode: space-separated environment settings each router runs under, "-" for none
#             (default "-"), e.g. GC_ENV="GOGC=100 GOGC=400 -"
#   CLIENTS   closed-loop sizes (default "16 64"); MODES ("ordinary stream")
#   BENCH_RESULTS  output directory (default bench/results/router-cost)
#
# It needs jq for the summary. It builds everything into a temporary directory and stops everything
# it started on exit. Nothing in `make test` runs it.
set -euo pipefail

what=${1:-throughput}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_RESULTS:-$root/bench/results/router-cost}
mkdir -p "$out"
command -v jq >/dev/null || { echo "router-cost: needs jq for its summary" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
	exec 9>&- 2>/dev/null || true
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/" ./cmd/anvil-fakevllm ./cmd/anvil-router ./cmd/anvil-bench &&
	go test -c -o "$work/server.test" ./router/server)
routers=${ROUTERS:-router=$work/anvil-router}
token=router-cost-caller-token
printf '%s\n' "$token" >"$work/token"
model=bench/zero

# wait_for FILE SED-EXPR: the first match of SED-EXPR (a sed -n s///p) in FILE, within 10 s.
wait_for() {
	local v=
	for _ in $(seq 100); do
		v=$(sed -n "$2" "$1" | head -n1)
		[ -n "$v" ] && { echo "$v"; return; }
		sleep 0.1
	done
	echo "router-cost: nothing in $1" >&2
	cat "$1" >&2
	exit 1
}

# members N PROFILE: start N fake members, set the array "members".
start_members() {
	"$work/anvil-fakevllm" serve --members "$1" --model "$model" --profile "$2" >"$work/members.out" 2>"$work/members.err" &
	pids+=($!)
	for _ in $(seq 100); do
		[ "$(grep -c '^member ' "$work/members.out" || true)" = "$1" ] && break
		sleep 0.1
	done
	mapfile -t members < <(awk '/^member /{print $3}' "$work/members.out")
	[ "${#members[@]}" = "$1" ] || { echo "router-cost: the fake members did not start" >&2; cat "$work/members.err" >&2; exit 1; }
}

# router_yaml KIND(round_robin|capacity|direct): a router config over "members".
router_yaml() {
	cat <<EOF
listen: 127.0.0.1:0
auth:
  caller_tokens_file: $work/token
aliases:
  - id: chat
    tier: pool
tiers:
  - id: pool
EOF
	if [ "$1" = direct ]; then
		printf '    kind: direct\n    served_model: %s\n    endpoint: "%s"\n    gates:\n      max_context_tokens: 8192\n' "$model" "${members[0]}"
		return
	fi
	printf '    kind: replica\n    served_model: %s\n    host: 127.0.0.1\n    provenance: anvil-fakevllm (bench/router-cost.sh)\n' "$model"
	printf '    replica_strategy: %s\n    gates:\n      max_context_tokens: 8192\n    members:\n' "$1"
	for i in "${!members[@]}"; do
		printf '      - {id: m%d, endpoint: "%s", max_concurrency: 1000}\n' "$i" "${members[$i]}"
	done
}

# The start_* functions run in this shell (never in a $(...) subshell, which would lose the pid and
# the held stdin) and leave the base URL in "started".

# start_router NAME BINARY KIND: start a router.
start_router() {
	router_yaml "$3" >"$work/$1.yaml"
	"$2" serve --config "$work/$1.yaml" >"$work/$1.out" 2>"$work/$1.err" &
	pids+=($!)
	started="http://$(wait_for "$work/$1.err" 's/.*msg=serving addr=\([^ ]*\).*/\1/p')"
}

# start_bare: the bare proxy of cost_bench_test.go over "members".
start_bare() {
	mkfifo "$work/bare.in"
	ANVIL_BARE_PROXY_UPSTREAMS=$(IFS=,; echo "${members[*]}") "$work/server.test" -test.run '^TestBareProxyProcess$' \
		<"$work/bare.in" >"$work/bare.out" 2>&1 &
	pids+=($!)
	exec 8>"$work/bare.in" # held open: the process serves until it closes
	started="http://$(wait_for "$work/bare.out" 's/^ADDR //p')"
}

# start_haproxy: HAProxy over "members" (leastconn, maxconn per server); "started" is empty when
# haproxy is not installed.
start_haproxy() {
	started=
	command -v haproxy >/dev/null || return 0
	local port
	port=$(free_port)
	{
		printf 'global\n  maxconn 9000\n\ndefaults\n  mode http\n  option http-keep-alive\n'
		printf '  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n\n'
		printf 'frontend fe\n  bind 127.0.0.1:%s\n  default_backend members\n\n' "$port"
		printf 'backend members\n  balance leastconn\n'
		for i in "${!members[@]}"; do
			printf '  server m%d %s maxconn 1000\n' "$i" "${members[$i]#http://}"
		done
	} >"$work/haproxy.cfg"
	haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/health" && break
		sleep 0.1
	done
	started="http://127.0.0.1:$port"
}

# free_port: a TCP port nothing listens on now.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 10000))
		ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}

# median: the median of the numbers on stdin.
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

throughput() {
	local rounds=${ROUNDS:-5} requests=${REQUESTS:-6000}
	start_members 2 zero
	declare -A url modelof
	url[direct]="${members[*]}"
	modelof[direct]=$model
	start_bare
	url[bare]=$started
	modelof[bare]=$model
	local targets=(direct bare)
	for r in $routers; do
		local label=${r%%=*} bin=${r#*=}
		for kind in round_robin capacity; do
			start_router "$label-$kind" "$bin" "$kind"
			url[$label-$kind]=$started
			modelof[$label-$kind]=chat
			targets+=("$label-$kind")
		done
	done
	start_haproxy
	if [ -n "$started" ]; then
		url[haproxy]=$started
		modelof[haproxy]=$model
		targets+=(haproxy)
	else
		echo "router-cost: haproxy is not installed; the HAProxy reference is skipped"
	fi
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/throughput-load.txt"
	for clients in ${CLIENTS:-16 64}; do
		for mode in ${MODES:-ordinary stream}; do
			local streaming=0
			[ "$mode" = stream ] && streaming=1
			for round in $(seq "$rounds"); do
				local n=${#targets[@]}
				for k in $(seq 0 $((n - 1))); do
					local t=${targets[$(((k + round) % n))]} flags=()
					for u in ${url[$t]}; do flags+=(--url "$u"); done
					"$work/anvil-bench" run "${flags[@]}" --model "${modelof[$t]}" --token-file "$work/token" \
						--clients "$clients" --requests "$requests" --warmup $((clients * 4)) \
						--prompt-tokens 64 --output-tokens 16 --streaming "$streaming" --seed "$round" \
						--label "$t" --no-progress --json "$out/tp-$clients-$mode-$t-$round.json" >/dev/null
				done
			done
		done
	done
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/throughput-load.txt"
	summarize_throughput "${targets[@]}" | tee "$out/throughput.txt"
}

# summarize_throughput TARGETS...: median request throughput per clients/mode/target, failures, and
# the ratios the issue sets goals for.
summarize_throughput() {
	printf '%-8s %-9s %-24s %10s %8s %8s %9s %8s\n' clients mode target 'req/s' '/bare' '/rr' '/haproxy' failed
	for clients in ${CLIENTS:-16 64}; do
		for mode in ${MODES:-ordinary stream}; do
			declare -A med=()
			for t in "$@"; do
				med[$t]=$(cat "$out"/tp-"$clients"-"$mode"-"$t"-*.json | jq -s -r '.[].request_throughput' | median)
			done
			for t in "$@"; do
				local failed rr=${t%-*}-round_robin
				failed=$(cat "$out"/tp-"$clients"-"$mode"-"$t"-*.json | jq -s '[.[].failed] | add')
				awk -v c="$clients" -v m="$mode" -v t="$t" -v v="${med[$t]}" -v b="${med[bare]}" \
					-v r="${med[$rr]:-}" -v h="${med[haproxy]:-}" -v f="$failed" 'BEGIN {
					rr = (r == "") ? "-" : sprintf("%.2f", v / r)
					hp = (h == "") ? "-" : sprintf("%.2f", v / h)
					printf "%-8s %-9s %-24s %10.0f %8.2f %8s %9s %8d\n", c, m, t, v, v / b, rr, hp, f }'
			done
		done
	done
}

latency() {
	local rounds=${ROUNDS:-2} requests=${LATENCY_REQUESTS:-300}
	start_members 1 8b-h100
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/latency-load.txt"
	# The floor: the bare proxy of cost_bench_test.go on the same path, measured in the same run, so
	# the cost of one more process hop on this machine is shown beside the router's.
	start_bare
	local legs=("bare=$started=$model")
	for r in $routers; do
		local label=${r%%=*} bin=${r#*=}
		start_router "$label-direct" "$bin" direct
		legs+=("$label=$started=chat")
	done
	for leg in "${legs[@]}"; do
		local label=${leg%%=*} rest=${leg#*=}
		"$work/anvil-bench" compare --member "${members[0]}" --direct-model "$model" --url "${rest%=*}" --model "${rest##*=}" \
			--token-file "$work/token" --rate 3 --process poisson --requests "$requests" --rounds "$rounds" \
			--warmup 5 --prompt-tokens 256 --output-tokens 128 --streaming 1 --label "$label" --no-progress \
			--json "$out/latency-$label.json" --raw "$out/latency-$label.jsonl" | tee "$out/latency-$label.txt"
	done
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/latency-load.txt"
}

# hops: the per-hop trace of single requests at low load (bench/hoptrace/main.go says what it prints).
# The instrumented router is HEAD's tree with router.patch applied, built in the temporary directory;
# the patch is a diagnostic (timestamps printed per request), never part of the router.
hops() {
	mkdir -p "$work/hop-src"
	git -C "$root" archive HEAD | tar -x -C "$work/hop-src"
	patch -s -d "$work/hop-src" -p1 <"$root/bench/hoptrace/router.patch"
	go -C "$work/hop-src" build -o "$work/hop-router" ./cmd/anvil-router
	go -C "$root/bench/hoptrace" build -o "$work/hoptrace" .
	start_members 1 8b-h100
	start_bare
	local bare=$started
	start_router hop-direct "$work/hop-router" direct
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/hops.txt"
	"$work/hoptrace" -targets "direct=${members[0]},routed=$started=chat,bare=$bare" -model "$model" -token "$token" \
		-n "${HOP_REQUESTS:-60}" -router-log "$work/hop-direct.err" | tee -a "$out/hops.txt"
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/hops.txt"
}

# profile: the 16-client loads against TestRouterProcess (the router of anvil-router serve, in the
# test binary so the profiler can run in it), once under -test.cpuprofile and once under
# -test.memprofile; "go tool pprof -top $out/router-cpu.prof" reads them.
profile() {
	start_members 2 zero
	local strategy=${STRATEGY:-round_robin}
	for kind in cpu mem; do
		router_yaml "$strategy" >"$work/prof.yaml"
		mkfifo "$work/prof-$kind.in"
		ANVIL_RSS_CHILD_CONFIG=$(cat "$work/prof.yaml") ANVIL_ROUTER_PROCESS_LOG=1 ANVIL_API_TOKEN=$token \
			"$work/server.test" -test.run '^TestRouterProcess$' "-test.${kind}profile" "$out/router-$kind.prof" \
			<"$work/prof-$kind.in" >"$work/prof-$kind.out" 2>"$work/prof-$kind.err" &
		local pid=$!
		pids+=("$pid")
		exec 9>"$work/prof-$kind.in"
		local u
		u="http://$(wait_for "$work/prof-$kind.out" 's/^ADDR //p')"
		for mode in ${PROFILE_MODES:-ordinary stream}; do
			local flags=(--streaming 1 --endpoint chat)
			[ "$mode" = ordinary ] && flags=(--streaming 0 --endpoint chat)
			[ "$mode" = responses ] && flags=(--streaming 1 --endpoint responses)
			"$work/anvil-bench" run --url "$u" --model chat --token-file "$work/token" --clients 16 \
				--requests "${REQUESTS:-20000}" --warmup 64 --prompt-tokens 64 --output-tokens 16 \
				"${flags[@]}" --no-progress >/dev/null
		done
		exec 9>&-
		wait "$pid" || true
	done
	cp "$work/server.test" "$out/server.test"
	echo "profiles: go tool pprof -top $out/server.test $out/router-cpu.prof (and router-mem.prof, -sample_index=alloc_space)"
}

# cpu_ticks PID: the process's user and system CPU so far, in clock ticks (/proc/PID/stat fields 14, 15).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# gc_cpu_ms FILE FROM: the sum of the cpu times of the gctrace lines in FILE after line FROM, and their count.
gc_cpu_ms() {
	tail -n +"$(($2 + 1))" "$1" | awk '/^gc [0-9]+ @/ {
		for (i = 1; i <= NF; i++) if ($(i + 1) == "ms" && $(i + 2) == "cpu,") {
			n = split($i, p, /[+\/]/); for (k = 1; k <= n; k++) ms += p[k]
		}
		count++
	} END { printf "%.1f %d\n", ms, count }'
}

gc() {
	start_members 2 zero
	local hz requests=${REQUESTS:-6000}
	hz=$(getconf CLK_TCK)
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/gc.txt"
	printf '%-24s %-14s %-10s %8s %10s %9s %12s\n' router env load 'req/s' 'GCs/1000' 'trace GC%' 'CPU µs/req' | tee -a "$out/gc.txt"
	for r in $routers; do
		local label=${r%%=*} bin=${r#*=}
		for setting in ${GC_ENV:--}; do
			local envs=(GODEBUG=gctrace=1)
			[ "$setting" != - ] && envs+=("$setting")
			router_yaml round_robin >"$work/gc.yaml"
			env "${envs[@]}" "$bin" serve --config "$work/gc.yaml" >"$work/gc.out" 2>"$work/gc.err" &
			local pid=$!
			pids+=("$pid")
			local u
			u="http://$(wait_for "$work/gc.err" 's/.*msg=serving addr=\([^ ]*\).*/\1/p')"
			for mode in ordinary stream responses; do
				local flags=(--streaming 1 --endpoint chat)
				[ "$mode" = ordinary ] && flags=(--streaming 0 --endpoint chat)
				[ "$mode" = responses ] && flags=(--streaming 1 --endpoint responses)
				"$work/anvil-bench" run --url "$u" --model chat --token-file "$work/token" --clients 16 \
					--requests 200 --prompt-tokens 64 --output-tokens 16 "${flags[@]}" --no-progress >/dev/null
				local from t0 t1 tp gcs
				from=$(wc -l <"$work/gc.err")
				t0=$(cpu_ticks "$pid")
				"$work/anvil-bench" run --url "$u" --model chat --token-file "$work/token" --clients 16 \
					--requests "$requests" --prompt-tokens 64 --output-tokens 16 "${flags[@]}" --no-progress \
					--json "$out/gc-$label-$setting-$mode.json" >/dev/null
				t1=$(cpu_ticks "$pid")
				tp=$(jq -r '.request_throughput' "$out/gc-$label-$setting-$mode.json")
				read -r gcms gcs < <(gc_cpu_ms "$work/gc.err" "$from")
				awk -v l="$label" -v e="$setting" -v m="$mode" -v tp="$tp" -v gms="$gcms" -v n="$gcs" \
					-v cpu="$(((t1 - t0)))" -v hz="$hz" -v req="$requests" 'BEGIN {
					ms = cpu * 1000 / hz
					printf "%-24s %-14s %-10s %8.0f %10.1f %8.1f%% %12.0f\n", l, e, m, tp, n * 1000 / req, 100 * gms / ms, ms * 1000 / req }' |
					tee -a "$out/gc.txt"
			done
			kill "$pid"
			wait "$pid" 2>/dev/null || true
		done
	done
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/gc.txt"
}

case "$what" in
throughput) throughput ;;
gc) gc ;;
latency) latency ;;
profile) profile ;;
hops) hops ;;
*) echo "usage: bench/router-cost.sh throughput|latency|hops|profile|gc" >&2; exit 2 ;;
esac
