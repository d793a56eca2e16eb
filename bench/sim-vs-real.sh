#!/usr/bin/env bash
# The simulator against real time (issue 15, item 2): for each scenario and strategy, real fake-vLLM
# members (anvil-fakevllm serve with each member's profile and step scale, from anvil-sim members),
# a real router with the configuration the simulator runs (anvil-sim config), and anvil-bench run
# --scenario for a few real minutes; then anvil-sim compare --bench puts each round's results beside
# a simulation of the same scenario, seed and arrival window. Every file lands under
# bench/results/sim-vs-real/ (git-ignored): per run the bench's table, JSON and raw records and the
# load average before and after; per round the comparison as text, JSON and Markdown; summary.md.
# Each round starts with the scenario's load sent straight at its first member, replayed through the
# engine model (anvil-sim replay): the real path's own share of the gap, at the machine's load
# (SIM_VS_REAL_ALONE=0 skips it).
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

# start_member INDEX MODEL PROFILE SCALE [ENGINE]: one anvil-fakevllm member; sets member_url. (Not
# run in a command substitution: its process must be this shell's child, in pids.)
start_member() {
	local extra=()
	[ "$4" = 1 ] || extra=(--fault-step-multiplier "$4")
	[ -z "${5:-}" ] || extra+=(--engine "$5")
	"$work/anvil-fakevllm" serve --members 1 --model "$2" --profile "$3" "${extra[@]}" \
		</dev/null >"$work/member-$1.out" 2>"$work/member-$1.err" &
	pids+=($!)
	member_url=$(wait_for "$work/member-$1.out" 's/^member 0 //p') ||
		{ echo "sim-vs-real: member $1 did not start" >&2; cat "$work/member-$1.err" >&2; exit 1; }
}

# start_members SCENARIO: one anvil-fakevllm per member, as anvil-sim members lists them; their URLs
# in the endpoints array.
start_members() {
	endpoints=()
	local i=0 id model profile scale engine
	while IFS=$'\t' read -r id model profile scale engine; do
		case $id in '#'*) continue ;; esac
		start_member "$i" "$model" "$profile" "$scale" "$engine"
		endpoints+=("$member_url")
		i=$((i + 1))
	done < <("$sim" members "$1")
}

# alone SCENARIO DURATION ROUND: the scenario's load straight at its first member (no router), then
# anvil-sim replay: what the real path adds to each request beside the engine model, at this load.
alone() {
	local tag=$1-r$3-alone id model profile scale engine before after status=0
	IFS=$'\t' read -r id model profile scale engine < <("$sim" members "$1" | grep -v '^#' | head -n1)
	start_member 0 "$model" "$profile" "$scale" "$engine"
	before=$(loadavg)
	echo "sim-vs-real: $tag: member $id alone (load $before)" >&2
	local args=(--scenario "$1" --url "$member_url" --model "$model" --label alone --no-progress)
	[ -z "$2" ] || args+=(--duration "$2")
	"$work/anvil-bench" run "${args[@]}" --json "$out/$tag.json" --raw "$out/$tag.jsonl" >"$out/$tag.txt"
	after=$(loadavg)
	stop_all
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "alone:$id" "$before" "$after" >>"$out/load.tsv"
	echo "- $1 round $3, member $id alone: load average (1, 5, 15 min) $before before, $after after" >>"$out/summary.md"
	"$sim" replay "$out/$tag.jsonl" --profile "$profile" --step-scale "$scale" \
		--json "$out/$tag-replay.json" --markdown "$out/$tag-replay.md" >"$out/$tag-replay.txt" || status=$?
	[ "$status" -le 1 ] || { cat "$out/$tag-replay.txt" >&2; exit "$status"; }
	cat "$out/$tag-replay.txt"
	{ echo; cat "$out/$tag-replay.md"; echo; } >>"$out/summary.md"
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
		[ "${SIM_VS_REAL_ALONE:-1}" = 0 ] || alone "$sc" "$dur" "$round"
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
