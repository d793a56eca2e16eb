#!/usr/bin/env bash
# The simulator against real time (issue 15, item 2): for each scenario and strategy, real fake-vLLM
# members (anvil-fakevllm serve with each member's profile and step scale, from anvil-sim members),
# a real router with the configuration the simulator runs (anvil-sim config), and anvil-bench run
# --scenario for a few real minutes; then anvil-sim compare --bench puts each round's results beside
# a simulation of the same scenario, seed and arrival window. Every file lands under
# bench/results/sim-vs-real/ (git-ignored): per run the bench's table, JSON and raw records and the
# load average before and after; per round the comparison as text, JSON and Markdown; summary.md.
#
#   bench/sim-vs-real.sh [-r ROUNDS] [SCENARIO[=DURATION] ...]
#
# Default: heterogeneous=3m twenty-concurrent=1m, one round, both strategies. It builds the binaries
# into a temporary directory and stops everything it started on exit. It takes minutes; it is not
# part of make test (cmd/anvil-sim's tests check compare --bench on known results).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=1
while getopts "r:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [SCENARIO[=DURATION] ...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(heterogeneous=3m twenty-concurrent=1m)
strategies=(${SIM_VS_REAL_STRATEGIES:-round_robin capacity})

out=${BENCH_RESULTS:-$root/bench/results}/sim-vs-real/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
work=$(mktemp -d)
pids=()
stop_all() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/" ./cmd/anvil-fakevllm ./cmd/anvil-router ./cmd/anvil-bench ./cmd/anvil-sim)
sim=$work/anvil-sim
export ANVIL_API_TOKEN=sim-vs-real-caller-token

# wait_for FILE SED_EXPR: print the first match of SED_EXPR in FILE, waiting up to 30 s for it.
wait_for() {
	local v=
	for _ in $(seq 300); do
		v=$(sed -n "$2" "$1" | head -n1)
		[ -n "$v" ] && { echo "$v"; return 0; }
		sleep 0.1
	done
	return 1
}

# start_members SCENARIO: one anvil-fakevllm per member, its URL appended to the endpoints array.
start_members() {
	endpoints=()
	local i=0 id model profile scale extra url
	while IFS=$'\t' read -r id model profile scale; do
		case $id in '#'*) continue ;; esac
		extra=()
		[ "$scale" = 1 ] || extra=(--fault-step-multiplier "$scale")
		"$work/anvil-fakevllm" serve --members 1 --model "$model" --profile "$profile" "${extra[@]}" \
			</dev/null >"$work/member-$i.out" 2>"$work/member-$i.err" &
		pids+=($!)
		url=$(wait_for "$work/member-$i.out" 's/^member 0 //p') ||
			{ echo "sim-vs-real: member $id did not start" >&2; cat "$work/member-$i.err" >&2; exit 1; }
		endpoints+=("$url")
		i=$((i + 1))
	done < <("$sim" members "$1")
}

# start_router SCENARIO STRATEGY: the simulator's router configuration on the members' endpoints;
# sets addr once /readyz answers 200.
start_router() {
	local args=()
	for e in "${endpoints[@]}"; do args+=(--endpoint "$e"); done
	"$sim" config "$1" --strategy "$2" --listen 127.0.0.1:0 "${args[@]}" >"$work/router.yaml"
	"$work/anvil-router" serve --config "$work/router.yaml" </dev/null >"$work/router.out" 2>"$work/router.err" &
	pids+=($!)
	addr=$(wait_for "$work/router.err" 's/.*msg=serving addr=\([^ ]*\).*/\1/p') ||
		{ echo "sim-vs-real: the router did not start" >&2; cat "$work/router.err" >&2; exit 1; }
	for _ in $(seq 300); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ] && return 0
		sleep 0.1
	done
	echo "sim-vs-real: the router never became ready" >&2
	cat "$work/router.err" >&2
	exit 1
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

{
	echo "# Simulator against real time ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
	echo
	echo "Machine: $(nproc) cores, $(uname -sr); commit $(cd "$root" && git rev-parse --short HEAD)."
	echo
} >"$out/summary.md"
printf 'scenario\tround\tstrategy\tload_before\tload_after\n' >"$out/load.tsv"

for spec in "${specs[@]}"; do
	sc=${spec%%=*}
	dur=${spec#*=}
	[ "$dur" != "$spec" ] || dur=
	for round in $(seq "$rounds"); do
		results=()
		for st in "${strategies[@]}"; do
			tag=$sc-r$round-$st
			start_members "$sc"
			start_router "$sc" "$st"
			alias=$(awk '$1 == "aliases:" { getline; print $3; exit }' "$work/router.yaml")
			before=$(loadavg)
			echo "sim-vs-real: $tag (load $before)" >&2
			bench_args=(--scenario "$sc" --url "http://$addr" --model "$alias" --label "$st" --no-progress)
			[ -z "$dur" ] || bench_args+=(--duration "$dur")
			"$work/anvil-bench" run "${bench_args[@]}" \
				--json "$out/$tag.json" --raw "$out/$tag.jsonl" >"$out/$tag.txt"
			after=$(loadavg)
			printf '%s\t%s\t%s\t%s\t%s\n' "$sc" "$round" "$st" "$before" "$after" >>"$out/load.tsv"
			echo "- $sc round $round $st: load average (1, 5, 15 min) $before before, $after after" >>"$out/summary.md"
			stop_all
			results+=(--bench "$out/$tag.json")
		done
		status=0
		"$sim" compare "${results[@]}" --no-progress --json "$out/$sc-r$round.json" \
			--markdown "$out/$sc-r$round.md" >"$out/$sc-r$round.txt" || status=$?
		[ "$status" -le 1 ] || { cat "$out/$sc-r$round.txt" >&2; exit "$status"; }
		cat "$out/$sc-r$round.txt"
		{ echo; cat "$out/$sc-r$round.md"; echo; } >>"$out/summary.md"
	done
done
echo "sim-vs-real: results in $out" >&2
